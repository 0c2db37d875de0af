//! What a command may do: [`SandboxPolicy`].

use crate::support::Support;
use core_models::{SandboxMode, SandboxSummary};
use std::path::{Path, PathBuf};

/// Where secrets live in a home folder: credential folders and files of common tools,
/// cloud and registry tokens, password stores, browser and mail profiles, shell and REPL
/// histories. A sandboxed command can read none of them.
const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".ivy2/.credentials",
    ".composer/auth.json",
    ".config/composer/auth.json",
    ".terraform.d",
    ".vault-token",
    ".password-store",
    ".local/share/keyrings",
    ".config/op",
    ".config/rclone",
    ".s3cfg",
    ".boto",
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/Code/User/globalStorage",
    ".bash_history",
    ".zsh_history",
    ".history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".lesshst",
    ".viminfo",
];

/// System files that hold secrets (readable only by root, who may be the one running).
const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
    "/root/.ssh",
];

/// Every default secret location: [`HOME_SECRETS`] under `home` and under the account's
/// home folder in the user database (when `HOME` points elsewhere, both are protected),
/// and the system ones.
pub fn default_secret_paths(home: Option<&Path>) -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = home.map(Path::to_path_buf).into_iter().collect();
    if let Some(account) = account_home() {
        if !homes.contains(&account) {
            homes.push(account);
        }
    }
    let mut paths: Vec<PathBuf> = homes
        .iter()
        .flat_map(|h| HOME_SECRETS.iter().map(move |s| h.join(s)))
        .collect();
    paths.extend(SYSTEM_SECRETS.iter().map(PathBuf::from));
    paths
}

/// The home folder of the running account in the user database.
fn account_home() -> Option<PathBuf> {
    let uid = rustix::process::getuid();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        match fields.as_slice() {
            [_, _, id, _, _, home, ..] if id.parse::<u32>().ok()? == uid.as_raw() => {
                Some(PathBuf::from(home)).filter(|h| h.is_absolute())
            }
            _ => None,
        }
    })
}

/// Each path made absolute and canonical as far as it exists (`~/.config` canonical, then
/// `gh/hosts.yml` appended when that is not there yet), deduplicated: what the sandbox
/// compares the folders it walks with.
pub(crate) fn resolved(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths.into_iter().filter(|p| p.is_absolute()) {
        let mut existing = path.as_path();
        let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
        let canonical = loop {
            if let Ok(c) = existing.canonicalize() {
                break Some(c);
            }
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name);
                    existing = parent;
                }
                _ => break None,
            }
        };
        let Some(mut full) = canonical else { continue };
        for name in rest.iter().rev() {
            full.push(name);
        }
        if !out.contains(&full) {
            out.push(full);
        }
    }
    out
}

/// The default of [`ProcessLimits::processes`].
pub const DEFAULT_MAX_PROCESSES: u64 = 4096;
/// The default of [`ProcessLimits::file_bytes`]: 2 GiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 2 * 1024 * 1024 * 1024;

/// Bounds the kernel holds a sandboxed command and everything it starts to: resource
/// limits, which need no privilege and which the command cannot raise again. They apply
/// where the sandbox is enforced (not to full access).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessLimits {
    /// Most processes the user may have for the command to start another one
    /// (`RLIMIT_NPROC`: the kernel counts every process of the user, the command's and
    /// the others); `None`: no bound.
    pub processes: Option<u64>,
    /// The largest file the command may write, in bytes (`RLIMIT_FSIZE`: a write past it
    /// fails and the writer gets `SIGXFSZ`); `None`: no bound.
    pub file_bytes: Option<u64>,
}

impl Default for ProcessLimits {
    fn default() -> Self {
        ProcessLimits {
            processes: Some(DEFAULT_MAX_PROCESSES),
            file_bytes: Some(DEFAULT_MAX_FILE_BYTES),
        }
    }
}

impl ProcessLimits {
    /// No bound at all.
    pub fn none() -> Self {
        ProcessLimits {
            processes: None,
            file_bytes: None,
        }
    }
}

/// What a command may do: the mode, the workspace, the network, and the extra folders it
/// may write (caches) or must not read (secrets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    limits: ProcessLimits,
    mode: SandboxMode,
    workspace: PathBuf,
    network: bool,
    writable: Vec<PathBuf>,
    deny_read: Vec<PathBuf>,
    pass_env: Vec<String>,
    secret_env: Vec<String>,
    home: Option<PathBuf>,
}

impl SandboxPolicy {
    /// A policy of `mode` over `workspace`, without network, with the home folder from
    /// `HOME`.
    pub fn new(mode: SandboxMode, workspace: impl Into<PathBuf>) -> Self {
        SandboxPolicy {
            limits: ProcessLimits::default(),
            mode,
            workspace: workspace.into(),
            network: false,
            writable: Vec::new(),
            deny_read: Vec::new(),
            pass_env: Vec::new(),
            secret_env: Vec::new(),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|h| h.is_absolute()),
        }
    }

    /// Allow the network (or not).
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// Folders the command may also write (caches), in `workspace-write` mode. A leading
    /// `~/` is the home folder; relative paths are relative to the workspace.
    pub fn with_writable<I, P>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        self.writable = paths.into_iter().map(|p| self.expand(p.as_ref())).collect();
        self
    }

    /// Paths the command must not read, besides [`default_secret_paths`]. A leading `~/` is
    /// the home folder.
    pub fn with_deny_read<I, P>(mut self, paths: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        self.deny_read = paths.into_iter().map(|p| self.expand(p.as_ref())).collect();
        self
    }

    /// The resource limits of the command and what it starts.
    pub fn with_limits(mut self, limits: ProcessLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The resource limits of the command and what it starts.
    pub fn limits(&self) -> ProcessLimits {
        self.limits
    }

    /// Environment variables passed even though they look like secrets.
    pub fn with_pass_env<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.pass_env = names.into_iter().map(Into::into).collect();
        self
    }

    /// Environment variables never passed, whatever their names look like (and even when
    /// listed in [`SandboxPolicy::with_pass_env`]).
    pub fn with_secret_env<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.secret_env = names.into_iter().map(Into::into).collect();
        self
    }

    /// Use `home` as the home folder (where the default secrets are looked for).
    pub fn with_home(mut self, home: Option<PathBuf>) -> Self {
        self.home = home;
        self
    }

    /// The mode.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// The workspace.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Whether the network is allowed.
    pub fn network(&self) -> bool {
        self.network || self.mode == SandboxMode::FullAccess
    }

    /// The extra writable folders.
    pub fn writable(&self) -> &[PathBuf] {
        &self.writable
    }

    /// Variables passed although they look secret.
    pub fn pass_env(&self) -> &[String] {
        &self.pass_env
    }

    /// Variables never passed.
    pub fn secret_env(&self) -> &[String] {
        &self.secret_env
    }

    /// Every path the command must not read nor write: the defaults and the configured
    /// ones (as configured; [`SandboxPolicy::protected_paths`] resolves them).
    pub fn secret_paths(&self) -> Vec<PathBuf> {
        let mut paths = default_secret_paths(self.home.as_deref());
        paths.extend(self.deny_read.iter().cloned());
        paths
    }

    /// The secret paths, canonical as far as they exist: the places a tool must neither
    /// read nor write in any mode but full access (also the file tools, which run in this
    /// process: see `tools::Workspace`).
    pub fn protected_paths(&self) -> Vec<PathBuf> {
        resolved(self.secret_paths())
    }

    fn expand(&self, path: &Path) -> PathBuf {
        match (path.strip_prefix("~"), &self.home) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ if path.is_relative() => self.workspace.join(path),
            _ => path.to_path_buf(),
        }
    }

    /// How this policy looks to the person approving a command, on a kernel with
    /// `support`.
    pub fn summary(&self, support: &Support) -> SandboxSummary {
        let enforced = self.mode != SandboxMode::FullAccess && support.can_enforce();
        let mut writable = Vec::new();
        if self.mode == SandboxMode::WorkspaceWrite {
            writable.push("the workspace".to_string());
            writable.extend(self.writable.iter().map(|p| p.display().to_string()));
        }
        if self.mode != SandboxMode::FullAccess {
            writable.insert(0, "a private temporary folder".to_string());
        }
        let description = match (self.mode, enforced) {
            (SandboxMode::FullAccess, _) => {
                "full-access: no sandbox — the command may do anything you may do".to_string()
            }
            (_, false) => format!(
                "{}: NOT enforced — {}; the command runs without a sandbox",
                self.mode,
                support.reason()
            ),
            (mode, true) => {
                let writes = match mode {
                    SandboxMode::ReadOnly => {
                        "writes nothing but a private temporary folder".to_string()
                    }
                    _ => {
                        let mut places = vec!["the workspace".to_string()];
                        places.extend(self.writable.iter().map(|p| p.display().to_string()));
                        places.push("a private temporary folder".to_string());
                        format!("writes only {}", join_words(&places))
                    }
                };
                let network = if self.network {
                    "network allowed"
                } else {
                    "no network"
                };
                format!(
                    "{mode}: {writes}; reads everything but secrets (~/.ssh, ~/.aws, tokens…); {network} ({})",
                    support.describe()
                )
            }
        };
        SandboxSummary {
            mode: self.mode,
            network: self.network(),
            enforced,
            writable,
            description,
        }
    }
}

fn join_words(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_expand_from_home_and_workspace() {
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/ws")
            .with_home(Some("/home/u".into()))
            .with_writable(["~/.cache/pip", "build", "/var/cache/x"])
            .with_deny_read(["~/private"]);
        assert_eq!(
            policy.writable(),
            [
                PathBuf::from("/home/u/.cache/pip"),
                PathBuf::from("/ws/build"),
                PathBuf::from("/var/cache/x")
            ]
        );
        let secrets = policy.secret_paths();
        assert!(secrets.contains(&PathBuf::from("/home/u/.ssh")));
        assert!(secrets.contains(&PathBuf::from("/home/u/private")));
        assert!(secrets.contains(&PathBuf::from("/etc/shadow")));
    }

    #[test]
    fn the_summary_says_what_is_enforced() {
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/ws");
        let on = policy.summary(&Support::fixed(Some(7), true));
        assert!(on.enforced && !on.network);
        assert!(
            on.description.contains("workspace-write"),
            "{}",
            on.description
        );
        assert!(on.description.contains("no network"), "{}", on.description);
        let off = policy.summary(&Support::fixed(None, true));
        assert!(!off.enforced);
        assert!(
            off.description.contains("NOT enforced"),
            "{}",
            off.description
        );
        let full = SandboxPolicy::new(SandboxMode::FullAccess, "/ws")
            .summary(&Support::fixed(Some(7), true));
        assert!(!full.enforced && full.network);
    }
}
