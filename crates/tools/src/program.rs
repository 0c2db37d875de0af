//! One program run for the tools: every program this crate starts other than
//! `run_command`'s shell goes through [`run`], in a kernel sandbox
//! ([`sandbox::Sandbox`]) and as the leader of its own process group, its output kept
//! within caps, ended when it runs too long or the call is cancelled.

use crate::error::Error;
use sandbox::{Job, Launcher, Sandbox, Variant};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

/// Longest a git command or a formatter may run before it is ended.
pub(crate) const PROGRAM_TIMEOUT: Duration = Duration::from_secs(120);
/// Most of a program's stderr kept (the rest is read and dropped).
pub(crate) const STDERR_CAP: usize = 16 * 1024;
/// What happens when a program writes more to stdout than is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overflow {
    /// Stop reading and end the program (its output is only shown).
    Stop,
    /// Read on and drop the rest (the program must finish its work).
    Drain,
}

/// How much of a program's stdout is kept.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Most bytes kept.
    pub(crate) stdout: usize,
    /// What happens past them.
    pub(crate) overflow: Overflow,
}

/// What a program wrote and how it ended.
#[derive(Debug)]
pub(crate) struct Captured {
    /// Its exit status (killed when its output was cut with [`Overflow::Stop`]).
    pub(crate) status: ExitStatus,
    /// The first bytes of its stdout.
    pub(crate) stdout: Vec<u8>,
    /// Whether it wrote more than was kept.
    pub(crate) stdout_cut: bool,
    /// The first bytes of its stderr.
    pub(crate) stderr: Vec<u8>,
}

impl Captured {
    /// Its stderr as text, trimmed.
    pub(crate) fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).trim().to_string()
    }
}

/// The sandbox git runs in over `dir`: read-only. Where the kernel cannot sandbox, git
/// runs without one (it is hardened by its configuration overrides either way).
pub(crate) fn git_sandbox(launcher: &Launcher, dir: &Path) -> Sandbox {
    launcher
        .sandbox(dir, Variant::ReadOnly)
        .unwrap_or_else(|_| {
            Sandbox::unenforced(
                launcher.summary(dir, Variant::ReadOnly),
                &launcher.settings().secret_env,
            )
        })
}

/// The one function through which this crate starts a program other than `run_command`'s
/// shell: `command` (named `program` in errors) in `sandbox`, as the leader of its own
/// process group, with no stdin, its stdout kept within `limits`, its stderr within a cap;
/// the whole group is ended when it runs longer than [`PROGRAM_TIMEOUT`], when its output
/// is cut with [`Overflow::Stop`], or when the returned future is dropped (cancellation).
///
/// # Errors
/// [`Error::Command`] when the program cannot be started or runs too long.
pub(crate) async fn run(
    mut command: Command,
    program: &str,
    limits: Limits,
    sandbox: &Sandbox,
) -> Result<Captured, Error> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    sandbox.apply(command.as_std_mut());
    let failed = |message: String| Error::Command {
        program: program.into(),
        message,
    };
    let mut child = command.spawn().map_err(|e| {
        failed(if e.kind() == std::io::ErrorKind::NotFound {
            format!("{program} is not installed")
        } else {
            e.to_string()
        })
    })?;
    // Dropping the job (on timeout, or with the future) kills the whole group.
    let job = child.id().and_then(Job::track);
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let work = async move {
        let (out, err) = tokio::join!(
            async {
                let read = read_capped(stdout, limits.stdout, limits.overflow).await;
                if read.1 && limits.overflow == Overflow::Stop {
                    if let Some(job) = &job {
                        job.kill();
                    }
                }
                read
            },
            read_capped(stderr, STDERR_CAP, Overflow::Drain),
        );
        (out, err, child.wait().await)
    };
    let ((stdout, stdout_cut), (stderr, _), status) =
        match tokio::time::timeout(PROGRAM_TIMEOUT, work).await {
            Ok(done) => done,
            // Dropping `work` dropped the child, which kills it.
            Err(_) => {
                return Err(failed(format!(
                    "did not finish within {} s",
                    PROGRAM_TIMEOUT.as_secs()
                )))
            }
        };
    let status = status.map_err(|e| failed(e.to_string()))?;
    Ok(Captured {
        status,
        stdout,
        stdout_cut,
        stderr,
    })
}

/// Read `pipe` keeping its first `cap` bytes; whether there was more. With
/// [`Overflow::Stop`] reading stops at the first byte past the cap.
async fn read_capped<R: AsyncRead + Unpin>(
    pipe: Option<R>,
    cap: usize,
    overflow: Overflow,
) -> (Vec<u8>, bool) {
    let Some(mut pipe) = pipe else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    let mut cut = false;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let n = match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..n.min(room)]);
        if n > room {
            cut = true;
            if overflow == Overflow::Stop {
                break;
            }
        }
    }
    (kept, cut)
}
