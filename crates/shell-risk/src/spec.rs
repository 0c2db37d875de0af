//! The words of the read-only allow-list: how a program reads its options ([`Parser`]),
//! what its operands are ([`Operands`]), one program's entry ([`Spec`]), and the reading
//! of a command's words against an entry ([`scan`], GNU `getopt` rules). The entries are
//! data (`table`, `table_text`); [`programs`](super::programs) checks a command with them.

use super::paths::Place;

/// How a program reads its short options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Parser {
    /// GNU `getopt`: a value-taking letter takes the rest of its word, else the next word;
    /// later letters of the word are part of the value.
    Getopt,
    /// Like `getopt`, but `-x=VALUE` gives `VALUE` (Rust's lexopt and clap).
    Lexopt,
    /// Its own: the judge only accepts a value-taking letter alone in its word, with the
    /// value in the next word.
    Own,
}

/// What a program's operands are.
#[derive(Debug, Clone, Copy)]
pub(super) enum Operands {
    /// Every operand is a path it reads.
    Paths,
    /// Every operand is a path to a file, not a folder (comparing folders follows links).
    Files,
    /// Operands are text it never opens.
    Text,
    /// It takes no operand.
    Nothing,
    /// The first operand is a pattern, unless one of `given_by` gave it, or one of
    /// `none_with` means there is none; the rest are paths.
    PatternThenPaths {
        /// Options that give the pattern instead.
        given_by: &'static [&'static str],
        /// Options that mean no pattern at all.
        none_with: &'static [&'static str],
    },
    /// At most this many path operands; the text says what one more would do.
    AtMost(usize, &'static str),
    /// Every operand must start with `+` (a format); the text says what others do.
    Formats(&'static str),
}

/// One allowed program: its options and its operands.
#[derive(Debug)]
pub(super) struct Spec {
    /// The program name.
    pub name: &'static str,
    /// Short options without a value.
    pub flags: &'static str,
    /// Short options with a value (attached, or the next word).
    pub values: &'static str,
    /// Short options whose value is a path it reads.
    pub path_values: &'static str,
    /// Short options with an optional value, which must then be attached.
    pub optional: &'static str,
    /// Long options without a value.
    pub long_flags: &'static [&'static str],
    /// Long options with a value (`--x=v` or `--x v`).
    pub long_values: &'static [&'static str],
    /// Long options with an optional value (`--x` or `--x=v`).
    pub long_optional: &'static [&'static str],
    /// Long options whose value is a path it reads.
    pub long_paths: &'static [&'static str],
    /// Options that are never safe, and why (`("-o", "writes to a file")`).
    pub forbidden: &'static [(&'static str, &'static str)],
    /// `-NUM` is an option (a count).
    pub numbers: bool,
    /// It also reads the obsolete forms `-NUM[LETTERS]` and `+NUM[LETTERS]` (`head`,
    /// `tail`): those are refused.
    pub obsolete: bool,
    /// How it reads its short options.
    pub parser: Parser,
    /// What its operands are.
    pub operands: Operands,
}

/// A spec with nothing allowed, to build the table from.
pub(super) const NONE: Spec = Spec {
    name: "",
    flags: "",
    values: "",
    path_values: "",
    optional: "",
    long_flags: &["help", "version"],
    long_values: &[],
    long_optional: &[],
    long_paths: &[],
    forbidden: &[],
    numbers: false,
    obsolete: false,
    parser: Parser::Getopt,
    operands: Operands::Paths,
};

/// What a scan of the options found.
#[derive(Debug, Default)]
pub(super) struct Scanned<'a> {
    /// Operands, in order.
    pub operands: Vec<&'a str>,
    /// Option values that are paths.
    pub paths: Vec<&'a str>,
    /// Options seen, spelled `-x` or `--name`, with their values.
    pub seen: Vec<(String, Option<&'a str>)>,
}

impl Scanned<'_> {
    pub(super) fn saw(&self, option: &str) -> bool {
        self.seen.iter().any(|(o, _)| o == option)
    }
}

/// Read `args` against `spec`'s options; `Err` says why they are not safe.
pub(super) fn scan<'a>(spec: &Spec, args: &'a [String]) -> Result<Scanned<'a>, String> {
    let name = spec.name;
    let mut out = Scanned::default();
    let mut i = 0;
    let mut only_operands = false;
    while let Some(arg) = args.get(i) {
        i += 1;
        if only_operands || arg == "-" || !arg.starts_with('-') {
            if spec.obsolete && arg.starts_with('+') {
                return Err(format!(
                    "'{name} {arg}' may be the obsolete +NUM form (with 'f' it follows forever)"
                ));
            }
            out.operands.push(arg);
            continue;
        }
        if arg == "--" {
            only_operands = true;
            continue;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (option, value) = match long.split_once('=') {
                Some((o, v)) => (o, Some(v)),
                None => (long, None),
            };
            let is_path = spec.long_paths.contains(&option);
            let allowed = is_path
                || spec.long_flags.contains(&option)
                || spec.long_optional.contains(&option)
                || spec.long_values.contains(&option);
            if !allowed {
                if let Some(why) = forbidden(spec, &format!("--{option}"), true) {
                    return Err(format!("'{name} --{option}' {why}"));
                }
            }
            if spec.long_flags.contains(&option) {
                if value.is_some() {
                    return Err(format!("'{name} --{option}' takes no value"));
                }
            } else if spec.long_optional.contains(&option) {
            } else if is_path || spec.long_values.contains(&option) {
                let value = match value {
                    Some(v) => v,
                    None => {
                        i += 1;
                        args.get(i - 1)
                            .map(String::as_str)
                            .ok_or_else(|| format!("'{name} --{option}' needs a value"))?
                    }
                };
                if is_path {
                    out.paths.push(value);
                }
                out.seen.push((format!("--{option}"), Some(value)));
                continue;
            } else {
                return Err(format!(
                    "'{name}' option '--{option}' is not on the judge's list"
                ));
            }
            out.seen.push((format!("--{option}"), value));
            continue;
        }
        let cluster = &arg[1..];
        if spec.numbers && cluster.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if spec.obsolete && cluster.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(format!(
                "'{name} {arg}' is the obsolete -NUM form, which the judge does not read"
            ));
        }
        let takes_value = |c: char| {
            spec.values.contains(c) || spec.path_values.contains(c) || spec.optional.contains(c)
        };
        if spec.parser == Parser::Own
            && cluster.chars().count() > 1
            && cluster.chars().any(takes_value)
        {
            return Err(format!(
                "'{name} {arg}' combines a short option that takes a value with others; {name} reads that its own way"
            ));
        }
        for (k, c) in cluster.char_indices() {
            if let Some(why) = forbidden(spec, &format!("-{c}"), false) {
                return Err(format!("'{name} -{c}' {why}"));
            }
            let rest = &cluster[k + c.len_utf8()..];
            if spec.flags.contains(c) {
                out.seen.push((format!("-{c}"), None));
                continue;
            }
            if spec.optional.contains(c) {
                out.seen.push((format!("-{c}"), Some(rest)));
                break;
            }
            let is_path = spec.path_values.contains(c);
            if is_path || spec.values.contains(c) {
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1)
                        .map(String::as_str)
                        .ok_or_else(|| format!("'{name} -{c}' needs a value"))?
                } else if spec.parser == Parser::Lexopt {
                    rest.strip_prefix('=').unwrap_or(rest)
                } else {
                    rest
                };
                if is_path {
                    out.paths.push(value);
                }
                out.seen.push((format!("-{c}"), Some(value)));
                break;
            }
            if spec.numbers && c.is_ascii_digit() {
                continue;
            }
            return Err(format!("'{name}' option '-{c}' is not on the judge's list"));
        }
    }
    Ok(out)
}

/// Why `option` is forbidden; for long options also any abbreviation of a forbidden one.
fn forbidden(spec: &Spec, option: &str, long: bool) -> Option<&'static str> {
    spec.forbidden.iter().find_map(|(o, why)| {
        let hit = *o == option
            || long && option.len() > 3 && o.starts_with("--") && o.starts_with(option);
        hit.then_some(*why)
    })
}

/// Reasons for the paths that are not inside the workspace.
pub(super) fn check_paths(place: &Place, paths: &[&str]) -> Vec<String> {
    paths
        .iter()
        .filter(|p| **p != "-")
        .filter_map(|p| place.check(p).err().map(|why| format!("path '{p}' {why}")))
        .collect()
}
