//! The sandbox settings of an application and the sandboxes prepared from them:
//! [`Launcher`].

use crate::error::Error;
use crate::policy::ProcessLimits;
use crate::policy::SandboxPolicy;
use crate::prepare::Sandbox;
use crate::support::Support;
use core_models::{SandboxFallback, SandboxMode, SandboxSummary};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What the configuration says about sandboxing commands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxSettings {
    /// The mode commands run in.
    pub mode: SandboxMode,
    /// Whether commands may use the network.
    pub network: bool,
    /// Extra folders commands may write in `workspace-write` (caches); `~/` is the home
    /// folder.
    pub writable: Vec<PathBuf>,
    /// Extra paths commands must not read; `~/` is the home folder.
    pub deny_read: Vec<PathBuf>,
    /// Environment variables passed although they look like secrets.
    pub pass_env: Vec<String>,
    /// Environment variables never passed, whatever their names look like (the one
    /// holding the model server's API key); stronger than `pass_env`.
    pub secret_env: Vec<String>,
    /// What to do when the kernel cannot sandbox.
    pub fallback: SandboxFallback,
    /// The home folder whose secrets are protected; `None`: `HOME`.
    pub home: Option<PathBuf>,
    /// The resource limits of every sandboxed command.
    pub limits: ProcessLimits,
}

/// What one command asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The configured sandbox.
    Configured,
    /// Read-only, whatever the configuration: for commands that only read (their risk
    /// rating promises it, the kernel keeps the promise).
    ReadOnly,
    /// The configured sandbox with the network open.
    Network,
    /// No sandbox at all.
    FullAccess,
}

/// Whether a command may start, given the kernel's support and the fallback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// It runs in its sandbox (or, by configuration or approval, without one).
    Run,
    /// The kernel cannot sandbox it: a person must approve running it unsandboxed.
    AskFirst(String),
    /// The kernel cannot sandbox it and the configuration refuses to run it.
    Refuse(String),
}

/// The application's sandbox settings, the kernel's support, and the sandboxes prepared
/// so far (one per workspace and variant, reused by every command: preparing reads the
/// folders on the way to each secret and takes a millisecond or two).
#[derive(Debug)]
pub struct Launcher {
    settings: SandboxSettings,
    support: Support,
    prepared: Mutex<HashMap<(PathBuf, Variant), Sandbox>>,
}

impl Default for Launcher {
    fn default() -> Self {
        Launcher::new(SandboxSettings::default())
    }
}

impl Launcher {
    /// A launcher for `settings` on the running kernel.
    pub fn new(settings: SandboxSettings) -> Self {
        Self::with_support(settings, Support::current())
    }

    /// A launcher for `settings` as if the kernel had `support` (tests; or an application
    /// that knows better).
    pub fn with_support(settings: SandboxSettings, support: Support) -> Self {
        Launcher {
            settings,
            support,
            prepared: Mutex::new(HashMap::new()),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &SandboxSettings {
        &self.settings
    }

    /// The kernel's support.
    pub fn support(&self) -> Support {
        self.support
    }

    /// The mode a command asking for `variant` runs in.
    pub fn mode(&self, variant: Variant) -> SandboxMode {
        match variant {
            Variant::FullAccess => SandboxMode::FullAccess,
            Variant::ReadOnly => SandboxMode::ReadOnly,
            Variant::Configured | Variant::Network => self.settings.mode,
        }
    }

    /// The policy of a command over `workspace` asking for `variant`.
    pub fn policy(&self, workspace: &Path, variant: Variant) -> SandboxPolicy {
        let network = match variant {
            Variant::Network | Variant::FullAccess => true,
            Variant::Configured => self.settings.network,
            Variant::ReadOnly => false,
        };
        let mut policy = SandboxPolicy::new(self.mode(variant), workspace);
        if let Some(home) = &self.settings.home {
            policy = policy.with_home(Some(home.clone()));
        }
        policy
            .with_network(network)
            .with_writable(&self.settings.writable)
            .with_deny_read(&self.settings.deny_read)
            .with_pass_env(self.settings.pass_env.iter().cloned())
            .with_secret_env(self.settings.secret_env.iter().cloned())
            .with_limits(self.settings.limits)
    }

    /// The paths no tool may read or write over `workspace`, whatever the mode: the secret
    /// locations (defaults and `deny_read`), canonical as far as they exist. The file
    /// tools, which run in this process, refuse them as the sandbox refuses them to
    /// commands.
    pub fn protected_paths(&self, workspace: &Path) -> Vec<PathBuf> {
        self.policy(workspace, Variant::Configured)
            .protected_paths()
    }

    /// How the sandbox of such a command looks to the person approving it.
    pub fn summary(&self, workspace: &Path, variant: Variant) -> SandboxSummary {
        self.policy(workspace, variant).summary(&self.support)
    }

    /// Whether a command asking for `variant` may start, given the kernel and the
    /// configured fallback.
    pub fn admission(&self, variant: Variant) -> Admission {
        if self.mode(variant) == SandboxMode::FullAccess || self.support.can_enforce() {
            return Admission::Run;
        }
        let why = self.support.reason();
        match self.settings.fallback {
            SandboxFallback::Unsandboxed => Admission::Run,
            SandboxFallback::Ask => Admission::AskFirst(format!(
                "{why}: the command would run without a sandbox (sandbox.fallback = ask)"
            )),
            SandboxFallback::Deny => Admission::Refuse(format!(
                "{why}, and sandbox.fallback = deny refuses to run commands without one"
            )),
        }
    }

    /// The sandbox for a command over `workspace` asking for `variant`: prepared on first
    /// use and kept. Without kernel support it is no sandbox at all, unless the fallback
    /// refuses.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the fallback refuses; preparation errors otherwise.
    pub fn sandbox(&self, workspace: &Path, variant: Variant) -> Result<Sandbox, Error> {
        if let Admission::Refuse(why) = self.admission(variant) {
            return Err(Error::Unsupported(why));
        }
        let key = (workspace.to_path_buf(), variant);
        let mut prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sandbox) = prepared.get(&key) {
            return Ok(sandbox.clone());
        }
        let policy = self.policy(workspace, variant);
        let sandbox = if policy.mode() != SandboxMode::FullAccess && !self.support.can_enforce() {
            Sandbox::unenforced(policy.summary(&self.support), policy.secret_env())
        } else {
            Sandbox::prepare(&policy, &self.support)?
        };
        prepared.insert(key, sandbox.clone());
        Ok(sandbox)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launcher(fallback: SandboxFallback, landlock: Option<u8>) -> Launcher {
        Launcher::with_support(
            SandboxSettings {
                fallback,
                ..SandboxSettings::default()
            },
            Support::fixed(landlock, true),
        )
    }

    #[test]
    fn the_fallback_decides_without_kernel_support() {
        assert_eq!(
            launcher(SandboxFallback::Ask, Some(7)).admission(Variant::Configured),
            Admission::Run
        );
        assert!(matches!(
            launcher(SandboxFallback::Ask, None).admission(Variant::Configured),
            Admission::AskFirst(_)
        ));
        assert!(matches!(
            launcher(SandboxFallback::Deny, None).admission(Variant::ReadOnly),
            Admission::Refuse(_)
        ));
        assert_eq!(
            launcher(SandboxFallback::Unsandboxed, None).admission(Variant::Configured),
            Admission::Run
        );
        // Full access needs no kernel support.
        assert_eq!(
            launcher(SandboxFallback::Deny, None).admission(Variant::FullAccess),
            Admission::Run
        );
        assert!(launcher(SandboxFallback::Deny, None)
            .sandbox(Path::new("/"), Variant::Configured)
            .is_err());
        let unsandboxed = launcher(SandboxFallback::Ask, None)
            .sandbox(Path::new("/"), Variant::Configured)
            .expect("runs unsandboxed after asking");
        assert!(!unsandboxed.is_enforced());
    }

    #[test]
    fn variants_pick_mode_and_network() {
        let l = launcher(SandboxFallback::Ask, Some(7));
        let ws = Path::new("/ws");
        assert_eq!(
            l.policy(ws, Variant::Configured).mode(),
            SandboxMode::WorkspaceWrite
        );
        assert!(!l.policy(ws, Variant::Configured).network());
        assert_eq!(
            l.policy(ws, Variant::ReadOnly).mode(),
            SandboxMode::ReadOnly
        );
        assert!(l.policy(ws, Variant::Network).network());
        assert_eq!(
            l.policy(ws, Variant::FullAccess).mode(),
            SandboxMode::FullAccess
        );
    }
}
