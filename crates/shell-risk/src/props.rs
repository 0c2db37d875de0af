//! Properties of the judge: generated plain read-only lines are safe, and the same lines
//! with a redirection, a substitution, an expansion or an unknown program slipped in
//! anywhere never are. Arbitrary text never panics.

use super::{fallback, judge};
use core_models::RiskLevel;
use proptest::prelude::*;

/// A relative path inside the workspace, written plainly or quoted.
fn path() -> impl Strategy<Value = String> {
    let raw = "[a-z][a-z0-9_]{0,6}(\\.[a-z]{1,3})?(/[a-z][a-z0-9_]{0,6}){0,2}";
    (raw, 0..3usize).prop_map(|(p, quoting)| match quoting {
        0 => p,
        1 => format!("'{p}'"),
        _ => format!("\"{p}\""),
    })
}

fn paths(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(path(), 0..=max).prop_map(|p| p.join(" "))
}

/// A pattern: words of letters, quoted.
fn pattern() -> impl Strategy<Value = String> {
    "[a-z]{1,6}( [a-z]{1,6})?".prop_map(|p| format!("'{p}'"))
}

/// One command from the read-only list, used safely.
fn safe_command() -> impl Strategy<Value = String> {
    prop_oneof![
        paths(3).prop_map(|p| format!("cat {p}")),
        (1..200u32, paths(2)).prop_map(|(n, p)| format!("head -n {n} {p}")),
        (1..200u32, paths(2)).prop_map(|(n, p)| format!("tail -{n} {p}")),
        paths(2).prop_map(|p| format!("wc -l {p}")),
        paths(2).prop_map(|p| format!("ls -la {p}")),
        (pattern(), paths(2)).prop_map(|(q, p)| format!("grep -rn {q} {p}")),
        (pattern(), paths(2)).prop_map(|(q, p)| format!("rg -i {q} {p}")),
        paths(1).prop_map(|p| format!("find {p} -name '*.rs' -type f")),
        "[a-z ]{0,20}".prop_map(|t| format!("echo '{t}'")),
        paths(2).prop_map(|p| format!("sort -r {p}")),
        paths(1).prop_map(|p| format!("uniq -c {p}")),
        (1..9u32, paths(1)).prop_map(|(n, p)| format!("sed -n '{n},$p' {p}")),
        (1..20u32).prop_map(|n| format!("git log --oneline -n {n}")),
        paths(2).prop_map(|p| format!("git diff --stat -- {p}")),
        Just("git status --short".to_string()),
        Just("pwd".to_string()),
        paths(2).prop_map(|p| format!("stat {p}")),
        paths(1).prop_map(|p| format!("tree -L 2 {p}")),
        Just("tr a-z A-Z".to_string()),
        paths(1).prop_map(|p| format!("cut -d, -f1 {p}")),
    ]
}

/// Plain read-only commands joined by pipes, lists and newlines.
fn safe_line() -> impl Strategy<Value = String> {
    let separator = prop_oneof![
        Just(" | "),
        Just(" && "),
        Just(" || "),
        Just("; "),
        Just("\n")
    ];
    (
        safe_command(),
        prop::collection::vec((separator, safe_command()), 0..3),
    )
        .prop_map(|(first, rest)| {
            let mut line = first;
            for (sep, cmd) in rest {
                line.push_str(sep);
                line.push_str(&cmd);
            }
            line
        })
}

/// Words the shell reserves (a command named so does not parse).
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "for", "while", "until", "in",
];

/// Something that makes any line not safe.
fn hazard() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("> out".to_string()),
        Just(">> out".to_string()),
        Just("< in".to_string()),
        Just("2> err".to_string()),
        Just("&> both".to_string()),
        Just("2>&1".to_string()),
        Just(">|out".to_string()),
        Just("$(ls)".to_string()),
        Just("`ls`".to_string()),
        Just("$X".to_string()),
        Just("${X}".to_string()),
        Just("\"$X\"".to_string()),
        Just("$((1+1))".to_string()),
        Just("<(ls)".to_string()),
        Just("*.rs".to_string()),
        Just("~/x".to_string()),
        Just("&".to_string()),
        Just("a=1".to_string()).prop_map(|a| format!("; {a}")),
    ]
}

/// Byte offsets where a word may be inserted: the ends and spaces outside quotes.
fn boundaries(line: &str) -> Vec<usize> {
    let mut out = vec![0];
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ' ' | '\n') => out.push(i),
            (None, _) => {}
        }
    }
    out.push(line.len());
    out
}

/// A path outside the workspace.
fn outside() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/etc/passwd".to_string()),
        Just("../secret".to_string()),
        Just("a/../../b".to_string()),
        Just("'/root/.ssh/id_rsa'".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn plain_read_only_lines_are_safe(line in safe_line()) {
        let j = judge(&line, None, None);
        prop_assert_eq!(j.risk, RiskLevel::Safe, "{:?}: {:?}", line, j.reasons);
        prop_assert!(j.subjects.complete);
    }

    #[test]
    fn a_hazard_anywhere_is_never_safe(
        line in safe_line(),
        hazard in hazard(),
        at in any::<prop::sample::Index>(),
    ) {
        let places = boundaries(&line);
        let i = places[at.index(places.len())];
        let hazardous = format!("{} {hazard} {}", &line[..i], &line[i..]);
        let j = judge(&hazardous, None, None);
        prop_assert!(j.risk >= RiskLevel::Medium, "{:?} judged {:?}", hazardous, j.risk);
        prop_assert!(!j.reasons.is_empty());
    }

    #[test]
    fn a_path_outside_is_never_safe(
        line in safe_line(),
        path in outside(),
        reader in prop_oneof![
            Just("cat"), Just("head -n 1"), Just("wc -c"), Just("ls -l"), Just("grep -n x"),
            Just("sort"), Just("stat"), Just("sed -n p"), Just("git log --"), Just("find"),
        ],
    ) {
        let hazardous = format!("{line}; {reader} {path}");
        let j = judge(&hazardous, None, None);
        prop_assert!(j.risk >= RiskLevel::Medium, "{:?} judged {:?}", hazardous, j.risk);
    }

    #[test]
    fn a_heredoc_is_never_safe(line in safe_line()) {
        let hazardous = format!("{line} <<EOF\ntext\nEOF\n");
        prop_assert!(judge(&hazardous, None, None).risk >= RiskLevel::Medium);
    }

    #[test]
    fn an_unknown_program_is_never_safe(
        line in safe_line(),
        name in "[a-z]{2,8}",
    ) {
        prop_assume!(!super::programs::is_listed(&name));
        prop_assume!(!RESERVED.contains(&name.as_str()));
        let hazardous = format!("{line} && {name} x");
        let j = judge(&hazardous, None, None);
        prop_assert!(j.risk >= RiskLevel::Medium);
        let unknown = format!("unknown program '{name}'");
        let listed_elsewhere = super::severity::assess(&[name.as_str()], false).is_some();
        prop_assert!(listed_elsewhere || j.reasons.contains(&unknown), "{:?}", j.reasons);
    }

    #[test]
    fn any_text_is_judged_without_panic(text in "\\PC{0,80}") {
        let j = judge(&text, None, None);
        if j.risk == RiskLevel::Safe {
            prop_assert_eq!(fallback::gate(&text), None);
        }
    }

    #[test]
    fn shell_flavoured_text_is_judged_without_panic(
        text in "[a-z $`'\"(){}<>|&;*?~=\\\\\n#0-9-]{0,60}",
    ) {
        let j = judge(&text, None, None);
        if j.risk == RiskLevel::Safe {
            prop_assert_eq!(fallback::gate(&text), None);
        }
    }
}
