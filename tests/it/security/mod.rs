//! The security suite: attacks a hostile model (or a file it read, or a repository's own
//! configuration) could make, each asserting that its side effect did not happen.
//!
//! One module per defence. The attacks that need the `aintern` binary (signals, stdin,
//! the permission file shared by processes) are in `crates/cli/tests/cli/security.rs`.

mod agent;
mod checkpoint;
mod files;
mod git;
mod git_commands;
mod git_reach;
mod kernel_sandbox;
mod permissions;
mod processes;
mod resources;
mod risk;
mod tool_hooks;
