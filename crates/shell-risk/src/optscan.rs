//! Reading the options of a program that runs other commands (a wrapper, a shell), from a
//! table of its options given as data: which take a value, which do not.
//!
//! Long options must be spelled exactly as in the table. GNU programs also accept any
//! unambiguous abbreviation (`xargs --max-a 1` is `--max-args 1`), and which options a
//! program has changes between versions, so the judge does not guess: an abbreviation, like
//! any option not in the table, is *not understood*, and then the judge cannot tell where
//! the wrapped command starts (the command line's subjects are incomplete).

/// How a program's options are read.
#[derive(Debug)]
pub(super) struct Options {
    /// Short options without a value.
    pub flags: &'static str,
    /// Short options with a value: the rest of the word, else the next word.
    pub values: &'static str,
    /// Short options with an optional value, which must then be attached.
    pub optional: &'static str,
    /// Long options without a value.
    pub long_flags: &'static [&'static str],
    /// Long options with a value (`--name=value` or `--name value`).
    pub long_values: &'static [&'static str],
    /// Long options with an optional value (`--name` or `--name=value`).
    pub long_optional: &'static [&'static str],
    /// `-NUM` is an option (`nice -5`).
    pub numbers: bool,
    /// Options may also start with `+` (`sh +x`).
    pub plus: bool,
}

/// A program whose only options are `--help` and `--version`.
pub(super) const NO_OPTIONS: Options = Options {
    flags: "",
    values: "",
    optional: "",
    long_flags: &["help", "version"],
    long_values: &[],
    long_optional: &[],
    numbers: false,
    plus: false,
};

/// One option found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Opt<'a> {
    /// `-x` (also for `+x`) or `--name`.
    pub name: String,
    /// Its value, if it has one.
    pub value: Option<&'a str>,
    /// The index of the word holding the value (the option's own word when attached).
    pub value_word: usize,
}

impl Opt<'_> {
    /// Whether this is one of `names` (`-x` or `--name` spellings).
    pub(super) fn is(&self, names: &[&str]) -> bool {
        names.contains(&self.name.as_str())
    }
}

/// The options of a command and where its operands start.
#[derive(Debug, Default)]
pub(super) struct Read<'a> {
    /// The options, in order.
    pub options: Vec<Opt<'a>>,
    /// The operands' indices, in order (only the first one unless `permute`).
    pub operands: Vec<usize>,
    /// The index of the first operand, or of the word after `--`, or the end.
    pub next: usize,
}

impl Read<'_> {
    /// Whether an option named one of `names` was given.
    pub(super) fn has(&self, names: &[&str]) -> bool {
        self.options.iter().any(|o| o.is(names))
    }

    /// The last option named one of `names`.
    pub(super) fn last(&self, names: &[&str]) -> Option<&Opt<'_>> {
        self.options.iter().rev().find(|o| o.is(names))
    }
}

/// Read the options of `words[start..]` against `table`.
///
/// Without `permute`, options end at the first operand (as a wrapper's options do: the
/// command starts there); with it, options may follow operands (GNU `getopt`), and every
/// operand up to `--` is listed. `Err` says which option is not understood.
pub(super) fn read<'a>(
    words: &[&'a str],
    start: usize,
    table: &Options,
    permute: bool,
) -> Result<Read<'a>, String> {
    let mut out = Read {
        next: words.len(),
        ..Read::default()
    };
    let mut i = start;
    while let Some(word) = words.get(i) {
        let word = *word;
        if word == "--" {
            if out.operands.is_empty() {
                out.next = i + 1;
            }
            if permute {
                out.operands.extend(i + 1..words.len());
            }
            return Ok(out);
        }
        let dash = word.starts_with('-') || table.plus && word.starts_with('+');
        if !dash || word.len() < 2 {
            if out.operands.is_empty() {
                out.next = i;
            }
            out.operands.push(i);
            if !permute {
                return Ok(out);
            }
            i += 1;
            continue;
        }
        i = if let Some(long) = word.strip_prefix("--") {
            long_option(words, i, long, table, &mut out.options)?
        } else {
            short_options(words, i, table, &mut out.options)?
        };
    }
    Ok(out)
}

/// Read `--long[=value]` (the word at `i`); returns the index after it.
fn long_option<'a>(
    words: &[&'a str],
    i: usize,
    long: &'a str,
    table: &Options,
    options: &mut Vec<Opt<'a>>,
) -> Result<usize, String> {
    let (name, value) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (long, None),
    };
    let spelled = format!("--{name}");
    if table.long_flags.contains(&name) {
        if value.is_some() {
            return Err(format!("option '{spelled}' takes no value"));
        }
        options.push(Opt {
            name: spelled,
            value: None,
            value_word: i,
        });
        return Ok(i + 1);
    }
    if table.long_optional.contains(&name) {
        options.push(Opt {
            name: spelled,
            value,
            value_word: i,
        });
        return Ok(i + 1);
    }
    if table.long_values.contains(&name) {
        return Ok(match value {
            Some(v) => {
                options.push(Opt {
                    name: spelled,
                    value: Some(v),
                    value_word: i,
                });
                i + 1
            }
            None => {
                let v = words
                    .get(i + 1)
                    .ok_or_else(|| format!("option '{spelled}' has no value"))?;
                options.push(Opt {
                    name: spelled,
                    value: Some(v),
                    value_word: i + 1,
                });
                i + 2
            }
        });
    }
    Err(format!("option '{spelled}' is not on the judge's list"))
}

/// Read a cluster of short options (the word at `i`); returns the index after it.
fn short_options<'a>(
    words: &[&'a str],
    i: usize,
    table: &Options,
    options: &mut Vec<Opt<'a>>,
) -> Result<usize, String> {
    let word = words[i];
    let cluster = &word[1..];
    if table.numbers && cluster.chars().all(|c| c.is_ascii_digit()) {
        options.push(Opt {
            name: word.to_string(),
            value: None,
            value_word: i,
        });
        return Ok(i + 1);
    }
    for (k, c) in cluster.char_indices() {
        let rest = &cluster[k + c.len_utf8()..];
        let name = format!("-{c}");
        if table.flags.contains(c) {
            options.push(Opt {
                name,
                value: None,
                value_word: i,
            });
            continue;
        }
        if table.optional.contains(c) {
            let value = (!rest.is_empty()).then_some(rest);
            options.push(Opt {
                name,
                value,
                value_word: i,
            });
            return Ok(i + 1);
        }
        if table.values.contains(c) {
            if !rest.is_empty() {
                options.push(Opt {
                    name,
                    value: Some(rest),
                    value_word: i,
                });
                return Ok(i + 1);
            }
            let value = words
                .get(i + 1)
                .ok_or_else(|| format!("option '{name}' has no value"))?;
            options.push(Opt {
                name,
                value: Some(value),
                value_word: i + 1,
            });
            return Ok(i + 2);
        }
        return Err(format!("option '{name}' is not on the judge's list"));
    }
    Ok(i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Options = Options {
        flags: "ab",
        values: "n",
        optional: "o",
        long_flags: &["all"],
        long_values: &["count"],
        long_optional: &["color"],
        numbers: true,
        ..NO_OPTIONS
    };

    fn read_line(line: &str, permute: bool) -> Result<(Vec<String>, Vec<usize>, usize), String> {
        let words: Vec<&str> = line.split(' ').collect();
        let r = read(&words, 1, &T, permute)?;
        let options = r
            .options
            .iter()
            .map(|o| format!("{}={}", o.name, o.value.unwrap_or("")))
            .collect();
        Ok((options, r.operands, r.next))
    }

    #[test]
    fn options_are_read_from_the_table() {
        let (o, ops, next) = read_line("p -ab -n 5 -n7 --count 3 --count=4 x y", false).unwrap();
        assert_eq!(o, ["-a=", "-b=", "-n=5", "-n=7", "--count=3", "--count=4"]);
        assert_eq!((ops, next), (vec![8], 8));
        let (o, _, next) = read_line("p -oval --color -5 -- -a", false).unwrap();
        assert_eq!(o, ["-o=val", "--color=", "-5="]);
        assert_eq!(next, 5);
        let (o, ops, _) = read_line("p x -a y -- -b", true).unwrap();
        assert_eq!(o, ["-a="]);
        assert_eq!(ops, [1, 3, 5]);
    }

    #[test]
    fn anything_else_is_not_understood() {
        for line in [
            "p --cou 3 x",
            "p --al x",
            "p -z x",
            "p -az x",
            "p --all=1 x",
            "p -n",
            "p --count",
            "p --unknown x",
        ] {
            assert!(read_line(line, false).is_err(), "{line}");
        }
    }
}
