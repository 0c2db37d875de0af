//! Seed 004's turn machine: 16 states, exactly the diagram's edges.

use core_models::{StateTable, TurnMachine, TurnState as S, TURN_EDGES};
use services_ai::TurnStateMachine;
use std::collections::{BTreeSet, HashMap, VecDeque};

/// The diagram's arrows, transcribed here independently of the code under test.
const DIAGRAM: &str = "
Ready -> WaitingForUserInput
WaitingForUserInput -> SendingToLlm
WaitingForUserInput -> Error
SendingToLlm -> ProcessingLlmResponse
SendingToLlm -> Error
ProcessingLlmResponse -> EndOfTurn
ProcessingLlmResponse -> ToolUseRequested
ProcessingLlmResponse -> Error
EndOfTurn -> WaitingForUserInput
ToolUseRequested -> CheckingForCancellation
CheckingForCancellation -> RunningTool
CheckingForCancellation -> Cancelled
RunningTool -> CheckingGitCommits
RunningTool -> Error
CheckingGitCommits -> RunningAutoformatters
CheckingGitCommits -> CheckingBudget
RunningAutoformatters -> CheckingBudget
CheckingBudget -> GatheringAdditionalMessages
CheckingBudget -> BudgetExceeded
GatheringAdditionalMessages -> SendingToolResults
GatheringAdditionalMessages -> Error
SendingToolResults -> ProcessingLlmResponse
SendingToolResults -> Error
Error -> WaitingForUserInput
Cancelled -> WaitingForUserInput
BudgetExceeded -> WaitingForUserInput
";

fn by_name(name: &str) -> S {
    S::ALL
        .into_iter()
        .find(|s| s.name() == name)
        .unwrap_or_else(|| panic!("no state {name}"))
}

fn diagram_edges() -> BTreeSet<(S, S)> {
    DIAGRAM
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (a, b) = l.split_once(" -> ").unwrap();
            (by_name(a.trim()), by_name(b.trim()))
        })
        .collect()
}

/// Shortest path from Ready to every state, over the diagram's edges.
fn paths() -> HashMap<S, Vec<S>> {
    let edges = diagram_edges();
    let mut paths = HashMap::from([(S::Ready, vec![])]);
    let mut queue = VecDeque::from([S::Ready]);
    while let Some(s) = queue.pop_front() {
        for (_, to) in edges.iter().filter(|(f, _)| *f == s) {
            if !paths.contains_key(to) {
                let mut p = paths[&s].clone();
                p.push(*to);
                paths.insert(*to, p);
                queue.push_back(*to);
            }
        }
    }
    paths
}

#[test]
fn sixteen_states_in_the_seed_s_order() {
    let table = [
        (
            S::Ready,
            "Initial state when the agent is initialized and ready to operate",
        ),
        (
            S::WaitingForUserInput,
            "Agent is waiting for a user message to start a turn",
        ),
        (S::SendingToLlm, "Agent is sending message(s) to the LLM"),
        (
            S::ProcessingLlmResponse,
            "Agent is processing a response from the LLM",
        ),
        (
            S::EndOfTurn,
            "Processing completed without tool use, turn ends",
        ),
        (S::ToolUseRequested, "LLM has requested to use a tool"),
        (
            S::CheckingForCancellation,
            "Agent checks if user requested cancellation",
        ),
        (S::RunningTool, "Agent is executing the requested tool"),
        (
            S::CheckingGitCommits,
            "Agent checks for new git commits after tool execution",
        ),
        (
            S::RunningAutoformatters,
            "Agent runs code formatters on new commits",
        ),
        (
            S::CheckingBudget,
            "Agent verifies if budget limits are exceeded",
        ),
        (
            S::GatheringAdditionalMessages,
            "Agent collects user messages that arrived during tool execution",
        ),
        (
            S::SendingToolResults,
            "Agent sends tool results back to the LLM",
        ),
        (S::Cancelled, "Operation was cancelled by the user"),
        (S::BudgetExceeded, "Budget limit was reached"),
        (S::Error, "An error occurred during processing"),
    ];
    assert_eq!(S::ALL.len(), 16);
    // Each with what it means (the state's documentation says the same).
    assert_eq!(table.map(|(s, _)| s), S::ALL, "the seed's order");
}

#[test]
fn table_is_exactly_the_diagram() {
    let ours: BTreeSet<(S, S)> = TURN_EDGES.into_iter().collect();
    assert_eq!(ours.len(), TURN_EDGES.len(), "no duplicate edges");
    assert_eq!(ours, diagram_edges());
}

#[test]
fn every_pair_behaves_as_the_diagram_says() {
    let edges = diagram_edges();
    let paths = paths();
    assert_eq!(paths.len(), 16, "every state is reachable from Ready");
    let mut valid = 0;
    for from in S::ALL {
        for to in S::ALL {
            let m = TurnStateMachine::new();
            for step in &paths[&from] {
                m.transition(*step, None).unwrap();
            }
            assert_eq!(m.current_state(), from);
            let allowed = edges.contains(&(from, to));
            assert_eq!(m.can_transition(to), allowed, "{from} -> {to}");
            assert_eq!(m.try_transition(to, None), allowed, "{from} -> {to}");
            assert_eq!(m.current_state(), if allowed { to } else { from });
            valid += usize::from(allowed);
        }
    }
    assert_eq!(valid, 26);
}

#[test]
fn a_full_turn_with_a_tool_and_the_iteration_count() {
    let m = TurnStateMachine::new();
    m.start(uuid::Uuid::new_v4()).unwrap();
    assert_eq!(m.current_state(), S::WaitingForUserInput);
    let turn = [
        S::SendingToLlm,
        S::ProcessingLlmResponse,
        S::ToolUseRequested,
        S::CheckingForCancellation,
        S::RunningTool,
        S::CheckingGitCommits,
        S::RunningAutoformatters,
        S::CheckingBudget,
        S::GatheringAdditionalMessages,
        S::SendingToolResults,
        S::ProcessingLlmResponse,
        S::EndOfTurn,
        S::WaitingForUserInput,
    ];
    for s in turn {
        m.transition(s, None).unwrap();
    }
    assert_eq!(
        m.iteration_number(),
        2,
        "one LLM call, one tool-result call"
    );
    assert!(!m.is_terminal_state(), "the turn machine never terminates");
    assert_eq!(m.history().len(), 14);
    assert!(
        m.start(uuid::Uuid::new_v4()).is_err(),
        "start only from Ready"
    );
}

#[test]
fn turn_ends_and_error_detection() {
    let ends: BTreeSet<S> = S::ALL.into_iter().filter(|s| s.is_turn_end()).collect();
    assert_eq!(
        ends,
        BTreeSet::from([S::EndOfTurn, S::Cancelled, S::BudgetExceeded, S::Error])
    );
    for s in ends {
        assert_eq!(
            s.successors().collect::<Vec<_>>(),
            vec![S::WaitingForUserInput]
        );
    }
    assert!(TurnMachine::is_error(S::Error));
    let m = TurnStateMachine::new();
    m.transition(S::WaitingForUserInput, None).unwrap();
    m.transition(S::Error, Some("boom")).unwrap();
    assert!(m.is_error_state() && m.has_errored());
    m.transition(S::WaitingForUserInput, None).unwrap();
    assert!(!m.is_error_state() && m.has_errored());
}
