//! The seccomp programs: what a sandboxed command may not ask the kernel for.

use crate::error::Error;
use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule, TargetArch};
use std::collections::BTreeMap;

/// Refused with EPERM in every sandboxed mode: mounting and namespaces (ways around the
/// file rules), kernel modules and reboots, kernel keyrings (secrets), io_uring (which
/// would bypass the socket filter), and kernel interfaces that mostly serve exploits.
const ALWAYS_DENIED: &[libc::c_long] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

/// Refused with EPERM without network: creating a socket of any family (TCP, UDP, raw,
/// netlink, and Unix sockets, which reach daemons that act for the user: SSH and GPG
/// agents, D-Bus, Docker). `socketpair` stays: programs use it to talk to their own
/// children.
const NETWORK_DENIED: &[libc::c_long] = &[libc::SYS_socket];

/// Answered "done" without doing anything: leaving the process group (or the session), so
/// that ending the group ends everything the command started.
const PRETEND_DONE: &[libc::c_long] = &[libc::SYS_setsid, libc::SYS_setpgid];

#[cfg(target_arch = "x86_64")]
const ARCH: Option<TargetArch> = Some(TargetArch::x86_64);
#[cfg(target_arch = "aarch64")]
const ARCH: Option<TargetArch> = Some(TargetArch::aarch64);
#[cfg(target_arch = "riscv64")]
const ARCH: Option<TargetArch> = Some(TargetArch::riscv64);
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
)))]
const ARCH: Option<TargetArch> = None;

/// Whether programs can be built for this architecture.
pub(crate) fn supported_arch() -> bool {
    ARCH.is_some()
}

/// The x32 ABI's system-call numbers are the x86-64 ones with this bit set; the same
/// calls are refused there too.
#[cfg(target_arch = "x86_64")]
const X32_BIT: libc::c_long = 0x4000_0000;

fn program(calls: &[libc::c_long], action: SeccompAction) -> Result<BpfProgram, Error> {
    let arch = ARCH.ok_or_else(|| Error::Filter("unsupported architecture".into()))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in calls {
        rules.insert(*call, Vec::new());
        #[cfg(target_arch = "x86_64")]
        rules.insert(*call | X32_BIT, Vec::new());
    }
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, action, arch)
        .map_err(|e| Error::Filter(e.to_string()))?;
    BpfProgram::try_from(filter).map_err(|e| Error::Filter(e.to_string()))
}

/// The programs for a sandboxed command, with or without `network`: one refusing calls
/// with EPERM, one answering the group-leaving calls with success.
pub(crate) fn programs(network: bool) -> Result<Vec<BpfProgram>, Error> {
    let mut denied: Vec<libc::c_long> = ALWAYS_DENIED.to_vec();
    if !network {
        denied.extend_from_slice(NETWORK_DENIED);
    }
    Ok(vec![
        program(&denied, SeccompAction::Errno(libc::EPERM as u32))?,
        program(PRETEND_DONE, SeccompAction::Errno(0))?,
    ])
}
