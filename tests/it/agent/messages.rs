//! Messages sent into a running request (`send_user_message`): never accepted and then
//! lost. Taken while the request can still read them — with the tool results, or, when
//! the model answers without a tool, the model is asked again with them —, refused once it
//! has taken its final answer, and carried into the conversation (with a
//! `messages_carried` event) when the request ends before reading them.

use super::{call, check_run, complete, config, harness, kinds, run, text, turn_states};
use super::{workspace_request, Harness};
use core_models::{AgentService as _, *};
use futures::StreamExt;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use test_support::{MockTool, ScriptedResponse};

/// A reply streamed slowly, a word at a time.
fn slow(words: &[&str]) -> ScriptedResponse {
    ScriptedResponse::chunks(words.iter().map(|w| w.to_string()))
        .with_delay(Duration::from_millis(60))
}

/// Run `request`, calling `on_event` with each event as it arrives.
async fn run_with(
    h: &Harness,
    request: AgentRequest,
    mut on_event: impl FnMut(&AgentEvent),
) -> Vec<AgentEvent> {
    let mut stream = h.agent.process_message(request).unwrap();
    let mut events = Vec::new();
    let deadline = tokio::time::sleep(Duration::from_secs(20));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            e = stream.next() => match e {
                Some(e) => {
                    on_event(&e);
                    events.push(e);
                }
                None => break,
            },
            _ = &mut deadline => panic!("the request did not end: {:?}", kinds(&events)),
        }
    }
    check_run(&events);
    events
}

fn is_text(event: &AgentEvent) -> bool {
    matches!(event, AgentEvent::TextGeneration(t) if !t.is_complete && !t.token.is_empty())
}

/// The (role, content) of the last `n` messages of `request`, oldest first.
fn last(request: &LlmRequest, n: usize) -> Vec<(MessageRole, String)> {
    let from = request.messages.len().saturating_sub(n);
    request.messages[from..]
        .iter()
        .map(|m| (m.role, m.content.to_string()))
        .collect()
}

fn carried(events: &[AgentEvent]) -> Option<&MessagesCarriedEvent> {
    events.iter().find_map(|e| match e {
        AgentEvent::MessagesCarried(c) => Some(c),
        _ => None,
    })
}

#[tokio::test]
async fn a_message_sent_while_the_final_answer_streams_reaches_the_model_in_the_same_request() {
    let h = harness(
        vec![
            slow(&["The ", "answer ", "is ", "42."]),
            text("And in words: forty-two."),
        ],
        vec![],
        config(),
    );
    let agent = h.agent.clone();
    let mut sent = None;
    let events = run_with(&h, workspace_request("what is it?"), |e| {
        if is_text(e) && sent.is_none() {
            sent = Some(agent.send_user_message("say it in words".into()));
        }
    })
    .await;
    assert!(matches!(sent, Some(Ok(()))), "{sent:?}");
    let requests = h.llm.requests();
    assert_eq!(requests.len(), 2, "the model is asked again");
    assert_eq!(
        last(&requests[1], 2),
        [
            (MessageRole::Assistant, "The answer is 42.".to_string()),
            (MessageRole::User, "say it in words".to_string()),
        ]
    );
    let done = complete(&events);
    assert_eq!(done.reason, CompletionReason::Finished);
    assert_eq!(done.final_response, "And in words: forty-two.");
    assert_eq!(done.total_iterations, 2);
    assert!(carried(&events).is_none());
    // The turn ended, and the message was the user's input for the next one.
    let turn = turn_states(&events);
    let at = turn
        .iter()
        .position(|s| *s == TurnState::EndOfTurn)
        .unwrap();
    assert_eq!(
        &turn[at..at + 3],
        [
            TurnState::EndOfTurn,
            TurnState::WaitingForUserInput,
            TurnState::SendingToLlm
        ]
    );
    // Both the answer and the message are in the conversation, in order.
    let conversation = h.agent.conversation();
    let texts: Vec<&str> = conversation.iter().map(|m| &*m.content).collect();
    assert_eq!(
        texts,
        [
            "what is it?",
            "The answer is 42.",
            "say it in words",
            "And in words: forty-two."
        ]
    );
}

#[tokio::test]
async fn once_the_final_answer_is_taken_a_message_is_refused_never_dropped() {
    let h = harness(vec![text("Done.")], vec![], config());
    // Called in the loop as the request completes: after the answer was taken, the
    // request takes no more messages.
    let answers = Arc::new(Mutex::new(Vec::new()));
    let (agent, seen) = (h.agent.clone(), answers.clone());
    let _subscription = h.agent.events().subscribe(move |e: &StateChangedEvent| {
        if e.agent_change()
            .is_some_and(|c| c.current_state == AgentState::Responding)
        {
            seen.lock()
                .unwrap()
                .push(agent.send_user_message("too late".into()));
        }
    });
    let events = run(&h.agent, workspace_request("x")).await;
    let answers = std::mem::take(&mut *answers.lock().unwrap());
    assert_eq!(answers.len(), 1);
    assert!(
        matches!(answers[0], Err(Error::RequestEnding)),
        "{answers:?}"
    );
    assert!(answers[0]
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("was not delivered"));
    assert!(carried(&events).is_none());
    assert_eq!(h.llm.calls(), 1);
    assert!(
        !h.agent
            .conversation()
            .iter()
            .any(|m| &*m.content == "too late"),
        "a refused message is not kept"
    );
    assert!(matches!(
        h.agent.send_user_message("after".into()),
        Err(Error::NotProcessing)
    ));
}

#[tokio::test]
async fn a_message_a_cancelled_request_did_not_read_is_carried_to_the_next_request() {
    let tool = Arc::new(MockTool::new("wait").with_execute(|_| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        ToolResult::success("never")
    }));
    let h = harness(
        vec![text(&call("wait", json!({}))), text("Next answer.")],
        vec![tool],
        config(),
    );
    let agent = h.agent.clone();
    let mut sent = None;
    let first = workspace_request("wait for it");
    let conversation_id = first.conversation_id;
    let events = run_with(&h, first, |e| {
        if matches!(e, AgentEvent::ToolExecution(t) if t.status == ToolExecutionStatus::Starting) {
            sent = Some(agent.send_user_message("also check b.txt".into()));
            agent.cancel();
        }
    })
    .await;
    assert!(matches!(sent, Some(Ok(()))), "{sent:?}");
    assert!(complete(&events).was_cancelled);
    let n = events.len();
    let AgentEvent::MessagesCarried(c) = &events[n - 2] else {
        panic!(
            "messages_carried comes just before the end: {:?}",
            kinds(&events)
        )
    };
    assert_eq!(c.messages, ["also check b.txt"]);
    assert_eq!(c.header.request_id, events[n - 1].request_id());
    assert_eq!(h.llm.calls(), 1, "the model never read it in that request");
    let conversation = h.agent.conversation();
    assert_eq!(
        conversation.last().map(|m| (m.role, &*m.content)),
        Some((MessageRole::User, "also check b.txt"))
    );
    // The next request of the conversation sends it to the model before its own message.
    let mut next = workspace_request("go on");
    next.conversation_id = conversation_id;
    next.history = conversation;
    let events = run(&h.agent, next).await;
    assert_eq!(complete(&events).final_response, "Next answer.");
    assert_eq!(
        last(&h.llm.requests()[1], 2),
        [
            (MessageRole::User, "also check b.txt".to_string()),
            (MessageRole::User, "go on".to_string()),
        ]
    );
}

#[tokio::test]
async fn at_the_iteration_limit_a_waiting_message_is_carried_not_dropped() {
    let h = harness(vec![slow(&["Only ", "one ", "reply."])], vec![], config());
    let agent = h.agent.clone();
    let mut sent = None;
    let request = workspace_request("x").with_max_iterations(1);
    let events = run_with(&h, request, |e| {
        if is_text(e) && sent.is_none() {
            sent = Some(agent.send_user_message("and then?".into()));
        }
    })
    .await;
    assert!(matches!(sent, Some(Ok(()))), "{sent:?}");
    assert_eq!(h.llm.calls(), 1, "no iteration is left to ask again");
    let done = complete(&events);
    assert_eq!(
        (done.reason, done.final_response.as_str()),
        (CompletionReason::Finished, "Only one reply.")
    );
    assert_eq!(carried(&events).unwrap().messages, ["and then?"]);
    assert_eq!(
        h.agent.conversation().last().map(|m| &*m.content),
        Some("and then?")
    );
}

/// Whatever the moment a message is sent, an accepted one is read by the model or
/// carried, and a refused one is neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_accepted_message_is_ever_lost() {
    // From a sender faster than the model (messages wait at every answer) to one slower
    // (answers find none, and the request ends).
    for (round, pause) in [1, 5, 13, 29]
        .map(Duration::from_millis)
        .into_iter()
        .enumerate()
    {
        let words = ["a ", "b ", "c ", "d"];
        let fast = |w: &[&str]| {
            ScriptedResponse::chunks(w.iter().map(|w| w.to_string()))
                .with_delay(Duration::from_millis(3))
        };
        let h = harness(
            vec![
                text(&call("t", json!({}))),
                fast(&words),
                fast(&words),
                fast(&words),
                fast(&words),
            ],
            vec![Arc::new(MockTool::new("t"))],
            config(),
        );
        let mut stream = h.agent.process_message(workspace_request("go")).unwrap();
        let agent = h.agent.clone();
        let sender = tokio::spawn(async move {
            let (mut accepted, mut refused) = (Vec::new(), Vec::new());
            for i in 0.. {
                let text = format!("message {i}");
                match agent.send_user_message(text.clone()) {
                    Ok(()) => accepted.push(text),
                    Err(Error::RequestEnding | Error::NotProcessing) => {
                        refused.push(text);
                        break;
                    }
                    Err(e) => panic!("{e}"),
                }
                tokio::time::sleep(pause).await;
            }
            (accepted, refused)
        });
        let mut events = Vec::new();
        while let Some(e) = stream.next().await {
            events.push(e);
        }
        check_run(&events);
        let (accepted, refused) = sender.await.unwrap();
        assert!(!accepted.is_empty(), "round {round}");
        let read: Vec<String> = h
            .llm
            .requests()
            .iter()
            .flat_map(|r| r.messages.iter())
            .filter(|m| m.role == MessageRole::User)
            .map(|m| m.content.to_string())
            .collect();
        let carried: Vec<String> = carried(&events)
            .map(|c| c.messages.clone())
            .unwrap_or_default();
        for text in &accepted {
            assert!(
                read.contains(text) || carried.contains(text),
                "round {round}: {text} was accepted and lost; read {read:?}, carried {carried:?}"
            );
        }
        for text in &refused {
            assert!(
                !read.contains(text) && !carried.contains(text),
                "round {round}: {text}"
            );
        }
        let conversation = h.agent.conversation();
        for text in &carried {
            assert!(conversation.iter().any(|m| &*m.content == text));
        }
    }
}
