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

/// The private temporary folders of this process's sandboxes, removed by [`end_all`]
/// (a program that exits from a signal handler drops nothing).
///
/// [`end_all`]: crate::end_all
static TEMP_DIRS: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Prefix of the private temporary folders: `aintern-sandbox-PID-…`.
const TEMP_PREFIX: &str = "aintern-sandbox-";

/// A new private temporary folder (mode 0700), after removing those that processes no
/// longer running left behind.
fn private_temp_dir() -> Result<tempfile::TempDir, Error> {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(sweep_stale_temp_dirs);
    let temp = tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .map_err(Error::TempDir)?;
    TEMP_DIRS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(temp.path().to_path_buf());
    Ok(temp)
}

/// Remove this user's private temporary folders whose process is gone.
fn sweep_stale_temp_dirs() {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let me = rustix::process::getuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
            .and_then(rustix::process::Pid::from_raw)
        else {
            continue;
        };
        let ours = entry.metadata().is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && rustix::process::test_kill_process(pid).is_err() {
            if let Err(e) = std::fs::remove_dir_all(entry.path()) {
                tracing::debug!(path = %entry.path().display(), error = %e, "stale sandbox folder left");
            }
        }
    }
}

/// Remove the private temporary folders of this process's sandboxes (for a program about
/// to exit without dropping them).
pub(crate) fn remove_temp_dirs() {
    for dir in TEMP_DIRS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .drain(..)
    {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[derive(Debug)]
struct Inner {
    summary: SandboxSummary,
    pass_env: Vec<String>,
    secret_env: Vec<String>,
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
            return Ok(Self::unenforced(summary, policy.secret_env()));
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
        let temp = private_temp_dir()?;
        let setup = Self::setup(policy, support, temp.path())?;
        Ok(Sandbox {
            inner: Arc::new(Inner {
                summary,
                pass_env: policy.pass_env().to_vec(),
                secret_env: policy.secret_env().to_vec(),
                temp: Some(temp),
                setup: Arc::new(setup),
            }),
        })
    }

    #[cfg(target_os = "linux")]
    fn setup(policy: &SandboxPolicy, support: &Support, temp: &Path) -> Result<ChildSetup, Error> {
        let ruleset = crate::rules::build(policy, temp)?;
        let filters = if support.seccomp() {
            crate::filter::programs(policy.network(), policy.mode() == SandboxMode::ReadOnly)?
        } else {
            Vec::new()
        };
        Ok(ChildSetup {
            parent: rustix::process::getpid(),
            limits: policy.limits(),
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
        Self::unenforced(summary, &[])
    }

    /// No sandbox, as [`Sandbox::without`], but the variables `secret_env` names are still
    /// kept from the command (a key meant for this process alone).
    pub fn unenforced(summary: SandboxSummary, secret_env: &[String]) -> Sandbox {
        Sandbox {
            inner: Arc::new(Inner {
                summary,
                pass_env: Vec::new(),
                secret_env: secret_env.to_vec(),
                temp: None,
                setup: Arc::new(ChildSetup {
                    parent: rustix::process::getpid(),
                    limits: crate::policy::ProcessLimits::none(),
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
        // Variables meant for this process alone, enforced or not.
        for name in &self.inner.secret_env {
            command.env_remove(name);
        }
        if let Some(temp) = self.temp_dir() {
            // What the command would get: inherited, then as set on the command.
            let mut vars: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> =
                std::env::vars_os().map(|(n, v)| (n, Some(v))).collect();
            vars.extend(
                command
                    .get_envs()
                    .map(|(n, v)| (n.to_os_string(), v.map(std::ffi::OsStr::to_os_string))),
            );
            for (name, value) in vars {
                let named =
                    |list: &[String]| name.to_str().is_some_and(|n| list.iter().any(|p| p == n));
                let passed = named(&self.inner.pass_env) && !named(&self.inner.secret_env);
                let secret = match (name.to_str(), value.as_deref().map(std::ffi::OsStr::to_str)) {
                    // A name or value that is not text cannot be judged: not passed.
                    (None, _) | (_, Some(None)) => true,
                    (Some(n), Some(Some(v))) => {
                        crate::env::is_secret_variable(n) || crate::env::is_secret_value(v)
                    }
                    (Some(n), None) => crate::env::is_secret_variable(n),
                } || named(&self.inner.secret_env);
                if secret && !passed {
                    command.env_remove(&name);
                }
            }
            for var in ["TMPDIR", "TMP", "TEMP", "TEMPDIR"] {
                command.env(var, temp);
            }
        }
        on_exec(command, Arc::clone(&self.inner.setup));
    }
}
