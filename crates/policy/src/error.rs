//! The crate's error type.

use std::path::PathBuf;

/// Why rules or hooks could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A rule file could not be read.
    #[error("cannot read the rule file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },

    /// A rule file is not valid: where and why.
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line (1-based) of the rule or value at fault.
        line: usize,
        /// What is wrong.
        message: String,
    },

    /// A hook is not valid.
    #[error("hook {name}: {message}")]
    Hook {
        /// The hook.
        name: String,
        /// What is wrong.
        message: String,
    },
}
