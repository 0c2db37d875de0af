//! # tools
//!
//! AIntern's built-in tools and the command-backed ports of seed 004's checks.
//!
//! * [`ReadFile`] and [`ListDir`] (safe, read-only), [`WriteFile`] and [`EditFile`]
//!   (exact search/replace; both atomic), confined
//!   to a [`Workspace`]: every path is canonicalized, and absolute paths, `..` that climbs
//!   out and symlinks leading out are refused with a clear error.
//! * [`GitCommandInspector`] — the [`core_models::GitInspector`] port over `git`.
//! * [`CommandFormatter`] — the [`core_models::Formatter`] port over a formatter program.
//!
//! These live apart from `services-ai`, which knows tools only through the
//! [`core_models::Tool`] trait.

mod edit_file;
mod error;
mod fs_tools;
mod git;
mod git_tools;
mod params;
mod run_command;
mod search_files;
mod workspace;
mod write_file;

pub use edit_file::EditFile;
pub use error::Error;
pub use fs_tools::{ListDir, ReadFile, LIST_DIR_CAP, LIST_DIR_MAX_DEPTH, READ_FILE_CAP};
pub use git::{CommandFormatter, GitCommandInspector};
pub use git_tools::{GitDiff, GitStatus, GIT_DIFF_CAP};
pub use run_command::{
    command_risk, RunCommand, COMMAND_DEFAULT_TIMEOUT_SECS, COMMAND_MAX_TIMEOUT_SECS,
    COMMAND_OUTPUT_CAP,
};
pub use search_files::{SearchFiles, SEARCH_DEFAULT_RESULTS, SEARCH_MAX_RESULTS};
pub use workspace::Workspace;
pub use write_file::WriteFile;

use core_models::Tool;
use std::sync::Arc;

/// Every built-in tool.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadFile::default()),
        Arc::new(ListDir::default()),
        Arc::new(SearchFiles::default()),
        Arc::new(WriteFile::default()),
        Arc::new(EditFile::default()),
        Arc::new(RunCommand::default()),
        Arc::new(GitStatus::default()),
        Arc::new(GitDiff::default()),
    ]
}
