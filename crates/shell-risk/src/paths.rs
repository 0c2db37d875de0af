//! Whether a path operand stays inside the workspace.
//!
//! Lexically, always: not absolute, and joined to the call's folder its `..` never climbs
//! above the workspace root. When the workspace is known, also on disk: the path (or, when
//! it does not exist, its nearest existing ancestor, reached through the same components)
//! is canonicalized and must stay inside the canonical workspace, so a repository symlink
//! `docs -> /etc` makes `docs/passwd` (and `docs/../x`) outside.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Most paths checked on disk for one command line; beyond that the line is not safe.
const MAX_DISK_CHECKS: usize = 4096;

/// Where a command runs: the workspace-relative folder and, when known, the workspace.
pub(super) struct Place {
    /// The call's folder, as normalized components below the workspace root.
    cwd: Vec<String>,
    /// The canonical workspace root, when known.
    root: Option<PathBuf>,
    /// Disk checks still allowed.
    budget: Cell<usize>,
    /// Verdicts on disk kept for the rest of the line, by the path they are about (the
    /// git judge's on a repository).
    pub(super) verdicts: RefCell<HashMap<PathBuf, Option<String>>>,
}

impl Place {
    /// The workspace root as the call's folder; the workspace, when known, is canonicalized.
    pub(super) fn at_root(workspace: Option<&Path>) -> Place {
        let root = workspace.map(|w| std::fs::canonicalize(w).unwrap_or_else(|_| w.to_path_buf()));
        Place {
            cwd: Vec::new(),
            root,
            budget: Cell::new(MAX_DISK_CHECKS),
            verdicts: RefCell::new(HashMap::new()),
        }
    }

    /// The canonical workspace root, when known.
    pub(super) fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The call's folder with `dirs` below it (as given), when the workspace is known.
    pub(super) fn folder(&self, dirs: &[&str]) -> Option<PathBuf> {
        let mut full = self.root.clone()?;
        full.extend(&self.cwd);
        full.extend(dirs);
        Some(full)
    }

    /// The place of a call in `cwd` (relative to the workspace); `Err` says why that
    /// folder is itself outside the workspace.
    pub(super) fn new(cwd: Option<&str>, workspace: Option<&Path>) -> Result<Place, String> {
        let mut place = Place::at_root(workspace);
        let cwd = cwd.map(str::trim).unwrap_or_default();
        if cwd.is_empty() {
            return Ok(place);
        }
        let components = lexical(&[], cwd).map_err(|why| format!("the folder (cwd) {why}"))?;
        place
            .on_disk(&[], cwd)
            .map_err(|why| format!("the folder (cwd) {why}"))?;
        place.cwd = components;
        Ok(place)
    }

    /// Check one path operand, relative to the call's folder.
    pub(super) fn check(&self, path: &str) -> Result<(), String> {
        self.check_below(&[], path)
    }

    /// Check one path operand relative to `dirs` below the call's folder (`git -C dir`).
    pub(super) fn check_below(&self, dirs: &[&str], path: &str) -> Result<(), String> {
        let mut base = self.cwd.clone();
        for d in dirs {
            base = lexical(&base, d)?;
        }
        lexical(&base, path)?;
        let mut prefix: Vec<&str> = self.cwd.iter().map(String::as_str).collect();
        prefix.extend_from_slice(dirs);
        self.on_disk(&prefix, path)
    }

    /// Whether `path` (relative to the call's folder) is a folder on disk; `false` when the
    /// workspace is not known.
    pub(super) fn is_folder(&self, path: &str) -> bool {
        let Some(root) = &self.root else {
            return false;
        };
        let mut full = root.clone();
        for c in &self.cwd {
            full.push(c);
        }
        full.push(path);
        full.is_dir()
    }

    /// Where the path leads on disk, when the workspace is known.
    fn on_disk(&self, base: &[&str], path: &str) -> Result<(), String> {
        let Some(root) = &self.root else {
            return Ok(());
        };
        let left = self.budget.get();
        if left == 0 {
            return Err("is one path too many to check".to_string());
        }
        self.budget.set(left - 1);
        let mut full = root.clone();
        for b in base {
            full.push(b);
        }
        full.push(path);
        // The nearest existing ancestor, reached through the same components.
        let mut probe: &Path = &full;
        loop {
            if std::fs::symlink_metadata(probe).is_ok() {
                break;
            }
            match probe.parent() {
                Some(parent) => probe = parent,
                None => return Ok(()),
            }
        }
        match std::fs::canonicalize(probe) {
            Ok(real) if real.starts_with(root) => Ok(()),
            Ok(real) => Err(format!(
                "leads outside the workspace (to '{}')",
                real.display()
            )),
            Err(_) => Err("is a link the judge cannot follow".to_string()),
        }
    }
}

/// `path` joined to `base` with `.` and `..` resolved lexically; `Err` when it is absolute
/// or climbs above the workspace root.
fn lexical(base: &[String], path: &str) -> Result<Vec<String>, String> {
    if path.starts_with('/') {
        return Err("is absolute (outside the workspace)".to_string());
    }
    let mut parts = base.to_vec();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err("leads outside the workspace".to_string());
                }
            }
            other => parts.push(other.to_string()),
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_paths_stay_inside() {
        let place = Place::new(None, None).unwrap_or_else(|e| panic!("{e}"));
        assert!(place.check("a/b").is_ok());
        assert!(place.check("a/../b").is_ok());
        assert!(place.check("").is_ok());
        assert!(place.check(".").is_ok());
        assert!(place.check("..").is_err());
        assert!(place.check("a/../../b").is_err());
        assert!(place.check("/etc/passwd").is_err());
        let sub = Place::new(Some("src"), None).unwrap_or_else(|e| panic!("{e}"));
        assert!(sub.check("../x").is_ok());
        assert!(sub.check("../../x").is_err());
        assert!(sub.check_below(&[".."], "x").is_ok());
        assert!(sub.check_below(&["../.."], "x").is_err());
        assert!(Place::new(Some(".."), None).is_err());
        assert!(Place::new(Some("/tmp"), None).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_workspace_are_outside() {
        let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(outside.path().join("secret"), "s").unwrap_or_else(|e| panic!("{e}"));
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(ws.path().join("src")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(outside.path(), ws.path().join("docs"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("/nonexistent/x", ws.path().join("dangling"))
            .unwrap_or_else(|e| panic!("{e}"));
        let place = Place::new(None, Some(ws.path())).unwrap_or_else(|e| panic!("{e}"));
        assert!(place.check("src").is_ok());
        assert!(place.check("src/new-file").is_ok());
        assert!(place.check("docs").is_err());
        assert!(place.check("docs/secret").is_err());
        assert!(place.check("docs/missing").is_err());
        assert!(place.check("docs/../x").is_err());
        assert!(place.check("dangling").is_err());
        assert!(Place::new(Some("docs"), Some(ws.path())).is_err());
        let in_src = Place::new(Some("src"), Some(ws.path())).unwrap_or_else(|e| panic!("{e}"));
        assert!(in_src.check("../docs/secret").is_err());
        assert!(in_src.check("../src").is_ok());
    }
}
