//! The seccomp programs: what a sandboxed command may not ask the kernel for.

use crate::error::Error;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// Refused with EPERM in every sandboxed mode: mounting and namespaces (ways around the
/// file rules; `clone` with namespace flags too, see [`NAMESPACE_FLAGS`]), kernel modules and reboots, kernel keyrings (secrets), io_uring (which
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

/// `setxattrat` and `removexattrat` (Linux 6.13): one number on every architecture.
const SYS_SETXATTRAT: libc::c_long = 463;
const SYS_REMOVEXATTRAT: libc::c_long = 466;

/// Refused with EPERM in `read-only`: changing a file's metadata — mode (set-user-id bits
/// included), owner, times, extended attributes — which Landlock does not govern. A
/// read-only command (and whatever a repository's configuration makes git run for it)
/// then changes nothing at all.
const METADATA_DENIED: &[libc::c_long] = &[
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chmod,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_chown,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_lchown,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_utime,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_utimes,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_futimesat,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_fchmodat2,
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_utimensat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    SYS_SETXATTRAT,
    SYS_REMOVEXATTRAT,
];

/// Calls that act on another process when their first argument names one (0 is the
/// caller): resource limits (`prlimit --pid` can kill a process through a CPU limit or
/// starve `aintern` of file descriptors), CPU affinity and scheduling, and page
/// placement. Refused with EPERM for any process but the caller.
const OTHER_PROCESS_FIRST: &[libc::c_long] = &[
    libc::SYS_prlimit64,
    libc::SYS_sched_setaffinity,
    libc::SYS_sched_setscheduler,
    libc::SYS_sched_setparam,
    libc::SYS_sched_setattr,
    libc::SYS_migrate_pages,
    libc::SYS_move_pages,
];

/// The same with the process in the second argument (`which`, `who`): priorities. There
/// `who = 0` means the caller only with the kinds that name a process or a process group:
/// with the kind that names a user (`PRIO_USER`, `IOPRIO_WHO_USER`) it means every process
/// of the caller's user, `aintern` among them, so that kind is refused whatever `who` is.
/// Each call with the smallest `which` that names a user.
const OTHER_PROCESS_SECOND: &[(libc::c_long, u64)] = &[
    (libc::SYS_setpriority, libc::PRIO_USER as u64),
    (libc::SYS_ioprio_set, IOPRIO_WHO_USER),
];

/// `ioprio_set`'s kind that names a user (linux/ioprio.h; not in libc).
const IOPRIO_WHO_USER: u64 = 3;

/// Refused outright: acting on another process's memory through a pidfd.
const PROCESS_MEMORY: &[libc::c_long] = &[libc::SYS_process_madvise, libc::SYS_process_mrelease];

/// Refused in `read-only`, besides [`METADATA_DENIED`]: System V and POSIX message-queue
/// IPC objects, which outlive the command and can change other processes' objects.
const IPC_DENIED: &[libc::c_long] = &[
    libc::SYS_shmget,
    libc::SYS_shmctl,
    libc::SYS_shmat,
    libc::SYS_msgget,
    libc::SYS_msgctl,
    libc::SYS_msgsnd,
    libc::SYS_semget,
    libc::SYS_semctl,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_notify,
    libc::SYS_mq_getsetattr,
];

/// `ioctl` requests that change a file's attributes (`chattr`), refused in `read-only`:
/// `FS_IOC_SETFLAGS` (64- and 32-bit forms) and `FS_IOC_FSSETXATTR`.
const ATTRIBUTE_IOCTLS: [u64; 3] = [0x4008_6602, 0x4004_6602, 0x401c_5820];

/// `clone` flags that create namespaces; a `clone` with any of them is refused (as
/// `unshare` is), and `clone3`, whose flags a filter cannot read, answers "not
/// implemented" so that the C library falls back to `clone`.
const NAMESPACE_FLAGS: [u64; 7] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
];

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

fn filter_error(e: impl std::fmt::Display) -> Error {
    Error::Filter(e.to_string())
}

/// A program answering `action` to `calls` (each with its rules; none: always).
fn program(
    calls: Vec<(libc::c_long, Vec<SeccompRule>)>,
    action: SeccompAction,
) -> Result<BpfProgram, Error> {
    let arch = ARCH.ok_or_else(|| Error::Filter("unsupported architecture".into()))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (call, conditions) in calls {
        #[cfg(target_arch = "x86_64")]
        rules.insert(call | X32_BIT, conditions.clone());
        rules.insert(call, conditions);
    }
    let filter =
        SeccompFilter::new(rules, SeccompAction::Allow, action, arch).map_err(filter_error)?;
    BpfProgram::try_from(filter).map_err(filter_error)
}

fn always(calls: &[libc::c_long]) -> impl Iterator<Item = (libc::c_long, Vec<SeccompRule>)> + '_ {
    calls.iter().map(|c| (*c, Vec::new()))
}

/// `clone` with any namespace flag (its first argument).
fn clone_creating_namespaces() -> Result<(libc::c_long, Vec<SeccompRule>), Error> {
    let rules = NAMESPACE_FLAGS
        .iter()
        .map(|flag| {
            let condition = SeccompCondition::new(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(*flag),
                *flag,
            )
            .map_err(filter_error)?;
            SeccompRule::new(vec![condition]).map_err(filter_error)
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok((libc::SYS_clone, rules))
}

/// `call` when its argument `index` is not 0 (another process).
fn on_other_process(
    call: libc::c_long,
    index: u8,
) -> Result<(libc::c_long, Vec<SeccompRule>), Error> {
    let condition = SeccompCondition::new(index, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, 0)
        .map_err(filter_error)?;
    Ok((
        call,
        vec![SeccompRule::new(vec![condition]).map_err(filter_error)?],
    ))
}

/// `ioctl` with one of [`ATTRIBUTE_IOCTLS`].
fn attribute_ioctls() -> Result<(libc::c_long, Vec<SeccompRule>), Error> {
    let rules = ATTRIBUTE_IOCTLS
        .iter()
        .map(|request| {
            let condition =
                SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, *request)
                    .map_err(filter_error)?;
            SeccompRule::new(vec![condition]).map_err(filter_error)
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok((libc::SYS_ioctl, rules))
}

/// The programs for a sandboxed command, with or without `network`, read-only or not: one
/// refusing calls with EPERM, one answering `clone3` with ENOSYS, one answering the
/// group-leaving calls with success.
pub(crate) fn programs(network: bool, read_only: bool) -> Result<Vec<BpfProgram>, Error> {
    let mut denied: Vec<(libc::c_long, Vec<SeccompRule>)> = always(ALWAYS_DENIED).collect();
    if !network {
        denied.extend(always(NETWORK_DENIED));
    }
    if read_only {
        denied.extend(always(METADATA_DENIED));
        denied.extend(always(IPC_DENIED));
        denied.push(attribute_ioctls()?);
    }
    denied.extend(always(PROCESS_MEMORY));
    for call in OTHER_PROCESS_FIRST {
        denied.push(on_other_process(*call, 0)?);
    }
    for (call, user) in OTHER_PROCESS_SECOND {
        let (call, mut rules) = on_other_process(*call, 1)?;
        let kind = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ge, *user)
            .map_err(filter_error)?;
        rules.push(SeccompRule::new(vec![kind]).map_err(filter_error)?);
        denied.push((call, rules));
    }
    denied.push(clone_creating_namespaces()?);
    Ok(vec![
        program(denied, SeccompAction::Errno(libc::EPERM as u32))?,
        program(
            always(&[libc::SYS_clone3]).collect(),
            SeccompAction::Errno(libc::ENOSYS as u32),
        )?,
        program(always(PRETEND_DONE).collect(), SeccompAction::Errno(0))?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `program` answers a call `nr` with `args`, run as the kernel runs a classic
    /// BPF filter over `seccomp_data` (the few instructions seccompiler writes).
    fn answer(program: &BpfProgram, nr: libc::c_long, args: [u64; 6]) -> u32 {
        let mut data = Vec::with_capacity(64);
        data.extend_from_slice(&(nr as u32).to_ne_bytes());
        data.extend_from_slice(&AUDIT_ARCH.to_ne_bytes());
        data.extend_from_slice(&0u64.to_ne_bytes());
        for arg in args {
            data.extend_from_slice(&arg.to_ne_bytes());
        }
        let word = |at: u32| {
            let at = at as usize;
            u32::from_ne_bytes(data[at..at + 4].try_into().unwrap())
        };
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let op = &program[pc];
            pc += 1;
            let jump = |taken: bool| usize::from(if taken { op.jt } else { op.jf });
            match op.code {
                0x20 => a = word(op.k),            // ld [k]
                0x54 => a &= op.k,                 // and #k
                0x05 => pc += op.k as usize,       // ja
                0x15 => pc += jump(a == op.k),     // jeq #k
                0x25 => pc += jump(a > op.k),      // jgt #k
                0x35 => pc += jump(a >= op.k),     // jge #k
                0x45 => pc += jump(a & op.k != 0), // jset #k
                0x06 => return op.k,               // ret #k
                other => panic!("instruction {other:#x} not understood by this test"),
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 0xc000_003e;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 0xc000_00b7;
    #[cfg(target_arch = "riscv64")]
    const AUDIT_ARCH: u32 = 0xc000_00f3;

    const ALLOW: u32 = 0x7fff_0000;
    const EPERM: u32 = 0x0005_0000 | libc::EPERM as u32;

    /// The first program of a workspace-write sandbox, the one that refuses with EPERM.
    fn denying() -> BpfProgram {
        programs(false, false).unwrap().remove(0)
    }

    #[test]
    fn priorities_are_refused_for_another_process_and_for_the_whole_user() {
        let p = denying();
        let (prio_process, prio_pgrp, prio_user) = (0, 1, libc::PRIO_USER as u64);
        let set = libc::SYS_setpriority;
        assert_eq!(
            answer(&p, set, [prio_process, 0, 10, 0, 0, 0]),
            ALLOW,
            "itself"
        );
        assert_eq!(
            answer(&p, set, [prio_pgrp, 0, 10, 0, 0, 0]),
            ALLOW,
            "its group"
        );
        assert_eq!(answer(&p, set, [prio_process, 4242, 10, 0, 0, 0]), EPERM);
        // "0" with PRIO_USER is the caller's user: every process of it.
        assert_eq!(answer(&p, set, [prio_user, 0, 10, 0, 0, 0]), EPERM);
        assert_eq!(answer(&p, set, [prio_user, 1000, 10, 0, 0, 0]), EPERM);
        let io = libc::SYS_ioprio_set;
        let (who_process, who_pgrp, who_user) = (1, 2, IOPRIO_WHO_USER);
        assert_eq!(answer(&p, io, [who_process, 0, 7, 0, 0, 0]), ALLOW);
        assert_eq!(answer(&p, io, [who_pgrp, 0, 7, 0, 0, 0]), ALLOW);
        assert_eq!(answer(&p, io, [who_user, 0, 7, 0, 0, 0]), EPERM);
        assert_eq!(answer(&p, io, [who_process, 4242, 7, 0, 0, 0]), EPERM);
        // Other calls are left to the other rules.
        assert_eq!(answer(&p, libc::SYS_getpid, [0; 6]), ALLOW);
        assert_eq!(answer(&p, libc::SYS_mount, [0; 6]), EPERM);
    }
}
