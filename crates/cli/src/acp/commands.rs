//! The session's slash commands over ACP (advertised with `available_commands_update`):
//! `/undo` restores the workspace to before the session's last request, `/rewind` lists
//! the session's requests with the files each changed, `/rewind N` restores to before
//! request N. A restore shows its diff and asks the client
//! (`session/request_permission`) first; the model is told with the next prompt.

use super::{AcpSession, Conn};
use crate::undo;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock,
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionNotification, SessionUpdate, StopReason, ToolCallContent, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind, UnstructuredCommandInput,
};
use std::sync::Arc;

const RESTORE: &str = "restore";
const KEEP: &str = "keep";

/// The commands, as `available_commands_update` lists them.
pub(crate) fn available() -> SessionUpdate {
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(vec![
        AvailableCommand::new(
            "undo",
            "Restore the workspace to before the last request (shows the diff and asks)",
        ),
        AvailableCommand::new(
            "rewind",
            "List this session's requests and the files each changed; with N, restore to before request N",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("request number (empty: list them)"),
        )),
    ]))
}

/// Carry out `text` when it is one of the commands (`None`: it is a request).
pub(crate) async fn run(
    cx: &Conn,
    acp: &Arc<AcpSession>,
    text: &str,
) -> Option<Result<StopReason, String>> {
    let text = text.trim();
    let (name, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let to = match (name, rest.trim()) {
        ("/undo", "") => None,
        ("/rewind", "") => return Some(list(cx, acp).await),
        ("/rewind", n) => match n.parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => {
                return Some(
                    say(
                        cx,
                        acp,
                        "/rewind N: N is a request's number (/rewind lists them)",
                    )
                    .await,
                )
            }
        },
        _ => return None,
    };
    Some(restore(cx, acp, to).await)
}

async fn say(cx: &Conn, acp: &Arc<AcpSession>, text: &str) -> Result<StopReason, String> {
    let id = acp.session.lock().await.id().to_string();
    send(cx, &id, super::convert::chunk(text, false));
    Ok(StopReason::EndTurn)
}

fn send(cx: &Conn, session_id: &str, update: SessionUpdate) {
    if let Err(e) = super::notify(cx, SessionNotification::new(session_id.to_string(), update)) {
        tracing::debug!(error = %e, "an update was not sent");
    }
}

async fn list(cx: &Conn, acp: &Arc<AcpSession>) -> Result<StopReason, String> {
    let text = {
        let session = acp.session.lock().await;
        let id = session.id().to_string();
        match session
            .checkpoints()
            .and_then(|store| undo::requests(&store, Some(&id)))
        {
            Ok(requests) => undo::list_text(&requests).replace(
                "aintern undo --to N restores",
                "/rewind N restores the workspace",
            ),
            Err(e) => e,
        }
    };
    say(cx, acp, &text).await
}

async fn restore(cx: &Conn, acp: &Arc<AcpSession>, to: Option<u64>) -> Result<StopReason, String> {
    let session = acp.session.lock().await;
    let id = session.id().to_string();
    let planned = session
        .checkpoints()
        .and_then(|store| undo::prepare(store, Some(&id), to));
    let (store, choice, plan) = match planned {
        Ok(p) => p,
        Err(e) => {
            send(cx, &id, super::convert::chunk(&e, false));
            return Ok(StopReason::EndTurn);
        }
    };
    let shown = undo::plan_text(&choice, &plan);
    if plan.steps.is_empty() {
        send(cx, &id, super::convert::chunk(shown.trim_end(), false));
        return Ok(StopReason::EndTurn);
    }
    let call = ToolCallUpdate::new(
        format!("rewind-{}", choice.to),
        ToolCallUpdateFields::new()
            .title(format!("Restore the workspace to checkpoint {}", choice.to))
            .kind(ToolKind::Edit)
            .content(vec![ToolCallContent::from(ContentBlock::from(
                shown.trim_end().to_string(),
            ))]),
    );
    let request = RequestPermissionRequest::new(
        id.clone(),
        call,
        vec![
            PermissionOption::new(RESTORE, "Restore", PermissionOptionKind::AllowOnce),
            PermissionOption::new(KEEP, "Keep as it is", PermissionOptionKind::RejectOnce),
        ],
    );
    let yes = match super::ask_permission(cx, request).await {
        Ok(answer) => matches!(
            answer.outcome,
            RequestPermissionOutcome::Selected(ref chosen) if &*chosen.option_id.0 == RESTORE
        ),
        Err(e) => {
            tracing::debug!(error = %e, "the restore was not answered");
            false
        }
    };
    if !yes {
        send(cx, &id, super::convert::chunk("nothing restored", false));
        return Ok(StopReason::EndTurn);
    }
    let token = core_models::CancellationToken::new();
    match store.apply(&plan, false, Some(&id), &token) {
        Ok(done) => {
            session.undone(&undo::note_for_model(&choice, &done));
            let text = undo::restored_text(&done).replace(
                &format!("aintern undo --to {}", done.before_restore),
                &format!("/rewind {}", done.before_restore),
            );
            send(cx, &id, super::convert::chunk(&text, false));
            Ok(StopReason::EndTurn)
        }
        Err(e) => Err(e.to_string()),
    }
}
