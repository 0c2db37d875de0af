//! `aintern run` / `exec`: one request.

use crate::input::Input;
use crate::session::{Session, SessionArgs};
use crate::signals::Interrupts;
use crate::terminal::Terminal;

/// The `run` command's options.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    session: SessionArgs,
    /// Print every event as one JSON line; read commands as JSON lines on stdin.
    #[arg(long)]
    json: bool,
    /// Hold the final answer to this JSON Schema (a file): the agent may use its tools,
    /// and its answer is one JSON value valid against the schema — `agent_complete`'s
    /// `output`; `run` prints it as one line on stdout (everything else goes to stderr).
    /// A schema that cannot be used is refused before the model loads; an answer that
    /// does not match, after one retry, fails the command.
    #[arg(long, value_name = "FILE")]
    output_schema: Option<std::path::PathBuf>,
    /// What to ask (always the last word: never taken as `--resume`'s session id).
    message: Option<String>,
}

/// One request. `json` forces JSON output (`exec`). `Ok(true)` when the request ran to an
/// end, `Ok(false)` when it failed.
pub(crate) async fn run(args: RunArgs, json: bool) -> Result<bool, String> {
    let json = json || args.json;
    let (mut session_args, message) = args.session.request(args.message)?;
    if let Some(path) = &args.output_schema {
        session_args.output_schema = Some(output_schema(path)?);
    }
    let mut interrupts = Interrupts::listen()?;
    let mut terminal = Terminal::new(json);
    terminal.full_output = session_args.full_output;
    let held = session_args.output_schema.is_some();
    if held {
        terminal.keep_stdout();
    }
    let approve = session_args.approve;
    let session = Session::start(session_args, &mut terminal, &mut interrupts).await?;
    // Without a person or a program to answer, approvals come from --approve alone.
    let mut input = if json || approve.is_none() {
        Input::person(json)?
    } else {
        Input::Nobody
    };
    let request = session.request(message);
    let driven = session
        .drive(request, &mut terminal, &mut input, &mut interrupts, json)
        .await?;
    session.close().await;
    let mut ok = driven.ok;
    if held {
        match &driven.output {
            Some(value) if !json => terminal.result(value),
            Some(_) => {}
            None if ok => {
                // Stopped at a limit, or cancelled: there is no answer to print.
                terminal.note("the request ended without an answer matching the output schema");
                ok = false;
            }
            None => {}
        }
    }
    if !driven.unsent.is_empty() {
        terminal.note(&format!(
            "{} line(s) typed after the request ended were not used",
            driven.unsent.len()
        ));
    }
    Ok(ok)
}

/// The output schema in `path`: JSON, and a schema the agent can validate answers with.
fn output_schema(path: &std::path::Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the output schema {}: {e}", path.display()))?;
    let schema: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("the output schema {} is not JSON: {e}", path.display()))?;
    services_ai::OutputSchema::new(&schema).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(schema)
}
