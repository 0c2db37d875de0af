//! The end of a request: the machines brought to their end states and exactly one
//! terminal event, the last one: `agent_complete` (finished, cancelled, or stopped by the
//! timeout, the iteration limit or the budget, with the reason in words), or a fatal
//! `agent_error` when the model failed or the loop itself broke. Before it, the messages
//! sent into the request that never reached the model are carried (see
//! [`super::inbox`]): added to the conversation the agent keeps and listed in a
//! `messages_carried` event.

use super::lock;
use super::run::{Outcome, Run};
use core_models::{
    AgentCompleteEvent, AgentErrorCategory, AgentErrorEvent, AgentEvent, AgentStateTransition as T,
    ChatMessage, CompletionReason, MessagesCarriedEvent, TurnState as S, TURN_EDGES,
};
use std::collections::{BTreeMap, VecDeque};

impl Run {
    pub(super) fn finish(&mut self, outcome: Outcome) {
        let id = self.request.request_id;
        let event: AgentEvent = match outcome {
            Outcome::Finished => self.complete(CompletionReason::Finished).into(),
            Outcome::MaxIterations(max) => {
                let why = format!("iteration limit ({max}) reached");
                self.agent(T::Fail, Some(&why));
                self.turn_end(&[S::EndOfTurn], &why);
                self.complete(CompletionReason::MaxIterations)
                    .with_stop_message(why)
                    .into()
            }
            Outcome::Budget(why) => {
                self.agent(T::Fail, Some(&why));
                self.turn_end(&[S::BudgetExceeded], &why);
                self.complete(CompletionReason::BudgetExceeded)
                    .with_stop_message(why)
                    .into()
            }
            Outcome::Cancelled => {
                self.agent(T::Cancel, Some("cancelled"));
                self.turn_end(&[S::Cancelled, S::EndOfTurn], "cancelled");
                self.complete(CompletionReason::Cancelled)
                    .with_stop_message("the request was cancelled")
                    .into()
            }
            Outcome::Timeout => {
                let why = format!(
                    "the request took longer than {}s",
                    self.shared.config.agent_request_timeout().as_secs_f64()
                );
                self.agent(T::Fail, Some(&why));
                self.turn_end(&[S::Error], &why);
                self.complete(CompletionReason::Timeout)
                    .with_stop_message(why)
                    .into()
            }
            Outcome::LlmFailed(e) => {
                let message = e.to_string();
                self.agent(T::Fail, Some(&message));
                self.turn_end(&[S::Error], &message);
                AgentErrorEvent::llm_error(id, message, Some(Box::new(e)), self.iteration).into()
            }
            Outcome::InvalidOutput(why) => {
                self.agent(T::Fail, Some(&why));
                self.turn_end(&[S::Error], &why);
                AgentErrorEvent::new(
                    id,
                    AgentErrorCategory::ParsingError,
                    why,
                    true,
                    self.iteration,
                )
                .into()
            }
            Outcome::Panicked(panic) => {
                let message = format!("the agent failed unexpectedly: {panic}");
                tracing::error!(%message, "the agent loop panicked");
                // The loop broke anywhere: move only along valid edges.
                if self.shared.machine.can_transition(T::Fail) {
                    self.agent(T::Fail, Some(&message));
                }
                self.turn_end(&[S::Error], &message);
                AgentErrorEvent::new(
                    id,
                    AgentErrorCategory::Unknown,
                    message,
                    true,
                    self.iteration,
                )
                .into()
            }
        };
        let carried = self.handle.inbox.close();
        if !carried.is_empty() {
            tracing::info!(
                messages = carried.len(),
                "messages sent into the request did not reach the model: carried to the next request"
            );
            self.history
                .extend(carried.iter().cloned().map(ChatMessage::user));
        }
        *lock(&self.shared.conversation) = (
            Some(self.request.conversation_id),
            std::mem::take(&mut self.history),
        );
        if !carried.is_empty() {
            self.emit(MessagesCarriedEvent::create(id, carried, self.iteration));
        }
        self.emit(event);
    }

    fn complete(&self, reason: CompletionReason) -> AgentCompleteEvent {
        AgentCompleteEvent::success(
            self.request.request_id,
            self.final_response.clone(),
            self.tools_executed,
            self.iteration,
            self.started.elapsed(),
            self.tokens,
            self.usage.values().cloned().collect(),
        )
        .with_token_counts(self.prompt_tokens, self.completion_tokens)
        .with_cached_prompt_tokens(self.cached_prompt_tokens)
        .with_generation(self.timed_tokens, self.generation_time)
        .with_session_id(self.request.conversation_id)
        .with_output(self.output.clone())
        .with_denied(self.tools_denied.load(std::sync::atomic::Ordering::Relaxed))
        .with_reason(reason)
    }

    /// Walk the turn machine along the diagram's edges to the nearest of `targets`, then
    /// back to WaitingForUserInput.
    fn turn_end(&self, targets: &[S], context: &str) {
        let from = self.shared.turn.current_state();
        if from == S::WaitingForUserInput {
            return;
        }
        for step in shortest_path(from, targets) {
            self.turn(step, Some(context));
        }
        let now = self.shared.turn.current_state();
        if now != S::WaitingForUserInput {
            for step in shortest_path(now, &[S::WaitingForUserInput]) {
                self.turn(step, Some(context));
            }
        }
    }
}

/// The shortest path (excluding `from`) over seed 004's edges to any of `targets`.
fn shortest_path(from: S, targets: &[S]) -> Vec<S> {
    let mut previous: BTreeMap<S, S> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(state) = queue.pop_front() {
        if state != from && targets.contains(&state) {
            let mut path = vec![state];
            let mut at = state;
            while let Some(p) = previous.get(&at) {
                if *p == from {
                    break;
                }
                path.push(*p);
                at = *p;
            }
            path.reverse();
            return path;
        }
        for (_, to) in TURN_EDGES.iter().filter(|(f, _)| *f == state) {
            if *to != from && !previous.contains_key(to) {
                previous.insert(*to, state);
                queue.push_back(*to);
            }
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortest_paths_follow_the_diagram() {
        assert_eq!(shortest_path(S::SendingToLlm, &[S::Error]), [S::Error]);
        assert_eq!(
            shortest_path(S::ToolUseRequested, &[S::Cancelled, S::EndOfTurn]),
            [S::CheckingForCancellation, S::Cancelled]
        );
        assert_eq!(
            shortest_path(S::ProcessingLlmResponse, &[S::Cancelled, S::EndOfTurn]),
            [S::EndOfTurn]
        );
        assert_eq!(
            shortest_path(S::CheckingGitCommits, &[S::Error]),
            [S::CheckingBudget, S::GatheringAdditionalMessages, S::Error]
        );
        assert_eq!(
            shortest_path(S::SendingToolResults, &[S::EndOfTurn]),
            [S::ProcessingLlmResponse, S::EndOfTurn]
        );
        for from in S::ALL {
            for target in [S::Error, S::Cancelled, S::EndOfTurn, S::BudgetExceeded] {
                let path = shortest_path(from, &[target]);
                let mut at = from;
                for step in &path {
                    assert!(TURN_EDGES.contains(&(at, *step)), "{at} -> {step}");
                    at = *step;
                }
            }
        }
    }
}
