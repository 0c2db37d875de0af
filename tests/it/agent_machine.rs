//! The agent state machine (seed 000's test plan, seed 001 part j, and more).

use core_models::{AgentState as S, AgentStateChange, AgentStateTransition as T};
use services_ai::{AgentStateMachine, HISTORY_CAPACITY};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// Seed 000's table, written out here independently of the code under test.
const EXPECTED_EDGES: [(S, T, S); 11] = [
    (S::Idle, T::Start, S::Initializing),
    (S::Initializing, T::BeginThinking, S::Thinking),
    (S::Thinking, T::DetectToolCall, S::ParsingToolCall),
    (
        S::ParsingToolCall,
        T::RequestApproval,
        S::WaitingForApproval,
    ),
    (S::WaitingForApproval, T::ApprovalGranted, S::ExecutingTool),
    (S::WaitingForApproval, T::ApprovalDenied, S::Thinking),
    (S::ExecutingTool, T::ToolComplete, S::ProcessingResult),
    (S::ProcessingResult, T::BeginThinking, S::Thinking),
    (S::Thinking, T::NoToolCalls, S::Responding),
    (S::Responding, T::Complete, S::Completed),
    (S::ParsingToolCall, T::ApprovalGranted, S::ExecutingTool),
];

const TERMINAL: [S; 3] = [S::Completed, S::Cancelled, S::Error];

/// One tool round trip, from Thinking back to Thinking.
const TOOL_CYCLE: [T; 4] = [
    T::DetectToolCall,
    T::ApprovalGranted,
    T::ToolComplete,
    T::BeginThinking,
];

fn expected_next(from: S, t: T) -> Option<S> {
    match t {
        T::Cancel if !TERMINAL.contains(&from) => Some(S::Cancelled),
        T::Fail if !TERMINAL.contains(&from) => Some(S::Error),
        T::Cancel | T::Fail => None,
        _ => EXPECTED_EDGES
            .iter()
            .find(|(f, tr, _)| *f == from && *tr == t)
            .map(|(_, _, to)| *to),
    }
}

/// A path of transitions from Idle to `state`.
fn path_to(state: S) -> Vec<T> {
    match state {
        S::Idle => vec![],
        S::Initializing => vec![T::Start],
        S::Thinking => vec![T::Start, T::BeginThinking],
        S::ParsingToolCall => vec![T::Start, T::BeginThinking, T::DetectToolCall],
        S::WaitingForApproval => {
            vec![
                T::Start,
                T::BeginThinking,
                T::DetectToolCall,
                T::RequestApproval,
            ]
        }
        S::ExecutingTool => vec![
            T::Start,
            T::BeginThinking,
            T::DetectToolCall,
            T::ApprovalGranted,
        ],
        S::ProcessingResult => vec![
            T::Start,
            T::BeginThinking,
            T::DetectToolCall,
            T::ApprovalGranted,
            T::ToolComplete,
        ],
        S::Responding => vec![T::Start, T::BeginThinking, T::NoToolCalls],
        S::Completed => vec![T::Start, T::BeginThinking, T::NoToolCalls, T::Complete],
        S::Cancelled => vec![T::Cancel],
        S::Error => vec![T::Fail],
    }
}

fn machine_in(state: S) -> AgentStateMachine {
    let m = AgentStateMachine::new();
    for t in path_to(state) {
        m.transition(t, None).unwrap();
    }
    assert_eq!(m.current_state(), state);
    m
}

// --- seed 000's plan ---------------------------------------------------------------

#[test]
fn initial_state_is_idle() {
    let m = AgentStateMachine::new();
    assert_eq!(m.current_state(), S::Idle);
    assert_eq!(m.iteration_number(), 0);
    assert!(m.can_accept_request());
    assert!(!m.is_terminal_state());
}

#[test]
fn start_moves_to_initializing() {
    let m = AgentStateMachine::new();
    assert!(m.try_transition(T::Start, None));
    assert_eq!(m.current_state(), S::Initializing);
}

#[test]
fn invalid_transition_returns_false_and_changes_nothing() {
    let m = AgentStateMachine::new();
    assert!(!m.try_transition(T::BeginThinking, None));
    assert_eq!(m.current_state(), S::Idle);
    assert!(m.history().is_empty());
}

#[test]
fn transition_errors_on_invalid_with_the_seed_message() {
    let m = AgentStateMachine::new();
    let err = m
        .transition(T::BeginThinking, Some("too early"))
        .unwrap_err();
    assert_eq!(err.from_state, S::Idle);
    assert_eq!(err.transition, T::BeginThinking);
    assert_eq!(err.context.as_deref(), Some("too early"));
    assert_eq!(
        err.to_string(),
        "Invalid transition 'BeginThinking' from state 'Idle': too early"
    );
    let err = m.transition(T::Complete, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Invalid transition 'Complete' from state 'Idle'"
    );
}

#[test]
fn cancel_works_from_every_non_terminal_state() {
    for state in S::ALL.into_iter().filter(|s| !TERMINAL.contains(s)) {
        let m = machine_in(state);
        assert!(m.try_transition(T::Cancel, None), "cancel from {state}");
        assert_eq!(m.current_state(), S::Cancelled);
    }
}

#[test]
fn fail_works_from_every_non_terminal_state() {
    for state in S::ALL.into_iter().filter(|s| !TERMINAL.contains(s)) {
        let m = machine_in(state);
        assert!(m.try_transition(T::Fail, Some("boom")), "fail from {state}");
        assert_eq!(m.current_state(), S::Error);
        assert!(m.is_error_state());
        assert!(m.has_errored());
    }
}

#[test]
fn cancel_and_fail_are_refused_from_terminal_states() {
    for state in TERMINAL {
        for t in [T::Cancel, T::Fail] {
            let m = machine_in(state);
            assert!(!m.try_transition(t, None), "{t} from {state}");
            assert_eq!(m.current_state(), state);
        }
    }
}

#[test]
fn begin_thinking_increments_iteration() {
    let m = AgentStateMachine::new();
    m.transition(T::Start, None).unwrap();
    assert_eq!(m.iteration_number(), 0);
    m.transition(T::BeginThinking, None).unwrap();
    assert_eq!(m.iteration_number(), 1);
    for t in [T::DetectToolCall, T::ApprovalGranted, T::ToolComplete] {
        m.transition(t, None).unwrap();
        assert_eq!(m.iteration_number(), 1);
    }
    let change = m.transition(T::BeginThinking, None).unwrap();
    assert_eq!(m.iteration_number(), 2);
    assert_eq!(change.iteration_number, 2);
}

#[tokio::test]
async fn state_changed_notifies_subscribers_in_order() {
    let m = AgentStateMachine::new();
    let mut a = m.subscribe();
    let mut b = m.subscribe();
    let id = Uuid::new_v4();
    m.start(id).unwrap();
    m.transition(T::BeginThinking, Some("first")).unwrap();
    for rx in [&mut a, &mut b] {
        let first: AgentStateChange = rx.recv().await.unwrap();
        assert_eq!(
            (first.previous_state, first.current_state, first.transition),
            (S::Idle, S::Initializing, T::Start)
        );
        assert_eq!(first.request_id, id);
        let second = rx.recv().await.unwrap();
        assert_eq!(second.current_state, S::Thinking);
        assert_eq!(second.context.as_deref(), Some("first"));
        assert_eq!(second.iteration_number, 1);
    }
    // A dropped subscriber does not disturb the others.
    drop(a);
    m.transition(T::NoToolCalls, None).unwrap();
    assert_eq!(b.recv().await.unwrap().current_state, S::Responding);
}

#[test]
fn duration_tracks_time_in_previous_state() {
    let m = AgentStateMachine::new();
    let first = m.transition(T::Start, None).unwrap();
    assert_eq!(first.duration, None, "leaving Idle has no duration");
    std::thread::sleep(Duration::from_millis(60));
    assert!(m.time_in_current_state() >= Duration::from_millis(60));
    let second = m.transition(T::BeginThinking, None).unwrap();
    let d = second.duration.unwrap();
    assert!(d >= Duration::from_millis(60), "{d:?}");
    assert!(d < Duration::from_secs(5), "{d:?}");
    assert!(
        m.time_in_current_state() < d,
        "the clock restarted in the new state"
    );
}

#[test]
fn reset_returns_to_idle_and_clears_everything() {
    let m = machine_in(S::ProcessingResult);
    m.reset();
    assert_eq!(m.current_state(), S::Idle);
    assert_eq!(m.iteration_number(), 0);
    assert_eq!(m.request_id(), Uuid::nil());
    assert!(m.history().is_empty());
    assert!(m.try_transition(T::Start, None));
}

#[test]
fn state_category_helpers_match_the_seed() {
    // state, terminal, active, waiting, generating, tool_related, accepts, awaiting, cancellable
    #[rustfmt::skip]
    let table = [
        (S::Idle,               false, false, true,  true,  false, false),
        (S::Initializing,       false, true,  false, false, false, true),
        (S::Thinking,           false, true,  false, false, false, true),
        (S::ParsingToolCall,    false, true,  false, false, false, true),
        (S::WaitingForApproval, false, false, true,  false, true,  true),
        (S::ExecutingTool,      false, true,  false, false, false, true),
        (S::ProcessingResult,   false, true,  false, false, false, true),
        (S::Responding,         false, true,  false, false, false, true),
        (S::Cancelled,          true,  false, false, false, false, false),
        (S::Error,              true,  false, false, false, false, false),
        (S::Completed,          true,  false, false, false, false, false),
    ];
    for (s, term, active, waiting, accepts, awaiting, cancellable) in table {
        assert_eq!(s.is_terminal(), term, "{s} is_terminal");
        assert_eq!(s.is_active(), active, "{s} is_active");
        assert_eq!(s.is_waiting(), waiting, "{s} is_waiting");
        assert_eq!(s.can_accept_request(), accepts, "{s} can_accept_request");
        assert_eq!(s.awaiting_user_input(), awaiting, "{s} awaiting_user_input");
        assert_eq!(s.is_cancellable(), cancellable, "{s} is_cancellable");
    }
}

// --- the whole table ---------------------------------------------------------------

#[test]
fn every_state_transition_pair_behaves_as_the_table_says() {
    let mut valid = 0;
    for from in S::ALL {
        for t in T::ALL {
            let m = machine_in(from);
            let expected = expected_next(from, t);
            assert_eq!(
                m.can_transition(t),
                expected.is_some(),
                "can {t} from {from}"
            );
            match (m.transition(t, None), expected) {
                (Ok(change), Some(to)) => {
                    valid += 1;
                    assert_eq!(change.previous_state, from);
                    assert_eq!(change.current_state, to);
                    assert_eq!(m.current_state(), to);
                }
                (Err(e), None) => {
                    assert_eq!((e.from_state, e.transition), (from, t));
                    assert_eq!(m.current_state(), from, "unchanged after {t} from {from}");
                }
                (got, want) => panic!("{t} from {from}: got {got:?}, expected {want:?}"),
            }
        }
    }
    // 11 table edges + Cancel and Fail from each of the 8 non-terminal states.
    assert_eq!(valid, 11 + 2 * 8);
}

#[test]
fn valid_transitions_lists_exactly_the_allowed_ones() {
    for from in S::ALL {
        let m = machine_in(from);
        let got: BTreeSet<T> = m.valid_transitions().into_iter().collect();
        let want: BTreeSet<T> = T::ALL
            .into_iter()
            .filter(|t| expected_next(from, *t).is_some())
            .collect();
        assert_eq!(got, want, "from {from}");
    }
}

#[test]
fn start_requires_idle_and_records_the_request() {
    let m = AgentStateMachine::new();
    let id = Uuid::new_v4();
    let change = m.start(id).unwrap();
    assert_eq!(change.request_id, id);
    assert_eq!(m.request_id(), id);
    let err = m.start(Uuid::new_v4()).unwrap_err();
    assert!(err.to_string().contains("Initializing"), "{err}");
    assert_eq!(m.request_id(), id, "a refused start changes nothing");
    let later = m.transition(T::BeginThinking, None).unwrap();
    assert_eq!(later.request_id, id);
}

#[test]
fn history_keeps_the_last_hundred_transitions() {
    let m = machine_in(S::Thinking);
    let loops = 60;
    for _ in 0..loops {
        for t in TOOL_CYCLE {
            m.transition(t, None).unwrap();
        }
    }
    let total = 2 + loops * 4;
    let history = m.history();
    assert_eq!(history.len(), HISTORY_CAPACITY);
    assert_eq!(m.iteration_number(), 1 + loops as u32);
    let last = history.last().unwrap();
    assert_eq!(last.transition, T::BeginThinking);
    assert_eq!(last.iteration_number, 1 + loops as u32);
    // The oldest kept is transition number total - 99 (1-based).
    let oldest_index = total - HISTORY_CAPACITY; // 0-based index of the oldest kept
    let expected_oldest = TOOL_CYCLE[(oldest_index - 2) % 4];
    assert_eq!(history[0].transition, expected_oldest);
    for pair in history.windows(2) {
        assert_eq!(pair[0].current_state, pair[1].previous_state);
        assert!(pair[0].timestamp <= pair[1].timestamp);
    }
}

#[test]
fn time_per_state_accumulates() {
    let m = machine_in(S::Thinking);
    std::thread::sleep(Duration::from_millis(20));
    for t in TOOL_CYCLE {
        m.transition(t, None).unwrap();
    }
    std::thread::sleep(Duration::from_millis(20));
    m.transition(T::NoToolCalls, None).unwrap();
    let totals = m.time_per_state();
    assert!(
        totals[&S::Thinking] >= Duration::from_millis(40),
        "{totals:?}"
    );
    assert!(totals[&S::Responding] < totals[&S::Thinking]);
    assert!(!totals.contains_key(&S::Completed));
}

#[test]
fn state_change_record_helpers() {
    let m = AgentStateMachine::new();
    let c = m.transition(T::Start, None).unwrap();
    assert!(c.current_state.is_active() && !c.current_state.is_terminal());
    m.transition(T::BeginThinking, None).unwrap();
    m.transition(T::DetectToolCall, None).unwrap();
    let c = m.transition(T::RequestApproval, None).unwrap();
    assert!(c.current_state.awaiting_user_input());
    let c = m.transition(T::Cancel, Some("user")).unwrap();
    assert!(c.current_state.is_terminal());
    assert!(c
        .to_string()
        .starts_with("StateChange: WaitingForApproval -> Cancelled via Cancel"));
}

#[test]
fn concurrent_transitions_never_tear_state() {
    let m = Arc::new(AgentStateMachine::new());
    m.start(Uuid::new_v4()).unwrap();
    m.transition(T::BeginThinking, None).unwrap();
    let mut rx = m.subscribe();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let m = Arc::clone(&m);
            std::thread::spawn(move || {
                let mut taken = 0u32;
                for _ in 0..2_000 {
                    for t in TOOL_CYCLE {
                        if m.try_transition(t, None) {
                            taken += 1;
                        }
                    }
                }
                taken
            })
        })
        .collect();
    let taken: u32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let history = m.history();
    // Every kept record follows from the one before it by a valid edge.
    for pair in history.windows(2) {
        assert_eq!(pair[0].current_state, pair[1].previous_state);
    }
    for c in &history {
        assert_eq!(
            expected_next(c.previous_state, c.transition),
            Some(c.current_state)
        );
    }
    // The iteration counter agrees with the number of BeginThinking transitions taken:
    // the cycle has 4 transitions, one of them BeginThinking, starting after iteration 1.
    let cycles_completed = taken / 4;
    assert_eq!(m.iteration_number(), 1 + cycles_completed);
    assert!(taken > 0);
    // Subscribers saw every transition, in the order they were taken.
    let mut seen = Vec::new();
    while let Ok(change) = rx.try_recv() {
        seen.push(change);
    }
    assert_eq!(seen.len() as u32, taken);
    assert_eq!(seen[0].previous_state, S::Thinking);
    for pair in seen.windows(2) {
        assert_eq!(pair[0].current_state, pair[1].previous_state);
    }
    // Notified outside the state's lock, yet in exactly the order of the history, which
    // is written under it.
    let tail = &seen[seen.len() - history.len()..];
    let key = |c: &AgentStateChange| {
        (
            c.previous_state,
            c.transition,
            c.iteration_number,
            c.timestamp,
        )
    };
    assert_eq!(
        tail.iter().map(key).collect::<Vec<_>>(),
        history.iter().map(key).collect::<Vec<_>>()
    );
}
