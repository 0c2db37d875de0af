//! The chat's commands about the session as a whole: `/model SPEC` (go on with another
//! model), `/compact` (summarize the conversation now) and `/diff` (what the conversation
//! changed in the workspace).

use crate::session::Session;
use crate::signals::Interrupts;
use crate::terminal::{shown, Terminal};
use core_models::{CancellationToken, ChatMessage, LlmRequest, LlmService};

/// `/model SPEC`: load another model and go on with the same conversation in it. The
/// current one stays when the new one cannot be loaded.
pub(super) async fn model(
    spec: &str,
    session: &mut Session,
    terminal: &mut Terminal,
    interrupts: &mut Interrupts,
) {
    terminal.note(&format!("loading {}…", shown(spec, false)));
    let args = session.args_for_model(spec);
    match Session::start(args, terminal, interrupts).await {
        Ok(new) => {
            let old = std::mem::replace(session, new);
            session.adopt(old).await;
            terminal.note(&format!(
                "now {}; the conversation goes on with it (decisions remembered for this session are asked again)",
                session.model_text()
            ));
        }
        Err(e) => terminal.note(&format!("the model is not changed: {e}")),
    }
}

/// The tokens `messages` take, counted by the model or estimated.
async fn tokens(llm: &dyn LlmService, messages: &[ChatMessage]) -> u64 {
    let request = LlmRequest::new(messages.to_vec());
    match llm.count_tokens(&request).await {
        Ok(Some(n)) => n,
        _ => services_ai::estimate_tokens(&request),
    }
}

/// `/compact`: the conversation so far replaced by the model's summary of it (what the
/// agent does by itself when the context window fills up), saved with the session.
pub(super) async fn compact(
    session: &mut Session,
    terminal: &mut Terminal,
    interrupts: &mut Interrupts,
) {
    let history = session.conversation();
    if history.len() < 2 {
        terminal.note("nothing to compact yet");
        return;
    }
    let llm = session.llm();
    let window = llm.model_details().context_length.map_or(8192, u64::from);
    let before = tokens(llm.as_ref(), &history).await;
    terminal.note("summarizing the conversation… (Ctrl-C leaves it as it is)");
    let stop = CancellationToken::new();
    let summary = tokio::select! {
        summary = services_ai::summarize(llm.as_ref(), &history, window, &stop) => summary,
        () = interrupts.next() => {
            stop.cancel();
            terminal.note("not compacted: the conversation is left as it is");
            return;
        }
    };
    let Some(text) = summary.text else {
        terminal.note("the model gave no summary: the conversation is left as it is");
        return;
    };
    let compacted = vec![ChatMessage::user(format!(
        "Summary of the conversation so far:\n{text}"
    ))];
    let after = tokens(llm.as_ref(), &compacted).await;
    if let Err(e) = session.replace_conversation(compacted, summary.usage.as_ref()) {
        terminal.note(&format!(
            "compacted, but the session file was not updated: {e}"
        ));
    }
    terminal.line(&format!(
        "compacted: {} messages ({before} tokens) → a summary ({after} tokens):\n{}",
        history.len(),
        shown(&text, true)
    ));
}

/// `/diff`: what changed in the workspace since before this conversation's first request
/// that could change it (from its checkpoints), with a diff for text files.
pub(super) fn diff(session: &Session, terminal: &mut Terminal) {
    let store = match session.checkpoints() {
        Ok(store) => store,
        Err(e) => return terminal.note(&e),
    };
    let id = session.id().to_string();
    let first = match crate::undo::requests(&store, Some(&id)) {
        Ok(requests) => requests.first().map(|r| r.before),
        Err(e) => return terminal.note(&e),
    };
    let Some(first) = first else {
        return terminal.note("no request of this conversation has changed the workspace");
    };
    let changes = match store.changes_since(first) {
        Ok(changes) => changes,
        Err(e) => return terminal.note(&e.to_string()),
    };
    if changes.is_empty() {
        return terminal.note("the workspace is as it was before this conversation's first change");
    }
    let mut out = format!(
        "since before this conversation's first change (checkpoint {first}; /undo or /rewind {first} goes back):\n"
    );
    for change in &changes {
        out.push_str(&format!(
            "  {:<15} {}\n",
            change.what,
            shown(&change.path, false)
        ));
    }
    for diff in changes.iter().filter_map(|c| c.diff.as_deref()) {
        out.push_str(&shown(diff, true));
        if !diff.ends_with('\n') {
            out.push('\n');
        }
    }
    terminal.line(out.trim_end());
}
