//! The agent event emitter (seed 002 §10): publish/subscribe for [`AgentEvent`]s.
//!
//! Subscribe to every event or to one kind with a handler typed for that kind; drop the
//! returned [`Subscription`] to unsubscribe. A handler that panics is logged and does not
//! affect the other subscribers or the emitter.

use core_models::{AgentEvent, EventKind};
use futures::Stream;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::task::{Context, Poll};
use tokio::sync::mpsc;

type Handler = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

struct Entry {
    id: u64,
    /// `None`: every event; otherwise only events of this type.
    kind: Option<&'static str>,
    handler: Handler,
}

#[derive(Default)]
struct Inner {
    next_id: AtomicU64,
    entries: RwLock<Vec<Entry>>,
}

impl Inner {
    fn add(&self, kind: Option<&'static str>, handler: Handler) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.entries
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(Entry { id, kind, handler });
        id
    }

    fn remove(&self, id: u64) {
        self.entries
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|e| e.id != id);
    }

    fn emit(&self, event: &AgentEvent) {
        let event_type = event.event_type();
        tracing::trace!(event_type, "emitting event");
        // Copy the matching handlers out so that a handler may subscribe or unsubscribe
        // without deadlocking.
        let handlers: Vec<Handler> = self
            .entries
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|e| e.kind.is_none_or(|k| k == event_type))
            .map(|e| Arc::clone(&e.handler))
            .collect();
        for handler in handlers {
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| handler(event))) {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                tracing::error!(event_type, %message, "event handler panicked");
            }
        }
    }
}

/// Publishes agent events to subscribers. Cloning gives another handle to the same
/// subscribers.
#[derive(Clone, Default)]
pub struct AgentEventEmitter {
    inner: Arc<Inner>,
}

impl fmt::Debug for AgentEventEmitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentEventEmitter")
            .field("subscribers", &self.subscriber_count())
            .finish()
    }
}

/// Keeps a subscription alive; dropping it unsubscribes.
#[must_use = "dropping a Subscription unsubscribes at once"]
pub struct Subscription {
    id: u64,
    emitter: Weak<Inner>,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(inner) = self.emitter.upgrade() {
            inner.remove(self.id);
        }
    }
}

impl AgentEventEmitter {
    /// An emitter with no subscribers.
    pub fn new() -> Self {
        Self::default()
    }

    fn subscription(&self, kind: Option<&'static str>, handler: Handler) -> Subscription {
        Subscription {
            id: self.inner.add(kind, handler),
            emitter: Arc::downgrade(&self.inner),
        }
    }

    /// Call `handler` for every event.
    pub fn subscribe_all(
        &self,
        handler: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> Subscription {
        self.subscription(None, Arc::new(handler))
    }

    /// Call `handler` for events of kind `E` only.
    pub fn subscribe<E: EventKind>(
        &self,
        handler: impl Fn(&E) + Send + Sync + 'static,
    ) -> Subscription {
        self.subscription(
            Some(E::EVENT_TYPE),
            Arc::new(move |event: &AgentEvent| {
                if let Some(e) = E::from_event(event) {
                    handler(e);
                }
            }),
        )
    }

    /// Deliver `event` to every matching subscriber, on this thread, in subscription order.
    pub fn emit(&self, event: &AgentEvent) {
        self.inner.emit(event);
    }

    /// Deliver `event` on the blocking thread pool, so slow handlers do not stall the
    /// caller's async task; returns once every handler has run.
    pub async fn emit_async(&self, event: AgentEvent) {
        let inner = Arc::clone(&self.inner);
        // Handlers' panics are caught inside `emit`, so the task cannot fail; if the
        // runtime is shutting down the event is simply not delivered.
        if let Err(e) = tokio::task::spawn_blocking(move || inner.emit(&event)).await {
            tracing::warn!(error = %e, "event delivery task did not run");
        }
    }

    /// A stream of the events of kind `E` emitted from now on. Dropping it unsubscribes.
    pub fn stream<E: EventKind>(&self) -> EmitterStream<E> {
        let (tx, rx) = mpsc::unbounded_channel();
        let subscription = self.subscribe::<E>(move |e| {
            let _ = tx.send(e.clone());
        });
        EmitterStream {
            rx,
            _subscription: subscription,
        }
    }

    /// A stream of every event emitted from now on. Dropping it unsubscribes.
    pub fn stream_all(&self) -> EmitterStream<AgentEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        let subscription = self.subscribe_all(move |e| {
            let _ = tx.send(e.clone());
        });
        EmitterStream {
            rx,
            _subscription: subscription,
        }
    }

    /// How many subscriptions are alive.
    pub fn subscriber_count(&self) -> usize {
        self.inner
            .entries
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

/// Events of one kind (or all events), as a [`Stream`].
pub struct EmitterStream<E> {
    rx: mpsc::UnboundedReceiver<E>,
    _subscription: Subscription,
}

impl<E> fmt::Debug for EmitterStream<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmitterStream").finish_non_exhaustive()
    }
}

impl<E> Stream for EmitterStream<E> {
    type Item = E;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<E>> {
        self.get_mut().rx.poll_recv(cx)
    }
}
