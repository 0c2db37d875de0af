//! The seed-004 ports over commands: [`GitCommandInspector`] (the `git` program) and
//! [`CommandFormatter`] (any formatter program, per file extension).
//!
//! Every program they start goes through [`crate::program::run`]: git read-only (it only
//! reads, and the sandbox keeps it so whatever the repository's configuration says),
//! formatters in the configured mode. Git goes through [`git`] first, which makes it run
//! nothing the repository names (see `crate::git_config`).

use crate::error::Error;
use crate::git_config::{hardened, Repository};
use crate::program::{git_sandbox, run, Captured, Limits, Overflow, STDERR_CAP};
use crate::workspace::{Opened, Workspace};
use async_trait::async_trait;
use core_models::{Formatter, GitCommit, GitInspector};
use sandbox::{Admission, Launcher, Sandbox, Variant};
use std::hash::Hasher;
use std::io::Read;
use std::path::Path;

use std::sync::Arc;
use std::time::Duration;
use tokio::process::Command;

/// Longest the commit check after each tool round may wait for git: a repository can make
/// git block (a FIFO where a file should be), and this check runs unasked.
const INSPECT_TIMEOUT: Duration = Duration::from_secs(10);

/// `git ARGS` for the inspector on `repo`, within [`INSPECT_TIMEOUT`] (the group is
/// killed when the time is up).
async fn inspect(
    launcher: &Launcher,
    repo: &Repository,
    args: &[&str],
    limits: Limits,
) -> Result<Captured, Error> {
    let sandbox = git_sandbox(launcher, repo.dir());
    tokio::time::timeout(INSPECT_TIMEOUT, git(repo, args, limits, &sandbox))
        .await
        .unwrap_or_else(|_| {
            Err(Error::Command {
                program: "git".into(),
                message: format!("did not answer within {} s", INSPECT_TIMEOUT.as_secs()),
            })
        })
}

/// The repository git may use for the workspace `dir` (see
/// [`Repository::of_workspace`]), found off the async runtime; else why not, in words.
pub(crate) async fn repository(dir: &Path) -> Result<Repository, String> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || Repository::of_workspace(&dir))
        .await
        .unwrap_or_else(|e| Err(format!("the repository could not be looked for: {e}")))
}

/// Most of `git log`'s output [`GitCommandInspector::commits_since`] reads.
const LOG_CAP: usize = 4 * 1024 * 1024;

/// Run `git ARGS` in the workspace on `repo`, which is not trusted: its configuration
/// names no program git runs (hooks, fsmonitor, pagers, external diffs, textconv, filter
/// drivers, …; see [`crate::git_config`]). When the workspace is a folder of a larger
/// repository, `args` must limit git's output to it.
///
/// # Errors
/// As for [`run`]; or the repository's configuration cannot be read.
pub(crate) async fn git(
    repo: &Repository,
    args: &[&str],
    limits: Limits,
    sandbox: &Sandbox,
) -> Result<Captured, Error> {
    let command = hardened(repo, args, sandbox).await?;
    run(command, "git", limits, sandbox).await
}

/// Reads git history with the `git` command, running nothing the repository's
/// configuration names, in a read-only sandbox, and only the workspace's: a workspace
/// whose repository is outside it has no head here, and in a folder of a larger
/// repository only the commits that change the folder are listed, with their files
/// relative to it (see `crate::git_config`).
#[derive(Debug, Clone, Default)]
pub struct GitCommandInspector {
    launcher: Arc<Launcher>,
}

impl GitCommandInspector {
    /// An inspector whose git runs through `launcher`.
    pub fn new(launcher: Arc<Launcher>) -> Self {
        GitCommandInspector { launcher }
    }
}

#[async_trait]
impl GitInspector for GitCommandInspector {
    async fn head(&self, workspace: &Path) -> Result<Option<String>, core_models::Error> {
        let limits = Limits {
            stdout: 1024,
            overflow: Overflow::Stop,
        };
        let Ok(repo) = repository(workspace).await else {
            // Not a repository, or not one of the workspace's own.
            return Ok(None);
        };
        let out = inspect(
            &self.launcher,
            &repo,
            &["rev-parse", "--verify", "--quiet", "HEAD"],
            limits,
        )
        .await?;
        if !out.status.success() {
            // Not a repository, or a repository with no commit yet.
            return Ok(None);
        }
        let hash = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok((!hash.is_empty()).then_some(hash))
    }

    async fn commits_since(
        &self,
        workspace: &Path,
        since: &str,
    ) -> Result<Vec<GitCommit>, core_models::Error> {
        let range = format!("{since}..HEAD");
        let limits = Limits {
            stdout: LOG_CAP,
            overflow: Overflow::Stop,
        };
        let repo = repository(workspace)
            .await
            .map_err(|message| Error::Command {
                program: "git log".into(),
                message,
            })?;
        let mut args = vec![
            "log",
            "--no-ext-diff",
            "--no-textconv",
            "--reverse",
            "--format=%x01%H%x00%s",
            "--name-only",
        ];
        if repo.is_subfolder() {
            // Only the commits that change the workspace, with its files only, named
            // relative to it.
            args.push("--relative");
        }
        args.extend(["--end-of-options", &range, "--"]);
        if repo.is_subfolder() {
            args.push(".");
        }
        let out = inspect(&self.launcher, &repo, &args, limits).await?;
        if !out.status.success() && !out.stdout_cut {
            return Err(Error::Command {
                program: "git log".into(),
                message: out.stderr_text(),
            }
            .into());
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut records: Vec<&str> = text.split('\u{1}').collect();
        if out.stdout_cut {
            // The last record may be cut short.
            records.pop();
        }
        Ok(records
            .into_iter()
            .filter(|r| !r.trim().is_empty())
            .filter_map(|record| {
                let mut lines = record.lines();
                let (hash, subject) = lines.next()?.split_once('\u{0}')?;
                Some(GitCommit {
                    hash: hash.to_string(),
                    subject: subject.to_string(),
                    files: lines
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .map(String::from)
                        .collect(),
                })
            })
            .collect())
    }
}

/// Runs a formatter program on files with given extensions, e.g.
/// `CommandFormatter::new("rustfmt", ["rs"], ["rustfmt", "--edition", "2021"])`, in the
/// configured sandbox (no network; by default it writes only the workspace). Formatters run
/// without asking anyone, so where the kernel cannot sandbox they run only when
/// `sandbox.fallback` says commands may run unsandboxed.
#[derive(Debug, Clone)]
pub struct CommandFormatter {
    name: String,
    extensions: Vec<String>,
    command: Vec<String>,
    launcher: Arc<Launcher>,
}

impl CommandFormatter {
    /// A formatter named `name` for files ending in `.EXT` for each of `extensions`, run as
    /// `command[0] command[1..] FILE…` in the workspace.
    pub fn new<E, C>(name: impl Into<String>, extensions: E, command: C) -> Self
    where
        E: IntoIterator,
        E::Item: Into<String>,
        C: IntoIterator,
        C::Item: Into<String>,
    {
        CommandFormatter {
            name: name.into(),
            extensions: extensions
                .into_iter()
                .map(|e| e.into().trim_start_matches('.').to_string())
                .collect(),
            command: command.into_iter().map(Into::into).collect(),
            launcher: Arc::new(Launcher::default()),
        }
    }

    /// Start the formatter through `launcher` (shared with the other tools).
    pub fn with_launcher(mut self, launcher: Arc<Launcher>) -> Self {
        self.launcher = launcher;
        self
    }
}

/// A digest of the regular file `path` in `workspace` (read beneath the workspace,
/// without blocking), or `None` when it is missing, outside, or not a regular file.
fn digest(workspace: Option<&Workspace>, path: &str) -> Option<(u64, u64)> {
    let Opened::File(mut file) = workspace?.open_existing(path).ok()? else {
        return None;
    };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut len = 0u64;
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                hasher.write(&chunk[..n]);
                len += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some((hasher.finish(), len))
}

#[async_trait]
impl Formatter for CommandFormatter {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn handles(&self, path: &str) -> bool {
        Path::new(path)
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| self.extensions.iter().any(|x| x == e))
    }

    async fn format(
        &self,
        workspace: &Path,
        files: &[String],
    ) -> Result<Vec<String>, core_models::Error> {
        let Some((program, args)) = self.command.split_first() else {
            return Err(core_models::Error::port(format!(
                "formatter {} has no command",
                self.name
            )));
        };
        let confined = Workspace::with_launcher(workspace, &self.launcher).ok();
        let before: Vec<_> = files.iter().map(|f| digest(confined.as_ref(), f)).collect();
        // Paths that could pass for options are given as `./PATH`.
        let existing: Vec<String> = files
            .iter()
            .zip(&before)
            .filter(|(_, b)| b.is_some())
            .map(|(f, _)| {
                if f.starts_with('-') {
                    format!("./{f}")
                } else {
                    f.clone()
                }
            })
            .collect();
        if existing.is_empty() {
            return Ok(Vec::new());
        }
        let refused = |why: String| Error::Command {
            program: program.clone(),
            message: format!("not run: {why}"),
        };
        match self.launcher.admission(Variant::Configured) {
            Admission::Run => {}
            Admission::AskFirst(why) | Admission::Refuse(why) => return Err(refused(why).into()),
        }
        let sandbox = self
            .launcher
            .sandbox(workspace, Variant::Configured)
            .map_err(|e| refused(e.to_string()))?;
        let mut command = Command::new(program);
        command
            .args(args)
            .args(&existing)
            .current_dir(workspace)
            .env("GIT_TERMINAL_PROMPT", "0");
        let limits = Limits {
            stdout: STDERR_CAP,
            overflow: Overflow::Drain,
        };
        let out = run(command, program, limits, &sandbox).await?;
        if !out.status.success() {
            return Err(Error::Command {
                program: program.clone(),
                message: out.stderr_text(),
            }
            .into());
        }
        Ok(files
            .iter()
            .zip(before)
            .filter(|(f, b)| b.is_some() && digest(confined.as_ref(), f) != *b)
            .map(|(f, _)| f.clone())
            .collect())
    }
}
