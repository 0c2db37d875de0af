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

/// The file that keeps "always" permission decisions.
pub(crate) fn permissions_file() -> Result<PathBuf, String> {
    config_dir()
        .map(|d| d.join("permissions.json"))
        .ok_or_else(|| "cannot find the user's configuration folder (is HOME set?)".to_string())
}

/// Top-level keys a workspace's `aintern.toml` may not set: the workspace is not trusted
/// (a repository can ship the file), and these would loosen what commands may do.
const USER_ONLY_KEYS: [&str; 1] = ["sandbox"];

/// The configuration's layers, lowest first: the built-in defaults, `app_defaults`, the
/// user's `aintern.toml`, the workspace's `aintern.toml` without [`USER_ONLY_KEYS`] (or
/// `explicit` instead of both files), `AINTERN_*` environment variables. Also the notes to
/// show (keys of the workspace's file that were ignored).
pub(crate) fn loader(
    workspace: &Path,
    explicit: Option<&Path>,
    app_defaults: &[(&str, &str)],
) -> Result<(ConfigLoader, Vec<String>), String> {
    let mut loader = ConfigLoader::new();
    for (key, value) in app_defaults {
        loader = loader.default_value(*key, *value);
    }
    let mut notes = Vec::new();
    let loader = match explicit {
        Some(file) => loader.file(file),
        None => {
            if let Some(dir) = config_dir() {
                loader = loader.optional_file(dir.join(CONFIG_FILE));
            }
            let file = workspace.join(CONFIG_FILE);
            match std::fs::read_to_string(&file) {
                Ok(text) => {
                    let (kept, dropped) = without_user_only_keys(&text).map_err(|e| {
                        format!("cannot read the configuration {}: {e}", file.display())
                    })?;
                    if !dropped.is_empty() {
                        notes.push(format!(
                            "{} sets [{}], which only your own configuration may set: ignored",
                            file.display(),
                            dropped.join("], [")
                        ));
                    }
                    loader.toml_text(kept)
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => loader,
                Err(e) => {
                    return Err(format!(
                        "cannot read the configuration {}: {e}",
                        file.display()
                    ))
                }
            }
        }
    };
    Ok((loader, notes))
}

/// `text` (TOML) without [`USER_ONLY_KEYS`], and the keys that were there.
fn without_user_only_keys(text: &str) -> Result<(String, Vec<String>), String> {
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    let dropped: Vec<String> = USER_ONLY_KEYS
        .iter()
        .filter(|k| table.remove(**k).is_some())
        .map(|k| (*k).to_string())
        .collect();
    let kept = toml::to_string(&table).map_err(|e| e.to_string())?;
    Ok((kept, dropped))
}

/// The sandbox settings of the configuration, for the tools.
pub(crate) fn sandbox_settings(config: &AgentConfig) -> sandbox::SandboxSettings {
    let s = &config.sandbox;
    sandbox::SandboxSettings {
        mode: s.mode,
        network: s.network,
        writable: s.writable_paths.iter().map(PathBuf::from).collect(),
        deny_read: s.deny_read.iter().map(PathBuf::from).collect(),
        pass_env: s.pass_env.clone(),
        fallback: s.fallback,
        home: None,
    }
}

/// Load and validate; an invalid configuration is an error listing every problem.
pub(crate) fn load(
    loader: ConfigLoader,
    adjust: impl FnOnce(&mut AgentConfig),
) -> Result<AgentConfig, String> {
    let mut config = loader.load_unvalidated().map_err(describe)?;
    adjust(&mut config);
    config.validate().map_err(describe)?;
    Ok(config)
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
            0 => "warn,llama_cpp_2=off",
            1 => "warn,cli=debug,services_ai=debug,llm_llama=debug,tools=debug,llama_cpp_2=off",
            // brush-parser (the command judge) traces every token under these targets.
            _ => "debug,llama_cpp_2=info,tokenize=off,parse=off,expansion=off",
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
