//! The read-only allow-list: which programs a safe command may run, with which options,
//! and what their operands are. The table itself is data (`table`, `table_text`); this module
//! reads a command's words against it (GNU `getopt` rules: bundled short options, values
//! attached or in the next word, `--long=value`, `--` ends the options, options may follow
//! operands) and holds the programs whose syntax is their own (`find`, `test`, `xxd`,
//! `date`'s operands; `sed` and `git` have their own modules).
//!
//! Long options must be spelled in full: GNU programs accept unambiguous abbreviations
//! (`sort --out=F` is `--output=F`), so anything not exactly on the list is refused.
//!
//! Short options are read as each program's parser reads them ([`Parser`]): most use
//! `getopt`; `rg` also takes `-f=FILE` as `-f FILE`; `tree` reads them its own way (a
//! value-taking letter takes the next word and later letters still count), so a cluster
//! holding a value-taking letter is refused there. The obsolete forms of `head` and `tail`
//! (`-5c FILE`, `+1f FILE`: `f` follows forever) are refused. Option values that are paths
//! are checked like operands (for `diff`, whose operands may not be folders, also that).

use super::paths::Place;
use super::spec::{check_paths, scan, Operands, Spec};
use super::table::FILES;
use super::table_text::TEXT;
use super::{git, sed};

/// Every program of the table.
pub(super) fn specs() -> impl Iterator<Item = &'static Spec> {
    FILES.iter().chain(TEXT)
}

/// Whether `name` is on the allow-list.
pub(super) fn is_listed(name: &str) -> bool {
    SPECIAL.contains(&name) || specs().any(|s| s.name == name)
}

/// Programs judged by their own code.
const SPECIAL: &[&str] = &["echo", "true", "false", "test", "find", "xxd", "sed", "git"];

/// Why the command (`words`: literal, the program first, on the list) is not safe; empty
/// when it is.
pub(super) fn check(words: &[String], place: &Place) -> Vec<String> {
    let Some((name, args)) = words.split_first() else {
        return vec!["no program".to_string()];
    };
    match name.as_str() {
        "echo" | "true" | "false" => Vec::new(),
        "test" => test(args, place),
        "find" => find(args, place),
        "xxd" => xxd(args, place),
        "sed" => sed::check(args, place),
        "git" => git::check(args, place),
        _ => match specs().find(|s| s.name == name) {
            Some(spec) => generic(spec, args, place),
            None => vec![format!("unknown program '{name}'")],
        },
    }
}

/// A table program: options, then operands by kind.
fn generic(spec: &Spec, args: &[String], place: &Place) -> Vec<String> {
    let scanned = match scan(spec, args) {
        Ok(s) => s,
        Err(why) => return vec![why],
    };
    let mut reasons = Vec::new();
    let name = spec.name;
    let mut paths: Vec<&str> = Vec::new();
    let mut files: Vec<&str> = Vec::new();
    match spec.operands {
        // Option values that are paths are operands too (`diff --from-file=DIR FILE`
        // compares DIR/FILE).
        Operands::Files => files.extend(&scanned.paths),
        _ => paths.extend(&scanned.paths),
    }
    match spec.operands {
        Operands::Paths => paths.extend(&scanned.operands),
        Operands::Files => files.extend(&scanned.operands),
        Operands::Text => {}
        Operands::Nothing => {
            if let Some(op) = scanned.operands.first() {
                reasons.push(format!("'{name}' takes no operand ('{op}')"));
            }
        }
        Operands::PatternThenPaths {
            given_by,
            none_with,
        } => {
            let skip = usize::from(
                !given_by.iter().any(|o| scanned.saw(o))
                    && !none_with.iter().any(|o| scanned.saw(o)),
            );
            paths.extend(scanned.operands.iter().skip(skip));
        }
        Operands::AtMost(n, why) => {
            if scanned.operands.len() > n {
                reasons.push(format!("'{name}' {why}"));
            }
            paths.extend(&scanned.operands);
        }
        Operands::Formats(why) => {
            if let Some(op) = scanned.operands.iter().find(|o| !o.starts_with('+')) {
                reasons.push(format!("'{name} {op}' {why}"));
            }
        }
    }
    if name == "file" {
        if let Some((_, Some(v))) = scanned
            .seen
            .iter()
            .find(|(o, v)| (o == "-m" || o == "--magic-file") && v.is_some_and(|v| v.contains(':')))
        {
            reasons.push(format!("'file -m {v}' names several magic files"));
        }
    }
    reasons.extend(check_paths(place, &paths));
    for f in files {
        if let Err(why) = place.check(f) {
            reasons.push(format!("path '{f}' {why}"));
        } else if place.is_folder(f) {
            reasons.push(format!(
                "'{name}' compares the folder '{f}', following its links"
            ));
        }
    }
    reasons
}

/// `test EXPR`: operators are fine, every other word is treated as a path.
fn test(args: &[String], place: &Place) -> Vec<String> {
    const OPERATORS: &[&str] = &[
        "!", "-a", "-o", "(", ")", "=", "!=", "==", "-eq", "-ne", "-lt", "-le", "-gt", "-ge",
        "-nt", "-ot", "-ef", "<", ">", "-b", "-c", "-d", "-e", "-f", "-g", "-G", "-h", "-k", "-L",
        "-n", "-N", "-O", "-p", "-r", "-s", "-S", "-t", "-u", "-w", "-x", "-z",
    ];
    let words: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|w| !OPERATORS.contains(w))
        .collect();
    check_paths(place, &words)
}

/// `find [-P] [-D X] [-Olevel] [START…] [EXPRESSION]`.
fn find(args: &[String], place: &Place) -> Vec<String> {
    const NO_VALUE: &[&str] = &[
        "(",
        ")",
        "!",
        ",",
        "-not",
        "-a",
        "-and",
        "-o",
        "-or",
        "-print",
        "-print0",
        "-ls",
        "-prune",
        "-quit",
        "-true",
        "-false",
        "-empty",
        "-readable",
        "-writable",
        "-executable",
        "-nouser",
        "-nogroup",
        "-depth",
        "-d",
        "-xdev",
        "-mount",
        "-noleaf",
        "-daystart",
        "-ignore_readdir_race",
        "-noignore_readdir_race",
        "-warn",
        "-nowarn",
        "-help",
        "--help",
        "-version",
        "--version",
    ];
    const TEXT_VALUE: &[&str] = &[
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-lname",
        "-ilname",
        "-type",
        "-xtype",
        "-size",
        "-perm",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-links",
        "-inum",
        "-amin",
        "-cmin",
        "-mmin",
        "-atime",
        "-ctime",
        "-mtime",
        "-used",
        "-maxdepth",
        "-mindepth",
        "-regextype",
        "-fstype",
        "-printf",
        "-context",
    ];
    const PATH_VALUE: &[&str] = &["-newer", "-anewer", "-cnewer", "-samefile"];
    let mut reasons = Vec::new();
    let mut i = 0;
    // Leading options.
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-P" => i += 1,
            "-D" => i += 2,
            "-H" | "-L" => {
                reasons.push(format!("'find {a}' follows symbolic links"));
                i += 1;
            }
            o if o.starts_with("-O") && o.len() > 2 => i += 1,
            _ => break,
        }
    }
    // Start points.
    let mut starts = Vec::new();
    while let Some(a) = args.get(i) {
        if a.starts_with('-') && a.len() > 1 || matches!(a.as_str(), "!" | "(" | ")" | ",") {
            break;
        }
        starts.push(a.as_str());
        i += 1;
    }
    reasons.extend(check_paths(place, &starts));
    // The expression.
    while let Some(a) = args.get(i) {
        i += 1;
        let a = a.as_str();
        if NO_VALUE.contains(&a) {
            continue;
        }
        let why = match a {
            "-exec" | "-execdir" | "-ok" | "-okdir" => Some("runs a command on each file"),
            "-delete" => Some("deletes files"),
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => Some("writes to a file"),
            "-follow" => Some("follows symbolic links"),
            "-files0-from" => Some("reads start points from a file"),
            _ => None,
        };
        if let Some(why) = why {
            reasons.push(format!("'find {a}' {why}"));
            break;
        }
        let value = args.get(i).map(String::as_str);
        i += 1;
        let Some(value) = value else {
            reasons.push(format!("'find {a}' needs a value"));
            break;
        };
        let newer_xy = a.strip_prefix("-newer").filter(|xy| xy.len() == 2);
        if TEXT_VALUE.contains(&a) || newer_xy.is_some_and(|xy| xy.ends_with('t')) {
            continue;
        }
        if PATH_VALUE.contains(&a) || newer_xy.is_some() {
            reasons.extend(check_paths(place, &[value]));
            continue;
        }
        reasons.push(format!(
            "'find' expression '{a}' is not on the judge's list"
        ));
        break;
    }
    reasons
}

/// `xxd [options] [IN]`: options are whole words; a second operand is an output file.
fn xxd(args: &[String], place: &Place) -> Vec<String> {
    const FLAGS: &[&str] = &[
        "-a",
        "-autoskip",
        "-b",
        "-bits",
        "-C",
        "-capitalize",
        "-d",
        "-e",
        "-E",
        "-EBCDIC",
        "-i",
        "-include",
        "-p",
        "-ps",
        "-plain",
        "-postscript",
        "-u",
        "-uppercase",
        "-h",
        "-help",
        "-v",
        "-version",
    ];
    const VALUES: &[(&str, &str)] = &[
        ("-c", "-cols"),
        ("-g", "-groupsize"),
        ("-l", "-len"),
        ("-o", "-offset"),
        ("-s", "-seek"),
        ("-n", "-name"),
    ];
    let mut operands = Vec::new();
    let mut i = 0;
    let mut only_operands = false;
    while let Some(a) = args.get(i) {
        i += 1;
        let a = a.as_str();
        if only_operands || a == "-" || !a.starts_with('-') {
            operands.push(a);
            continue;
        }
        if a == "--" {
            only_operands = true;
            continue;
        }
        if a.starts_with("-r") {
            return vec!["'xxd -r' writes binary data back (to a file)".to_string()];
        }
        if FLAGS.contains(&a) {
            continue;
        }
        if VALUES.iter().any(|(s, l)| a == *s || a == *l) {
            i += 1;
            continue;
        }
        let attached_number = VALUES.iter().any(|(s, _)| {
            a.strip_prefix(s).is_some_and(|n| {
                let n = n.trim_start_matches(['+', '-']);
                !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())
            })
        });
        if !attached_number {
            return vec![format!("'xxd' option '{a}' is not on the judge's list")];
        }
    }
    let mut reasons = Vec::new();
    if operands.len() > 1 {
        reasons.push("'xxd IN OUT' writes OUT".to_string());
    }
    reasons.extend(check_paths(place, &operands));
    reasons
}
