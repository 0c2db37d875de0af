//! # sandbox
//!
//! The kernel sandbox under every command AIntern starts (`run_command`, formatters, git),
//! and the process groups that make sure nothing a command started outlives it.
//!
//! ## Why a kernel sandbox
//!
//! A model, or a file it read, can write hostile commands. Judging a command line is a
//! heuristic; the kernel's own access control is not. So a command runs confined whatever
//! it is:
//!
//! * **Files — Landlock.** In `workspace-write` (the default) a command writes only in the
//!   workspace, a private temporary folder made for it, and the configured cache folders;
//!   in `read-only` only in its private temporary folder. It reads everything except where
//!   secrets live: the credential folders and files in the home folder (`~/.ssh`,
//!   `~/.gnupg`, `~/.aws`, `~/.netrc`, cloud and registry tokens, browser profiles, shell
//!   histories…), a few system secrets, and configured extra paths. Landlock only allows,
//!   so the read rules are allow rules for every *other* entry: each folder on the way to a
//!   secret is split into its entries, and the secret is left out
//!   ([`rules`](crate::Sandbox)). Links and renames that would move a file to where it has
//!   more rights are refused (Landlock's `REFER` right).
//! * **Network and escape routes — seccomp (and Landlock's TCP rules and scopes).** Without
//!   `network = true` a command cannot create a socket of any kind (so neither TCP nor UDP
//!   nor a local socket that a daemon — an SSH agent, D-Bus, Docker — listens on), nor
//!   bind or connect TCP ports. It cannot signal processes outside its sandbox, mount,
//!   load kernel modules, enter or create namespaces, use io_uring, read kernel keyrings,
//!   or leave its process group (`setsid`/`setpgid` quietly do nothing), so that ending
//!   the group ends everything it started.
//! * **Environment.** Variables that look like secrets (`*TOKEN*`, `*SECRET*`,
//!   `*PASSWORD*`, `*_KEY`, `AWS_*`, `SSH_AUTH_SOCK`…) are removed, unless configured to
//!   pass; `TMPDIR` points at the private temporary folder.
//!
//! Every command, sandboxed or not, leads a new session and process group (so it has no
//! controlling terminal and can be ended as a group) and is killed if AIntern dies.
//!
//! ## What it does not do
//!
//! Landlock does not cover changes of a file's metadata: a command allowed to run can
//! still `chmod`/`chown`/`touch -d` files it could read (the kernel's own permissions still
//! apply). Processes the command starts share its sandbox; a `full-access` command has
//! none. On a kernel without Landlock nothing is enforced: [`Support`] says so and the
//! application follows the configured fallback.
//!
//! ## Shape
//!
//! [`SandboxPolicy`] says what a command may do; [`Sandbox::prepare`] turns it into kernel
//! objects (a Landlock ruleset, a seccomp program, a private temporary folder) once, in the
//! parent; [`Sandbox::apply`] makes a `Command` enter it in the child, between `fork` and
//! `exec`, where only async-signal-safe system calls are made. [`Job`] tracks a started
//! command's process group; [`end_all`] ends every group still running (for signal
//! handlers). [`Launcher`] holds an application's [`SandboxSettings`] and the sandboxes
//! prepared from them, and decides what happens on a kernel that cannot sandbox.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod env;
mod error;
mod job;
mod launcher;
mod policy;
mod support;
mod sys;

#[cfg(target_os = "linux")]
mod filter;
#[cfg(target_os = "linux")]
mod rules;

mod prepare;
mod protect;

pub use env::{is_secret_value, is_secret_variable};
pub use error::Error;
pub use job::{end_all, live_groups, Job};
pub use launcher::{Admission, Launcher, SandboxSettings, Variant};
pub use policy::{
    default_secret_paths, ProcessLimits, SandboxPolicy, DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_PROCESSES,
};
pub use prepare::Sandbox;
pub use protect::hide_this_process;
pub use support::Support;

pub use core_models::{SandboxFallback, SandboxMode, SandboxSummary};
