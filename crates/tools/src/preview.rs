//! What a write or an edit would change, as a unified diff against the file as it is now:
//! what a person approves. Reading only, through the same workspace checks as the tools
//! (no escape through links, no secret locations).

use crate::text_file::read_text;
use crate::workspace::Workspace;
use core_models::FileChange;
use sandbox::Launcher;
use similar::{ChangeTag, TextDiff};
use std::path::Path;
use std::time::Duration;

/// Largest file (either side) compared line by line.
const DIFF_INPUT_CAP: usize = 2 * 1024 * 1024;
/// Most lines of diff kept.
const DIFF_LINES_CAP: usize = 2_000;
/// Longest time spent finding the smallest diff (a larger one is shown after that).
const DIFF_DEADLINE: Duration = Duration::from_millis(300);

/// The change from the file at `path` (relative to `root`) to what `after` makes of it:
/// `after` gets the current text (`None` for a file that does not exist) and returns the
/// new text, or `None` when the call would fail (an edit whose search text is not there
/// once), which previews nothing.
pub(crate) fn file_change(
    root: Option<&Path>,
    launcher: &Launcher,
    path: &str,
    after: impl FnOnce(Option<&str>) -> Option<String>,
) -> Option<FileChange> {
    let workspace = Workspace::with_launcher(root?, launcher).ok()?;
    // A file that is there is read through the workspace's checks; one that is not (or
    // whose folder is not there yet) is new.
    let before = match workspace.existing_target(path) {
        Ok(target) => match read_text(&target, path) {
            Ok(text) => Some(text),
            Err(why) => return Some(unreadable(path, why)),
        },
        // Nothing there yet: the diff is the call's own text, nothing is read.
        Err(_) if !exists_beneath(&workspace, path) => None,
        Err(_) => return None,
    };
    let after = after(before.as_deref())?;
    Some(compare(path, before.as_deref(), &after))
}

/// Whether something is at `path` in the workspace (looked at without following links).
fn exists_beneath(workspace: &Workspace, path: &str) -> bool {
    std::fs::symlink_metadata(workspace.root().join(path)).is_ok()
}

/// A file that exists but cannot be shown as text.
fn unreadable(path: &str, why: String) -> FileChange {
    FileChange {
        path: path.to_string(),
        exists: true,
        diff: String::new(),
        lines_added: 0,
        lines_removed: 0,
        note: Some(why),
    }
}

/// The unified diff from `before` (absent: a new file) to `after`.
pub(crate) fn compare(path: &str, before: Option<&str>, after: &str) -> FileChange {
    let old = before.unwrap_or_default();
    let mut change = FileChange {
        path: path.to_string(),
        exists: before.is_some(),
        diff: String::new(),
        lines_added: 0,
        lines_removed: 0,
        note: None,
    };
    if old.len() > DIFF_INPUT_CAP || after.len() > DIFF_INPUT_CAP {
        change.note = Some(format!(
            "too large to compare ({} bytes now, {} bytes after)",
            old.len(),
            after.len()
        ));
        return change;
    }
    let diff = TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, after);
    for c in diff.iter_all_changes() {
        match c.tag() {
            ChangeTag::Insert => change.lines_added += 1,
            ChangeTag::Delete => change.lines_removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let from = if before.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_string()
    };
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&from, &format!("b/{path}"))
        .to_string();
    let total = text.lines().count();
    if total > DIFF_LINES_CAP {
        let mut kept = String::new();
        for line in text.lines().take(DIFF_LINES_CAP) {
            kept.push_str(line);
            kept.push('\n');
        }
        change.diff = kept;
        change.note = Some(format!("diff cut at {DIFF_LINES_CAP} of {total} lines"));
    } else {
        change.diff = text;
    }
    change
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_counts_lines_and_names_new_files() {
        let c = compare("a.txt", Some("one\ntwo\nthree\n"), "one\n2\nthree\nfour\n");
        assert!(c.exists);
        assert_eq!((c.lines_added, c.lines_removed), (2, 1));
        assert!(
            c.diff.starts_with("--- a/a.txt\n+++ b/a.txt\n@@"),
            "{}",
            c.diff
        );
        assert!(c.diff.contains("\n-two\n+2\n"), "{}", c.diff);

        let c = compare("new.txt", None, "hello\n");
        assert!(!c.exists);
        assert_eq!((c.lines_added, c.lines_removed), (1, 0));
        assert!(
            c.diff.starts_with("--- /dev/null\n+++ b/new.txt\n"),
            "{}",
            c.diff
        );

        let c = compare("same.txt", Some("x\n"), "x\n");
        assert_eq!(
            (c.lines_added, c.lines_removed, c.diff.as_str()),
            (0, 0, "")
        );
    }

    #[test]
    fn long_diffs_are_cut_and_say_so() {
        let after: String = (0..5_000).map(|i| format!("line {i}\n")).collect();
        let c = compare("big.txt", None, &after);
        assert_eq!(c.lines_added, 5_000);
        assert_eq!(c.diff.lines().count(), DIFF_LINES_CAP);
        assert!(
            c.note.as_deref().is_some_and(|n| n.contains("cut")),
            "{c:?}"
        );
        let c = compare("huge.txt", None, &"x".repeat(DIFF_INPUT_CAP + 1));
        assert!(c.diff.is_empty() && c.note.is_some());
    }
}
