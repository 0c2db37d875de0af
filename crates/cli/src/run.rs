//! `aintern run` / `exec` (one request) and `aintern chat` (a conversation).

use crate::session::{next_line, stdin_lines, Session, SessionArgs};
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
    /// What to ask.
    message: String,
}

/// The `chat` command's options.
#[derive(Debug, clap::Args)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    session: SessionArgs,
}

/// One request. `json` forces JSON output (`exec`). `Ok(true)` when the request ran to an
/// end, `Ok(false)` when it failed.
pub(crate) async fn run(args: RunArgs, json: bool) -> Result<bool, String> {
    let json = json || args.json;
    let mut interrupts = Interrupts::listen()?;
    let mut terminal = Terminal::new(json);
    let session = Session::start(args.session.clone(), &mut terminal, &mut interrupts).await?;
    // Without a person or a program to answer, approvals come from --approve alone.
    let mut input = (json || args.session.approve.is_none()).then(stdin_lines);
    let request = session.request(args.message);
    let driven = session
        .drive(request, &mut terminal, &mut input, &mut interrupts, json)
        .await?;
    if !driven.unsent.is_empty() {
        terminal.note(&format!(
            "{} line(s) typed after the request ended were not used",
            driven.unsent.len()
        ));
    }
    Ok(driven.ok)
}

/// A conversation: one request per line typed, each continuing the history. Lines typed
/// while a request runs go to it as mid-turn messages (or, when it is already ending, are
/// the next requests). Ctrl-C cancels the running request; at the prompt, a second
/// Ctrl-C in a row, Ctrl-D or `/exit` ends the chat.
pub(crate) async fn chat(args: ChatArgs) -> Result<(), String> {
    let mut interrupts = Interrupts::listen()?;
    let mut terminal = Terminal::new(false);
    let session = Session::start(args.session, &mut terminal, &mut interrupts).await?;
    let mut input = Some(stdin_lines());
    terminal.note("aintern chat — type a request; /exit or Ctrl-D to leave");
    let mut interrupted = false;
    let mut queued: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    loop {
        terminal.chat_prompt();
        let line = match queued.pop_front() {
            Some(line) => {
                terminal.line(&line);
                Some(line)
            }
            None if input.is_none() => None,
            None => tokio::select! {
                line = next_line(&mut input) => line,
                () = interrupts.next() => {
                    terminal.line("");
                    if interrupted {
                        return Ok(());
                    }
                    interrupted = true;
                    terminal.note("(Ctrl-C again, /exit or Ctrl-D to leave)");
                    continue;
                }
            },
        };
        interrupted = false;
        let Some(line) = line else {
            terminal.line("");
            return Ok(());
        };
        let line = line.trim();
        match line {
            "" => continue,
            "/exit" | "/quit" => return Ok(()),
            _ => {}
        }
        let request = session.request(line.to_string());
        let driven = session
            .drive(request, &mut terminal, &mut input, &mut interrupts, false)
            .await?;
        if !driven.ok {
            terminal.note("the request failed; the conversation goes on");
        }
        queued.extend(driven.unsent);
    }
}
