//! `aintern template render`: a conversation rendered with a chat template, exactly as
//! the prompt the model would get.
//!
//! With `--raw` the conversation is rendered as given, byte-for-byte as Hugging Face's
//! `apply_chat_template` would; without it, it is first adapted the way AIntern adapts
//! conversations for that template (tools only for templates that render them, tool
//! results as user messages for templates without a tool role, …).

use clap::{Args, Subcommand};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// What to do with a chat template.
#[derive(Debug, Subcommand)]
pub(crate) enum TemplateAction {
    /// Render the conversation on stdin (`{"messages": [...]}`, the OpenAI chat shape)
    /// and print the prompt exactly, with no newline added.
    Render(RenderArgs),
    /// Print what the template shows about the model as JSON: the call format and the
    /// models that write it, the reasoning markers, whether the generation prompt opens
    /// reasoning, and what the template renders (tools, tool results, system messages).
    Inspect(TemplateFile),
}

/// The template and the model's special tokens, for `render` and `inspect`.
#[derive(Debug, Args)]
pub(crate) struct TemplateFile {
    /// The chat template (Jinja), as in a model's tokenizer config.
    #[arg(long, value_name = "FILE")]
    template: PathBuf,
    /// The text of the model's beginning-of-sequence token (`bos_token`).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    bos: Option<String>,
    /// The text of the model's end-of-sequence token (`eos_token`).
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    eos: Option<String>,
}

/// `aintern template render`.
#[derive(Debug, Args)]
pub(crate) struct RenderArgs {
    #[command(flatten)]
    file: TemplateFile,
    /// A JSON list of OpenAI function tools (`{"type": "function", "function": {…}}`).
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// Render the messages as given, with no adaptation, as the reference renderer does.
    #[arg(long)]
    raw: bool,
    /// Do not end the prompt with the opening of the assistant's turn.
    #[arg(long)]
    no_generation_prompt: bool,
}

/// Run a `template` action, writing its output to `out`.
pub(crate) fn run(action: TemplateAction, out: &mut impl Write) -> Result<(), String> {
    match action {
        TemplateAction::Render(args) => {
            let mut stdin = String::new();
            std::io::stdin()
                .read_to_string(&mut stdin)
                .map_err(|e| format!("cannot read the conversation from stdin: {e}"))?;
            let rendered = render(&args, &stdin)?;
            out.write_all(rendered.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| e.to_string())
        }
        TemplateAction::Inspect(args) => {
            let report = inspect(&args)?;
            writeln!(out, "{report:#}").map_err(|e| e.to_string())
        }
    }
}

/// The `inspect` report for a template.
fn inspect(args: &TemplateFile) -> Result<Value, String> {
    let source = read(&args.template, "chat template")?;
    let bos = args.bos.clone().unwrap_or_default();
    let eos = args.eos.clone().unwrap_or_default();
    let template = llm_llama::ChatTemplate::new(&source, &bos, &eos).map_err(|e| e.to_string())?;
    let profile = services_ai::detect_template(&source);
    let format = template.chat_format();
    let capabilities = template.capabilities();
    let info = services_ai::format_info(profile.format);
    Ok(serde_json::json!({
        "format": profile.format.name(),
        "models": info.map(|i| i.models),
        "call_syntax": info.map(|i| i.looks_like),
        "native_tools": format.renders_tools,
        "reasoning": profile.reasoning.map(|(open, close)| serde_json::json!({"open": open, "close": close})),
        "starts_in_thinking": format.starts_in_thinking,
        "capabilities": {
            "tools": capabilities.tools,
            "tool_role": capabilities.tool_role,
            "system_role": capabilities.system_role,
        },
        "prompt": if format.renders_tools {
            "the template renders the tools; no call format is added to the system prompt"
        } else {
            "AIntern's own tool prompt (```tool_call fences) is added to the system prompt"
        },
    }))
}

fn read(path: &Path, what: &str) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))
}

/// The prompt for the conversation `stdin` (JSON text) as `args` ask.
fn render(args: &RenderArgs, stdin: &str) -> Result<String, String> {
    let source = read(&args.file.template, "chat template")?;
    let request: Value = serde_json::from_str(stdin)
        .map_err(|e| format!("the conversation on stdin is not valid JSON: {e}"))?;
    let Value::Object(mut context) = request else {
        return Err(
            "the conversation on stdin must be a JSON object: {\"messages\": [...]}".into(),
        );
    };
    let Some(Value::Array(messages)) = context.get("messages").cloned() else {
        return Err("the conversation on stdin has no \"messages\" list".into());
    };
    let tools = match &args.tools {
        Some(path) => {
            let tools: Value = serde_json::from_str(&read(path, "tools file")?)
                .map_err(|e| format!("the tools file {} is not valid JSON: {e}", path.display()))?;
            if !tools.is_array() {
                return Err(format!(
                    "the tools file {} must hold a JSON list of tools",
                    path.display()
                ));
            }
            Some(tools)
        }
        None => None,
    };
    let token = |flag: &Option<String>, key: &str, context: &serde_json::Map<String, Value>| {
        flag.clone()
            .or_else(|| context.get(key).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default()
    };
    let bos = token(&args.file.bos, "bos_token", &context);
    let eos = token(&args.file.eos, "eos_token", &context);
    let add_generation_prompt = !args.no_generation_prompt;
    if args.raw {
        let template = chat_template::Template::new(&source).map_err(|e| e.to_string())?;
        if let Some(tools) = tools {
            context.insert("tools".into(), tools);
        }
        // transformers always passes `tools` and `documents`, as None when not given.
        for key in ["tools", "documents"] {
            context.entry(key).or_insert(Value::Null);
        }
        context.insert("add_generation_prompt".into(), add_generation_prompt.into());
        context.insert("bos_token".into(), bos.into());
        context.insert("eos_token".into(), eos.into());
        template
            .render(&Value::Object(context))
            .map_err(|e| e.to_string())
    } else {
        let tools = tools.or_else(|| context.get("tools").cloned());
        let template =
            llm_llama::ChatTemplate::new(&source, &bos, &eos).map_err(|e| e.to_string())?;
        template
            .render_openai(&messages, tools.as_ref(), add_generation_prompt)
            .map_err(|e| e.to_string())
    }
}
