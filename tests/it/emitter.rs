//! The agent event emitter (seed 002 §10).

use core_models::*;
use futures::StreamExt;
use services_ai::AgentEventEmitter;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

fn text(t: &str) -> AgentEvent {
    TextGenerationEvent::token(Uuid::nil(), t, 1, false, 1).into()
}

fn error() -> AgentEvent {
    AgentErrorEvent::parsing_error(Uuid::nil(), "bad", 1).into()
}

#[test]
fn subscribe_receives_every_event() {
    let emitter = AgentEventEmitter::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let _sub = emitter.subscribe_all(move |e| s.lock().unwrap().push(e.event_type()));
    emitter.emit(&text("a"));
    emitter.emit(&error());
    assert_eq!(*seen.lock().unwrap(), ["text_generation", "agent_error"]);
}

#[test]
fn typed_subscribe_only_receives_its_type() {
    let emitter = AgentEventEmitter::new();
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let t = Arc::clone(&tokens);
    let _sub =
        emitter.subscribe::<TextGenerationEvent>(move |e| t.lock().unwrap().push(e.token.clone()));
    emitter.emit(&text("a"));
    emitter.emit(&error());
    emitter.emit(&text("b"));
    assert_eq!(*tokens.lock().unwrap(), ["a", "b"]);
}

#[test]
fn dropping_the_subscription_unsubscribes() {
    let emitter = AgentEventEmitter::new();
    let count = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&count);
    let sub = emitter.subscribe_all(move |_| {
        c.fetch_add(1, Ordering::SeqCst);
    });
    assert_eq!(emitter.subscriber_count(), 1);
    emitter.emit(&text("a"));
    drop(sub);
    assert_eq!(emitter.subscriber_count(), 0);
    emitter.emit(&text("b"));
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[test]
fn a_panicking_handler_does_not_affect_the_others() {
    let emitter = AgentEventEmitter::new();
    let count = Arc::new(AtomicUsize::new(0));
    let (c1, c2) = (Arc::clone(&count), Arc::clone(&count));
    let _a = emitter.subscribe_all(move |_| {
        c1.fetch_add(1, Ordering::SeqCst);
    });
    let _b = emitter.subscribe_all(|_| panic!("handler bug"));
    let _c = emitter.subscribe::<TextGenerationEvent>(move |_| {
        c2.fetch_add(1, Ordering::SeqCst);
    });
    emitter.emit(&text("a"));
    emitter.emit(&text("b"));
    assert_eq!(count.load(Ordering::SeqCst), 4);
    assert_eq!(
        emitter.subscriber_count(),
        3,
        "the panicking handler stays subscribed"
    );
}

#[test]
fn handlers_may_subscribe_while_being_called() {
    let emitter = AgentEventEmitter::new();
    let inner = emitter.clone();
    let subs = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&subs);
    let _sub = emitter.subscribe_all(move |_| s.lock().unwrap().push(inner.subscribe_all(|_| {})));
    emitter.emit(&text("a"));
    assert_eq!(emitter.subscriber_count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emit_async_delivers_on_the_blocking_pool() {
    let emitter = AgentEventEmitter::new();
    let thread = Arc::new(Mutex::new(None));
    let t = Arc::clone(&thread);
    let _sub = emitter.subscribe_all(move |_| {
        std::thread::sleep(Duration::from_millis(10));
        *t.lock().unwrap() = Some(std::thread::current().id());
    });
    emitter.emit_async(text("a")).await;
    let handler_thread = thread
        .lock()
        .unwrap()
        .expect("delivered before emit_async returned");
    assert_ne!(handler_thread, std::thread::current().id());
}

#[tokio::test]
async fn a_stream_per_kind() {
    let emitter = AgentEventEmitter::new();
    let mut errors = emitter.stream::<AgentErrorEvent>();
    let mut all = emitter.stream_all();
    emitter.emit(&text("a"));
    emitter.emit(&error());
    assert_eq!(
        errors.next().await.unwrap().category,
        AgentErrorCategory::ParsingError
    );
    assert_eq!(all.next().await.unwrap().event_type(), "text_generation");
    assert_eq!(all.next().await.unwrap().event_type(), "agent_error");
    assert_eq!(emitter.subscriber_count(), 2);
    drop(errors);
    drop(all);
    assert_eq!(emitter.subscriber_count(), 0);
}
