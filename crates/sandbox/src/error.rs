//! The crate's error type.

use std::path::PathBuf;

/// Why a sandbox could not be prepared or a command not started in it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kernel cannot enforce the mode asked for (no Landlock).
    #[error("the kernel cannot sandbox commands here ({0})")]
    Unsupported(String),

    /// The workspace folder is unusable.
    #[error("the workspace {} cannot be sandboxed: {message}", path.display())]
    Workspace {
        /// The folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// Building the Landlock ruleset failed.
    #[error("cannot build the file rules of the sandbox: {0}")]
    Rules(String),

    /// Building the seccomp program failed.
    #[error("cannot build the system-call filter of the sandbox: {0}")]
    Filter(String),

    /// The private temporary folder could not be made.
    #[error("cannot make the sandbox's temporary folder: {0}")]
    TempDir(#[source] std::io::Error),
}
