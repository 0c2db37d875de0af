//! Seed 004's workspace events: `git_commits_detected` and `autoformat`.

use super::EventHeader;
use crate::serde_util::truncate_chars;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

// ---------------------------------------------------------------------------------------
// git_commits_detected and autoformat (seed 004)
// ---------------------------------------------------------------------------------------

/// A commit found in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitCommit {
    /// The commit hash.
    pub hash: String,
    /// The first line of its message.
    pub subject: String,
    /// Files it touched, relative to the workspace.
    #[serde(default)]
    pub files: Vec<String>,
}

/// New commits appeared in the workspace while a tool ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GitCommitsDetectedEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The new commits, oldest first.
    pub commits: Vec<GitCommit>,
}

impl GitCommitsDetectedEvent {
    /// An event for these commits.
    pub fn create(request_id: Uuid, commits: Vec<GitCommit>, iteration: u32) -> Self {
        GitCommitsDetectedEvent {
            header: EventHeader::new(request_id, iteration),
            commits,
        }
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        format!("{} new git commit(s)", self.commits.len())
    }
}

/// Autoformatters ran on files that changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoformatEvent {
    /// Shared fields.
    #[serde(flatten)]
    pub header: EventHeader,
    /// The formatter's name (`"rustfmt"`).
    pub formatter: String,
    /// Files it ran on.
    pub files: Vec<String>,
    /// Files it changed.
    pub changed_files: Vec<String>,
    /// Why it failed, when it did.
    #[serde(default)]
    pub error: Option<String>,
}

impl AutoformatEvent {
    /// An event for one formatter run.
    pub fn create(
        request_id: Uuid,
        formatter: impl Into<String>,
        files: Vec<String>,
        changed_files: Vec<String>,
        iteration: u32,
    ) -> Self {
        AutoformatEvent {
            header: EventHeader::new(request_id, iteration),
            formatter: formatter.into(),
            files,
            changed_files,
            error: None,
        }
    }

    /// One-line description.
    pub fn summary(&self) -> String {
        match &self.error {
            Some(e) => format!("{} failed: {}", self.formatter, truncate_chars(e, 50)),
            None => format!(
                "{} changed {} of {} file(s)",
                self.formatter,
                self.changed_files.len(),
                self.files.len()
            ),
        }
    }
}
