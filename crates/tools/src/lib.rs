//! # tools
//!
//! AIntern's built-in tools and the command-backed ports of seed 004's checks.
//!
//! * [`ReadFile`] and [`ListDir`] (safe, read-only), [`SearchFiles`], [`WriteFile`] and
//!   [`EditFile`] (exact search/replace; both atomic), confined to a [`Workspace`]: absolute
//!   paths, `..` that climbs out and symlinks leading out are refused with a clear error,
//!   and every file is opened, created or renamed through a handle that resolves paths
//!   only beneath the workspace (`openat2` with `RESOLVE_BENEATH`), so a path swapped for
//!   a link while a tool runs cannot reach outside. The secret locations the sandbox keeps
//!   from commands (`~/.ssh`, `~/.aws`, tokens, `deny_read`: see
//!   [`sandbox::Launcher::protected_paths`]) are kept from these tools too: a path that
//!   is, or leads through a link to, one of them is refused, and walks leave them out.
//!   Their permission subjects are a path's form and where it leads through links, so a
//!   deny pattern cannot be bypassed through a link. FIFOs, sockets and devices are never
//!   read or written; lines and outputs are read with caps, so memory stays bounded on
//!   any input.
//! * [`GitStatus`], [`GitDiff`] and [`GitCommandInspector`] (the
//!   [`core_models::GitInspector`] port over `git`) run git so that it runs nothing the
//!   repository's configuration names (hooks, fsmonitor, pagers, external diffs,
//!   textconv, filter drivers, …).
//! * [`ProjectContext`]: a workspace's AGENTS.md [`Instructions`] and its [`Skills`], with
//!   [`LoadSkill`] (safe, read-only) to load a skill's body — text for the model that
//!   changes no setting.
//! * [`CommandFormatter`] — the [`core_models::Formatter`] port over a formatter program.
//!
//! Every program the git ports and the formatters start goes through one function
//! (`git::run`).
//!
//! * [`checkpoint`] — the workspace recorded before the agent changes it, and restored on
//!   request (a store of AIntern's own, outside the workspace).
//!
//! These live apart from `services-ai`, which knows tools only through the
//! [`core_models::Tool`] trait.

mod atomic;
pub mod checkpoint;
mod choices;
mod edit_file;
mod editor;
mod error;
mod fs_tools;
mod git;
mod git_config;
mod git_tools;
mod lines;
mod load_skill;
mod offload;
mod params;
mod preview;
mod program;
mod project;
mod run_command;
mod search_files;
mod special;
mod text_file;
mod update_plan;
mod walk;
mod workspace;
mod write_file;

pub use edit_file::EditFile;
pub use editor::EditorFiles;
pub use error::Error;
pub use fs_tools::{ListDir, ReadFile, LIST_DIR_CAP, LIST_DIR_MAX_DEPTH, READ_FILE_CAP};
pub use git::{CommandFormatter, GitCommandInspector};
pub use git_tools::{GitDiff, GitStatus, GIT_DIFF_CAP};
pub use load_skill::LoadSkill;
pub use project::{
    Instructions, ProjectContext, Skill, SkillSource, Skills, INSTRUCTIONS_CAP, INSTRUCTIONS_FILE,
    SKILL_BODY_CAP, SKILL_FILE,
};
pub use run_command::{
    command_risk, RunCommand, COMMAND_DEFAULT_TIMEOUT_SECS, COMMAND_MAX_TIMEOUT_SECS,
    COMMAND_OUTPUT_CAP,
};
pub use search_files::{
    SearchFiles, PATTERN_CACHE_MAX_BYTES, PATTERN_COMPILED_MAX_BYTES, PATTERN_MAX_BYTES,
    SEARCHES_AT_ONCE, SEARCH_DEFAULT_RESULTS, SEARCH_MAX_RESULTS,
};
pub use text_file::EDIT_FILE_CAP;
pub use update_plan::{UpdatePlan, PLAN_MAX_STEPS};
pub use workspace::Workspace;
pub use write_file::WriteFile;

use core_models::Tool;
use std::sync::Arc;

/// Every built-in tool, starting processes with the default sandbox settings.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    builtin_tools_with(Arc::new(sandbox::Launcher::default()))
}

/// Every built-in tool, all given `launcher`, which carries the application's sandbox
/// settings: the ones that start processes (`run_command`, the git tools) start them
/// through it, and the file tools keep from the model the secret locations it keeps from
/// commands.
pub fn builtin_tools_with(launcher: Arc<sandbox::Launcher>) -> Vec<Arc<dyn Tool>> {
    builtin_tools_through(launcher, None)
}

/// [`builtin_tools_with`], the file tools reading and writing through `editor` when one
/// is given (see [`EditorFiles`]).
pub fn builtin_tools_through(
    launcher: Arc<sandbox::Launcher>,
    editor: Option<Arc<dyn EditorFiles>>,
) -> Vec<Arc<dyn Tool>> {
    let (mut read, mut write, mut edit) = (
        ReadFile::new(Arc::clone(&launcher)),
        WriteFile::new(Arc::clone(&launcher)),
        EditFile::new(Arc::clone(&launcher)),
    );
    if let Some(editor) = editor {
        read = read.through(Arc::clone(&editor));
        write = write.through(Arc::clone(&editor));
        edit = edit.through(editor);
    }
    vec![
        Arc::new(read),
        Arc::new(ListDir::new(Arc::clone(&launcher))),
        Arc::new(SearchFiles::new(Arc::clone(&launcher))),
        Arc::new(write),
        Arc::new(edit),
        Arc::new(RunCommand::new(Arc::clone(&launcher))),
        Arc::new(GitStatus::new(Arc::clone(&launcher))),
        Arc::new(GitDiff::new(launcher)),
    ]
}
