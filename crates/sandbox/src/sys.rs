//! The crate's only unsafe code: registering the hook that runs in the child between
//! `fork` and `exec`, and one raw system call that asks the kernel for its Landlock ABI.
//!
//! The hook ([`ChildSetup::enter`]) runs in a copy of a multi-threaded process in which
//! only the forking thread exists. There it may make only async-signal-safe calls: no
//! allocation (another thread may have held the allocator's lock at the fork), no locks,
//! no I/O through buffers. Everything it uses is prepared in the parent: the Landlock
//! ruleset (a file descriptor), the seccomp program (an array the kernel copies), the
//! parent's pid. It makes raw system calls only: `setsid`, `prlimit64` (the resource
//! limits), `prctl` (parent-death signal,
//! capability sets, no-new-privileges), `getppid`, `fcntl` (duplicating the ruleset
//! descriptor), `landlock_restrict_self`, `seccomp`, `close`.
//! Errors are returned as raw OS errors (no allocation); std then reports them as the
//! spawn's error.
#![allow(unsafe_code)]

use std::io;
use std::process::Command;

/// What the child does before `exec`, prepared in the parent.
#[derive(Debug)]
pub(crate) struct ChildSetup {
    /// The process that spawns the command: the child dies with it.
    pub(crate) parent: rustix::process::Pid,
    /// The resource limits to set.
    pub(crate) limits: crate::policy::ProcessLimits,
    /// The Landlock ruleset to enter.
    #[cfg(target_os = "linux")]
    pub(crate) ruleset: Option<landlock::RulesetCreated>,
    /// The seccomp programs to install.
    #[cfg(target_os = "linux")]
    pub(crate) filters: Vec<seccompiler::BpfProgram>,
}

fn os_error(errno: rustix::io::Errno) -> io::Error {
    io::Error::from_raw_os_error(errno.raw_os_error())
}

impl ChildSetup {
    /// Runs in the child: a new session and process group, death with the parent, then
    /// the Landlock ruleset and the seccomp filter (in that order: the filter refuses
    /// `setsid`).
    fn enter(&self) -> io::Result<()> {
        rustix::process::setsid().map_err(os_error)?;
        lower_limit(rustix::process::Resource::Nproc, self.limits.processes)?;
        lower_limit(rustix::process::Resource::Fsize, self.limits.file_bytes)?;
        #[cfg(target_os = "linux")]
        {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(os_error)?;
            // The parent may have died between the fork and the line above.
            if rustix::process::getppid() != Some(self.parent) {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if self.ruleset.is_some() {
                drop_capabilities();
            }
            if let Some(ruleset) = &self.ruleset {
                let status = ruleset.try_clone().and_then(|r| {
                    r.restrict_self()
                        .map_err(|_| io::Error::from_raw_os_error(libc::EPERM))
                })?;
                if status.ruleset == landlock::RulesetStatus::NotEnforced {
                    return Err(io::Error::from_raw_os_error(libc::EPERM));
                }
            }
            for filter in &self.filters {
                seccompiler::apply_filter(filter)
                    .map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
            }
        }
        Ok(())
    }
}

/// Lower `resource`'s soft and hard limits to `value` (never raise them: a lower hard
/// limit this process already has is kept).
fn lower_limit(resource: rustix::process::Resource, value: Option<u64>) -> io::Result<()> {
    let Some(value) = value else {
        return Ok(());
    };
    let now = rustix::process::getrlimit(resource);
    let value = now.maximum.map_or(value, |hard| hard.min(value));
    rustix::process::setrlimit(
        resource,
        rustix::process::Rlimit {
            current: Some(value),
            maximum: Some(value),
        },
    )
    .map_err(os_error)
}

/// Empty the capability bounding set and the ambient set, so that the program `exec`
/// starts has no capability — even when this process runs as root (no reading of other
/// users' files past their permissions, no tracing, no raw network, no mounts). Fails
/// quietly for a process without `CAP_SETPCAP`, which has no capabilities to lose.
#[cfg(target_os = "linux")]
fn drop_capabilities() {
    use rustix::thread::{
        clear_ambient_capability_set, remove_capability_from_bounding_set, CapabilitySet,
    };
    let _ = clear_ambient_capability_set();
    for capability in CapabilitySet::all().iter() {
        let _ = remove_capability_from_bounding_set(capability);
    }
}

/// Make `command` run `setup` in its child before `exec`.
pub(crate) fn on_exec(command: &mut Command, setup: std::sync::Arc<ChildSetup>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs between fork and exec; `ChildSetup::enter` only makes the
    // async-signal-safe system calls listed in the module documentation, on data prepared
    // in the parent, and allocates nothing (its errors are raw OS errors).
    unsafe {
        command.pre_exec(move || setup.enter());
    }
}

/// The Landlock ABI version the kernel offers, `None` when Landlock is not enabled.
pub(crate) fn landlock_abi() -> Option<u8> {
    #[cfg(target_os = "linux")]
    {
        /// `LANDLOCK_CREATE_RULESET_VERSION`: ask for the ABI version.
        const VERSION: libc::c_uint = 1;
        // SAFETY: with a null attribute, size 0 and the VERSION flag, the system call only
        // returns the ABI version (or an error); it reads and writes no memory.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                VERSION,
            )
        };
        u8::try_from(version).ok().filter(|v| *v >= 1)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Whether seccomp filters can be installed (the kernel has seccomp and this process is
/// not already under a strict filter that would refuse the question).
pub(crate) fn seccomp_available() -> bool {
    #[cfg(target_os = "linux")]
    {
        crate::filter::supported_arch()
            && rustix::thread::secure_computing_mode()
                .is_ok_and(|m| m != rustix::thread::SecureComputingMode::Strict)
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}
