//! The Landlock ruleset: read everything but the secrets, write only where the mode says.
//!
//! Landlock only allows: a rule grants rights on a file hierarchy, and rights granted on
//! a folder hold for everything beneath it. To read "everything but `~/.ssh`", each folder
//! on the way from `/` to a secret is split: its entries get the rule one by one, except
//! the one leading to the secret, which is split in turn, down to the secret itself, which
//! gets nothing. Symbolic links met while splitting get no rule of their own: an access
//! through a link is checked where the link leads. The same splitting keeps secrets
//! unwritable when a writable folder (the workspace) contains one. A secret that does not
//! exist yet still splits the folders on its way, so that it stays unreadable when it is
//! created later (entries created later in those folders are not readable at all).

use crate::error::Error;
use crate::policy::SandboxPolicy;
use core_models::SandboxMode;
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};
use std::path::{Path, PathBuf};

/// The newest ABI whose rights the rules use; older kernels get what they support, newer
/// ones nothing more.
const ABI_USED: ABI = ABI::V6;

/// Device files every command may read and write (sinks and sources of bytes); no other
/// device is readable.
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

fn rules_error(e: impl std::fmt::Display) -> Error {
    Error::Rules(e.to_string())
}

/// Build the ruleset for `policy`, with `temp` (the command's private temporary folder)
/// writable.
pub(crate) fn build(policy: &SandboxPolicy, temp: &Path) -> Result<RulesetCreated, Error> {
    let read = AccessFs::from_read(ABI_USED);
    let all = AccessFs::from_all(ABI_USED);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(rules_error)?;
    let mut scopes: BitFlags<Scope> = Scope::Signal.into();
    if !policy.network() {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_USED))
            .map_err(rules_error)?;
        scopes |= Scope::AbstractUnixSocket;
    }
    let mut created = ruleset
        .scope(scopes)
        .map_err(rules_error)?
        .create()
        .map_err(rules_error)?;

    let mut secrets = crate::policy::resolved(policy.secret_paths());
    // Devices are not files to read: terminals (`/dev/pts/*`: another terminal's
    // keystrokes), disks (a raw read bypasses every file rule). Only the byte sinks and
    // sources below are granted.
    secrets.push(PathBuf::from("/dev"));
    let mut grants = Grants {
        ruleset: &mut created,
        secrets: &secrets,
        rules: 0,
    };
    grants.grant(Path::new("/"), read)?;
    let mut writable: Vec<PathBuf> = vec![temp.to_path_buf()];
    if policy.mode() == SandboxMode::WorkspaceWrite {
        writable.push(policy.workspace().to_path_buf());
        writable.extend(policy.writable().iter().cloned());
    }
    for root in existing(writable) {
        grants.grant(&root, all)?;
    }
    for device in DEVICES {
        let path = Path::new(device);
        if path.exists() {
            grants.rule(path, AccessFs::from_file(ABI_USED) & !AccessFs::Execute)?;
        }
    }
    tracing::debug!(
        rules = grants.rules,
        secrets = secrets.len(),
        "sandbox rules built"
    );
    Ok(created)
}

/// The canonical form of each path that exists, deduplicated.
pub(crate) fn existing(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        if let Ok(canonical) = path.canonicalize() {
            if !out.contains(&canonical) {
                out.push(canonical);
            }
        }
    }
    out
}

struct Grants<'a> {
    ruleset: &'a mut RulesetCreated,
    secrets: &'a [PathBuf],
    rules: usize,
}

impl Grants<'_> {
    /// Grant `access` on `path` and beneath, except on the secrets: a hierarchy holding a
    /// secret is split into its entries.
    fn grant(&mut self, path: &Path, access: BitFlags<AccessFs>) -> Result<(), Error> {
        if self.secrets.iter().any(|s| s == path) {
            return Ok(());
        }
        if !self.secrets.iter().any(|s| s.starts_with(path)) {
            return self.rule(path, access);
        }
        let entries = match std::fs::read_dir(path) {
            Ok(entries) => entries,
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "cannot list; left out of the sandbox");
                return Ok(());
            }
        };
        for entry in entries.flatten() {
            let is_link = entry.file_type().is_ok_and(|t| t.is_symlink());
            if !is_link {
                self.grant(&entry.path(), access)?;
            }
        }
        Ok(())
    }

    /// One rule: `access` on `path` (file rights only, when it is not a folder).
    fn rule(&mut self, path: &Path, access: BitFlags<AccessFs>) -> Result<(), Error> {
        let fd = match PathFd::new(path) {
            Ok(fd) => fd,
            Err(e) => {
                // Gone since it was listed, or unreadable: nothing to grant.
                tracing::debug!(path = %path.display(), error = %e, "no sandbox rule");
                return Ok(());
            }
        };
        let access = if path.is_dir() {
            access
        } else {
            access & AccessFs::from_file(ABI_USED)
        };
        self.ruleset
            .add_rule(PathBeneath::new(fd, access))
            .map_err(rules_error)?;
        self.rules += 1;
        Ok(())
    }
}
