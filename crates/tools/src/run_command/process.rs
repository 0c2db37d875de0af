//! Running one program in a sandbox to its end: its own session and process group, a
//! timeout on the whole command, cancellation, output kept head and tail, and nothing left
//! running afterwards.

use core_models::CancellationToken;
use sandbox::{Job, Sandbox};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Time between SIGTERM and SIGKILL when a process group is ended.
pub(crate) const GRACE: Duration = Duration::from_millis(500);
/// How long output is still read once every process of the group has ended: only a
/// process that escaped the group (possible without a sandbox) can hold a pipe open that
/// long, and its output no longer belongs to the command.
const DRAIN: Duration = Duration::from_millis(300);

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The program exited (or was killed by a signal it did not get from us).
    Exited(ExitStatus),
    /// Its time ran out; it was ended.
    TimedOut,
    /// The call was cancelled; it was ended.
    Cancelled,
}

/// One output stream: the first and last halves of the cap, and the total size.
#[derive(Debug, Default)]
struct Capture {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: usize,
}

impl Capture {
    fn push(&mut self, chunk: &[u8], cap: usize) {
        let half = cap / 2;
        self.total += chunk.len();
        let to_head = half.saturating_sub(self.head.len()).min(chunk.len());
        self.head.extend_from_slice(&chunk[..to_head]);
        self.tail.extend(&chunk[to_head..]);
        if self.tail.len() > half {
            self.tail.drain(..self.tail.len() - half);
        }
    }

    /// The kept text, with a marker where bytes were left out.
    fn text(&mut self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        let kept = self.head.len() + self.tail.len();
        if self.total > kept {
            text.push_str(&format!("\n… {} bytes left out …\n", self.total - kept));
        }
        text.push_str(&String::from_utf8_lossy(self.tail.make_contiguous()));
        text
    }
}

/// What a finished run produced.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) end: End,
    pub(crate) stdout: String,
    pub(crate) stdout_total: usize,
    pub(crate) stderr: String,
    pub(crate) stderr_total: usize,
    pub(crate) elapsed: Duration,
}

/// Run `command` (its program, arguments and folder already set) in `sandbox`: stdin
/// closed, stdout and stderr kept up to `cap` bytes each (head and tail). The whole
/// command — not only its first process, and not the end of its output — gets `timeout`;
/// on timeout or cancellation its process group is ended (SIGTERM, [`GRACE`], SIGKILL);
/// after it exits, whatever it left running in its group is ended too.
///
/// # Errors
/// The program could not be started (in words).
pub(crate) async fn run(
    mut command: tokio::process::Command,
    sandbox: &Sandbox,
    timeout: Duration,
    cancellation: &CancellationToken,
    cap: usize,
) -> Result<Finished, String> {
    let started = Instant::now();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    sandbox.apply(command.as_std_mut());
    let mut child = command.spawn().map_err(|e| start_error(&e))?;
    // Dropping the job (a dropped future included) kills the whole group.
    let job = child.id().and_then(Job::track);
    let out = Arc::new(Mutex::new(Capture::default()));
    let err = Arc::new(Mutex::new(Capture::default()));
    let readers = [
        tokio::spawn(capture(child.stdout.take(), Arc::clone(&out), cap)),
        tokio::spawn(capture(child.stderr.take(), Arc::clone(&err), cap)),
    ];

    let end = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => End::Exited(status),
            Err(e) => {
                tracing::debug!(error = %e, "cannot wait for the command");
                End::Cancelled
            }
        },
        () = tokio::time::sleep(timeout) => End::TimedOut,
        () = cancellation.cancelled() => End::Cancelled,
    };
    if let Some(job) = &job {
        job.end(GRACE).await;
    }
    if !matches!(end, End::Exited(_)) {
        // Reap the leader, dead after the group was ended.
        let _ = tokio::time::timeout(GRACE, child.wait()).await;
    }
    let drain_until = tokio::time::Instant::now() + DRAIN;
    for reader in readers {
        let abort = reader.abort_handle();
        if tokio::time::timeout_at(drain_until, reader).await.is_err() {
            abort.abort();
        }
    }
    let (stdout, stdout_total) = taken(&out);
    let (stderr, stderr_total) = taken(&err);
    Ok(Finished {
        end,
        stdout,
        stdout_total,
        stderr,
        stderr_total,
        elapsed: started.elapsed(),
    })
}

fn taken(capture: &Mutex<Capture>) -> (String, usize) {
    let mut capture = capture.lock().unwrap_or_else(|e| e.into_inner());
    (capture.text(), capture.total)
}

fn start_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("cannot start the command: {e}"),
        _ => format!("cannot start the command in its sandbox: {e}"),
    }
}

/// Read a pipe to its end into `into`.
async fn capture(pipe: Option<impl AsyncRead + Unpin>, into: Arc<Mutex<Capture>>, cap: usize) {
    let Some(mut pipe) = pipe else { return };
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => into
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(&buf[..n], cap),
        }
    }
}

/// A `tokio` command for `program` with `args` in `dir`.
pub(crate) fn command(program: &str, args: &[&str], dir: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command.args(args).current_dir(dir);
    command
}

#[cfg(test)]
mod tests {
    use super::Capture;

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::default();
        for chunk in [b"abcdef".as_slice(), b"ghij", b"klmnopqrstuvwxyz"] {
            c.push(chunk, 8);
        }
        assert_eq!(c.total, 26);
        assert_eq!(c.text(), "abcd\n… 18 bytes left out …\nwxyz");
        let mut small = Capture::default();
        small.push(b"hi", 8);
        assert_eq!(small.text(), "hi");
    }
}
