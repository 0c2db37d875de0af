//! One conversation over several requests: every event of a request, the turn machine's
//! changes included (the machine follows the whole conversation), carries that request's
//! own id — on the request's stream and at the emitter's subscribers.

use super::{call, complete, config, harness, run, text, workspace_request};
use core_models::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use test_support::MockTool;

#[tokio::test]
async fn every_event_carries_the_id_of_the_request_that_made_it() {
    let h = harness(
        vec![
            text(&call("t", json!({"n": 1}))),
            text("first"),
            text(&call("t", json!({"n": 2}))),
            text("second"),
            text(&call("t", json!({"n": 3}))),
            text("third"),
        ],
        vec![Arc::new(MockTool::new("t"))],
        config(),
    );
    let emitted = Arc::new(Mutex::new(Vec::<AgentEvent>::new()));
    let seen = emitted.clone();
    let _subscription = h
        .agent
        .events()
        .subscribe_all(move |e| seen.lock().unwrap().push(e.clone()));
    let conversation = uuid::Uuid::new_v4();
    for (i, answer) in ["first", "second", "third"].into_iter().enumerate() {
        let mut request = workspace_request(answer).with_conversation(conversation);
        request.history = h.agent.conversation();
        let id = request.request_id;
        let events = run(&h.agent, request).await;
        assert_eq!(complete(&events).final_response, answer);
        let turn_changes = events
            .iter()
            .filter(
                |e| matches!(e, AgentEvent::StateChanged(s) if s.machine() == MachineKind::Turn),
            )
            .count();
        assert!(turn_changes > 5, "request {i}: the turn machine moved");
        for e in &events {
            assert_eq!(e.request_id(), id, "request {i}: {}", e.summary());
        }
        let emitted = std::mem::take(&mut *emitted.lock().unwrap());
        assert_eq!(emitted.len(), events.len(), "request {i}");
        for e in &emitted {
            assert_eq!(e.request_id(), id, "request {i} (emitter): {}", e.summary());
        }
    }
    // The three requests were one conversation: the last one saw the first two.
    let texts: Vec<String> = h
        .agent
        .conversation()
        .iter()
        .map(|m| m.content.to_string())
        .collect();
    assert!(texts.iter().any(|t| t == "first") && texts.iter().any(|t| t == "second"));
}
