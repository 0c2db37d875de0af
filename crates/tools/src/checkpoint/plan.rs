//! What a restore changes, and changing it.

use super::scan::Entry;
use super::store::{Checkpoint, Objects};
use crate::atomic::replace_atomically;
use crate::special::{kind_of, FileKind};
use crate::workspace::{Target, Workspace};
use cap_std::fs::{OpenOptions, OpenOptionsExt};
use core_models::CancellationToken;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;

/// The largest file a plan shows a diff of.
const DIFF_CAP: u64 = 256 * 1024;

/// What a restore does to one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    /// Put the checkpoint's bytes (object `hash`) and mode there.
    Write {
        /// The object.
        hash: String,
        /// The mode.
        mode: u32,
        /// Whether something is there now.
        replaces: bool,
    },
    /// Make it the symbolic link to `target`.
    Link {
        /// What the link points to.
        target: String,
    },
    /// Make it a folder with `mode`.
    Folder {
        /// The mode.
        mode: u32,
    },
    /// Remove it (it did not exist at the checkpoint).
    Remove {
        /// Whether it is a folder (removed only once empty).
        folder: bool,
    },
}

/// One path's change, with a diff when it is text.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// The path, relative to the workspace.
    pub path: String,
    /// The change.
    pub change: Change,
    /// A unified diff from now to the checkpoint, for text files.
    pub diff: Option<String>,
}

impl Step {
    /// The change in a few words ("restored", "removed", …).
    pub fn verb(&self) -> &'static str {
        match &self.change {
            Change::Write { replaces: true, .. } => "restored",
            Change::Write {
                replaces: false, ..
            } => "brought back",
            Change::Link { .. } => "link restored",
            Change::Folder { .. } => "folder restored",
            Change::Remove { .. } => "removed",
        }
    }
}

/// A path someone else changed after the agent's last request: restoring it would
/// overwrite their change.
#[derive(Debug, Clone, Serialize)]
pub struct Conflict {
    /// What restoring it would do.
    pub step: Step,
}

/// What restoring a checkpoint changes.
#[derive(Debug, Clone, Serialize)]
pub struct RestorePlan {
    /// The checkpoint restored to.
    pub to: u64,
    /// The changes, in the order they are made.
    pub steps: Vec<Step>,
    /// Changes that would overwrite what someone else changed since.
    pub conflicts: Vec<Conflict>,
    /// Paths the checkpoint saw but did not keep, and why: they cannot be restored.
    pub lost: Vec<(String, String)>,
}

impl RestorePlan {
    /// Whether it changes nothing and reports nothing.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty() && self.conflicts.is_empty() && self.lost.is_empty()
    }

    /// The diff of every step and conflict, for a person to read.
    pub fn diff(&self) -> String {
        let mut out = String::new();
        for step in self
            .steps
            .iter()
            .chain(self.conflicts.iter().map(|c| &c.step))
        {
            match &step.diff {
                Some(d) => out.push_str(d),
                None => out.push_str(&format!("{}: {}\n", step.path, step.verb())),
            }
        }
        out
    }
}

/// What a restore did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Restored {
    /// The checkpoint of the workspace as it was just before (to undo the restore).
    pub before_restore: u64,
    /// The paths changed, with what was done.
    pub changed: Vec<(String, &'static str)>,
    /// Paths that could not be changed, and why.
    pub failed: Vec<(String, String)>,
    /// Conflicting paths left as they are.
    pub kept: Vec<String>,
}

/// The plan to take `now` back to `target`; `left` is the state the agent left (a path
/// whose state now differs from it was changed by someone else).
pub(crate) fn plan(
    target: &Checkpoint,
    left: Option<&Checkpoint>,
    now: &BTreeMap<String, Entry>,
    objects: &Objects,
) -> RestorePlan {
    let paths: BTreeSet<&String> = target.entries.keys().chain(now.keys()).collect();
    let mut out = RestorePlan {
        to: target.id,
        steps: Vec::new(),
        conflicts: Vec::new(),
        lost: Vec::new(),
    };
    let mut removals = Vec::new();
    for path in paths {
        let (want, have) = (target.entries.get(path), now.get(path));
        if same(want, have) {
            continue;
        }
        let change = match want {
            // Not listed by an incomplete walk: unknown, so left alone.
            None if !target.complete => continue,
            None => Change::Remove {
                folder: matches!(have, Some(Entry::Folder { .. })),
            },
            Some(Entry::NotKept { why }) => {
                out.lost.push((path.clone(), why.to_string()));
                continue;
            }
            Some(Entry::File { hash, mode, .. }) => Change::Write {
                hash: hash.clone(),
                mode: *mode,
                replaces: have.is_some(),
            },
            Some(Entry::Link { target }) => Change::Link {
                target: target.clone(),
            },
            Some(Entry::Folder { mode }) => Change::Folder { mode: *mode },
        };
        let step = Step {
            path: path.clone(),
            diff: text_diff(path, have, want, objects),
            change,
        };
        let theirs = left.is_some_and(|l| !same(l.entries.get(path), have));
        if theirs {
            out.conflicts.push(Conflict { step });
        } else if matches!(step.change, Change::Remove { .. }) {
            removals.push(step);
        } else {
            out.steps.push(step);
        }
    }
    // Removals first, deepest first (a folder after what was in it); then the rest in
    // path order (a folder before what goes in it).
    removals.reverse();
    removals.append(&mut out.steps);
    out.steps = removals;
    out
}

/// A path that is not as it was at a checkpoint: what became of it since, with a diff from
/// then to now when both sides are text.
#[derive(Debug, Clone, Serialize)]
pub struct Since {
    /// The path, relative to the workspace.
    pub path: String,
    /// What became of it: "created", "changed" or "removed" (a folder's: "folder created",
    /// "folder removed").
    pub what: &'static str,
    /// A unified diff from the checkpoint to now, for text files.
    pub diff: Option<String>,
}

/// The paths whose state `now` differs from `then`'s, in path order.
pub(crate) fn since(
    then: &Checkpoint,
    now: &BTreeMap<String, Entry>,
    objects: &Objects,
) -> Vec<Since> {
    let paths: BTreeSet<&String> = then.entries.keys().chain(now.keys()).collect();
    let mut out = Vec::new();
    for path in paths {
        let (was, is) = (then.entries.get(path), now.get(path));
        if same(was, is) || (was.is_none() && !then.complete) {
            continue;
        }
        let folder = |e: Option<&Entry>| matches!(e, Some(Entry::Folder { .. }));
        let what = match (was, is) {
            (None, _) if folder(is) => "folder created",
            (None, _) => "created",
            (_, None) if folder(was) => "folder removed",
            (_, None) => "removed",
            // A folder whose mode changed says nothing a person needs here.
            _ if folder(was) && folder(is) => continue,
            _ => "changed",
        };
        out.push(Since {
            path: path.clone(),
            what,
            diff: text_diff(path, was, is, objects),
        });
    }
    out
}

fn same(a: Option<&Entry>, b: Option<&Entry>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same_state(b),
        _ => false,
    }
}

/// A unified diff from `have` to `want` when both sides are text (or absent).
fn text_diff(
    path: &str,
    have: Option<&Entry>,
    want: Option<&Entry>,
    objects: &Objects,
) -> Option<String> {
    let text = |e: Option<&Entry>| -> Option<String> {
        match e {
            None => Some(String::new()),
            Some(Entry::File { hash, size, .. }) if *size <= DIFF_CAP => {
                String::from_utf8(objects.read(hash, DIFF_CAP).ok()?).ok()
            }
            _ => None,
        }
    };
    let (old, new) = (text(have)?, text(want)?);
    if old == new {
        return None;
    }
    let diff = similar::TextDiff::from_lines(&old, &new);
    let (from, to) = (
        if have.is_some() { path } else { "/dev/null" },
        if want.is_some() { path } else { "/dev/null" },
    );
    Some(
        diff.unified_diff()
            .context_radius(3)
            .header(from, to)
            .to_string(),
    )
}

/// Carry out `plan` in `workspace`.
pub(crate) fn apply(
    workspace: &Workspace,
    objects: &Objects,
    plan: &RestorePlan,
    overwrite_conflicts: bool,
    before_restore: u64,
    token: &CancellationToken,
) -> Restored {
    let mut out = Restored {
        before_restore,
        ..Restored::default()
    };
    let mut steps: Vec<&Step> = plan.steps.iter().collect();
    if overwrite_conflicts {
        steps.extend(plan.conflicts.iter().map(|c| &c.step));
        // Removals first again, deepest first.
        steps.sort_by(|a, b| {
            let rank = |s: &Step| !matches!(s.change, Change::Remove { .. });
            rank(a).cmp(&rank(b)).then_with(|| match rank(a) {
                false => b.path.cmp(&a.path),
                true => a.path.cmp(&b.path),
            })
        });
    } else {
        out.kept = plan.conflicts.iter().map(|c| c.step.path.clone()).collect();
    }
    for step in steps {
        if token.is_cancelled() {
            out.failed.push((step.path.clone(), "cancelled".into()));
            continue;
        }
        match apply_step(workspace, objects, step, token) {
            Ok(()) => out.changed.push((step.path.clone(), step.verb())),
            Err(why) => out.failed.push((step.path.clone(), why)),
        }
    }
    out
}

fn apply_step(
    workspace: &Workspace,
    objects: &Objects,
    step: &Step,
    token: &CancellationToken,
) -> Result<(), String> {
    let path = step.path.as_str();
    let create = !matches!(step.change, Change::Remove { .. });
    let target = workspace
        .entry_target(path, create)
        .map_err(|e| e.to_string())?;
    match &step.change {
        Change::Remove { .. } => clear(&target, path),
        Change::Write { hash, mode, .. } => {
            let bytes = objects.read(hash, u64::MAX)?;
            // A link, a folder or a special file in the way goes first; so does a file
            // the agent made read-only (replacing keeps the old mode otherwise).
            if occupant(&target).is_some_and(|k| k != FileKind::File) || read_only(&target) {
                clear(&target, path)?;
            }
            replace_atomically(&target, path, |f| f.write_all(&bytes), token)?;
            set_mode(&target, path, *mode, false)
        }
        Change::Link { target: to } => {
            clear(&target, path)?;
            target
                .dir
                .symlink_contents(to, &target.name)
                .map_err(|e| format!("cannot make the link '{path}': {e}"))
        }
        Change::Folder { mode } => {
            if occupant(&target) != Some(FileKind::Folder) {
                clear(&target, path)?;
                target
                    .dir
                    .create_dir(&target.name)
                    .map_err(|e| format!("cannot make the folder '{path}': {e}"))?;
            }
            set_mode(&target, path, *mode, true)
        }
    }
}

/// What kind of entry is at the target now (not following a link).
fn occupant(target: &Target) -> Option<FileKind> {
    target
        .dir
        .symlink_metadata(&target.name)
        .ok()
        .map(|m| kind_of(&m.file_type()))
}

fn read_only(target: &Target) -> bool {
    use cap_std::fs::MetadataExt;
    target
        .dir
        .symlink_metadata(&target.name)
        .is_ok_and(|m| m.is_file() && m.mode() & 0o200 == 0)
}

/// Remove whatever is at the target (a folder only when empty).
fn clear(target: &Target, path: &str) -> Result<(), String> {
    let removed = match occupant(target) {
        None => return Ok(()),
        Some(FileKind::Folder) => target.dir.remove_dir(&target.name),
        Some(_) => target.dir.remove_file(&target.name),
    };
    removed.map_err(|e| match e.raw_os_error() {
        Some(libc_enotempty) if libc_enotempty == nix::errno::Errno::ENOTEMPTY as i32 => {
            format!("'{path}' is a folder that still holds files the checkpoint does not list")
        }
        _ => format!("cannot remove '{path}': {e}"),
    })
}

/// Give the entry at the target `mode`, on a handle opened without following a link.
fn set_mode(target: &Target, path: &str, mode: u32, folder: bool) -> Result<(), String> {
    let mut flags = nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK;
    if folder {
        flags |= nix::fcntl::OFlag::O_DIRECTORY;
    }
    let file = target
        .dir
        .open_with(
            &target.name,
            OpenOptions::new().read(true).custom_flags(flags.bits()),
        )
        .map_err(|e| format!("cannot set the mode of '{path}': {e}"))?
        .into_std();
    file.set_permissions(std::fs::Permissions::from_mode(mode & 0o1777))
        .map_err(|e| format!("cannot set the mode of '{path}': {e}"))
}
