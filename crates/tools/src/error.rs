//! The crate's error type.

use std::path::PathBuf;

/// Errors of the built-in tools and command-backed ports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The workspace folder is unusable.
    #[error("the workspace {} {message}", path.display())]
    Workspace {
        /// The folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },

    /// A path a tool was given is refused.
    #[error("the path '{path}' {message}")]
    Path {
        /// The path as given.
        path: String,
        /// What is wrong.
        message: String,
    },

    /// A file could not be read or a folder listed.
    #[error("{0}")]
    Io(String),

    /// An external command failed.
    #[error("{program} failed: {message}")]
    Command {
        /// The program.
        program: String,
        /// What went wrong.
        message: String,
    },
}

impl From<Error> for core_models::Error {
    fn from(e: Error) -> Self {
        core_models::Error::Port {
            message: e.to_string(),
            source: Some(Box::new(e)),
        }
    }
}
