//! Checkpoints of a workspace: its files as they were before the agent changed them, kept
//! in a store of AIntern's own, and restored on request.
//!
//! # Why a store of our own, not a shadow git repository
//! A checkpoint has to work the same with and without git in the workspace, and must
//! never run anything the workspace controls. A shadow repository (`GIT_DIR` elsewhere,
//! the workspace as its work tree) would still read the workspace's `.gitattributes`
//! (filters, text conversion) and depend on a `git` program being there; a nested
//! repository or an include in a config is untrusted input we would have to neutralise
//! again. Content-addressed copies need none of that: every regular file's bytes go once
//! to `objects/` under their SHA-256, and a checkpoint is a manifest naming, for each path,
//! its kind, mode and object. Unchanged files cost a `stat`: a file whose size, times and
//! inode match the previous checkpoint keeps its object without being read again.
//!
//! # What a checkpoint holds, and what it leaves out
//! The same walk as `list_dir` and `search_files` ([`crate::walk`]): ignore files honoured,
//! `.git` folders (the workspace's own, and nested ones) never entered, secret locations
//! left out, links recorded as links and never followed. FIFOs, sockets and devices are
//! noted and never opened; a file over [`Limits::max_file_bytes`] is noted and not kept;
//! names that are not UTF-8 are left out (and so never touched by a restore). A walk stops
//! at [`Limits::max_entries`]; such a checkpoint is marked incomplete, and a restore to it
//! removes nothing (what it does not list may simply not have been reached).
//!
//! # Restoring
//! [`Checkpoints::plan`] compares a checkpoint with the workspace as it is now and with the
//! state the agent left it in (the latest checkpoint taken after a request): a path whose
//! current state is not what the agent left was changed by someone else since, and is a
//! [`Conflict`], reported and left alone unless the caller overwrites it explicitly.
//! The plan carries a diff for text files. [`Checkpoints::apply`] first records the
//! workspace as it is (so a rewind can itself be undone), then changes files through the
//! workspace's own handles: beneath the root, never through a link, each file replaced
//! by rename, each object's bytes checked against its hash as they are copied.
//!
//! # The store
//! `DATA/checkpoints/KEY/` (KEY from the workspace's canonical path), private (0700 and
//! 0600): `workspace` (the path, checked on open), `points/ID.json`, `objects/AB/CDEF…`.
//! Past [`Limits::budget_bytes`], the oldest checkpoints go first and objects no remaining
//! checkpoint names are removed.

mod plan;
mod port;
mod scan;
mod store;

pub use plan::{Change, Conflict, RestorePlan, Restored, Since, Step};
pub use port::StoreCheckpointer;
pub use scan::{Entry, NotKept};
pub use store::{Checkpoint, CheckpointError, Checkpoints, Limits, Moment, RequestRecord, Summary};
