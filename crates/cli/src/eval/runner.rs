//! Running one task: a fresh temporary workspace with the task's files, the real agent
//! loop with every approval granted (commands still in the sandbox), and what it did
//! gathered into an [`Outcome`](super::check::Outcome).

use super::check::{self, Failure, MadeCall, Outcome};
use super::suite::Task;
use core_models::{
    AgentEvent, AgentRequest, AgentService as _, LlmService, ToolAvailabilityContext, ToolChoice,
};
use futures::StreamExt;
use serde::Serialize;
use services_ai::DefaultPermissionManager;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The most of a checked file read back.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// What every run shares.
pub(crate) struct Bench {
    /// The model.
    pub(crate) llm: Arc<dyn LlmService>,
    /// Its name.
    pub(crate) model: String,
    /// A small model's settings apply.
    pub(crate) small: bool,
    /// `--config`.
    pub(crate) config_file: Option<PathBuf>,
    /// `--tool-choice` (overrides every task's), `--steering`, `--timeout` and
    /// `--max-iterations` (a task's own win).
    pub(crate) policy: crate::flags::PolicyArgs,
    /// The variable holding a server's key: kept from the tools' commands.
    pub(crate) api_key_env: Option<String>,
    /// Keep every event of each run (for `--out`).
    pub(crate) keep_events: bool,
}

/// One run of one task.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunRecord {
    /// Whether every check passed.
    pub(crate) passed: bool,
    /// The first failing check's name (`None` when it passed).
    pub(crate) failed_check: Option<&'static str>,
    /// Every failing check.
    pub(crate) failures: Vec<Failure>,
    /// The calls the model made.
    pub(crate) tool_calls: Vec<MadeCall>,
    /// The share of expected calls made (`None`: the task expects nothing of them).
    pub(crate) tool_call_accuracy: Option<f64>,
    /// Iterations of the agent loop.
    pub(crate) iterations: u32,
    /// Prompt tokens over every generation.
    pub(crate) prompt_tokens: u64,
    /// Generated tokens.
    pub(crate) completion_tokens: u64,
    /// From the request to its last event, in milliseconds.
    pub(crate) wall_ms: u64,
    /// The final answer.
    pub(crate) answer: String,
    /// Why the request failed, when it did.
    pub(crate) error: Option<String>,
    /// Every event as a JSON line (only with `keep_events`).
    #[serde(skip)]
    pub(crate) events: Vec<String>,
}

/// Run `task` once.
pub(crate) async fn run_task(bench: &Bench, task: &Task) -> RunRecord {
    let started = Instant::now();
    let mut events = Vec::new();
    let (outcome, usage) = match prepare(bench, task) {
        Ok(prepared) => {
            let result = drive(bench, task, &prepared, &mut events).await;
            let files = read_back(prepared.workspace.path(), task);
            let (mut outcome, usage) = result;
            outcome.files = files;
            (outcome, usage)
        }
        Err(error) => (
            Outcome {
                error: Some(error),
                ..Outcome::default()
            },
            (0, 0),
        ),
    };
    let wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let failures = check::evaluate(&task.expect, &outcome);
    RunRecord {
        passed: failures.is_empty(),
        failed_check: failures.first().map(|f| f.check),
        tool_call_accuracy: check::call_accuracy(&task.expect, &outcome.calls),
        failures,
        tool_calls: outcome.calls,
        iterations: outcome.iterations,
        prompt_tokens: usage.0,
        completion_tokens: usage.1,
        wall_ms,
        answer: outcome.answer,
        error: outcome.error,
        events,
    }
}

/// A task's workspace and agent, ready to run.
struct Prepared {
    workspace: tempfile::TempDir,
    agent: aintern::Agent,
    request: AgentRequest,
}

fn prepare(bench: &Bench, task: &Task) -> Result<Prepared, String> {
    let workspace = tempfile::Builder::new()
        .prefix("aintern-eval-")
        .tempdir()
        .map_err(|e| format!("cannot make a temporary workspace: {e}"))?;
    for (path, content) in &task.files {
        let file = workspace.path().join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&file, content).map_err(|e| format!("cannot write {path}: {e}"))?;
    }
    let root = workspace.path().to_path_buf();
    let adjust = |config: &mut services_ai::AgentConfig| {
        if let Some(steering) = bench.policy.steering {
            config.steering = steering;
        }
        let secs = task.options.timeout_secs.or(bench.policy.timeout);
        if let Some(secs) = secs {
            config.agent_request_timeout_ms = secs.saturating_mul(1000);
            config.tool_execution_timeout_ms = config
                .tool_execution_timeout_ms
                .min(config.agent_request_timeout_ms);
        }
    };
    let defaults = services_ai::defaults_for(&bench.llm.model_details());
    let (config, notes) =
        crate::settings::load_config(&root, bench.config_file.as_deref(), defaults, adjust)?;
    for note in notes {
        tracing::debug!(task = %task.id, "{note}");
    }
    let mut sandbox_settings = crate::settings::sandbox_settings(&config);
    sandbox_settings
        .secret_env
        .extend(bench.api_key_env.clone());
    let launcher = Arc::new(sandbox::Launcher::new(sandbox_settings));
    // Saved permissions stay out of it: every call is asked about, and granted.
    let agent = aintern::Agent::builder()
        .shared_model(Arc::clone(&bench.llm))
        .workspace(&root)
        .config(config)
        .launcher(launcher)
        .permissions(Arc::new(DefaultPermissionManager::in_memory()))
        .plan_tool(bench.policy.plan)
        .rule_files(crate::settings::rules_dir())
        .build()
        .map_err(|e| e.to_string())?;
    let choice = bench
        .policy
        .tool_choice
        .clone()
        .or_else(|| task.tool_choice.clone())
        .unwrap_or_default();
    if let ToolChoice::Tool(id) = &choice {
        if agent.tools().get_tool(id).is_none() {
            return Err(format!("the tool choice names no tool: {id}"));
        }
    }
    let mut request = AgentRequest::new(task.request.clone())
        .with_tool_context(ToolAvailabilityContext::for_workspace(&root));
    request.tool_choice = choice;
    request.max_iterations = task.options.max_iterations.or(bench.policy.max_iterations);
    request.inference_options = Some(crate::session::inference_options(
        bench.small,
        task.options.temperature,
        task.options.max_tokens,
    ));
    Ok(Prepared {
        workspace,
        agent,
        request,
    })
}

/// Run the request to its end, approving every call; what it did and its token usage.
async fn drive(
    bench: &Bench,
    task: &Task,
    prepared: &Prepared,
    kept: &mut Vec<String>,
) -> (Outcome, (u64, u64)) {
    let mut outcome = Outcome::default();
    let mut usage = (0, 0);
    let mut stream = match prepared
        .agent
        .engine()
        .process_message(prepared.request.clone())
    {
        Ok(stream) => stream,
        Err(e) => {
            outcome.error = Some(e.to_string());
            return (outcome, usage);
        }
    };
    let mut index: HashMap<uuid::Uuid, usize> = HashMap::new();
    while let Some(event) = stream.next().await {
        if bench.keep_events {
            if let Ok(line) = serde_json::to_string(&event) {
                kept.push(line);
            }
        }
        match event {
            AgentEvent::ToolCallRequest(e) => {
                index.insert(e.request.id, outcome.calls.len());
                outcome.calls.push(MadeCall {
                    tool: e.request.tool_id.clone(),
                    arguments: (*e.request.parameters).clone(),
                    succeeded: false,
                });
            }
            AgentEvent::ToolResult(e) => {
                outcome.results.push(if e.result.success {
                    e.result.content.clone()
                } else {
                    e.result.error_message.clone().unwrap_or_default()
                });
                if let Some(call) = index
                    .get(&e.call_id)
                    .and_then(|i| outcome.calls.get_mut(*i))
                {
                    call.succeeded = e.result.success;
                }
            }
            // A call a rule or hook puts to a person: no person is there to answer it.
            AgentEvent::ApprovalRequest(a) if a.asked_by_policy.is_some() => {
                let why = "a rule or hook asks a person, and an evaluation has none";
                if let Err(e) = a.deny(Some(why.into())) {
                    tracing::debug!(task = %task.id, error = %e, "an approval could not be refused");
                }
            }
            AgentEvent::ApprovalRequest(a) => {
                if let Err(e) = a.approve() {
                    tracing::debug!(task = %task.id, error = %e, "an approval could not be given");
                }
            }
            AgentEvent::AgentError(e) if e.is_fatal => {
                outcome.error.get_or_insert(e.error.clone());
            }
            AgentEvent::AgentComplete(c) => {
                outcome.answer = c.final_response.clone();
                outcome.iterations = c.total_iterations;
                usage = (c.prompt_tokens, c.completion_tokens);
                if let Some(stop) = &c.stop_message {
                    outcome.error.get_or_insert(stop.clone());
                }
            }
            _ => {}
        }
    }
    (outcome, usage)
}

/// The checked files as the run left them.
fn read_back(root: &Path, task: &Task) -> BTreeMap<String, Option<String>> {
    task.expect
        .files
        .keys()
        .map(|path| {
            let content = std::fs::File::open(root.join(path)).ok().and_then(|file| {
                let mut bytes = Vec::new();
                file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).ok()?;
                Some(String::from_utf8_lossy(&bytes).into_owned())
            });
            (path.clone(), content)
        })
        .collect()
}
