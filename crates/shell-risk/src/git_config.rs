//! A repository's configuration as git reads it, without running git: which repository a
//! folder belongs to and whether it keeps to a workspace ([`discover`], [`confined`]),
//! the configuration files parsed the way git parses them ([`variables`]), and the table
//! of variables that make a read-only git command run a program or open a file
//! ([`keys`]). The judge uses it to rate `git status`, `git diff`… safe only in a
//! repository whose configuration names no such program or file; `aintern-tools` uses
//! the same table to override those variables in every git command it starts.
//!
//! Nothing here runs a program or writes: it reads files, each with a size cap.

pub mod keys;
mod parse;
mod reach;
mod repository;

pub use parse::{variables, Refused, Variable};
pub use reach::{every_variable, repositories_under, Reach};
pub(crate) use repository::{configuration_concern, confined_git_dir};
pub use repository::{confined, discover, gitmodules, Discovered, GitDirs, Kind};
