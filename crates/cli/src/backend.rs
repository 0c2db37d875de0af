//! Which model answers: the flags (`--backend`, `--model`, `--api-key-env`) and the
//! `[backend]` section resolved into one backend, then loaded (a GGUF, in-process) or
//! connected (an OpenAI-compatible server), with progress shown.

use crate::flags::{BackendArgs, LoadArgs};
use crate::terminal::Terminal;
use core_models::LlmService;
use llm_openai::{OpenAiConfig, OpenAiLlm, ToolMode};
use services_ai::ScriptedLlm;
use services_ai::{BackendConfig, BackendKind};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The backend chosen.
#[derive(Debug)]
pub(crate) enum Choice {
    /// The embedded default model.
    Embedded,
    /// A GGUF file, in-process.
    Llama(PathBuf),
    /// An OpenAI-compatible server.
    OpenAi(Box<OpenAiConfig>),
    /// A scripted model.
    Script(PathBuf),
}

impl Choice {
    /// The backend as the flags name it (saved with a session, to resume with it).
    pub(crate) fn name(&self) -> String {
        match self {
            Choice::Embedded => "embedded".into(),
            Choice::Llama(path) => format!("llama:{}", absolute(path).display()),
            Choice::OpenAi(config) => format!("openai:{}", config.base_url),
            Choice::Script(path) => format!("script:{}", absolute(path).display()),
        }
    }
}

/// `path` made absolute (a session resumed elsewhere still finds its model).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A backend ready to answer.
pub(crate) struct Opened {
    pub(crate) llm: Arc<dyn LlmService>,
    /// A small model (the embedded one, or one the backend says has under a billion
    /// parameters): it gets the compact tool prompt, greedy sampling and short replies.
    pub(crate) small: bool,
}

/// The backend the flags and the configuration ask for. The configuration's API key and
/// headers go only to the configured server: a URL on the command line that points
/// elsewhere gets them only from `--api-key-env`.
pub(crate) fn choose(flags: &BackendArgs, config: &BackendConfig) -> Result<Choice, String> {
    let (kind, target) = match flags.backend.as_deref() {
        None => (config.kind, None),
        Some(spec) => {
            let (kind, target) = spec.split_once(':').unwrap_or((spec, ""));
            let kind = match kind {
                "llama" => BackendKind::Llama,
                "openai" => BackendKind::Openai,
                "script" if !target.is_empty() => return Ok(Choice::Script(target.into())),
                "script" => {
                    return Err("--backend script: needs a script file (script:FILE)".into())
                }
                _ => {
                    return Err(format!(
                        "unknown backend '{spec}': use llama:MODEL.gguf, openai:URL or script:FILE"
                    ))
                }
            };
            (kind, Some(target).filter(|t| !t.is_empty()))
        }
    };
    match kind {
        BackendKind::Llama => {
            if target.is_some() && flags.model.is_some() {
                return Err(
                    "give the model file once: --backend llama:FILE or --model FILE".into(),
                );
            }
            if flags.backend.is_some() && target.is_none() && flags.model.is_none() {
                return Err("--backend llama: needs a model file (llama:MODEL.gguf)".into());
            }
            let file = target
                .map(String::from)
                .or(flags.model.clone())
                .or_else(|| config.model.clone());
            file.map_or(Ok(Choice::Embedded), |f| local_model(&f))
        }
        BackendKind::Openai => {
            let same_server = match (target, config.url.as_deref()) {
                (None, _) => true,
                (Some(url), Some(configured)) => same_origin(url, configured),
                (Some(_), None) => config.kind == BackendKind::Openai,
            };
            let mut section = if same_server {
                config.clone()
            } else {
                config
                    .clone()
                    .with_api_key_env(None)
                    .with_headers(Default::default())
            };
            section.kind = BackendKind::Openai;
            if let Some(url) = target {
                section.url = Some(url.to_string());
            }
            if section.url.is_none() {
                return Err(
                    "--backend openai needs the server's URL: openai:http://HOST:PORT/v1 (or backend.url)"
                        .into(),
                );
            }
            if let Some(model) = &flags.model {
                section.model = Some(model.clone());
            }
            if let Some(name) = &flags.api_key_env {
                section.api_key_env = Some(name.clone());
            }
            let config = OpenAiConfig::from_backend(&section, |name| std::env::var(name).ok())
                .map_err(|e| e.to_string())?;
            Ok(Choice::OpenAi(Box::new(config)))
        }
    }
}

/// A GGUF file named on the command line or in the configuration: a path, or the name of
/// a model of the catalog (`qwen2.5-coder-1.5b`), which must be fetched.
fn local_model(name: &str) -> Result<Choice, String> {
    let path = expand_home(name);
    let looks_like_a_name = !name.contains('/') && !name.ends_with(".gguf") && !path.exists();
    match llm_llama::catalog::find(name).filter(|_| looks_like_a_name) {
        Some(model) if model.is_fetched() => Ok(Choice::Llama(model.path())),
        Some(model) => Err(format!(
            "the model {} is not fetched yet: run {} (about {} MB, once)",
            model.name,
            model.fetch_command(),
            model.size / 1_000_000
        )),
        None => Ok(Choice::Llama(path)),
    }
}

/// Whether `url` is plain HTTP to a host other than this machine.
fn sends_in_clear(url: &str) -> bool {
    let Some(rest) = url.trim().strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, h)| h)
        .trim_start_matches('[');
    let host = host.split([']']).next().unwrap_or(host);
    let host = host
        .rsplit_once(':')
        .filter(|(h, _)| !h.contains(':'))
        .map_or(host, |(h, _)| h);
    !(host.eq_ignore_ascii_case("localhost") || host.starts_with("127.") || host == "::1")
}

/// Whether two URLs name the same scheme, host and port.
fn same_origin(a: &str, b: &str) -> bool {
    let origin = |url: &str| {
        let rest = url
            .trim()
            .split_once("://")
            .map(|(s, r)| (s.to_ascii_lowercase(), r));
        rest.map(|(scheme, rest)| {
            let host = rest
                .split(['/', '?', '#'])
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            (scheme, host)
        })
    };
    origin(a).is_some() && origin(a) == origin(b)
}

/// `~/…` in the home folder.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

/// What a llama model keeps between processes, and how it writes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Keeping {
    /// Where sessions' states are saved (the sessions folder), when sessions are saved.
    pub(crate) state_dir: Option<PathBuf>,
    /// `[backend] session_state_limit_mb`, in bytes.
    pub(crate) state_cap_bytes: u64,
    /// Where prompts' fixed prefixes are kept (the sessions folder, with `[backend]
    /// prefix_cache`).
    pub(crate) prefix_dir: Option<PathBuf>,
    /// `[backend] prompt_cache_mb`, in bytes.
    pub(crate) prompt_cache_bytes: u64,
    /// `[backend] speculative`.
    pub(crate) speculative: bool,
}

impl Keeping {
    /// What `config` says, saving sessions' states in `state_dir` (when they are saved)
    /// and prefixes in `states`, the sessions folder (when there is one).
    pub(crate) fn new(
        config: &BackendConfig,
        state_dir: Option<PathBuf>,
        states: Option<PathBuf>,
    ) -> Self {
        Keeping {
            state_dir,
            prefix_dir: states.filter(|_| config.prefix_cache),
            state_cap_bytes: config.session_state_limit_mb.saturating_mul(1 << 20),
            prompt_cache_bytes: config.prompt_cache_mb.saturating_mul(1 << 20),
            speculative: config.speculative,
        }
    }
}

/// Load or connect the chosen backend, showing progress. `chat_template` replaces a GGUF's
/// own template (llama models only).
pub(crate) async fn open(
    choice: Choice,
    load: &LoadArgs,
    keeping: Keeping,
    terminal: &mut Terminal,
) -> Result<Opened, String> {
    let (chat_template, context_size) = (load.chat_template.as_deref(), load.context_size);
    let served = matches!(choice, Choice::OpenAi(_) | Choice::Script(_));
    if context_size.is_some() && served {
        return Err("--context-size applies to llama models only (a server sets its own: llama-server -c N)".into());
    }
    if load.threads.is_some() && served {
        return Err(
            "--threads applies to llama models only (a server sets its own: llama-server -t N)"
                .into(),
        );
    }
    let sizes = Sizes {
        context: context_size,
        threads: load.threads,
    };
    let template = match (chat_template, &choice) {
        (None, _) => None,
        (Some(_), Choice::OpenAi(_) | Choice::Script(_)) => {
            return Err("--chat-template applies to llama models only (a server uses its own: llama-server --chat-template-file)".into())
        }
        (Some(file), _) => Some(
            std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read the chat template {}: {e}", file.display()))?,
        ),
    };
    match choice {
        Choice::Embedded => {
            let path = llm_llama::default_model_path();
            if !path.is_file() {
                return Err(format!(
                    "the default model is not fetched yet ({}): run scripts/fetch-model (about 1.1 GB, once), or pass --model NAME (aintern models lists them), --backend llama:MODEL.gguf, openai:URL or script:FILE",
                    path.display()
                ));
            }
            let llm = load_llama(path, template, sizes, keeping, terminal).await?;
            let small = llm.model_details().is_small();
            Ok(Opened { llm, small })
        }
        Choice::Llama(path) => {
            let llm = load_llama(path, template, sizes, keeping, terminal).await?;
            let small = llm.model_details().is_small();
            Ok(Opened { llm, small })
        }
        Choice::OpenAi(config) => {
            let url = config.base_url.clone();
            if config.api_key.is_some() && sends_in_clear(&url) {
                terminal.note(&format!(
                    "the API key goes to {url} unencrypted (http://, not a loopback address)"
                ));
            }
            let named = config.model.is_some();
            let connecting = OpenAiLlm::connect(*config);
            let llm = with_progress(connecting, &format!("connecting to {url}"), terminal)
                .await
                .map_err(|e| e.to_string())?;
            if !named && llm.server_info().models.len() > 1 {
                terminal.note(&format!(
                    "using the model {} (the server lists {}: choose one with --model; aintern models lists them)",
                    crate::terminal::shown(llm.model(), false),
                    llm.server_info().models.len()
                ));
            }
            if llm.tool_mode() == ToolMode::Text {
                tracing::info!(
                    "the server's template does not render tools: they are described in the prompt"
                );
            }
            let small = llm.model_details().is_small();
            Ok(Opened {
                llm: Arc::new(llm),
                small,
            })
        }
        Choice::Script(file) => {
            let text = std::fs::File::open(&file)
                .map_err(|e| format!("cannot read the script {}: {e}", file.display()))?;
            let llm = ScriptedLlm::from_reader(text).map_err(|e| {
                format!(
                    "the script {} is not valid (expected {{\"responses\": [{{\"chunks\": [...], \"delay_ms\": 0}}]}}): {e}",
                    file.display()
                )
            })?;
            Ok(Opened {
                llm: Arc::new(llm),
                small: false,
            })
        }
    }
}

/// The context window and threads an in-process model is loaded with, when given.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    context: Option<u32>,
    threads: Option<u32>,
}

/// Load a GGUF model off the async runtime, showing progress.
async fn load_llama(
    path: PathBuf,
    chat_template: Option<String>,
    sizes: Sizes,
    keeping: Keeping,
    terminal: &mut Terminal,
) -> Result<Arc<dyn LlmService>, String> {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let defaults = llm_llama::LlamaConfig::new(path);
    let config = llm_llama::LlamaConfig {
        chat_template,
        context_size: sizes.context.unwrap_or(defaults.context_size),
        threads: sizes.threads.unwrap_or(defaults.threads),
        state_dir: keeping.state_dir,
        state_cap_bytes: keeping.state_cap_bytes,
        prefix_dir: keeping.prefix_dir,
        prompt_cache_bytes: keeping.prompt_cache_bytes,
        speculative: keeping.speculative,
        ..defaults
    };
    let task = tokio::task::spawn_blocking(move || llm_llama::LlamaLlm::load(config));
    let started = Instant::now();
    let llm = with_progress(task, &format!("loading {name}"), terminal)
        .await
        .map_err(|e| format!("loading the model stopped: {e}"))?
        .map_err(|e| e.to_string())?;
    tracing::info!(
        model = %name,
        threads = llm.info().threads,
        seconds = started.elapsed().as_secs_f64(),
        "model loaded"
    );
    Ok(Arc::new(llm))
}

/// Wait for `work`, showing `what` with a spinner.
async fn with_progress<T>(work: impl Future<Output = T>, what: &str, terminal: &mut Terminal) -> T {
    let started = Instant::now();
    let mut ticks = tokio::time::interval(Duration::from_millis(100));
    tokio::pin!(work);
    let result = loop {
        tokio::select! {
            result = &mut work => break result,
            _ = ticks.tick() => terminal.progress(what, started.elapsed()),
        }
    };
    terminal.done();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn openai(config: &BackendConfig, flags: BackendArgs) -> Result<OpenAiConfig, String> {
        match choose(&flags, config)? {
            Choice::OpenAi(c) => Ok(*c),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn flags_and_the_section_resolve_to_one_backend() {
        let none = BackendConfig::default();
        assert!(matches!(
            choose(&BackendArgs::default(), &none),
            Ok(Choice::Embedded)
        ));
        assert!(matches!(
            choose(&BackendArgs { model: Some("m.gguf".into()), ..BackendArgs::default() }, &none),
            Ok(Choice::Llama(p)) if p == Path::new("m.gguf")
        ));
        assert!(matches!(
            choose(
                &BackendArgs {
                    backend: Some("script:s.json".into()),
                    ..BackendArgs::default()
                },
                &none
            ),
            Ok(Choice::Script(_))
        ));
        let c = openai(
            &none,
            BackendArgs {
                backend: Some("openai:http://127.0.0.1:8080/v1".into()),
                model: Some("qwen".into()),
                ..BackendArgs::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (c.base_url.as_str(), c.model.as_deref()),
            ("http://127.0.0.1:8080/v1", Some("qwen"))
        );
        for bad in ["openai", "llama", "script", "ollama:x", "openai:"] {
            assert!(
                choose(
                    &BackendArgs {
                        backend: Some(bad.into()),
                        ..BackendArgs::default()
                    },
                    &none
                )
                .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn keys_in_clear_are_noticed() {
        assert!(sends_in_clear("http://gpu-box:8000/v1"));
        assert!(sends_in_clear("http://10.0.0.5/v1"));
        assert!(!sends_in_clear("http://127.0.0.1:8080/v1"));
        assert!(!sends_in_clear("http://localhost:11434/v1"));
        assert!(!sends_in_clear("http://[::1]:8080/v1"));
        assert!(!sends_in_clear("https://api.example.com/v1"));
    }

    #[test]
    fn the_configured_key_goes_only_to_the_configured_server() {
        let section = BackendConfig::default()
            .with_kind(BackendKind::Openai)
            .with_url(Some("https://api.example.com/v1".into()))
            .with_api_key_env(Some("PATH".into()))
            .with_headers([("X-Team".to_string(), "a".to_string())].into());
        let c = openai(&section, BackendArgs::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.api_key.is_some() && !c.headers.is_empty());
        let c = openai(
            &section,
            BackendArgs {
                backend: Some("openai:https://API.example.com/v1/".into()),
                ..BackendArgs::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(c.api_key.is_some(), "same server");
        let c = openai(
            &section,
            BackendArgs {
                backend: Some("openai:http://127.0.0.1:8080/v1".into()),
                ..BackendArgs::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            c.api_key.is_none() && c.headers.is_empty(),
            "another server"
        );
        let missing = choose(
            &BackendArgs {
                api_key_env: Some("AINTERN_TEST_SURELY_UNSET_VARIABLE".into()),
                ..BackendArgs::default()
            },
            &section,
        );
        assert!(missing.is_err_and(|e| e.contains("not set")));
    }
}
