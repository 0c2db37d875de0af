//! One table-driven, thread-safe state machine engine, instantiated for both tables:
//! [`AgentStateMachine`] (seed 000) and [`TurnStateMachine`] (seed 004).
//!
//! All state lives behind one mutex, so a transition and its bookkeeping (iteration,
//! timing, history, per-state totals) are never seen half-done. Subscribers are notified
//! outside that lock, in transition order per subscriber, through unbounded channels: a
//! slow subscriber never blocks a transition, and reading the state never waits for a
//! notification. The subscribers have a lock of their own, taken before the state's lock
//! is released (hand over hand): of two concurrent transitions, the one that changed the
//! state first also notifies first.

use crate::error::Error;
use chrono::Utc;
use core_models::{AgentMachine, StateChange, StateTable, StateTransitionError, TurnMachine};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use uuid::Uuid;

/// How many transitions the history keeps.
pub const HISTORY_CAPACITY: usize = 100;

/// The agent machine (seed 000).
pub type AgentStateMachine = StateMachine<AgentMachine>;
/// The turn machine (seed 004).
pub type TurnStateMachine = StateMachine<TurnMachine>;

/// A change record of machine `M`.
pub type Change<M> = StateChange<<M as StateTable>::State, <M as StateTable>::Transition>;

struct Inner<M: StateTable> {
    state: M::State,
    iteration: u32,
    entered_at: Instant,
    request_id: Uuid,
    history: VecDeque<Change<M>>,
    time_in_state: HashMap<M::State, Duration>,
}

/// Where changes are sent.
type Subscribers<M> = Vec<mpsc::UnboundedSender<Change<M>>>;

/// A state machine running table `M`. Safe to share between threads (`Arc<StateMachine<M>>`).
pub struct StateMachine<M: StateTable> {
    inner: Mutex<Inner<M>>,
    /// Taken only while `inner` is held, or alone (never the other way round): see the
    /// module's documentation.
    subscribers: Mutex<Subscribers<M>>,
}

impl<M: StateTable> fmt::Debug for StateMachine<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        f.debug_struct("StateMachine")
            .field("machine", &M::KIND)
            .field("state", &inner.state)
            .field("iteration", &inner.iteration)
            .field("request_id", &inner.request_id)
            .finish()
    }
}

impl<M: StateTable> Default for StateMachine<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: StateTable> StateMachine<M> {
    /// A machine in the table's initial state.
    pub fn new() -> Self {
        StateMachine {
            inner: Mutex::new(Inner {
                state: M::INITIAL,
                iteration: 0,
                entered_at: Instant::now(),
                request_id: Uuid::nil(),
                history: VecDeque::with_capacity(HISTORY_CAPACITY),
                time_in_state: HashMap::new(),
            }),
            subscribers: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<M>> {
        // Every update is completed before the guard is released and none can panic
        // half-way, so a poisoned lock still holds consistent state.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_subscribers(&self) -> MutexGuard<'_, Subscribers<M>> {
        self.subscribers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Send `change` to every subscriber, outside the state's lock: `inner` (held, with
    /// the change applied) is released only once the subscribers' lock is taken, so
    /// concurrent transitions notify in the order they changed the state.
    fn notify(&self, inner: MutexGuard<'_, Inner<M>>, change: &Change<M>) {
        let mut subscribers = self.lock_subscribers();
        drop(inner);
        // Unbounded sends never block; a subscriber that is gone is dropped.
        subscribers.retain(|tx| tx.send(change.clone()).is_ok());
    }

    /// The current state.
    pub fn current_state(&self) -> M::State {
        self.lock().state
    }

    /// The iteration counter (incremented by iteration-starting transitions).
    pub fn iteration_number(&self) -> u32 {
        self.lock().iteration
    }

    /// The request being processed (nil when none).
    pub fn request_id(&self) -> Uuid {
        self.lock().request_id
    }

    /// Whether the machine is in a terminal state.
    pub fn is_terminal_state(&self) -> bool {
        M::is_terminal(self.current_state())
    }

    /// Whether the machine is in its error state.
    pub fn is_error_state(&self) -> bool {
        M::is_error(self.current_state())
    }

    /// Whether the machine is in its initial state (and so can `start`).
    pub fn can_accept_request(&self) -> bool {
        self.current_state() == M::INITIAL
    }

    /// Time spent in the current state so far.
    pub fn time_in_current_state(&self) -> Duration {
        self.lock().entered_at.elapsed()
    }

    /// Attempt a transition; `true` when it was taken.
    pub fn try_transition(&self, transition: M::Transition, context: Option<&str>) -> bool {
        self.transition(transition, context).is_ok()
    }

    /// Take a transition.
    ///
    /// # Errors
    /// A [`StateTransitionError`] (seed 000's message) when the table does not allow it
    /// from the current state; the machine is left unchanged.
    pub fn transition(
        &self,
        transition: M::Transition,
        context: Option<&str>,
    ) -> Result<Change<M>, StateTransitionError<M::State, M::Transition>> {
        let mut inner = self.lock();
        let change = self.apply(&mut inner, transition, context)?;
        self.notify(inner, &change);
        Ok(change)
    }

    fn apply(
        &self,
        inner: &mut MutexGuard<'_, Inner<M>>,
        transition: M::Transition,
        context: Option<&str>,
    ) -> Result<Change<M>, StateTransitionError<M::State, M::Transition>> {
        let from = inner.state;
        let Some(to) = M::next(from, transition) else {
            tracing::warn!(
                machine = ?M::KIND,
                %transition,
                state = %from,
                "invalid state transition"
            );
            return Err(StateTransitionError {
                from_state: from,
                transition,
                context: context.map(str::to_owned),
            });
        };
        let now = Instant::now();
        let spent = now.duration_since(inner.entered_at);
        *inner.time_in_state.entry(from).or_default() += spent;
        inner.state = to;
        inner.entered_at = now;
        if M::starts_iteration(transition) {
            inner.iteration += 1;
        }
        let change = StateChange {
            previous_state: from,
            current_state: to,
            transition,
            timestamp: Utc::now(),
            context: context.map(str::to_owned),
            iteration_number: inner.iteration,
            duration: (from != M::INITIAL).then_some(spent),
            request_id: inner.request_id,
        };
        tracing::debug!(
            machine = ?M::KIND,
            previous = %from,
            current = %to,
            %transition,
            iteration = inner.iteration,
            duration_ms = spent.as_millis() as u64,
            "state transition"
        );
        if inner.history.len() == HISTORY_CAPACITY {
            inner.history.pop_front();
        }
        inner.history.push_back(change.clone());
        Ok(change)
    }

    /// Whether `transition` is allowed from the current state.
    pub fn can_transition(&self, transition: M::Transition) -> bool {
        M::next(self.current_state(), transition).is_some()
    }

    /// Every transition allowed from the current state, in declaration order.
    pub fn valid_transitions(&self) -> Vec<M::Transition> {
        let state = self.current_state();
        M::transitions()
            .iter()
            .copied()
            .filter(|t| M::next(state, *t).is_some())
            .collect()
    }

    /// Start processing request `request_id` (the table's start transition).
    ///
    /// # Errors
    /// [`Error::NotIdle`] unless the machine is in its initial state.
    pub fn start(&self, request_id: Uuid) -> Result<Change<M>, Error> {
        let mut inner = self.lock();
        if inner.state != M::INITIAL {
            return Err(Error::NotIdle {
                machine: M::KIND,
                state: inner.state.to_string(),
            });
        }
        inner.request_id = request_id;
        let change = self
            .apply(&mut inner, M::START, None)
            .map_err(|e| Error::NotIdle {
                machine: M::KIND,
                state: e.from_state.to_string(),
            })?;
        self.notify(inner, &change);
        Ok(change)
    }

    /// The request the following changes belong to, without a transition: for a machine
    /// that outlives one request (the turn machine follows a whole conversation), so that
    /// each change reports the request that made it.
    pub fn set_request_id(&self, request_id: Uuid) {
        self.lock().request_id = request_id;
    }

    /// Back to the initial state: iteration 0, no request, history and totals cleared.
    /// Subscribers stay subscribed; no change is reported.
    pub fn reset(&self) {
        let mut inner = self.lock();
        let previous = inner.state;
        inner.state = M::INITIAL;
        inner.iteration = 0;
        inner.entered_at = Instant::now();
        inner.request_id = Uuid::nil();
        inner.history.clear();
        inner.time_in_state.clear();
        tracing::debug!(machine = ?M::KIND, %previous, "state machine reset");
    }

    /// Notifications of every change from now on.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Change<M>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.lock_subscribers().push(tx);
        rx
    }

    /// The last transitions (at most [`HISTORY_CAPACITY`]), oldest first.
    pub fn history(&self) -> Vec<Change<M>> {
        self.lock().history.iter().cloned().collect()
    }

    /// Total time spent in each state since the last reset, the current stay included.
    pub fn time_per_state(&self) -> HashMap<M::State, Duration> {
        let inner = self.lock();
        let mut totals = inner.time_in_state.clone();
        *totals.entry(inner.state).or_default() += inner.entered_at.elapsed();
        totals
    }

    /// Whether the history holds a transition into the error state.
    pub fn has_errored(&self) -> bool {
        self.lock()
            .history
            .iter()
            .any(|c| M::is_error(c.current_state))
    }
}
