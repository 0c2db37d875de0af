//! The crate's error type.

use core_models::MachineKind;
use std::path::PathBuf;

/// Errors of the engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `start` was called while the machine was not in its initial state.
    #[error("cannot start a new request: the {machine:?} machine is in state {state}")]
    NotIdle {
        /// Which machine.
        machine: MachineKind,
        /// The state it was in.
        state: String,
    },

    /// A request's output schema cannot be used ([`crate::OutputSchema::new`]).
    #[error("the output schema cannot be used: {0}")]
    OutputSchema(String),

    /// The configuration could not be read (a file, an environment variable).
    #[error("cannot load the configuration: {0}")]
    ConfigLoad(#[from] config::ConfigError),

    /// The configuration breaks one or more rules; every broken rule is listed.
    #[error("invalid configuration:\n{}", .0.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"))]
    InvalidConfig(Vec<crate::config::ValidationError>),

    /// A permission file could not be read or written.
    #[error("permission file {}: {message}", path.display())]
    PermissionFile {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
        /// The underlying error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },

    /// A permission pattern is not a valid glob.
    #[error("invalid permission pattern '{pattern}': {source}")]
    InvalidPattern {
        /// The pattern.
        pattern: String,
        /// Why it is invalid.
        #[source]
        source: globset::Error,
    },

    /// An error of the contract.
    #[error(transparent)]
    Core(#[from] core_models::Error),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
