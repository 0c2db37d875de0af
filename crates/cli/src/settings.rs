//! Where aintern keeps its files, how its configuration is layered, and logging.

use services_ai::{AgentConfig, ConfigLoader};
use std::path::{Path, PathBuf};
use tracing_subscriber::EnvFilter;

/// The configuration file's name, in the user's config folder and in a workspace.
pub(crate) const CONFIG_FILE: &str = "aintern.toml";

/// aintern's folder in the user's configuration directory (`$XDG_CONFIG_HOME/aintern`,
/// usually `~/.config/aintern`), when there is a home.
pub(crate) fn config_dir() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("aintern"))
}

/// The user's own rule files (`rules/*.toml` in aintern's config folder), when there is a
/// home; a workspace adds its `.aintern/rules`.
pub(crate) fn rules_dir() -> Option<PathBuf> {
    config_dir().map(|d| d.join("rules"))
}

/// The file that keeps "always" permission decisions.
pub(crate) fn permissions_file() -> Result<PathBuf, String> {
    config_dir()
        .map(|d| d.join("permissions.json"))
        .ok_or_else(|| "cannot find the user's configuration folder (is HOME set?)".to_string())
}

/// Largest workspace `aintern.toml` read.
const WORKSPACE_FILE_CAP: u64 = 1024 * 1024;

/// The configuration, from its layers, lowest first: the built-in defaults, `app_defaults`,
/// the user's `aintern.toml`, the workspace's `aintern.toml` (or `explicit` instead of both
/// files), `AINTERN_*` environment variables; then `adjust` (flags), then validation. Also
/// the notes to show.
///
/// The workspace is not trusted (a repository can ship the file): what it says about the
/// sandbox, the formatters (programs run without asking), the MCP servers, the hooks
/// (programs told of every call) and the backend (which server hears the conversation,
/// with which API key) is ignored, however it is spelled — all are taken from the
/// configuration loaded without it.
pub(crate) fn load_config(
    workspace: &Path,
    explicit: Option<&Path>,
    app_defaults: &[(&str, &str)],
    adjust: impl Fn(&mut AgentConfig),
) -> Result<(AgentConfig, Vec<String>), String> {
    let base = || {
        let mut loader = ConfigLoader::new();
        for (key, value) in app_defaults {
            loader = loader.default_value(*key, *value);
        }
        loader
    };
    let mut notes = Vec::new();
    let mut config = match explicit {
        Some(file) => base().file(file).load_unvalidated().map_err(describe)?,
        None => {
            let mut trusted = base();
            if let Some(dir) = config_dir() {
                trusted = trusted.optional_file(dir.join(CONFIG_FILE));
            }
            let file = workspace.join(CONFIG_FILE);
            match read_workspace_file(&file)? {
                None => trusted.load_unvalidated().map_err(describe)?,
                Some(text) => {
                    let own = trusted.clone().load_unvalidated().map_err(describe)?;
                    let mut config = trusted
                        .toml_text(text)
                        .load_unvalidated()
                        .map_err(|e| format!("{}: {}", file.display(), describe(e)))?;
                    let mut ignored = Vec::new();
                    if config.sandbox != own.sandbox {
                        ignored.push("[sandbox]");
                        config.sandbox = own.sandbox;
                    }
                    if config.formatters != own.formatters {
                        ignored.push("[formatters]");
                        config.formatters = own.formatters;
                    }
                    // Each entry starts a program or reaches a server.
                    if config.mcp_servers != own.mcp_servers {
                        ignored.push("[mcp_servers]");
                        config.mcp_servers = own.mcp_servers;
                    }
                    // Each hook is a program told of every call.
                    if config.hooks != own.hooks {
                        ignored.push("[hooks]");
                        config.hooks = own.hooks;
                    }
                    // Which server hears the conversation, with which key: the user's
                    // choice alone.
                    if config.backend != own.backend {
                        ignored.push("[backend]");
                        config.backend = own.backend;
                    }
                    if !ignored.is_empty() {
                        notes.push(format!(
                            "{} sets {}, which only your own configuration may set: ignored",
                            file.display(),
                            ignored.join(" and ")
                        ));
                    }
                    config
                }
            }
        }
    };
    adjust(&mut config);
    config.validate().map_err(describe)?;
    Ok((config, notes))
}

/// The text of a workspace's configuration file, `None` when there is none. Read without
/// blocking and within a cap: the file is untrusted (a FIFO, or a link to `/dev/zero`, is
/// an error, not a hang).
fn read_workspace_file(file: &Path) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let refused = |why: String| format!("cannot read the configuration {}: {why}", file.display());
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(file);
    let handle = match opened {
        Ok(h) => h,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refused(e.to_string())),
    };
    let meta = handle.metadata().map_err(|e| refused(e.to_string()))?;
    if !meta.is_file() {
        return Err(refused("it is not a regular file".into()));
    }
    if meta.len() > WORKSPACE_FILE_CAP {
        return Err(refused(format!(
            "it is larger than {} KiB",
            WORKSPACE_FILE_CAP / 1024
        )));
    }
    let mut text = String::new();
    handle
        .take(WORKSPACE_FILE_CAP)
        .read_to_string(&mut text)
        .map_err(|e| refused(e.to_string()))?;
    Ok(Some(text))
}

/// The sandbox settings of the configuration, for the tools.
///
/// aintern's own config folder (its `permissions.json` and `aintern.toml`) and its data
/// folder (saved sessions, the chat's history) are protected like secrets: no command or
/// tool may read or change them, even with the home folder as the workspace.
pub(crate) fn sandbox_settings(config: &AgentConfig) -> sandbox::SandboxSettings {
    // The configuration's settings (the model server's key is for aintern alone, whatever
    // its variable is called), and aintern's own folders kept unreadable: its
    // configuration, the saved conversations and the chat's history are the user's, not
    // the commands'.
    let mut settings = aintern::sandbox_settings(config);
    settings.deny_read.extend(config_dir());
    settings
        .deny_read
        .extend(dirs::data_dir().map(|d| d.join("aintern")));
    settings
}

/// A configuration error in words.
pub(crate) fn describe(e: services_ai::Error) -> String {
    match e {
        services_ai::Error::ConfigLoad(e) => format!("cannot read the configuration: {e}"),
        other => other.to_string(),
    }
}

/// Send tracing output to stderr or `file`. `RUST_LOG` decides what is logged when set;
/// otherwise warnings only, `-v` adds aintern's debug messages, and `-vv` everything,
/// llama.cpp's own messages included (they are off below that).
pub(crate) fn init_logging(verbose: u8, file: Option<&Path>) -> Result<(), String> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::try_new(&spec)
            .map_err(|e| format!("RUST_LOG is not a valid filter ({e}): {spec}"))?,
        _ => EnvFilter::new(match verbose {
            0 => "warn,llama-cpp-2=off",
            1 => concat!(
                "warn,llama-cpp-2=off,aintern=debug,services_ai=debug,llm_llama=debug,",
                "llm_openai=debug,tools=debug,mcp=debug,sandbox=debug,shell_risk=debug,",
                "tool_calls=debug,tool_grammar=debug,chat_template=debug"
            ),
            // brush-parser (the command judge) traces every token under these targets.
            _ => "debug,llama-cpp-2=info,tokenize=off,parse=off,expansion=off",
        }),
    };
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let result = match file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open the log file {}: {e}", path.display()))?;
            builder
                .with_ansi(false)
                .with_writer(std::sync::Mutex::new(file))
                .try_init()
        }
        None => {
            let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
                && crate::terminal::colour_allowed();
            builder
                .with_ansi(colour)
                .with_writer(std::io::stderr)
                .try_init()
        }
    };
    result.map_err(|e| format!("cannot start logging: {e}"))
}
