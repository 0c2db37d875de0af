//! How risky a command that is not plainly safe is: the deny-list, applied to every
//! simple command found anywhere in the line. Privilege and disk tools are critical;
//! deleting, moving, permissions, processes, the network, system packages and piping into
//! a shell are high; anything else that runs is at least medium.

use super::git;
use super::what_runs;
use super::wrappers::{program_name, Inner, INTERPRETERS, PACKAGE_MANAGERS, SHELLS, WRAPPERS};
use super::Finding;
use core_models::RiskLevel;

/// Programs that can destroy a system or act with other privileges.
const CRITICAL: &[(&str, &str)] = &[
    ("sudo", "runs a command as another user (root)"),
    ("su", "runs a command as another user (root)"),
    ("doas", "runs a command as another user (root)"),
    ("pkexec", "runs a command as another user (root)"),
    ("runuser", "runs a command as another user"),
    ("mkfs", "formats a disk"),
    ("mkswap", "formats a disk"),
    ("wipefs", "erases disk signatures"),
    ("dd", "copies raw data and can overwrite disks"),
    ("fdisk", "partitions disks"),
    ("sfdisk", "partitions disks"),
    ("cfdisk", "partitions disks"),
    ("gdisk", "partitions disks"),
    ("parted", "partitions disks"),
    ("shutdown", "powers the machine off"),
    ("reboot", "restarts the machine"),
    ("halt", "stops the machine"),
    ("poweroff", "powers the machine off"),
    ("mount", "mounts file systems"),
    ("umount", "unmounts file systems"),
    ("swapon", "changes swap devices"),
    ("swapoff", "changes swap devices"),
    ("format", "formats a disk"),
    ("insmod", "loads kernel modules"),
    ("rmmod", "unloads kernel modules"),
    ("modprobe", "loads kernel modules"),
    ("kexec", "boots another kernel"),
];

/// Programs whose effects are hard to undo.
const HIGH: &[(&str, &str)] = &[
    ("rm", "deletes files"),
    ("rmdir", "deletes folders"),
    ("unlink", "deletes files"),
    ("shred", "destroys file contents"),
    ("truncate", "cuts files short"),
    ("mv", "moves or overwrites files"),
    ("ln", "creates links that can overwrite files"),
    ("chmod", "changes permissions"),
    ("chown", "changes owners"),
    ("chgrp", "changes groups"),
    ("chattr", "changes file attributes"),
    ("setfacl", "changes access lists"),
    ("kill", "ends processes"),
    ("pkill", "ends processes"),
    ("killall", "ends processes"),
    ("curl", "reaches the network"),
    ("wget", "reaches the network"),
    ("ssh", "reaches other machines"),
    ("scp", "copies over the network"),
    ("sftp", "copies over the network"),
    ("rsync", "copies and deletes files, also over the network"),
    ("ftp", "reaches the network"),
    ("telnet", "reaches the network"),
    ("nc", "reaches the network"),
    ("ncat", "reaches the network"),
    ("netcat", "reaches the network"),
    ("socat", "reaches the network"),
    ("docker", "manages containers"),
    ("podman", "manages containers"),
    ("kubectl", "manages a cluster"),
    ("systemctl", "manages system services"),
    ("service", "manages system services"),
    ("crontab", "schedules commands"),
    ("at", "schedules commands"),
    ("apt", "installs system packages"),
    ("apt-get", "installs system packages"),
    ("dpkg", "installs system packages"),
    ("yum", "installs system packages"),
    ("dnf", "installs system packages"),
    ("rpm", "installs system packages"),
    ("pacman", "installs system packages"),
    ("zypper", "installs system packages"),
    ("apk", "installs system packages"),
    ("snap", "installs system packages"),
    ("flatpak", "installs system packages"),
    ("brew", "installs system packages"),
    ("npx", "downloads and runs a package"),
    ("pnpx", "downloads and runs a package"),
    ("bunx", "downloads and runs a package"),
    ("useradd", "manages users"),
    ("userdel", "manages users"),
    ("usermod", "manages users"),
    ("passwd", "changes passwords"),
    ("chpasswd", "changes passwords"),
    ("iptables", "changes the firewall"),
    ("nft", "changes the firewall"),
    ("ufw", "changes the firewall"),
    ("eval", "runs text as shell commands"),
    ("source", "runs a shell script the judge cannot see"),
    (".", "runs a shell script the judge cannot see"),
];

/// Subcommands of package managers that change what is installed or published.
const INSTALLING: &[&str] = &[
    "install",
    "uninstall",
    "publish",
    "add",
    "remove",
    "rm",
    "update",
    "upgrade",
    "i",
    "un",
    "unpublish",
    "yank",
    "login",
    "owner",
];

/// The deny-list judgement of one command (`words`: the program first, as displayed), or
/// `None` when the program is not on it.
pub(super) fn assess(words: &[&str], piped_into: bool) -> Option<Finding> {
    let first = words.first()?;
    let name = program_name(first);
    let args = &words[1..];
    if name.starts_with("mkfs.") {
        return Some(Finding::new(
            RiskLevel::Critical,
            format!("'{name}' formats a disk"),
        ));
    }
    if let Some((_, why)) = CRITICAL.iter().find(|(n, _)| *n == name) {
        return Some(Finding::new(RiskLevel::Critical, format!("'{name}' {why}")));
    }
    if name == "rm" {
        if let Some(target) = destructive_rm(args) {
            return Some(Finding::new(
                RiskLevel::Critical,
                format!("'rm -r' on '{target}' deletes outside the workspace (the system or the home folder)"),
            ));
        }
    }
    if let Some((_, why)) = HIGH.iter().find(|(n, _)| *n == name) {
        return Some(Finding::new(RiskLevel::High, format!("'{name}' {why}")));
    }
    if SHELLS.contains(&name) {
        return Some(shell(name, words, piped_into));
    }
    if INTERPRETERS.contains(&name) {
        return Some(if piped_into {
            Finding::new(
                RiskLevel::High,
                format!("pipes into '{name}', which runs what it reads"),
            )
        } else {
            Finding::new(
                RiskLevel::Medium,
                format!("'{name}' runs code or programs the judge cannot see"),
            )
        });
    }
    if WRAPPERS.contains(&name) {
        return Some(Finding::new(
            RiskLevel::Medium,
            format!("'{name}' runs another command"),
        ));
    }
    if PACKAGE_MANAGERS.contains(&name) {
        let installs = args.iter().find(|a| INSTALLING.contains(a));
        return Some(match installs {
            Some(sub) => Finding::new(
                RiskLevel::High,
                format!("'{name} {sub}' changes installed or published packages"),
            ),
            None => Finding::new(
                RiskLevel::Medium,
                format!("'{name}' builds or runs project code"),
            ),
        });
    }
    match name {
        "git" => git::severity(args),
        "find" => find(args),
        _ => None,
    }
}

/// A shell: its `-c` script is judged on its own; a script file or its input is not seen.
fn shell(name: &str, words: &[&str], piped_into: bool) -> Finding {
    let runs_script = what_runs::runs(words)
        .inner
        .iter()
        .any(|i| matches!(i, Inner::Script { .. }));
    if piped_into && !runs_script {
        Finding::new(
            RiskLevel::High,
            format!("pipes into the shell '{name}', which runs what it reads"),
        )
    } else if runs_script {
        Finding::new(
            RiskLevel::Medium,
            format!("'{name} -c' runs a shell script"),
        )
    } else {
        Finding::new(
            RiskLevel::High,
            format!("'{name}' runs a script the judge cannot see"),
        )
    }
}

/// `find` options that run programs, delete or write files.
fn find(args: &[&str]) -> Option<Finding> {
    for a in args {
        let finding = match *a {
            "-delete" => Finding::new(RiskLevel::High, "'find -delete' deletes files"),
            "-exec" | "-execdir" | "-ok" | "-okdir" => Finding::new(
                RiskLevel::High,
                format!("'find {a}' runs a command on each file"),
            ),
            _ => continue,
        };
        return Some(finding);
    }
    None
}

/// The target when `rm` is recursive over an absolute path (the system) or the home folder.
fn destructive_rm(args: &[&str]) -> Option<String> {
    let mut recursive = false;
    let mut operands = Vec::new();
    let mut options_done = false;
    for a in args {
        if !options_done && *a == "--" {
            options_done = true;
        } else if !options_done && a.starts_with("--") {
            recursive |= *a == "--recursive" || *a == "--no-preserve-root";
        } else if !options_done && a.starts_with('-') && a.len() > 1 {
            recursive |= a.contains('r') || a.contains('R');
        } else {
            operands.push(*a);
        }
    }
    if !recursive {
        return None;
    }
    operands
        .into_iter()
        .find(|op| is_system_or_home(op))
        .map(str::to_string)
}

fn is_system_or_home(path: &str) -> bool {
    let home = ["~", "$HOME", "${HOME}"];
    if home.iter().any(|h| {
        path == *h
            || path
                .strip_prefix(h)
                .is_some_and(|r| r.trim_matches(['/', '*', '.']).is_empty())
    }) {
        return true;
    }
    if path.starts_with('~') && !path.contains('/') {
        return true; // ~user
    }
    path.starts_with('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn risk(line: &str) -> Option<RiskLevel> {
        let words: Vec<&str> = line.split(' ').collect();
        assess(&words, false).map(|f| f.risk)
    }

    #[test]
    fn deny_list_levels() {
        assert_eq!(risk("sudo ls"), Some(RiskLevel::Critical));
        assert_eq!(risk("/sbin/mkfs.ext4 /dev/sda1"), Some(RiskLevel::Critical));
        assert_eq!(risk("rm -rf /"), Some(RiskLevel::Critical));
        assert_eq!(risk("rm -r -f /*"), Some(RiskLevel::Critical));
        assert_eq!(risk("rm -fr ~"), Some(RiskLevel::Critical));
        assert_eq!(risk("rm -rf $HOME/"), Some(RiskLevel::Critical));
        assert_eq!(risk("rm --recursive /etc"), Some(RiskLevel::Critical));
        assert_eq!(risk("rm -rf build"), Some(RiskLevel::High));
        assert_eq!(risk("rm -f /etc/passwd"), Some(RiskLevel::High));
        assert_eq!(risk("rm -rf /tmp/x"), Some(RiskLevel::Critical));
        assert_eq!(risk("curl x"), Some(RiskLevel::High));
        assert_eq!(risk("cargo install x"), Some(RiskLevel::High));
        assert_eq!(risk("npm i left-pad"), Some(RiskLevel::High));
        assert_eq!(risk("cargo test"), Some(RiskLevel::Medium));
        assert_eq!(risk("bash script.sh"), Some(RiskLevel::High));
        assert_eq!(risk("bash -c ls"), Some(RiskLevel::Medium));
        assert_eq!(risk("bash -o pipefail -c ls"), Some(RiskLevel::Medium));
        assert_eq!(risk("python3 x.py"), Some(RiskLevel::Medium));
        assert_eq!(risk("env"), Some(RiskLevel::Medium));
        assert_eq!(risk("find . -delete"), Some(RiskLevel::High));
        assert_eq!(risk("ls -la"), None);
        let words = ["python3"];
        assert_eq!(assess(&words, true).map(|f| f.risk), Some(RiskLevel::High));
        let words = ["sh"];
        assert_eq!(assess(&words, true).map(|f| f.risk), Some(RiskLevel::High));
    }
}
