//! Replacing a file by rename, the way `write_file` and `edit_file` change files.
//!
//! The new content goes to a temporary file with a random name in the same folder — made
//! through the folder's handle, so beneath the workspace whatever happens to the path —
//! and is flushed to disk; the temporary file takes the old file's mode (and, for root,
//! its owner and group), then is renamed over the old file. A failure or a cancellation
//! before the rename removes the temporary file and leaves the old file as it was.

use crate::special::{kind_of, FileKind};
use crate::workspace::Target;
use cap_std::fs::{MetadataExt, OpenOptions, OpenOptionsExt};
use core_models::CancellationToken;
use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a replacement did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Replaced {
    /// The file did not exist.
    Created,
    /// An existing file was replaced.
    Replaced,
}

/// Put the content `write` produces at `target` (shown to the user as `path`), by
/// temporary file and rename. The old file, if any, must be a regular file the user may
/// change (see [`may_replace`]).
///
/// # Errors
/// A message for the user: the target is a folder or a special file, may not be
/// replaced, or the writing failed; `"Cancelled"` when `token` was cancelled before the
/// rename. In every case the old file is as it was and no temporary file is left.
pub(crate) fn replace_atomically(
    target: &Target,
    path: &str,
    write: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
    token: &CancellationToken,
) -> Result<Replaced, String> {
    let old = match target.dir.symlink_metadata(&target.name) {
        Ok(meta) => match kind_of(&meta.file_type()) {
            FileKind::File => Some(meta),
            FileKind::Folder => return Err(format!("'{path}' is a folder")),
            FileKind::Symlink => {
                return Err(format!(
                "'{path}' changed into a symbolic link while it was written; it was left as it was"
            ))
            }
            other => {
                return Err(format!(
                    "'{path}' is {}, not a regular file; it was left as it was",
                    other.described()
                ))
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot write '{path}': {e}")),
    };
    if let Some(meta) = &old {
        may_replace(meta.uid(), meta.mode(), nix::unistd::geteuid().as_raw())
            .map_err(|why| format!("'{path}' {why}; it was left as it was"))?;
    }
    let mut temporary =
        Temporary::create(target).map_err(|e| format!("cannot write '{path}': {e}"))?;
    let file = &mut temporary.file;
    write(file)
        .and_then(|()| match &old {
            Some(meta) => keep_owner_and_mode(file, meta.uid(), meta.gid(), meta.mode()),
            None => Ok(()),
        })
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("cannot write '{path}': {e}"))?;
    if token.is_cancelled() {
        // Dropping the temporary file removes it; the old file is untouched.
        return Err("Cancelled".into());
    }
    target
        .dir
        .rename(&temporary.name, &target.dir, &target.name)
        .map_err(|e| format!("cannot replace '{path}': {e}"))?;
    temporary.renamed = true;
    Ok(if old.is_some() {
        Replaced::Replaced
    } else {
        Replaced::Created
    })
}

/// Whether a process with effective user id `euid` may replace a file of owner `uid` and
/// mode `mode`: root may replace any file (its owner and mode are kept); anyone else
/// only their own files that they can write. A refusal says why.
pub(crate) fn may_replace(uid: u32, mode: u32, euid: u32) -> Result<(), String> {
    if euid == 0 {
        return Ok(());
    }
    if uid != euid {
        return Err(format!(
            "belongs to another user (uid {uid}), and replacing it would make it yours"
        ));
    }
    if mode & 0o200 == 0 {
        return Err(format!("is read-only (mode {:o})", mode & 0o7777));
    }
    Ok(())
}

/// Give the new file the old one's owner and group (only root can) and mode, without the
/// set-user-ID and set-group-ID bits.
fn keep_owner_and_mode(file: &std::fs::File, uid: u32, gid: u32, mode: u32) -> io::Result<()> {
    if nix::unistd::geteuid().is_root() {
        // Before the mode: changing the owner clears the set-user-ID bit.
        std::os::unix::fs::fchown(file, Some(uid), Some(gid))?;
    }
    // The set-user-ID and set-group-ID bits are not carried over: new content must not
    // inherit the old program's privileges (the kernel clears them on a write as well).
    file.set_permissions(std::fs::Permissions::from_mode(mode & 0o1777))
}

/// A temporary file in the target's folder, removed when dropped unless renamed.
struct Temporary<'t> {
    target: &'t Target,
    name: OsString,
    file: std::fs::File,
    renamed: bool,
}

impl<'t> Temporary<'t> {
    /// A new file with a random name, created exclusively (never an existing file or a
    /// link), readable and writable as the umask allows (0666 less the umask).
    fn create(target: &'t Target) -> io::Result<Self> {
        let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
        for _ in 0..16 {
            let name = OsString::from(format!(".aintern-{:016x}.tmp", random()));
            match target.dir.open_with(
                &name,
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o666)
                    .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits()),
            ) {
                Ok(file) => {
                    return Ok(Temporary {
                        target,
                        name,
                        file: file.into_std(),
                        renamed: false,
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }
}

impl Drop for Temporary<'_> {
    fn drop(&mut self) {
        if !self.renamed {
            if let Err(e) = self.target.dir.remove_file(&self.name) {
                tracing::warn!(error = %e, "a temporary file could not be removed");
            }
        }
    }
}

/// A number unlikely to repeat, for temporary names (which are created exclusively, so a
/// repeat only costs a retry).
fn random() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u128(now.as_nanos());
    }
    hasher.finish()
}

/// Write `content` to a file (a helper for the tools' `write` closures).
pub(crate) fn write_all(file: &mut std::fs::File, content: &[&[u8]]) -> io::Result<()> {
    content.iter().try_for_each(|part| file.write_all(part))
}

#[cfg(test)]
mod tests {
    use super::may_replace;

    #[test]
    fn only_root_replaces_files_it_could_not_write() {
        assert_eq!(may_replace(1000, 0o100644, 1000), Ok(()));
        assert!(may_replace(1000, 0o100444, 1000)
            .unwrap_err()
            .contains("read-only (mode 444)"));
        assert!(may_replace(1001, 0o100666, 1000)
            .unwrap_err()
            .contains("belongs to another user (uid 1001)"));
        // Root may; the owner and mode are kept.
        assert_eq!(may_replace(1001, 0o100444, 0), Ok(()));
    }
}
