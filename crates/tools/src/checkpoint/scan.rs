//! Reading the workspace into a checkpoint's entries: one walk, every regular file's bytes
//! put in the object store unless the previous checkpoint already holds them unchanged.

use super::store::{CheckpointError, Limits, Objects};
use crate::special::{kind_of, FileKind};
use crate::walk::walker;
use crate::workspace::Workspace;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// What a checkpoint holds for one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// A regular file whose bytes are the object `hash`.
    File {
        /// The SHA-256 of the bytes, in hex.
        hash: String,
        /// The permission bits.
        mode: u32,
        /// The size in bytes.
        size: u64,
        /// What the file's metadata was when it was read (to skip reading it again).
        #[serde(default)]
        stamp: Stamp,
    },
    /// A symbolic link (never followed) and what it points to.
    Link {
        /// The link's target, as written.
        target: String,
    },
    /// A folder.
    Folder {
        /// The permission bits.
        mode: u32,
    },
    /// Something that was there but is not kept, and why.
    NotKept {
        /// Why it is not kept.
        why: NotKept,
    },
}

/// Why a path a checkpoint saw is not kept (and so cannot be restored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum NotKept {
    /// A FIFO, socket or device: never opened.
    Special {
        /// The kind in words.
        kind: String,
    },
    /// A file larger than the limit.
    TooLarge {
        /// Its size.
        size: u64,
    },
    /// The file could not be read.
    Unreadable {
        /// Why.
        message: String,
    },
    /// The store's byte allowance for one checkpoint ran out before this file.
    OverAllowance,
}

impl std::fmt::Display for NotKept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotKept::Special { kind } => write!(f, "{kind}, never read"),
            NotKept::TooLarge { size } => write!(f, "too large to keep ({size} bytes)"),
            NotKept::Unreadable { message } => write!(f, "could not be read: {message}"),
            NotKept::OverAllowance => {
                write!(f, "not kept: the checkpoint's byte allowance ran out")
            }
        }
    }
}

/// A file's metadata as it was read: when all of it is the same later, so are its bytes
/// (as git's index assumes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// Modification time: seconds since the epoch and nanoseconds.
    pub mtime: (i64, i64),
    /// Status change time: seconds since the epoch and nanoseconds.
    pub ctime: (i64, i64),
    /// Inode number.
    pub ino: u64,
    /// Device number.
    pub dev: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        Stamp {
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            dev: meta.dev(),
        }
    }
}

impl Entry {
    /// Whether two entries are the same state of a path (contents, kind and mode; not
    /// when they were read).
    pub fn same_state(&self, other: &Entry) -> bool {
        match (self, other) {
            (
                Entry::File {
                    hash: a, mode: m, ..
                },
                Entry::File {
                    hash: b, mode: n, ..
                },
            ) => a == b && m == n,
            (Entry::Link { target: a }, Entry::Link { target: b }) => a == b,
            (Entry::Folder { mode: a }, Entry::Folder { mode: b }) => a == b,
            (Entry::NotKept { why: a }, Entry::NotKept { why: b }) => a == b,
            _ => false,
        }
    }
}

/// The entries read from a workspace.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    /// Each path (relative, `/`-separated) and what is there.
    pub(crate) entries: BTreeMap<String, Entry>,
    /// Whether the walk reached everything (not stopped at the entry limit).
    pub(crate) complete: bool,
    /// Paths left out: names that are not UTF-8, and secret locations.
    pub(crate) left_out: usize,
    /// Bytes newly put in the store.
    pub(crate) new_bytes: u64,
    /// Files read (the rest were known from the previous checkpoint).
    pub(crate) files_read: usize,
}

/// Read `workspace` into entries, reusing `previous`'s objects for files whose metadata is
/// unchanged.
pub(crate) fn scan(
    workspace: &Workspace,
    previous: Option<&BTreeMap<String, Entry>>,
    objects: &Objects,
    limits: &Limits,
) -> Result<Scanned, CheckpointError> {
    let secrets = Arc::new(AtomicUsize::new(0));
    let root = workspace.root();
    let mut out = Scanned {
        complete: true,
        ..Scanned::default()
    };
    for found in walker(workspace, root, &secrets).build() {
        let Ok(found) = found else {
            out.left_out += 1;
            continue;
        };
        if found.depth() == 0 {
            continue;
        }
        let Ok(relative) = found.path().strip_prefix(root) else {
            continue;
        };
        let Some(name) = relative.to_str().map(str::to_owned) else {
            out.left_out += 1;
            continue;
        };
        if out.entries.len() >= limits.max_entries {
            out.complete = false;
            break;
        }
        let Ok(meta) = std::fs::symlink_metadata(found.path()) else {
            continue;
        };
        let entry = match kind_of(&meta.file_type()) {
            FileKind::Folder => Entry::Folder {
                mode: meta.mode() & 0o7777,
            },
            FileKind::Symlink => match std::fs::read_link(found.path()) {
                Ok(target) => match target.to_str() {
                    Some(t) => Entry::Link { target: t.into() },
                    None => {
                        out.left_out += 1;
                        continue;
                    }
                },
                Err(e) => Entry::NotKept {
                    why: NotKept::Unreadable {
                        message: e.to_string(),
                    },
                },
            },
            FileKind::File => file_entry(
                workspace, relative, &name, &meta, previous, objects, limits, &mut out,
            ),
            other => Entry::NotKept {
                why: NotKept::Special {
                    kind: other.described().into(),
                },
            },
        };
        out.entries.insert(name, entry);
    }
    out.left_out += secrets.load(std::sync::atomic::Ordering::Relaxed);
    Ok(out)
}

/// The entry of the regular file `relative`: the previous checkpoint's when its metadata
/// is unchanged and its object still there, else its bytes read into the store.
#[allow(clippy::too_many_arguments)]
fn file_entry(
    workspace: &Workspace,
    relative: &Path,
    name: &str,
    meta: &std::fs::Metadata,
    previous: Option<&BTreeMap<String, Entry>>,
    objects: &Objects,
    limits: &Limits,
    out: &mut Scanned,
) -> Entry {
    let stamp = Stamp::of(meta);
    let mode = meta.mode() & 0o7777;
    if let Some(Entry::File {
        hash,
        size,
        stamp: was,
        ..
    }) = previous.and_then(|p| p.get(name))
    {
        if *was == stamp && *size == meta.len() && objects.has(hash) {
            return Entry::File {
                hash: hash.clone(),
                mode,
                size: *size,
                stamp,
            };
        }
    }
    if meta.len() > limits.max_file_bytes {
        return Entry::NotKept {
            why: NotKept::TooLarge { size: meta.len() },
        };
    }
    if out.new_bytes.saturating_add(meta.len()) > limits.max_new_bytes {
        return Entry::NotKept {
            why: NotKept::OverAllowance,
        };
    }
    let file = match workspace.open_file_beneath(name, relative) {
        Ok(f) => f,
        Err(e) => {
            return Entry::NotKept {
                why: NotKept::Unreadable {
                    message: e.to_string(),
                },
            }
        }
    };
    // The metadata of what was opened: the stamp and mode describe these bytes.
    let Ok(held) = file.metadata() else {
        return Entry::NotKept {
            why: NotKept::Unreadable {
                message: "its metadata could not be read".into(),
            },
        };
    };
    match objects.put(file, limits.max_file_bytes) {
        Ok(put) => {
            out.files_read += 1;
            out.new_bytes += put.new_bytes;
            Entry::File {
                hash: put.hash,
                mode: held.mode() & 0o7777,
                size: put.size,
                stamp: Stamp::of(&held),
            }
        }
        Err(why) => Entry::NotKept { why },
    }
}
