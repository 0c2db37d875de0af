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
//! The same folder records which states were saved: an empty file named after the server
//! and the saved file, written when a save moved tokens and removed when a restore found
//! no file. A state never saved is then not asked for: a restore that finds no file
//! empties the slot it was for (llama-server clears it first), and a request pinned to an
//! empty slot is evaluated from nothing, the server's own prompt cache passed by. The
//! record is a hint, never trusted for content: a file it names that the server no
//! longer has (a server restarted with another `--slot-save-path`) costs one failed
//! restore, after which the record is gone.

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

    /// Whether a client of this machine saved the state `file` names on this server (and
    /// no restore found it missing since); `None` when that cannot be known here.
    pub(crate) fn saved(&self, file: &str) -> Option<bool> {
        let path = self.record(file)?;
        Some(std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()))
    }

    /// Record that the state `file` names was saved (`true`: a save moved tokens) or is
    /// not there (`false`: a restore found no file, or a save moved nothing). A record
    /// that cannot be written only costs a restore later.
    pub(crate) fn note_saved(&self, file: &str, saved: bool) {
        let Some(path) = self.record(file) else {
            return;
        };
        let done = if saved {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .open(&path)
                .map(drop)
        } else {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
                done => done,
            }
        };
        if let Err(e) = done {
            tracing::debug!(error = %e, file, saved, "the record of a saved state was not changed");
        }
    }

    /// The record of the state `file` names on this server, when claims can be used.
    fn record(&self, file: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{:016x}-{file}.saved", self.server)))
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
fn user() -> Option<u32> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn private_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("aintern-claims-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .unwrap_or_else(|e| panic!("{e}"));
        dir
    }

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

    #[test]
    fn a_saved_state_is_recorded_per_server_until_found_missing() {
        let dir = private_dir("saved");
        let one = Claims::new("http://127.0.0.1:8080/v1", Some(&dir));
        let file = "aintern-k-0000000000000001.bin";
        assert_eq!(one.saved(file), Some(false));
        one.note_saved(file, true);
        assert_eq!(one.saved(file), Some(true));
        // Another client of the same server sees it; another server's is another record.
        let two = Claims::new("http://127.0.0.1:8080/v1/", Some(&dir));
        assert_eq!(two.saved(file), Some(true));
        let other = Claims::new("http://127.0.0.1:8081/v1", Some(&dir));
        assert_eq!(other.saved(file), Some(false));
        assert_eq!(two.saved("aintern-k-0000000000000002.bin"), Some(false));
        // Recorded twice, removed twice: no error either way.
        one.note_saved(file, true);
        two.note_saved(file, false);
        two.note_saved(file, false);
        assert_eq!(one.saved(file), Some(false));
        // The record is private to the user.
        one.note_saved(file, true);
        let records: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(Result::ok)
            .collect();
        assert_eq!(records.len(), 1);
        let mode = records[0]
            .metadata()
            .unwrap_or_else(|e| panic!("{e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // Without a folder nothing is known, and nothing is written.
        assert_eq!(Claims::none().saved(file), None);
        Claims::none().note_saved(file, true);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
