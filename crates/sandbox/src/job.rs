//! The process groups of started commands: [`Job`], and [`end_all`] for signal handlers.
//!
//! Every command starts as the leader of a new session and process group
//! ([`crate::Sandbox::apply`]), and sandboxed ones cannot leave it. A [`Job`] ends the
//! whole group: SIGTERM, a grace period, then SIGKILL whatever the leader did — and
//! SIGKILL when the job is dropped. The groups still running are kept in one registry per
//! process, so that a signal handler can end them all before the program exits.

use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

static GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn groups() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The process group of one started command. Dropping it kills the group.
#[derive(Debug)]
pub struct Job {
    group: Pid,
}

impl Job {
    /// Track the group led by the command whose pid is `leader` (as `Child::id` gives it).
    /// `None` when the pid is not a valid one.
    pub fn track(leader: u32) -> Option<Job> {
        let group = Pid::from_raw(i32::try_from(leader).ok()?)?;
        groups().insert(group.as_raw_nonzero().get());
        Some(Job { group })
    }

    /// The process group id.
    pub fn id(&self) -> i32 {
        self.group.as_raw_nonzero().get()
    }

    /// Whether any process of the group is still alive.
    pub fn is_alive(&self) -> bool {
        test_kill_process_group(self.group).is_ok()
    }

    /// SIGKILL every process of the group now.
    pub fn kill(&self) {
        if let Err(e) = kill_process_group(self.group, Signal::KILL) {
            tracing::trace!(group = self.id(), error = %e, "process group already gone");
        }
    }

    /// End the group: SIGTERM, up to `grace` for its processes to exit, then SIGKILL to
    /// whatever is left — whether or not the leader has exited. Returns once no process of
    /// the group is left, or a short while after the SIGKILL.
    pub async fn end(&self, grace: Duration) {
        if kill_process_group(self.group, Signal::TERM).is_err() {
            return; // No process is left in the group.
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
            if !self.is_alive() {
                return;
            }
        }
        self.kill();
        // SIGKILL cannot be ignored; the processes are gone once the kernel has run them.
        let deadline = Instant::now() + Duration::from_millis(500);
        while self.is_alive() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.kill();
        groups().remove(&self.id());
    }
}

/// The ids of the process groups of started commands not yet ended.
pub fn live_groups() -> Vec<i32> {
    groups().iter().copied().collect()
}

/// SIGKILL every process group of a started command not yet ended, and remove the
/// sandboxes' private temporary folders: for a program about to exit on a signal, so that
/// nothing it started outlives it and nothing it wrote is left behind.
pub fn end_all() {
    for id in live_groups() {
        if let Some(group) = Pid::from_raw(id) {
            let _ = kill_process_group(group, Signal::KILL);
        }
    }
    crate::prepare::remove_temp_dirs();
}
