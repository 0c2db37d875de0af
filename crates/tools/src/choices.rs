//! The files and folders of a small workspace, as the values a path argument may take:
//! the call grammar then holds a model to names that exist (see
//! [`core_models::Tool::argument_choices`]).
//!
//! The walk is `list_dir`'s: ignore files honoured, secret locations left out, links not
//! followed. A name the model may not read is never offered.

use crate::walk::walker;
use crate::workspace::Workspace;
use core_models::ArgumentChoices;
use sandbox::Launcher;
use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// Which entries an argument names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entries {
    /// Regular files.
    Files,
    /// Folders, the workspace itself (`.`) first.
    Folders,
    /// Both.
    Any,
}

/// The `argument_choices` method of a tool (with a `launcher` field) whose `path`
/// argument names an existing entry of this kind.
macro_rules! path_argument_choices {
    ($kind:ident) => {
        fn argument_choices(
            &self,
            workspace: Option<&std::path::Path>,
            limit: usize,
        ) -> Option<core_models::ArgumentChoices> {
            $crate::choices::path_choices(
                workspace,
                &self.launcher,
                limit,
                "path",
                $crate::choices::Entries::$kind,
            )
        }
    };
}
pub(crate) use path_argument_choices;

/// `argument`'s values in the workspace at `root`: `None` without a workspace, when it
/// holds more than `limit` entries, or when there is no entry of the kind (a grammar
/// with no value would make every call impossible).
pub(crate) fn path_choices(
    root: Option<&Path>,
    launcher: &Launcher,
    limit: usize,
    argument: &str,
    kind: Entries,
) -> Option<ArgumentChoices> {
    let (files, folders) = entries(root?, launcher, limit)?;
    let values = match kind {
        Entries::Files => files,
        Entries::Folders => folders,
        Entries::Any => folders.into_iter().chain(files).collect(),
    };
    (!values.is_empty()).then(|| [(argument.to_string(), values)].into())
}

/// The files and the folders (`.` first) of the workspace at `root`, relative and in
/// name order; `None` when there are more than `limit` entries in all.
fn entries(root: &Path, launcher: &Launcher, limit: usize) -> Option<(Vec<String>, Vec<String>)> {
    if limit == 0 {
        return None;
    }
    let workspace = Workspace::with_launcher(root, launcher).ok()?;
    let secrets = Arc::new(AtomicUsize::new(0));
    let mut files = Vec::new();
    let mut folders = vec![".".to_string()];
    let mut seen = 0usize;
    for entry in walker(&workspace, workspace.root(), &secrets).build() {
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        seen += 1;
        if seen > limit {
            return None;
        }
        let Some(kind) = entry.file_type() else {
            continue;
        };
        let relative = workspace.relative(entry.path());
        if kind.is_dir() {
            folders.push(relative);
        } else if kind.is_file() {
            files.push(relative);
        }
    }
    Some((files, folders))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_workspace_offers_what_may_be_read() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path();
        let write = |path: &str| {
            let file = root.join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
            }
            std::fs::write(file, "x").unwrap_or_else(|e| panic!("{e}"));
        };
        for path in [
            "b.txt",
            "a.txt",
            "src/main.rs",
            "target/out.bin",
            ".gitignore",
        ] {
            write(path);
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap_or_else(|e| panic!("{e}"));
        let launcher = Launcher::default();
        let choices = |kind| path_choices(Some(root), &launcher, 100, "path", kind);
        let files = choices(Entries::Files).and_then(|c| c.get("path").cloned());
        assert_eq!(
            files,
            Some(vec![
                ".gitignore".into(),
                "a.txt".into(),
                "b.txt".into(),
                "src/main.rs".into()
            ]),
            "ignored files are not offered"
        );
        let folders = choices(Entries::Folders).and_then(|c| c.get("path").cloned());
        assert_eq!(folders, Some(vec![".".into(), "src".into()]));
        let any = choices(Entries::Any).and_then(|c| c.get("path").cloned());
        assert_eq!(any.map(|v| v.len()), Some(6), "2 folders and 4 files");
        assert!(
            path_choices(Some(root), &launcher, 4, "path", Entries::Files).is_none(),
            "too many"
        );
        assert!(
            path_choices(Some(root), &launcher, 0, "path", Entries::Files).is_none(),
            "off"
        );
        assert!(path_choices(None, &launcher, 100, "path", Entries::Files).is_none());
        let empty = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert!(path_choices(Some(empty.path()), &launcher, 100, "path", Entries::Files).is_none());
    }
}
