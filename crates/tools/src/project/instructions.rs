//! AGENTS.md: the instructions a project (and the user) gives every agent.
//!
//! Read in this order, each once: the user's own (`AGENTS.md` in aintern's configuration
//! folder), then the repository's from the root of the git repository enclosing the
//! workspace down to the workspace itself — root first, nearest last, so that nearer
//! instructions are read later and take precedence. Without an enclosing repository only
//! the workspace's own is read. Each is read beneath the folder it belongs to (the user's
//! folder, the repository's root): a file that is a link leading out is left out, with a
//! note.

use super::{read_beneath, shown_path};
use std::path::{Path, PathBuf};

/// The file name.
pub const INSTRUCTIONS_FILE: &str = "AGENTS.md";
/// Most bytes of instructions used, all files together; the rest is cut (and reported
/// once, in [`Instructions::notes`]).
pub const INSTRUCTIONS_CAP: usize = 32 * 1024;

/// The instructions found for a workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    /// The files used, absolute, in the order they are read.
    pub sources: Vec<PathBuf>,
    /// Each file's text, in the same order, within [`INSTRUCTIONS_CAP`] in total.
    pub texts: Vec<String>,
    /// Whether the cap cut them.
    pub truncated: bool,
    /// What the user should know (the cut, files left out).
    pub notes: Vec<String>,
}

impl Instructions {
    /// The instructions of `workspace` and of the user's folder `user_dir`.
    pub fn discover(workspace: &Path, user_dir: Option<&Path>) -> Self {
        let mut found = Instructions::default();
        if let Some(dir) = user_dir {
            found.add(dir, Path::new(INSTRUCTIONS_FILE));
        }
        let root = match repository_root(workspace) {
            // Git itself refuses a repository that belongs to another user (its
            // `safe.directory` check): its instructions are not the user's project's.
            Some(root) if root != workspace && !owned_by_us(root) => {
                found.notes.push(format!(
                    "AGENTS.md files of {} left out: that repository belongs to another user",
                    root.display()
                ));
                workspace
            }
            Some(root) => root,
            None => workspace,
        };
        let mut folder = PathBuf::new();
        found.add(root, &folder.join(INSTRUCTIONS_FILE));
        if let Ok(below) = workspace.strip_prefix(root) {
            for part in below.components() {
                folder.push(part);
                found.add(root, &folder.join(INSTRUCTIONS_FILE));
            }
        }
        found
    }

    /// Read `relative` beneath `base`, within what is left of the cap.
    fn add(&mut self, base: &Path, relative: &Path) {
        let path = base.join(relative);
        if self.truncated || self.sources.contains(&path) {
            return;
        }
        let used: usize = self.texts.iter().map(String::len).sum();
        let left = INSTRUCTIONS_CAP - used;
        match read_beneath(base, relative, left) {
            Ok(None) => {}
            Ok(Some((text, cut))) => {
                if cut {
                    self.truncated = true;
                    self.notes.push(format!(
                        "the AGENTS.md instructions are longer than {} KiB: {} and any \
                         after it are cut",
                        INSTRUCTIONS_CAP / 1024,
                        path.display()
                    ));
                }
                if !text.trim().is_empty() {
                    self.sources.push(path);
                    self.texts.push(text);
                }
            }
            Err(e) => self.notes.push(format!("AGENTS.md left out: {e}")),
        }
    }

    /// Whether none were found.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The instructions as the system prompt shows them; `None` when there are none.
    pub fn prompt(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut out = String::from(
            "Project instructions from AGENTS.md files, the user's own first, then the \
             repository's from its root to the working folder (later ones take \
             precedence). Follow them in your work; they cannot change your permissions.",
        );
        for (path, text) in self.sources.iter().zip(&self.texts) {
            let parent = path.parent().unwrap_or(path);
            let name = shown_path(path, parent.parent().unwrap_or(parent));
            out.push_str(&format!("\n\n## {}\n{}", name.display(), text.trim_end()));
        }
        Some(out)
    }
}

/// Whether `dir` belongs to the user aintern runs as (one that cannot be looked at does
/// not).
fn owned_by_us(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.uid() == nix::unistd::geteuid().as_raw())
}

/// The root of the git repository enclosing `workspace` (the nearest folder, the
/// workspace itself included, that has a `.git`).
fn repository_root(workspace: &Path) -> Option<&Path> {
    workspace
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
}
