//! Options of the read-only programs read as the programs read them: option values that
//! are paths checked like operands, obsolete syntaxes, value-taking letters in clusters,
//! values that make a program run another (gpg for git's signature formats).

use super::judge;
use core_models::RiskLevel::{self, Safe};

fn risk(command: &str) -> RiskLevel {
    judge(command, None, None).risk
}

fn not_safe(command: &str) {
    let j = judge(command, None, None);
    assert!(j.risk > Safe, "{command:?} was judged safe");
    assert!(!j.reasons.is_empty(), "{command:?} has no reason");
}

#[cfg(unix)]
#[test]
fn option_values_that_are_paths_are_checked_like_operands() {
    let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(outside.path().join("x"), "secret").unwrap_or_else(|e| panic!("{e}"));
    let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let root = std::fs::canonicalize(ws.path()).unwrap_or_else(|e| panic!("{e}"));
    std::fs::create_dir(root.join("d")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(outside.path().join("x"), root.join("d/x"))
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(root.join("x"), "mine").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(root.join("y"), "mine").unwrap_or_else(|e| panic!("{e}"));
    let judged = |c: &str| judge(c, None, Some(&root)).risk;
    // `diff --from-file=d x` compares d/x (which leads out) with x.
    for command in [
        "diff --from-file=d x",
        "diff --to-file=d x",
        "diff --from-file d x",
        "diff -u --to-file=./d x",
        "diff d x",
    ] {
        assert!(judged(command) > Safe, "{command:?}");
    }
    assert_eq!(judged("diff --from-file=y x"), Safe);
    assert_eq!(judged("diff -u x y"), Safe);
}

#[test]
fn obsolete_forms_of_head_and_tail_are_not_safe() {
    for command in [
        "tail +1f notes",
        "tail +5 notes",
        "tail -1f notes",
        "tail -5c /etc/passwd",
        "tail -5c notes",
        "head -5c notes",
        "head -2vn notes",
    ] {
        not_safe(command);
    }
    for command in [
        "tail -n +3 notes",
        "tail -20 notes",
        "head -5 notes",
        "head -c 5 notes",
    ] {
        assert_eq!(risk(command), Safe, "{command:?}");
    }
}

#[test]
fn clusters_with_a_value_taking_letter_follow_the_programs_parser() {
    // tree reads a value-taking letter's value from the next word and still honours the
    // letters after it: `-Lo 2 out.html` writes out.html.
    for command in [
        "tree -Lo 2 out.html",
        "tree -PH x url",
        "tree -L2 src",
        "tree -aL 2 src",
        "tree -IR x",
    ] {
        not_safe(command);
    }
    for command in ["tree -L 2 src", "tree -ad src", "tree -a -L 2 -I x src"] {
        assert_eq!(risk(command), Safe, "{command:?}");
    }
    // rg takes `-f=FILE` as `-f FILE`.
    not_safe("rg -f=/etc/passwd x");
    not_safe("rg --file=/etc/passwd x");
    assert_eq!(risk("rg -f=patterns x"), Safe);
    // getopt programs: the rest of the word is the value.
    assert_eq!(risk("grep -nC3 x notes"), Safe);
    not_safe("grep -nf/etc/passwd notes");
}

#[test]
fn formats_that_show_signatures_run_gpg() {
    for command in [
        "git log --format=%GG",
        "git log --format='%h %G?'",
        "git log --pretty=format:%GS",
        "git log --pretty=tformat:%GK -n 1",
        "git show --format=%GF",
        "git log --format %GP",
        "git shortlog --format=%GT",
        "git log --pretty=myformat",
        "git branch --format='%(signature)'",
        "git tag --format='%(signature:key)'",
    ] {
        not_safe(command);
    }
    for command in [
        "git log --format='%h %s'",
        "git log --pretty=oneline",
        "git log --format=%%GG",
        "git branch --format='%(refname)'",
    ] {
        assert_eq!(risk(command), Safe, "{command:?}");
    }
}

#[test]
fn files_read_in_every_folder_are_not_safe() {
    not_safe("git ls-files --exclude-per-directory=../../x");
    assert_eq!(risk("git ls-files --exclude-from=.gitignore"), Safe);
}
