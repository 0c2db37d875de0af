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
    /// What to ask (always the last word: never taken as `--resume`'s session id).
    message: Option<String>,
}

/// One request. `json` forces JSON output (`exec`). `Ok(true)` when the request ran to an
/// end, `Ok(false)` when it failed.
pub(crate) async fn run(args: RunArgs, json: bool) -> Result<bool, String> {
    let json = json || args.json;
    let (session_args, message) = args.session.request(args.message)?;
    let mut interrupts = Interrupts::listen()?;
    let mut terminal = Terminal::new(json);
    terminal.full_output = session_args.full_output;
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
    if !driven.unsent.is_empty() {
        terminal.note(&format!(
            "{} line(s) typed after the request ended were not used",
            driven.unsent.len()
        ));
    }
    Ok(driven.ok)
}
