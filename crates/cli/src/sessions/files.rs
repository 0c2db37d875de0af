//! The sessions folder and its files, as a folder others may have planted things in
//! deserves: a session file is opened without following a symbolic link and without
//! waiting (a FIFO would block an open for reading until someone writes), and only a
//! regular file is read or appended to; the folder must belong to the user, and is made
//! private (0700) when others may enter it.

use super::{io, StoreError};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// What a file that is not a regular file is, in words.
fn kind(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_dir() {
        "a folder"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device"
    } else {
        "a special file"
    }
}

/// Open the session file `path` with `options`, never through a symbolic link and never
/// waiting on a FIFO; anything but a regular file is refused.
///
/// # Errors
/// [`StoreError::NotAFile`] for a link, a FIFO or any other file that is not a regular
/// file; [`StoreError::Io`] when the file system refuses.
pub(super) fn open(path: &Path, options: &mut OpenOptions) -> Result<File, StoreError> {
    let not_a_file = |kind: &'static str| StoreError::NotAFile {
        path: path.to_path_buf(),
        kind,
    };
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW's refusal of a link.
            Some(libc::ELOOP) => not_a_file("a symbolic link"),
            // Opening a FIFO for writing without a reader.
            Some(libc::ENXIO) => not_a_file("a FIFO"),
            _ => io(path)(e),
        })?;
    let file_type = file.metadata().map_err(io(path))?.file_type();
    if !file_type.is_file() {
        return Err(not_a_file(kind(file_type)));
    }
    Ok(file)
}

/// Check the sessions folder `dir` when it exists: it must be a folder of this user's, and
/// is made private (0700) when others may enter it. A missing folder is left to be
/// created (private) when a session is saved.
///
/// # Errors
/// [`StoreError::Refused`] when it is not a folder or belongs to another user;
/// [`StoreError::Io`] when it cannot be read or made private.
pub(super) fn secure_dir(dir: &Path) -> Result<(), StoreError> {
    let refused = |why: String| StoreError::Refused {
        path: dir.to_path_buf(),
        why,
    };
    // Opened, then checked and changed through the same handle: what is checked is what
    // is changed, whatever is renamed meanwhile.
    let folder = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK)
        .open(dir)
    {
        Ok(folder) => folder,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(refused("it is not a folder".into()))
        }
        Err(e) => return Err(io(dir)(e)),
    };
    let meta = folder.metadata().map_err(io(dir))?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(refused(format!(
            "it belongs to another user (uid {}, not {me})",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        folder
            .set_permissions(std::fs::Permissions::from_mode(0o700))
            .map_err(io(dir))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn only_a_regular_file_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "kept\n").unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let append = || {
            let mut options = OpenOptions::new();
            options.append(true);
            options
        };
        match open(&link, &mut append()) {
            Err(StoreError::NotAFile { kind, .. }) => assert_eq!(kind, "a symbolic link"),
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\n");
        match open(dir.path(), OpenOptions::new().read(true)) {
            Err(StoreError::NotAFile { kind, .. }) => assert_eq!(kind, "a folder"),
            other => panic!("{other:?}"),
        }
        open(&target, &mut append())
            .unwrap()
            .write_all(b"more\n")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept\nmore\n");
    }

    #[test]
    fn a_folder_others_may_enter_is_made_private() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("sessions");
        secure_dir(&folder).unwrap();
        assert!(!folder.exists(), "a missing folder is not created");
        std::fs::create_dir(&folder).unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o757)).unwrap();
        secure_dir(&folder).unwrap();
        let mode = std::fs::metadata(&folder).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(secure_dir(&file), Err(StoreError::Refused { .. })));
    }
}
