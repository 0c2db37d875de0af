//! A policy turned into kernel objects, ready to put commands in: [`Sandbox`].

use crate::error::Error;
use crate::policy::SandboxPolicy;
use crate::support::Support;
use crate::sys::{on_exec, ChildSetup};
use core_models::{SandboxMode, SandboxSummary};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

/// A prepared sandbox: the Landlock ruleset, the seccomp programs and a private temporary
/// folder (removed when the last clone is dropped, so keep it until the commands in it have
/// ended). Cheap to clone; one may serve many commands.
#[derive(Debug, Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    summary: SandboxSummary,
    pass_env: Vec<String>,
    temp: Option<tempfile::TempDir>,
    setup: Arc<ChildSetup>,
}

impl Sandbox {
    /// Prepare `policy` on a kernel with `support` (usually [`Support::current`]).
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the mode is not full access and the kernel has no
    /// Landlock; [`Error::TempDir`], [`Error::Rules`] or [`Error::Filter`] when building
    /// fails.
    pub fn prepare(policy: &SandboxPolicy, support: &Support) -> Result<Sandbox, Error> {
        let summary = policy.summary(support);
        if policy.mode() == SandboxMode::FullAccess {
            return Ok(Self::without(summary));
        }
        if !support.can_enforce() {
            return Err(Error::Unsupported(support.reason()));
        }
        if !policy.workspace().is_dir() {
            return Err(Error::Workspace {
                path: policy.workspace().to_path_buf(),
                message: "is not a folder".into(),
            });
        }
        let temp = tempfile::Builder::new()
            .prefix("aintern-sandbox-")
            .tempdir()
            .map_err(Error::TempDir)?;
        let setup = Self::setup(policy, support, temp.path())?;
        Ok(Sandbox {
            inner: Arc::new(Inner {
                summary,
                pass_env: policy.pass_env().to_vec(),
                temp: Some(temp),
                setup: Arc::new(setup),
            }),
        })
    }

    #[cfg(target_os = "linux")]
    fn setup(policy: &SandboxPolicy, support: &Support, temp: &Path) -> Result<ChildSetup, Error> {
        let ruleset = crate::rules::build(policy, temp)?;
        let filters = if support.seccomp() {
            crate::filter::programs(policy.network())?
        } else {
            Vec::new()
        };
        Ok(ChildSetup {
            parent: rustix::process::getpid(),
            ruleset: Some(ruleset),
            filters,
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn setup(_: &SandboxPolicy, support: &Support, _: &Path) -> Result<ChildSetup, Error> {
        Err(Error::Unsupported(support.reason()))
    }

    /// No sandbox: the command only gets its own session and process group and dies with
    /// this process. `summary` describes it.
    pub fn without(summary: SandboxSummary) -> Sandbox {
        Sandbox {
            inner: Arc::new(Inner {
                summary,
                pass_env: Vec::new(),
                temp: None,
                setup: Arc::new(ChildSetup {
                    parent: rustix::process::getpid(),
                    #[cfg(target_os = "linux")]
                    ruleset: None,
                    #[cfg(target_os = "linux")]
                    filters: Vec::new(),
                }),
            }),
        }
    }

    /// How the sandbox looks to the person approving a command.
    pub fn summary(&self) -> &SandboxSummary {
        &self.inner.summary
    }

    /// Whether the kernel confines commands in this sandbox.
    pub fn is_enforced(&self) -> bool {
        self.inner.summary.enforced
    }

    /// The private temporary folder, when the sandbox has one.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.inner.temp.as_ref().map(tempfile::TempDir::path)
    }

    /// Make `command` start in this sandbox: a new session and process group, death with
    /// this process, and (when enforced) the file rules, the system-call filter, the
    /// private temporary folder as `TMPDIR` and no secret-looking environment variables.
    pub fn apply(&self, command: &mut Command) {
        if let Some(temp) = self.temp_dir() {
            let inherited: Vec<std::ffi::OsString> =
                std::env::vars_os().map(|(name, _)| name).collect();
            let set: Vec<std::ffi::OsString> = command
                .get_envs()
                .map(|(name, _)| name.to_os_string())
                .collect();
            for name in inherited.iter().chain(&set) {
                let Some(name) = name.to_str() else { continue };
                if crate::env::is_secret_variable(name)
                    && !self.inner.pass_env.iter().any(|p| p == name)
                {
                    command.env_remove(name);
                }
            }
            for var in ["TMPDIR", "TMP", "TEMP", "TEMPDIR"] {
                command.env(var, temp);
            }
        }
        on_exec(command, Arc::clone(&self.inner.setup));
    }
}
