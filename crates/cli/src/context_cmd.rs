//! `aintern context`: where a request's prompt tokens go — the system prompt (with the
//! project's AGENTS.md instructions), the tool definitions, the history, the request
//! itself — against the model's window; and which instructions and skills the project
//! gives.

use crate::session::{Session, SessionArgs};
use crate::signals::Interrupts;
use crate::terminal::Terminal;
use core_models::{AgentRequest, LlmRequest};
use serde::Serialize;
use std::io::Write;

/// `aintern context` options.
#[derive(Debug, clap::Args)]
pub(crate) struct ContextArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// The request to measure (default: none, the prompt before the user's first word).
    message: Option<String>,
}

/// Where the tokens go.
#[derive(Debug, Serialize)]
struct Report {
    model: String,
    context_window: Option<u32>,
    reply_allowance: u32,
    system_prompt: u64,
    tools: u64,
    history: u64,
    request: u64,
    total: u64,
    /// Tokens left for more conversation before compaction, after the reply's allowance.
    free: Option<i64>,
    /// Counted by the backend's own tokenizer (else estimated at 4 bytes a token).
    exact: bool,
    tool_prompt_style: String,
    /// The AGENTS.md instructions (their tokens are part of `system_prompt`).
    instructions: InstructionsReport,
    /// The skills offered, by name.
    skills: Vec<SkillReport>,
}

/// The AGENTS.md files read, in order.
#[derive(Debug, Serialize)]
struct InstructionsReport {
    sources: Vec<std::path::PathBuf>,
    tokens: u64,
    /// The 32 KiB cap cut them.
    truncated: bool,
}

/// One skill.
#[derive(Debug, Serialize)]
struct SkillReport {
    name: String,
    description: String,
    path: std::path::PathBuf,
}

/// Measure and print.
pub(crate) async fn run(args: ContextArgs) -> Result<(), String> {
    let mut interrupts = Interrupts::listen()?;
    let mut terminal = Terminal::new(args.json);
    let session = Session::start(
        args.session.without_saving(),
        &mut terminal,
        &mut interrupts,
    )
    .await?;
    let text = report(&session, args.message.unwrap_or_default(), args.json).await?;
    writeln!(std::io::stdout().lock(), "{text}").map_err(|e| e.to_string())
}

/// Where the tokens of `message`'s request would go in `session`, as text or JSON.
pub(crate) async fn report(
    session: &Session,
    message: String,
    json: bool,
) -> Result<String, String> {
    let llm = session.llm();
    let request = session.request(message);
    let project = session.agent.project().cloned().unwrap_or_default();
    let variant_with = |system: Option<String>, history: bool, tools: bool, message: bool| {
        let mut r: AgentRequest = request.clone();
        r.system_prompt = system;
        if !history {
            r.history.clear();
        }
        r.enable_tools = tools;
        if !message {
            r.message.clear();
        }
        session.agent.engine().first_request(&r)
    };
    let variant = |history: bool, tools: bool, message: bool| {
        variant_with(request.system_prompt.clone(), history, tools, message)
    };
    let exact = llm
        .count_tokens(&variant(true, true, true))
        .await
        .ok()
        .flatten()
        .is_some();
    let count = |r: LlmRequest| {
        let llm = llm.clone();
        async move {
            match llm.count_tokens(&r).await {
                Ok(Some(n)) => n,
                _ => services_ai::estimate_tokens(&r),
            }
        }
    };
    let system = count(variant(false, false, false)).await;
    let bare = count(variant_with(None, false, false, false)).await;
    let instruction_tokens = if project.instructions.is_empty() {
        0
    } else {
        count(variant_with(
            project.instructions.prompt(),
            false,
            false,
            false,
        ))
        .await
        .saturating_sub(bare)
    };
    let with_tools = count(variant(false, true, false)).await.max(system);
    let with_history = count(variant(true, true, false)).await.max(with_tools);
    let full = variant(true, true, true);
    let window = llm.model_details().context_length;
    let allowance = window.map_or(full.options.max_tokens, |w| {
        services_ai::reply_allowance(full.options.max_tokens, w)
    });
    let total = count(full).await.max(with_history);
    let report = Report {
        model: llm.model_name(),
        context_window: window,
        reply_allowance: allowance,
        system_prompt: system,
        tools: with_tools - system,
        history: with_history - with_tools,
        request: total - with_history,
        total,
        free: window.map(|w| i64::from(w) - total as i64 - i64::from(allowance)),
        exact,
        tool_prompt_style: format!("{:?}", session.agent.config().tool_prompt_style).to_lowercase(),
        instructions: InstructionsReport {
            sources: project.instructions.sources.clone(),
            tokens: instruction_tokens,
            truncated: project.instructions.truncated,
        },
        skills: project
            .skills
            .list
            .iter()
            .map(|s| SkillReport {
                name: s.name.clone(),
                description: s.description.clone(),
                path: s.dir.clone(),
            })
            .collect(),
    };
    let text = if json {
        serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
    } else {
        let free = report
            .free
            .map_or_else(|| "unknown".to_string(), |f| f.to_string());
        format!(
            "model {} · window {} · reply allowance {} · {} ({} tool prompt)\n\
             system prompt  {:>7}\n\
             tools          {:>7}\n\
             history        {:>7}\n\
             request        {:>7}\n\
             total          {:>7}\n\
             free           {:>7}\n\
             instructions   {:>7} (in the system prompt; {} AGENTS.md{})\n\
             skills         {}",
            report.model,
            report
                .context_window
                .map_or_else(|| "unknown".into(), |w| w.to_string()),
            report.reply_allowance,
            if report.exact { "counted" } else { "estimated" },
            report.tool_prompt_style,
            report.system_prompt,
            report.tools,
            report.history,
            report.request,
            report.total,
            free,
            report.instructions.tokens,
            report.instructions.sources.len(),
            if report.instructions.truncated {
                ", cut at 32 KiB"
            } else {
                ""
            },
            if report.skills.is_empty() {
                "none".to_string()
            } else {
                report
                    .skills
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )
    };
    Ok(text)
}
