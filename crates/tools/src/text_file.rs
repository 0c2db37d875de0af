//! A text file of the workspace read whole, safely: through its folder's handle, never
//! following a link or opening a device, and within [`EDIT_FILE_CAP`] (what `edit_file`
//! edits and its preview shows).

use crate::special::{kind_of, FileKind};
use crate::workspace::{check_regular, special_error};
use std::io::Read;

/// Largest file `edit_file` changes (it holds the file once in memory).
pub const EDIT_FILE_CAP: u64 = 64 * 1024 * 1024;

/// The text of the file at `target`: opened through its folder's handle without
/// following a link or blocking, a regular file of at most [`EDIT_FILE_CAP`] bytes, in
/// UTF-8.
pub(crate) fn read_text(target: &crate::workspace::Target, path: &str) -> Result<String, String> {
    let flags = (nix::fcntl::OFlag::O_NONBLOCK
        | nix::fcntl::OFlag::O_NOCTTY
        | nix::fcntl::OFlag::O_NOFOLLOW)
        .bits();
    // Checked before opening so a device or a socket is never opened; checked again on
    // the handle.
    let meta = target
        .dir
        .symlink_metadata(&target.name)
        .map_err(|e| format!("cannot read '{path}': {e}"))?;
    match kind_of(&meta.file_type()) {
        FileKind::File => {}
        FileKind::Folder => return Err(format!("'{path}' is a folder")),
        other => return Err(special_error(path, other).to_string()),
    }
    let file = {
        use cap_std::fs::OpenOptionsExt;
        target
            .dir
            .open_with(
                &target.name,
                cap_std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(flags),
            )
            .map_err(|e| format!("cannot read '{path}': {e}"))?
            .into_std()
    };
    check_regular(path, &file).map_err(|e| e.to_string())?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > EDIT_FILE_CAP {
        return Err(format!(
            "'{path}' is {size} bytes, more than the {} MiB edit_file handles",
            EDIT_FILE_CAP / (1024 * 1024)
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(EDIT_FILE_CAP + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read '{path}': {e}"))?;
    if bytes.len() as u64 > EDIT_FILE_CAP {
        return Err(format!(
            "'{path}' grew past the {} MiB edit_file handles",
            EDIT_FILE_CAP / (1024 * 1024)
        ));
    }
    String::from_utf8(bytes).map_err(|e| format!("cannot read '{path}' as text: {e}"))
}
