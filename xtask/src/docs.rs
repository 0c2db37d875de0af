//! `cargo run -p xtask -- check-docs`: the README and the manual hold together.
//!
//! - The README is a front door: at most [`README_MAX_LINES`] lines.
//! - Every chapter in `docs/manual` is listed in its `SUMMARY.md`, and every entry there
//!   exists.
//! - Every link in the README, `docs/ARCHITECTURE.md` and the manual that is not a URL
//!   leads somewhere: the file exists, and an `#anchor` names a heading of that file (as
//!   mdBook and GitHub derive a heading's id). A manual chapter links only within the
//!   manual (a repository path written as code, not as a link), since the built book has
//!   no repository beside it.
//!
//! Code blocks (fenced or indented) and code spans are not read for links.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// The most lines the README may have.
pub(crate) const README_MAX_LINES: usize = 200;

/// One problem found, with the file and line it is on.
#[derive(Debug)]
pub(crate) struct Problem {
    /// The file, relative to the workspace's root.
    pub(crate) file: String,
    /// The 1-based line (0 when the problem is the file's as a whole).
    pub(crate) line: usize,
    /// What is wrong.
    pub(crate) what: String,
}

/// Check the README and the manual under `root`; every problem found.
pub(crate) fn check(root: &Path) -> Result<Vec<Problem>, String> {
    let manual = root.join("docs").join("manual");
    let mut files = vec![
        root.join("README.md"),
        root.join("docs").join("ARCHITECTURE.md"),
    ];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(&manual)
        .map_err(|e| format!("cannot read {}: {e}", manual.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    files.extend(chapters.iter().cloned());

    let mut docs = BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        docs.insert(file.clone(), Doc::parse(&text));
    }
    let mut problems = Vec::new();
    let rel = |path: &Path| {
        path.strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string()
    };
    let readme_lines = std::fs::read_to_string(root.join("README.md"))
        .map(|t| t.lines().count())
        .unwrap_or(0);
    if readme_lines > README_MAX_LINES {
        problems.push(Problem {
            file: "README.md".into(),
            line: 0,
            what: format!(
                "{readme_lines} lines, more than {README_MAX_LINES}: move detail into the manual"
            ),
        });
    }
    summary_problems(&manual, &chapters, &docs, &mut problems, &rel);
    for (file, doc) in &docs {
        let in_manual = file.starts_with(&manual);
        for link in &doc.links {
            if let Some(what) = link_problem(file, link, in_manual, &manual, &docs) {
                problems.push(Problem {
                    file: rel(file),
                    line: link.line,
                    what,
                });
            }
        }
    }
    Ok(problems)
}

/// Chapters missing from `SUMMARY.md`, and its entries that name no chapter.
fn summary_problems(
    manual: &Path,
    chapters: &[PathBuf],
    docs: &BTreeMap<PathBuf, Doc>,
    problems: &mut Vec<Problem>,
    rel: &dyn Fn(&Path) -> String,
) {
    let summary = manual.join("SUMMARY.md");
    let Some(doc) = docs.get(&summary) else {
        problems.push(Problem {
            file: rel(&summary),
            line: 0,
            what: "the manual has no SUMMARY.md".into(),
        });
        return;
    };
    let listed: Vec<PathBuf> = doc
        .links
        .iter()
        .filter(|l| !is_url(&l.target))
        .map(|l| manual.join(l.target.split('#').next().unwrap_or_default()))
        .collect();
    for chapter in chapters {
        if *chapter != summary && !listed.contains(chapter) {
            problems.push(Problem {
                file: rel(&summary),
                line: 0,
                what: format!("{} is not listed", rel(chapter)),
            });
        }
    }
}

/// What is wrong with one link, if anything.
fn link_problem(
    file: &Path,
    link: &Link,
    in_manual: bool,
    manual: &Path,
    docs: &BTreeMap<PathBuf, Doc>,
) -> Option<String> {
    if is_url(&link.target) {
        return None;
    }
    let (path, anchor) = match link.target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (link.target.as_str(), None),
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    let target = if path.is_empty() {
        file.to_path_buf()
    } else {
        normalize(&dir.join(path))
    };
    if in_manual && !target.starts_with(manual) {
        return Some(format!(
            "`{}` leaves the manual: the built book has no repository beside it (write the path as code, or link a chapter)",
            link.target
        ));
    }
    if !target.exists() {
        return Some(format!("`{}`: no such file", link.target));
    }
    let anchor = anchor?;
    let Some(doc) = docs.get(&target) else {
        return Some(format!(
            "`{}`: an anchor into a file that is not checked",
            link.target
        ));
    };
    if doc.ids.iter().any(|id| id == anchor) {
        None
    } else {
        Some(format!(
            "`{}`: no heading with the id `{anchor}`",
            link.target
        ))
    }
}

fn is_url(target: &str) -> bool {
    target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:")
}

/// `a/b/../c` as `a/c` (without touching the file system).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A link found in a document.
#[derive(Debug, Clone, PartialEq)]
struct Link {
    line: usize,
    target: String,
}

/// What a Markdown document offers and asks: its headings' ids and its links.
#[derive(Debug, Default)]
struct Doc {
    ids: Vec<String>,
    links: Vec<Link>,
    /// How many headings had each id before its duplicates were numbered.
    seen: BTreeMap<String, usize>,
}

impl Doc {
    fn parse(text: &str) -> Doc {
        let mut doc = Doc::default();
        let mut fence: Option<String> = None;
        let mut previous_blank = true;
        let mut in_indented = false;
        for (index, line) in text.lines().enumerate() {
            let trimmed = line.trim_start();
            if let Some(marker) = &fence {
                if trimmed.starts_with(marker.as_str())
                    && trimmed.trim_start_matches('`').trim().is_empty()
                {
                    fence = None;
                }
                continue;
            }
            if let Some(marker) = fence_opening(trimmed) {
                fence = Some(marker);
                continue;
            }
            let blank = line.trim().is_empty();
            in_indented = if blank {
                in_indented
            } else {
                line.starts_with("    ") && (previous_blank || in_indented)
            };
            previous_blank = blank;
            if in_indented || blank {
                continue;
            }
            if let Some(heading) = heading_text(line) {
                let id = heading_id(&heading);
                let taken = doc.seen.entry(id.clone()).or_insert(0);
                doc.ids.push(if *taken == 0 {
                    id
                } else {
                    format!("{id}-{taken}")
                });
                *taken += 1;
            }
            for target in link_targets(line) {
                doc.links.push(Link {
                    line: index + 1,
                    target,
                });
            }
        }
        doc
    }
}

/// A fence's marker (its backticks) when the line opens a fenced code block.
fn fence_opening(trimmed: &str) -> Option<String> {
    let ticks = trimmed.chars().take_while(|c| *c == '`').count();
    if ticks < 3 {
        return None;
    }
    let info = &trimmed[ticks..];
    // An info string holds no backtick: "```` ```json ````" is a code span, not a fence.
    (!info.contains('`')).then(|| "`".repeat(ticks))
}

/// The text of an ATX heading (`# Title`), without its marks.
fn heading_text(line: &str) -> Option<String> {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
        return None;
    }
    Some(
        line[hashes..]
            .trim()
            .trim_end_matches('#')
            .trim()
            .to_string(),
    )
}

/// A heading's id as mdBook and GitHub derive it: the text without markup, lower case,
/// letters, digits, `-` and `_` kept, spaces as `-`, the rest dropped.
fn heading_id(heading: &str) -> String {
    let text = strip_links(heading).replace('`', "");
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// `[text](target)` as `text`.
fn strip_links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find("](")
            .and_then(|mid| after[mid..].find(')').map(|end| (mid, mid + end)))
        {
            Some((mid, end)) => {
                out.push_str(&after[..mid]);
                rest = &after[end + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the inline links `[text](target)` on a line, outside code spans.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut prose = String::new();
    let mut in_code = false;
    let mut ticks = 0;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '`' {
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            if !in_code {
                in_code = true;
                ticks = run;
            } else if run == ticks {
                in_code = false;
            }
            prose.push(' ');
            i += run;
            continue;
        }
        prose.push(if in_code { ' ' } else { chars[i] });
        i += 1;
    }
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].trim();
        // `[x](target "title")`: the title is not part of the target.
        let target = target.split_whitespace().next().unwrap_or_default();
        if !target.is_empty() {
            targets.push(target.to_string());
        }
        rest = &after[end..];
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_ids_follow_mdbook() {
        assert_eq!(
            heading_id("Answers as data (`--output-schema`)"),
            "answers-as-data---output-schema"
        );
        assert_eq!(heading_id("`aintern chat`"), "aintern-chat");
        assert_eq!(
            heading_id("Undo, checkpoints and the plan"),
            "undo-checkpoints-and-the-plan"
        );
    }

    #[test]
    fn links_in_code_are_not_links() {
        let doc = Doc::parse(
            "# A\n\nsee [b](#b) and `[c](#c)`\n\n    [d](#d)\n\n```\n[e](#e)\n```\n\n## B c\n## B\n## B\n",
        );
        let targets: Vec<&str> = doc.links.iter().map(|l| l.target.as_str()).collect();
        assert_eq!(targets, vec!["#b"]);
        assert_eq!(doc.ids, vec!["a", "b-c", "b", "b-1"]);
    }

    #[test]
    fn a_broken_anchor_and_a_missing_file_are_problems() {
        let dir = std::env::temp_dir().join(format!("xtask-docs-{}", std::process::id()));
        let manual = dir.join("docs").join("manual");
        std::fs::create_dir_all(&manual).unwrap();
        std::fs::write(
            dir.join("README.md"),
            "# R\n[ok](docs/manual/a.md#one) [bad](docs/manual/a.md#two) [gone](nope.md)\n",
        )
        .unwrap();
        std::fs::write(dir.join("docs").join("ARCHITECTURE.md"), "# Map\n").unwrap();
        std::fs::write(manual.join("SUMMARY.md"), "# Summary\n- [A](a.md)\n").unwrap();
        std::fs::write(manual.join("a.md"), "# One\n[out](../../README.md)\n").unwrap();
        std::fs::write(manual.join("b.md"), "# Unlisted\n").unwrap();
        let problems = check(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let what: Vec<String> = problems
            .iter()
            .map(|p| format!("{}:{} {}", p.file, p.line, p.what))
            .collect();
        assert_eq!(what.len(), 4, "{what:#?}");
        assert!(what.iter().any(|w| w.contains("#two")), "{what:#?}");
        assert!(what.iter().any(|w| w.contains("nope.md")), "{what:#?}");
        assert!(
            what.iter().any(|w| w.contains("leaves the manual")),
            "{what:#?}"
        );
        assert!(
            what.iter().any(|w| w.contains("b.md is not listed")),
            "{what:#?}"
        );
    }
}
