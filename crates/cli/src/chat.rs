//! `aintern chat`: a conversation, one request per line typed, each continuing the
//! history; slash commands (`/help`) for everything that is not a request.

use crate::console::{self, Read};
use crate::input::Input;
use crate::session::{Session, SessionArgs};
use crate::signals::Interrupts;
use crate::terminal::{shown, Terminal};
use std::collections::VecDeque;

mod session_commands;

/// The `chat` command's options.
#[derive(Debug, clap::Args)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    session: SessionArgs,
}

/// What the person typed at the prompt.
enum Prompted {
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D, or the input ended.
    Ended,
}

/// What a slash command leaves the chat to do.
enum Flow {
    Continue,
    Exit,
}

/// A conversation: one request per line typed, each continuing the history. At a
/// terminal, lines are typed in a line editor; keys typed while a request runs go to it
/// as a message when entered (or, when it is already ending, are the next request).
/// Ctrl-C cancels the running request; at the prompt, a second Ctrl-C in a row, Ctrl-D
/// or `/exit` ends the chat.
pub(crate) async fn chat(args: ChatArgs) -> Result<(), String> {
    let mut interrupts = Interrupts::listen()?;
    let mut terminal = Terminal::new(false);
    terminal.full_output = args.session.full_output;
    let mut session = Session::start(args.session, &mut terminal, &mut interrupts).await?;
    let mut input = Input::person(false)?;
    terminal
        .note("aintern chat — type a request; /help lists the commands; /exit or Ctrl-D leaves");
    let mut interrupted = false;
    let mut queued: VecDeque<String> = VecDeque::new();
    let mut typed = String::new();
    loop {
        let prompted = match queued.pop_front() {
            Some(line) => {
                terminal.chat_prompt();
                terminal.line(&line);
                Prompted::Line(line)
            }
            None => prompt(&mut input, &mut terminal, &mut interrupts, &typed).await,
        };
        typed.clear();
        let line = match prompted {
            Prompted::Line(line) => line,
            Prompted::Interrupted => {
                if interrupted {
                    session.close().await;
                    return Ok(());
                }
                interrupted = true;
                terminal.note("(Ctrl-C again, /exit or Ctrl-D to leave)");
                continue;
            }
            Prompted::Ended => {
                terminal.line("");
                session.close().await;
                return Ok(());
            }
        };
        interrupted = false;
        let line = console::joined(line.trim());
        if line.is_empty() {
            continue;
        }
        // A slash command, unless doubled (`//` sends a message that starts with `/`).
        let message = match line.strip_prefix("//") {
            Some(rest) => format!("/{rest}"),
            None if line.starts_with('/') => {
                let mut asking = Asking {
                    input: &mut input,
                    interrupts: &mut interrupts,
                };
                match command(&line, &mut session, &mut terminal, &mut asking).await {
                    Flow::Continue => continue,
                    Flow::Exit => {
                        session.close().await;
                        return Ok(());
                    }
                }
            }
            None => line,
        };
        let request = session.request(message);
        let driven = session
            .drive(request, &mut terminal, &mut input, &mut interrupts, false)
            .await?;
        if !driven.ok {
            terminal.note("the request failed; the conversation goes on");
        }
        queued.extend(driven.unsent);
        typed = driven.typing;
    }
}

/// Read the next line: in the editor at a terminal (`typed` already in it), else from
/// stdin.
async fn prompt(
    input: &mut Input,
    terminal: &mut Terminal,
    interrupts: &mut Interrupts,
    typed: &str,
) -> Prompted {
    if let Input::Console(console) = input {
        terminal.before_prompt();
        return match console.read_line("› ", typed).await {
            Read::Line(line) => Prompted::Line(line),
            Read::Interrupted => Prompted::Interrupted,
            Read::Eof => Prompted::Ended,
        };
    }
    if !input.can_answer() {
        // Stdin has ended: nothing more will come.
        return Prompted::Ended;
    }
    terminal.chat_prompt();
    tokio::select! {
        line = input.next_line() => match line {
            Some(line) => Prompted::Line(line),
            None => {
                input.ended();
                Prompted::Ended
            }
        },
        () = interrupts.next() => {
            terminal.line("");
            Prompted::Interrupted
        }
    }
}

/// Where a slash command asks the person a question.
struct Asking<'a> {
    input: &'a mut Input,
    interrupts: &'a mut Interrupts,
}

impl Asking<'_> {
    /// Ask `question`; only a typed yes is a yes.
    async fn yes(&mut self, question: &str, terminal: &mut Terminal) -> bool {
        terminal.note(&format!("{question} [y/N]"));
        match prompt(self.input, terminal, self.interrupts, "").await {
            Prompted::Line(line) => matches!(line.trim(), "y" | "Y" | "yes" | "Yes"),
            Prompted::Interrupted | Prompted::Ended => false,
        }
    }
}

/// Carry out a slash command.
async fn command(
    line: &str,
    session: &mut Session,
    terminal: &mut Terminal,
    asking: &mut Asking<'_>,
) -> Flow {
    let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    match name {
        "/exit" | "/quit" => return Flow::Exit,
        "/help" => {
            let lines: Vec<String> = console::COMMANDS
                .iter()
                .map(|(name, what)| format!("  {name:<10} {what}"))
                .collect();
            terminal.line(&format!(
                "{}\n  (a line ending in \\ goes on on the next line; // sends a message that starts with /)",
                lines.join("\n")
            ));
        }
        "/clear" => {
            let old = session.id();
            for note in session.switch(None).await {
                terminal.note(&note);
            }
            terminal.note(&format!(
                "a new conversation ({}); the last one can be resumed with /resume {}",
                short(session.id()),
                short(old)
            ));
        }
        "/sessions" => match crate::sessions::Store::user().and_then(|s| s.list()) {
            Ok(list) => {
                let recent: Vec<_> = list.into_iter().take(20).collect();
                terminal.line(&crate::sessions_cmd::list_text(&recent));
            }
            Err(e) => terminal.note(&e.to_string()),
        },
        "/resume" => resume(rest, session, terminal).await,
        "/model" if rest.is_empty() => terminal.line(&session.model_text()),
        "/model" => session_commands::model(rest, session, terminal, asking.interrupts).await,
        "/compact" => session_commands::compact(session, terminal, asking.interrupts).await,
        "/diff" => session_commands::diff(session, terminal),
        "/tools" => terminal.line(&session.tools_text()),
        "/context" => match crate::context_cmd::report(session, String::new(), false).await {
            Ok(text) => terminal.line(&text),
            Err(e) => terminal.note(&e),
        },
        "/approve" => approve(rest, session, terminal),
        "/output" => match terminal.last_output.clone() {
            Some((tool, output)) => {
                terminal.note(&format!("the whole output of {tool}:"));
                terminal.line(&shown(&output, true));
            }
            None => terminal.note("no tool has run yet"),
        },
        "/undo" => rewind(None, session, terminal, asking).await,
        "/rewind" if rest.is_empty() => match session.checkpoints().and_then(|store| {
            crate::undo::requests(&store, Some(&session.id().to_string()))
        }) {
            Ok(requests) => terminal.line(&crate::undo::list_text(&requests).replace(
                "aintern undo --to N restores",
                "/rewind N restores the workspace",
            )),
            Err(e) => terminal.note(&e),
        },
        "/rewind" => match rest.parse::<u64>() {
            Ok(n) => rewind(Some(n), session, terminal, asking).await,
            Err(_) => terminal.note("/rewind lists this session's requests; /rewind N restores to before request N"),
        },
        "/files" => {
            let changed = terminal.changed_in_session.clone();
            if changed.is_empty() {
                terminal.note("no file changed yet");
            }
            for (path, how) in changed {
                terminal.line(&format!("  {} ({how})", shown(&path, false)));
            }
        }
        _ => terminal.note(&format!(
            "unknown command {} — /help lists the commands (start with // to send a message that begins with /)",
            shown(name, false)
        )),
    }
    Flow::Continue
}

fn short(id: uuid::Uuid) -> String {
    id.to_string()[..8].to_string()
}

/// `/resume ID`: continue a saved session of this workspace.
async fn resume(id: &str, session: &mut Session, terminal: &mut Terminal) {
    if id.is_empty() {
        terminal.note("/resume ID — /sessions lists them");
        return;
    }
    let found = crate::sessions::Store::user().and_then(|s| s.find(id));
    let saved = match found {
        Ok(saved) => saved,
        Err(e) => return terminal.note(&e.to_string()),
    };
    if saved.header.workspace != session.workspace() {
        return terminal.note(&format!(
            "session {} works in {}: leave and run `aintern chat --resume {}` there",
            short(saved.header.id),
            shown(&saved.header.workspace.display().to_string(), false),
            short(saved.header.id)
        ));
    }
    let messages = saved.messages.len();
    let id = saved.header.id;
    for note in session.switch(Some(saved)).await {
        terminal.note(&note);
    }
    terminal.note(&format!(
        "resumed session {} ({messages} messages)",
        short(id)
    ));
}

/// `/approve [ask|all|safe|none]`: how calls are approved from now on.
fn approve(mode: &str, session: &mut Session, terminal: &mut Terminal) {
    use crate::approve::ApproveMode;
    let chosen = match mode {
        "ask" => None,
        "all" => Some(ApproveMode::All),
        "safe" => Some(ApproveMode::Safe),
        "none" => Some(ApproveMode::None),
        _ => {
            let now = match session.approve {
                None => "ask",
                Some(ApproveMode::All) => "all",
                Some(ApproveMode::Safe) => "safe",
                Some(ApproveMode::None) => "none",
            };
            return terminal.note(&format!(
                "approvals: {now} — /approve ask|all|safe|none (all never lifts the sandbox)"
            ));
        }
    };
    session.approve = chosen;
    terminal.note(&format!("approvals from now on: {mode}"));
}

/// `/undo` (the session's last request) and `/rewind N`: show what restoring the workspace
/// would change, ask, restore, and tell the model with the next request.
async fn rewind(
    to: Option<u64>,
    session: &mut Session,
    terminal: &mut Terminal,
    asking: &mut Asking<'_>,
) {
    use crate::undo;
    let id = session.id().to_string();
    let planned = session
        .checkpoints()
        .and_then(|store| undo::prepare(store, Some(&id), to));
    let (store, choice, plan) = match planned {
        Ok(p) => p,
        Err(e) => return terminal.note(&e),
    };
    terminal.line(undo::plan_text(&choice, &plan).trim_end());
    if plan.steps.is_empty() || !asking.yes("restore?", terminal).await {
        return terminal.note("nothing restored");
    }
    let token = core_models::CancellationToken::new();
    match store.apply(&plan, false, Some(&id), &token) {
        Ok(done) => {
            terminal.note(&undo::restored_text(&done).replace(
                &format!("aintern undo --to {}", done.before_restore),
                &format!("/rewind {}", done.before_restore),
            ));
            session.undone(&undo::note_for_model(&choice, &done));
        }
        Err(e) => terminal.note(&e.to_string()),
    }
}
