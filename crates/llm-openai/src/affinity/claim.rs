//! Slot claims: clients on one machine agree which of a llama-server's slots each is using.
//!
//! llama-server lets any request take any idle slot. Two `aintern` processes of the same
//! user (scripts that run `exec` once per step, several at once) would otherwise pick the
//! same idle slot, and one would overwrite the other's cache; or one would take a slot the
//! moment its reply ended, before the process whose reply it was could save it. A client
//! that pins a request to a slot therefore claims the slot first: it holds an exclusive
//! advisory lock (`flock`) on a file named after the server and the slot, from before the
//! request until the slot's state is saved, and a slot another client holds is not taken.
//! The lock goes with the process: one that dies leaves no claim behind.
//!
//! The lock files live in a folder only the user can enter: `$XDG_RUNTIME_DIR/aintern-slots`
//! when that is set, else `aintern-<uid>-slots` in the temporary folder, created with mode
//! 0700 and used only while it is a folder (not a link) the user owns that no one else can
//! enter. Claims only spare work: when the folder cannot be used, or a lock cannot be
//! taken for any reason but another client's claim, requests are pinned as before, with
//! no claim. Clients on other machines, or of other users, do not see these claims.
//!
//! The same folder records which state each of the files slots are saved in holds (see
//! [`super::files`]).

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where one client's claims are taken: the folder and the server they are for.
#[derive(Debug)]
pub(crate) struct Claims {
    /// The claims folder, when it can be used.
    dir: Option<PathBuf>,
    /// The server's identity in file names: a hash of its base URL.
    server: u64,
}

/// A slot claimed: released when dropped (or when the process ends).
#[derive(Debug)]
pub(crate) struct Claim {
    /// The locked file; closing it releases the lock.
    _file: File,
}

/// What came of trying to claim a slot.
#[derive(Debug)]
pub(crate) enum Claimed {
    /// The slot is this client's until the claim is dropped.
    Yes(Claim),
    /// Another client holds it.
    Taken,
    /// Claims cannot be taken here: the slot is used without one.
    Unavailable,
}

impl Claims {
    /// Claims on the server at `base_url`, in `dir` when given, else in the user's claims
    /// folder (see the module documentation); none when that folder cannot be used: `dir`
    /// must be a folder (not a link) of this user that no one else can enter.
    pub(crate) fn new(base_url: &str, dir: Option<&Path>) -> Self {
        let dir = match dir {
            Some(dir) => user()
                .is_some_and(|uid| private(dir, uid))
                .then(|| dir.to_path_buf()),
            None => claims_dir(),
        };
        if dir.is_none() {
            tracing::debug!("no folder for slot claims: slots are used unclaimed");
        }
        Claims {
            dir,
            server: super::fnv1a(base_url.trim_end_matches('/').as_bytes()),
        }
    }

    /// No claims: slots are used unclaimed.
    pub(crate) fn none() -> Self {
        Claims {
            dir: None,
            server: 0,
        }
    }

    /// Whether claims can be taken.
    pub(crate) fn available(&self) -> bool {
        self.dir.is_some()
    }

    /// The claims folder, when claims can be taken.
    pub(crate) fn folder(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The server's identity in file names: a hash of its base URL.
    pub(crate) fn server(&self) -> u64 {
        self.server
    }

    /// Try to claim `slot`, without waiting.
    pub(crate) fn try_claim(&self, slot: u32) -> Claimed {
        let Some(dir) = &self.dir else {
            return Claimed::Unavailable;
        };
        let path = dir.join(format!("{:016x}-{slot}.lock", self.server));
        let file = match OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => file,
            Err(e) => {
                tracing::debug!(error = %e, slot, "a slot claim could not be opened");
                return Claimed::Unavailable;
            }
        };
        match file.try_lock() {
            Ok(()) => Claimed::Yes(Claim { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Claimed::Taken,
            Err(std::fs::TryLockError::Error(e)) => {
                tracing::debug!(error = %e, slot, "a slot claim could not be taken");
                Claimed::Unavailable
            }
        }
    }
}

/// The user's claims folder, created if need be; `None` when it cannot be used.
fn claims_dir() -> Option<PathBuf> {
    let uid = user()?;
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(run) if run.is_absolute() => run.join("aintern-slots"),
        _ => std::env::temp_dir().join(format!("aintern-{uid}-slots")),
    };
    match DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    private(&dir, uid).then_some(dir)
}

/// This process's user.
pub(crate) fn user() -> Option<u32> {
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

/// Whether `dir` is a folder (not a link) of `uid` that no one else can enter or change.
fn private(dir: &Path, uid: u32) -> bool {
    usable(dir) && owned_by(dir, uid)
}

/// Whether `dir` is a folder (not a link) that only its owner can enter or change.
fn usable(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && m.mode() & 0o077 == 0)
}

/// Whether `dir` belongs to `uid`.
fn owned_by(dir: &Path, uid: u32) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.uid() == uid)
}

/// A new folder only the user can enter, for a test's claims and records.
#[cfg(test)]
pub(crate) fn private_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("aintern-claims-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .unwrap_or_else(|e| panic!("{e}"));
    dir
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_claimed_slot_is_taken_until_its_claim_is_dropped() {
        let dir = private_dir("held");
        let one = Claims::new("http://127.0.0.1:8080/v1", Some(&dir));
        // Another client of the same server (its URL written with a trailing slash).
        let two = Claims::new("http://127.0.0.1:8080/v1/", Some(&dir));
        let Claimed::Yes(claim) = one.try_claim(1) else {
            panic!("slot 1 is free");
        };
        assert!(matches!(two.try_claim(1), Claimed::Taken));
        assert!(
            matches!(one.try_claim(1), Claimed::Taken),
            "not even twice by one client"
        );
        assert!(matches!(two.try_claim(0), Claimed::Yes(_)));
        // Another server's slot 1 is another slot.
        let other = Claims::new("http://127.0.0.1:8081/v1", Some(&dir));
        assert!(matches!(other.try_claim(1), Claimed::Yes(_)));
        drop(claim);
        assert!(matches!(two.try_claim(1), Claimed::Yes(_)));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_folder_others_can_enter_or_a_link_is_not_used() {
        let dir = private_dir("open");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
            .unwrap_or_else(|e| panic!("{e}"));
        let claims = Claims::new("http://127.0.0.1:8080/v1", Some(&dir));
        assert!(!claims.available());
        assert!(matches!(claims.try_claim(0), Claimed::Unavailable));
        let real = private_dir("real");
        let link = dir.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap_or_else(|e| panic!("{e}"));
        assert!(!Claims::new("http://127.0.0.1:8080/v1", Some(&link)).available());
        assert!(Claims::new("http://127.0.0.1:8080/v1", Some(&real)).available());
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&real);
    }
}
