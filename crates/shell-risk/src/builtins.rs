//! Shell builtins that run commands or change what later commands run: `eval` and `trap`
//! (their script is followed when it is literal), `alias` (what a name will run is not
//! seen where it is used), `source`/`.` (a script file), `exec` (without a command it
//! changes where the shell reads and writes), `hash -p` (a name made to run another
//! program), `enable`, `fc`, `compgen`, `complete`, `bind`, `let` and `declare -i`
//! (arithmetic evaluates variables' values, which can hold commands), and the builtins that set
//! variables (`export`, `declare`, `read`, `printf -v`…): a variable that can change what
//! runs (see [`is_inert_variable`]) leaves the line's commands unknown.

use super::optscan::{self, Options, NO_OPTIONS};
use super::wrappers::not_understood;
use super::wrappers::{command_from, is_inert_variable, is_name, Decides, Inner, Runs};

/// What the builtin `name` runs; `None` when `name` is not one of these builtins.
pub(super) fn runs(name: &str, words: &[&str]) -> Option<Runs> {
    Some(match name {
        "eval" => {
            let start = 1 + usize::from(words.get(1) == Some(&"--"));
            if start < words.len() {
                Runs::of(vec![Inner::JoinedScript(start..words.len())])
            } else {
                Runs::of(Vec::new())
            }
        }
        "trap" => trap(words),
        "alias" => alias(words),
        "source" | "." => Runs::unseen(format!("'{name}' runs a script file the judge cannot see")),
        "exec" => exec(words),
        "hash" => {
            let names_a_path = words
                .iter()
                .skip(1)
                .take_while(|w| w.starts_with('-') && **w != "--")
                .any(|w| w.contains('p'));
            if names_a_path {
                Runs::unseen("'hash -p' makes a name run another program")
            } else {
                Runs::of(Vec::new())
            }
        }
        "enable" | "fc" | "compgen" | "complete" | "bind" => Runs::unseen(format!(
            "'{name}' can make the shell run commands the judge cannot see"
        )),
        "let" => Runs::unseen(
            "'let' evaluates arithmetic, which runs commands hidden in variables' values",
        ),
        "export" | "declare" | "typeset" | "local" | "readonly" => declare(name, words),
        "read" | "mapfile" | "readarray" | "getopts" => reads(name, words),
        "printf" => printf(words),
        _ => return None,
    })
}

/// `trap [-lp] [[ACTION] CONDITION…]`: ACTION is a script, unless it is `-` or a number
/// (then the conditions are reset).
fn trap(words: &[&str]) -> Runs {
    let mut i = 1;
    while let Some(w) = words.get(i) {
        if *w == "--" {
            i += 1;
            break;
        }
        if w.len() > 1 && w.starts_with('-') {
            if !w[1..].chars().all(|c| c == 'l' || c == 'p') {
                return Runs::unseen(format!("'trap' option '{w}' is not on the judge's list"));
            }
            i += 1;
            continue;
        }
        break;
    }
    match words.get(i) {
        None => Runs::of(Vec::new()),
        Some(action) if *action == "-" || action.chars().all(|c| c.is_ascii_digit()) => {
            Runs::of(Vec::new())
        }
        Some(action) => Runs::of(vec![Inner::Script {
            word: i,
            text: (*action).to_string(),
        }]),
    }
}

/// `alias [-p] [NAME[=VALUE]…]`: each value is followed as a script, but where a name is
/// used later the judge does not see what it runs.
fn alias(words: &[&str]) -> Runs {
    let mut inner = Vec::new();
    for (i, w) in words.iter().enumerate().skip(1) {
        if let Some((name, value)) = w.split_once('=') {
            if !name.is_empty() {
                inner.push(Inner::Script {
                    word: i,
                    text: value.to_string(),
                });
            }
        }
    }
    if inner.is_empty() {
        Runs::of(Vec::new())
    } else {
        Runs::unseen("'alias' defines a name whose commands are not seen where it is used")
            .with(inner)
    }
}

const EXEC: Options = Options {
    flags: "cl",
    values: "a",
    ..NO_OPTIONS
};

/// `exec [-cl] [-a NAME] [COMMAND…]`.
fn exec(words: &[&str]) -> Runs {
    match optscan::read(words, 1, &EXEC, false) {
        Ok(read) if read.next < words.len() => Runs::of(command_from(words, read.next)),
        Ok(_) => Runs::unseen(
            "'exec' without a command changes where the shell reads and writes, which the judge does not follow",
        ),
        Err(why) => not_understood("exec", &why, words),
    }
}

/// `export`, `declare`, `typeset`, `local`, `readonly` with `NAME=VALUE` operands.
fn declare(name: &str, words: &[&str]) -> Runs {
    let mut runs = Runs::of(Vec::new());
    let mut options_done = false;
    for w in words.iter().skip(1) {
        if !options_done && *w == "--" {
            options_done = true;
            continue;
        }
        if !options_done && w.len() > 1 && w.starts_with(['-', '+']) {
            if w.contains('n') {
                runs.also_unseen(format!(
                    "'{name} -n' makes a name refer to another variable"
                ));
            }
            if w.contains('i') {
                runs.also_unseen(format!(
                    "'{name} -i' evaluates values as arithmetic, which runs commands hidden in them"
                ));
            }
            continue;
        }
        options_done = true;
        let variable = w.split_once('=').map_or(*w, |(n, _)| n);
        let variable = variable.split('[').next().unwrap_or(variable);
        if w.contains('=') && !is_inert_variable(variable) {
            runs.also_unseen(format!(
                "'{name}' sets the variable '{variable}', which can change what runs"
            ));
        }
    }
    runs
}

/// `read`, `mapfile`, `readarray`, `getopts`: the variables they set.
fn reads(name: &str, words: &[&str]) -> Runs {
    let table = match name {
        "read" => Options {
            flags: "ers",
            values: "adinNptu",
            ..NO_OPTIONS
        },
        "getopts" => NO_OPTIONS,
        _ => Options {
            flags: "t",
            values: "dnOsuCc",
            ..NO_OPTIONS
        },
    };
    let read = match optscan::read(words, 1, &table, false) {
        Ok(read) => read,
        Err(why) => return Runs::unseen(format!("'{name}' {why}")),
    };
    let mut runs = Runs::of(Vec::new());
    if read.has(&["-C"]) {
        runs.also_unseen(format!("'{name} -C' runs a callback command"));
    }
    let mut variables: Vec<&str> = read
        .options
        .iter()
        .filter(|o| name == "read" && o.is(&["-a"]))
        .filter_map(|o| o.value)
        .collect();
    let operands = words.get(read.next..).unwrap_or_default();
    match name {
        // getopts OPTSTRING NAME [ARG…]
        "getopts" => variables.extend(operands.get(1)),
        _ => variables.extend(operands),
    }
    for v in variables {
        let v = v.split('[').next().unwrap_or(v);
        if !is_name(v) || !is_inert_variable(v) {
            runs.also_unseen(format!(
                "'{name}' sets the variable '{v}', which can change what runs"
            ));
        }
    }
    runs
}

/// `printf [-v NAME] FORMAT [ARG…]`: only `-v` sets a variable.
fn printf(words: &[&str]) -> Runs {
    let variable = match words.get(1) {
        Some(&"-v") => words.get(2).copied(),
        Some(w) if w.starts_with("-v") => Some(&w[2..]),
        _ => None,
    };
    let mut runs = Runs {
        decides: Decides::Before(2),
        ..Runs::nothing()
    };
    if let Some(v) = variable {
        runs.decides = Decides::Before(3);
        let v = v.split('[').next().unwrap_or(v);
        if !is_name(v) || !is_inert_variable(v) {
            runs.also_unseen(format!(
                "'printf -v' sets the variable '{v}', which can change what runs"
            ));
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::super::what_runs::shown;

    #[test]
    fn scripts_of_builtins_are_followed() {
        assert_eq!(shown("eval rm x"), ["script:rm x"]);
        assert_eq!(shown("eval -- rm x"), ["script:rm x"]);
        assert_eq!(shown("trap rm EXIT"), ["script:rm"]);
        assert_eq!(shown("trap -- rm EXIT"), ["script:rm"]);
        assert_eq!(shown("trap - EXIT"), Vec::<String>::new());
        assert_eq!(shown("trap 1 2"), Vec::<String>::new());
        assert_eq!(shown("trap -p"), Vec::<String>::new());
        assert_eq!(shown("alias r=rm"), ["script:rm", "!"]);
        assert_eq!(shown("alias"), Vec::<String>::new());
        assert_eq!(shown("exec rm x"), ["rm x"]);
    }

    #[test]
    fn builtins_that_change_what_runs_are_unseen() {
        for line in [
            "source x",
            ". x",
            "exec",
            "hash -p /bin/rm ls",
            "enable -f x.so y",
            "export PATH=.",
            "declare -x LD_PRELOAD=x",
            "local -n ref=PATH",
            "declare -i n=x",
            "let n=x",
            "readonly IFS=x",
            "read PATH",
            "read -a PATH",
            "mapfile -C cb x",
            "getopts ab PATH",
            "printf -v PATH .",
            "printf -vPATH .",
            "trap -x y",
        ] {
            assert_eq!(shown(line).last().map(String::as_str), Some("!"), "{line}");
        }
        for line in [
            "export LANG=C",
            "export x=1",
            "read line",
            "mapfile lines",
            "printf %s PATH",
            "hash -r",
            "getopts ab opt",
        ] {
            assert_eq!(shown(line), Vec::<String>::new(), "{line}");
        }
    }
}
