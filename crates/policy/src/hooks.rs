//! Hooks that are programs: told of an event as one JSON object on stdin, answering one
//! JSON object on stdout ([`core_models::HookReply`]), run under the commands' sandbox, in
//! the workspace, with a timeout; the whole process group is ended when it runs too long
//! or the agent stops waiting.
//!
//! A hook that cannot start, exits with a failure, runs past its timeout, writes more than
//! [`MAX_REPLY_BYTES`] or answers something that is not a reply has *failed*: before a tool
//! call, that refuses the call (see `services-ai`'s `policy`). Hooks come from the user's
//! own configuration only, never a workspace's: the CLI reads them from the user's file.

use crate::error::Error;
use core_models::{async_trait, Hook, HookConfig, HookEvent, HookPoint, HookReply, HooksConfig};
use sandbox::{Job, Launcher, Variant};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A hook's timeout when its configuration gives none.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// Longest timeout a hook may have.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Most bytes of a hook's answer read.
pub const MAX_REPLY_BYTES: usize = 64 * 1024;
/// Most bytes of a hook's stderr kept for the message when it fails.
const STDERR_BYTES: usize = 4 * 1024;

/// The hooks of `config` as programs run in `workspace` under `launcher`'s sandbox.
///
/// # Errors
/// [`Error::Hook`] for a hook with no program or a timeout out of range.
pub fn programs(
    config: &HooksConfig,
    launcher: Arc<Launcher>,
    workspace: PathBuf,
) -> Result<Vec<Arc<dyn Hook>>, Error> {
    config
        .each()
        .map(|(point, hook)| {
            ProgramHook::new(point, hook, Arc::clone(&launcher), workspace.clone())
                .map(|h| Arc::new(h) as Arc<dyn Hook>)
        })
        .collect()
}

/// A hook that is a program.
#[derive(Debug)]
pub struct ProgramHook {
    name: String,
    point: HookPoint,
    command: Vec<String>,
    timeout: Duration,
    launcher: Arc<Launcher>,
    workspace: PathBuf,
}

impl ProgramHook {
    /// The hook `config` at `point`, run in `workspace` under `launcher`'s sandbox.
    ///
    /// # Errors
    /// [`Error::Hook`] for a hook with no program or a timeout out of range.
    pub fn new(
        point: HookPoint,
        config: &HookConfig,
        launcher: Arc<Launcher>,
        workspace: PathBuf,
    ) -> Result<Self, Error> {
        let program = config.command.first().filter(|p| !p.is_empty());
        let name = config.name.clone().unwrap_or_else(|| {
            program
                .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
                .unwrap_or_default()
        });
        let invalid = |message: &str| Error::Hook {
            name: format!("{} ({})", name, point.name()),
            message: message.to_string(),
        };
        if program.is_none() {
            return Err(invalid("`command` needs a program"));
        }
        let ms = config.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if ms == 0 || ms > MAX_TIMEOUT_MS {
            return Err(invalid(&format!(
                "`timeout_ms` must be between 1 and {MAX_TIMEOUT_MS}"
            )));
        }
        Ok(ProgramHook {
            name,
            point,
            command: config.command.clone(),
            timeout: Duration::from_millis(ms),
            launcher,
            workspace,
        })
    }

    async fn run(&self, input: Vec<u8>) -> Result<Vec<u8>, String> {
        let sandbox = self
            .launcher
            .sandbox(&self.workspace, Variant::Configured)
            .map_err(|e| format!("cannot run it in the commands' sandbox: {e}"))?;
        let mut command = tokio::process::Command::new(&self.command[0]);
        command
            .args(&self.command[1..])
            .current_dir(&self.workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        sandbox.apply(command.as_std_mut());
        let mut child = command.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                format!("the program '{}' was not found", self.command[0])
            } else {
                format!("cannot start '{}': {e}", self.command[0])
            }
        })?;
        // Dropping the job (on timeout, or with the future) ends the whole group.
        let _job = child.id().and_then(Job::track);
        let mut stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let work = async move {
            let write = async {
                if let Some(mut pipe) = stdin.take() {
                    // A hook that does not read its input is its own business.
                    let _ = pipe.write_all(&input).await;
                    let _ = pipe.shutdown().await;
                }
            };
            let (_, out, err) = tokio::join!(
                write,
                read_capped(stdout, MAX_REPLY_BYTES),
                read_capped(stderr, STDERR_BYTES)
            );
            (out, err, child.wait().await)
        };
        let ((out, too_long), (err, _), status) = tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| {
                format!(
                    "did not answer within {} ms and was stopped",
                    self.timeout.as_millis()
                )
            })?;
        let status = status.map_err(|e| e.to_string())?;
        if too_long {
            return Err(format!("answered more than {} KiB", MAX_REPLY_BYTES / 1024));
        }
        if !status.success() {
            let err = String::from_utf8_lossy(&err);
            let err = err.trim();
            return Err(if err.is_empty() {
                format!("exited with {status}")
            } else {
                format!("exited with {status}: {err}")
            });
        }
        Ok(out)
    }
}

/// Read `pipe` keeping its first `cap` bytes; whether it wrote more (reading stops there).
async fn read_capped<R: tokio::io::AsyncRead + Unpin>(
    pipe: Option<R>,
    cap: usize,
) -> (Vec<u8>, bool) {
    let Some(mut pipe) = pipe else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    let mut chunk = vec![0u8; 8 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return (kept, false),
            Ok(n) if kept.len() + n > cap => {
                let room = cap - kept.len();
                kept.extend_from_slice(&chunk[..room]);
                return (kept, true);
            }
            Ok(n) => kept.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A hook's answer: empty output decides nothing; anything else must be one reply object.
pub fn parse_reply(out: &[u8]) -> Result<HookReply, String> {
    let text = String::from_utf8_lossy(out);
    let text = text.trim();
    if text.is_empty() {
        return Ok(HookReply::default());
    }
    serde_json::from_str(text).map_err(|e| {
        format!("its answer is not a reply ({{\"decision\": \"allow\" | \"deny\" | \"ask\", \"reason\": …, \"context\": …}}): {e}")
    })
}

#[async_trait]
impl Hook for ProgramHook {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn point(&self) -> HookPoint {
        self.point
    }

    async fn handle(&self, event: &HookEvent) -> Result<HookReply, String> {
        let input = serde_json::to_vec(event).map_err(|e| e.to_string())?;
        let out = self.run(input).await?;
        parse_reply(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_strictly() {
        assert_eq!(parse_reply(b"  \n").unwrap(), HookReply::default());
        let r = parse_reply(br#"{"decision": "deny", "reason": "no"}"#).unwrap();
        assert_eq!(r.decision, Some(core_models::HookDecision::Deny));
        assert!(parse_reply(br#"{"decison": "allow"}"#).is_err());
        assert!(parse_reply(b"yes").is_err());
        assert!(parse_reply(br#"{"decision": "maybe"}"#).is_err());
    }

    #[test]
    fn a_hook_needs_a_program_and_a_sane_timeout() {
        let launcher = Arc::new(Launcher::default());
        let mut c = HookConfig {
            command: vec![],
            timeout_ms: None,
            name: None,
        };
        assert!(ProgramHook::new(HookPoint::BeforeTool, &c, launcher.clone(), "/".into()).is_err());
        c.command = vec!["/bin/true".into()];
        c.timeout_ms = Some(0);
        assert!(ProgramHook::new(HookPoint::BeforeTool, &c, launcher.clone(), "/".into()).is_err());
        c.timeout_ms = None;
        let h = ProgramHook::new(HookPoint::BeforeTool, &c, launcher, "/".into()).unwrap();
        assert_eq!(h.name(), "true");
    }
}
