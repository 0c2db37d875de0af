//! The seed-004 ports over commands: [`GitCommandInspector`] (the `git` program) and
//! [`CommandFormatter`] (any formatter program, per file extension).

use crate::error::Error;
use async_trait::async_trait;
use core_models::{Formatter, GitCommit, GitInspector};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

pub(crate) async fn output(
    program: &str,
    args: &[&str],
    dir: &Path,
) -> Result<std::process::Output, Error> {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| Error::Command {
            program: program.into(),
            message: if e.kind() == std::io::ErrorKind::NotFound {
                format!("{program} is not installed")
            } else {
                e.to_string()
            },
        })
}

/// Reads git history with the `git` command.
#[derive(Debug, Clone, Default)]
pub struct GitCommandInspector;

#[async_trait]
impl GitInspector for GitCommandInspector {
    async fn head(&self, workspace: &Path) -> Result<Option<String>, core_models::Error> {
        let out = output(
            "git",
            &["rev-parse", "--verify", "--quiet", "HEAD"],
            workspace,
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
        let out = output(
            "git",
            &[
                "log",
                "--reverse",
                "--format=%x01%H%x00%s",
                "--name-only",
                &range,
                "--",
            ],
            workspace,
        )
        .await?;
        if !out.status.success() {
            return Err(Error::Command {
                program: "git log".into(),
                message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            }
            .into());
        }
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(text
            .split('\u{1}')
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
/// `CommandFormatter::new("rustfmt", ["rs"], ["rustfmt", "--edition", "2021"])`.
#[derive(Debug, Clone)]
pub struct CommandFormatter {
    name: String,
    extensions: Vec<String>,
    command: Vec<String>,
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
        }
    }
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
        let paths: Vec<PathBuf> = files.iter().map(|f| workspace.join(f)).collect();
        let before: Vec<Option<Vec<u8>>> = paths.iter().map(|p| std::fs::read(p).ok()).collect();
        let existing: Vec<&str> = files
            .iter()
            .zip(&before)
            .filter(|(_, b)| b.is_some())
            .map(|(f, _)| f.as_str())
            .collect();
        if existing.is_empty() {
            return Ok(Vec::new());
        }
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(existing);
        let out = output(program, &all, workspace).await?;
        if !out.status.success() {
            return Err(Error::Command {
                program: program.clone(),
                message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            }
            .into());
        }
        Ok(files
            .iter()
            .zip(paths.iter().zip(before))
            .filter(|(_, (p, b))| b.is_some() && std::fs::read(p).ok() != *b)
            .map(|(f, _)| f.clone())
            .collect())
    }
}
