//! Checks on processes, for tests of tools that start them (Linux `/proc`).

use std::path::Path;

/// Whether process `pid` is gone (or a zombie waiting for its parent to reap it).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the parenthesized name: "PID (NAME) S …".
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// The process id a shell wrote to `file` with `echo $! > file`, once the whole line is
/// there.
pub fn written_pid(file: &Path) -> Option<u32> {
    std::fs::read_to_string(file)
        .ok()
        .filter(|text| text.ends_with('\n'))
        .and_then(|text| text.trim().parse().ok())
}
