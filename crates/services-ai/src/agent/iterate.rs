//! The loop: ask the model, and while it calls tools, prepare and run them and ask again.

use super::prompt;
use super::run::{Outcome, Prepared, Reply, Run, Stopped};
use crate::parser::{FunctionCallParser, ParserOptions, ToolCallFormat, ToolCatalog};
use core_models::{
    AgentIterationEvent, AgentStateTransition as T, ChatMessage, LlmRequest, ToolCallRequest,
    ToolCallRequestEvent, ToolChoice, ToolDefinition, ToolResult, ToolResultEvent, TurnState as S,
};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

/// What stays the same across the iterations of one request.
pub(super) struct Setup {
    max: u32,
    any_tools: bool,
    /// `auto` (and `required`) are carried out as a routed decision
    /// ([`crate::config::AutoToolChoice::Constrained`]).
    pub(super) decides: bool,
    /// The tools offered (for their argument choices).
    pub(super) tools: Vec<Arc<dyn core_models::Tool>>,
    system: Option<String>,
    definitions: Vec<ToolDefinition>,
    parser: FunctionCallParser,
    text_only: FunctionCallParser,
}

/// What one iteration hands the next.
#[derive(Default)]
struct Carry {
    /// Calls that ran in the previous iteration.
    previous_tools: u32,
    /// Every call of the previous reply was refused after asking: the agent machine went
    /// back to Thinking already.
    skip_begin: bool,
    /// The model answered and messages sent meanwhile are to be answered: the agent
    /// machine is still Thinking, the turn machine waits for the user's input (which is
    /// there).
    after_answer: bool,
}

impl Run {
    pub(super) async fn iterate(&mut self) -> Outcome {
        let setup = self.setup();
        self.offered = setup.definitions.iter().map(|d| d.id.clone()).collect();
        let mut carry = Carry::default();
        loop {
            if let Some(outcome) = self.begin_iteration(&setup, &mut carry) {
                return outcome;
            }
            let (mut request, text_only) = self.llm_request(&setup);
            let text_only = if !text_only {
                self.hold_arguments(&setup, &mut request).await
            } else if let Some(call) = self.follow_up(&setup).await {
                // A step of the request is still to be taken: its call, not the answer.
                request = call;
                false
            } else {
                true
            };
            if let Err(e) = self
                .fit_context(&mut request, setup.system.as_deref())
                .await
            {
                return Outcome::LlmFailed(e);
            }
            let parser = if text_only {
                &setup.text_only
            } else {
                &setup.parser
            };
            let mut reply = match self.generate(request, parser).await {
                Ok(reply) => reply,
                Err(Ok(Stopped)) => return self.stop_outcome(),
                Err(Err(e)) => return Outcome::LlmFailed(e),
            };
            if setup.decides && self.only_repeats(&reply.calls) {
                // After results, a small model echoes the call it made: it is answered
                // instead, in plain text.
                reply = match self.plain_answer(&setup).await {
                    Ok(reply) => reply,
                    Err(Ok(Stopped)) => return self.stop_outcome(),
                    Err(Err(e)) => return Outcome::LlmFailed(e),
                };
            }
            if reply.calls.is_empty() {
                if self.answered_with_messages_waiting(&setup, &reply, &mut carry) {
                    continue;
                }
                self.answered(reply);
                return Outcome::Finished;
            }
            if let ControlFlow::Break(outcome) = self.tool_round(reply, &mut carry).await {
                return outcome;
            }
        }
    }

    fn setup(&self) -> Setup {
        setup(&self.shared, &self.request, self.tools_offered())
    }

    /// Whether every call of a reply was made already in this request.
    fn only_repeats(&self, calls: &[ToolCallRequest]) -> bool {
        !calls.is_empty()
            && calls
                .iter()
                .all(|c| self.done.iter().any(|(d, _)| d.is_same_call(c)))
    }

    /// Before a reply that may call tools: path arguments held to what exists, and under a
    /// constrained decision the first reply routed — to a plain answer, or to a forced
    /// call of the best-ranked tool. Whether the reply is now text only.
    async fn hold_arguments(&self, setup: &Setup, request: &mut LlmRequest) -> bool {
        let workspace = self.workspace();
        let limit = self.shared.config.path_choices_limit;
        let found = super::choices::gather(&setup.tools, workspace.clone(), limit).await;
        super::choices::apply(&mut request.tools, &found);
        if !(setup.decides && self.iteration == 1) {
            return false;
        }
        match super::route::route(&self.request.message, &request.tools, &found) {
            super::route::Route::Answer if self.request.tool_choice == ToolChoice::Auto => {
                request.tool_choice = ToolChoice::None;
                true
            }
            // A call is required, and no tool stands out: the model chooses.
            super::route::Route::Answer => false,
            super::route::Route::Call(id) => {
                let tool = setup
                    .tools
                    .iter()
                    .find(|t| super::guard::definition(t.as_ref()).is_ok_and(|d| d.id == id));
                let definition = request.tools.iter_mut().find(|d| d.id == id);
                if let (Some(tool), Some(definition)) = (tool, definition) {
                    let held = super::follow_up::Held {
                        text: &self.request.message,
                        earlier: None,
                    };
                    self.hold_routed(definition, tool, &found, held).await;
                }
                request.tool_choice = ToolChoice::Tool(id);
                false
            }
        }
    }

    /// The reply written again as plain text, no tool allowed: after a constrained
    /// decision chose `answer`.
    async fn plain_answer(
        &mut self,
        setup: &Setup,
    ) -> Result<super::run::Reply, Result<Stopped, core_models::Error>> {
        let (mut request, _) = self.llm_request(setup);
        request.tool_choice = ToolChoice::None;
        self.fit_context(&mut request, setup.system.as_deref())
            .await
            .map_err(Err)?;
        self.generate(request, &setup.text_only).await
    }
}

/// What the iterations of `request` share: the system prompt, the tools as offered, the
/// parsers; `tools` are the tools it may use.
pub(super) fn setup(
    shared: &super::Shared,
    request: &core_models::AgentRequest,
    tools: Vec<Arc<dyn core_models::Tool>>,
) -> Setup {
    {
        let max = request
            .max_iterations
            .unwrap_or(shared.config.max_agent_iterations)
            .max(1);
        // The tools offered passed their definition once; one that panics now is left out.
        let (tools, definitions): (Vec<_>, Vec<_>) = tools
            .into_iter()
            .filter_map(|t| {
                let definition = super::guard::definition(t.as_ref()).ok()?.clone();
                Some((t, definition))
            })
            .unzip();
        // `required` is routed too: to the best-ranked tool.
        let decides = shared.config.auto_tool_choice == crate::config::AutoToolChoice::Constrained
            && matches!(request.tool_choice, ToolChoice::Auto | ToolChoice::Required)
            && !definitions.is_empty();

        let native = shared.ports.llm.chat_format();
        // A template that renders the tools shows them in the model's own call language;
        // the system prompt then adds no second one.
        let renders_tools = native.as_ref().is_some_and(|f| f.renders_tools);
        let system = prompt::system_prompt(
            &shared.config,
            request.system_prompt.as_deref(),
            if renders_tools { &[] } else { &definitions },
        );
        let options = parser_options(&shared.parser_options, native.as_ref());
        // The model is given the tools as the prompt shows them: with the compact prompt,
        // only their required parameters (a grammar-constrained call then cannot invent
        // the optional ones either).
        let definitions = prompt::offered_definitions(&shared.config, definitions);
        let catalog = ToolCatalog::Registry(Arc::clone(&shared.ports.registry));
        let starts_in_thinking = options.starts_in_thinking;
        let parser = FunctionCallParser::new(catalog.clone()).with_options(options);
        // When no call may happen, nothing the model writes is run: call-like text stays
        // text.
        let text_only = ParserOptions::only([ToolCallFormat::Reasoning]);
        let text_only = FunctionCallParser::new(catalog).with_options(if starts_in_thinking {
            text_only.starting_in_thinking()
        } else {
            text_only
        });
        Setup {
            max,
            any_tools: !tools.is_empty(),
            decides,
            tools,
            system,
            definitions,
            parser,
            text_only,
        }
    }
}

impl Run {
    /// Stop checks, the machines' moves into a new iteration, and its event.
    fn begin_iteration(&mut self, setup: &Setup, carry: &mut Carry) -> Option<Outcome> {
        if self.stopped() {
            return Some(self.stop_outcome());
        }
        if self.iteration >= setup.max {
            return Some(Outcome::MaxIterations(setup.max));
        }
        self.iteration += 1;
        if self.iteration == 1 {
            self.agent(T::BeginThinking, None);
            self.turn(S::SendingToLlm, None);
        } else if carry.after_answer {
            // The machine stays in Thinking (as after refused calls); the user's input,
            // the messages, goes to the model.
            self.turn(S::SendingToLlm, Some(MESSAGES_AFTER_ANSWER));
        } else {
            if !carry.skip_begin {
                self.agent(T::BeginThinking, None);
            }
            self.turn(S::SendingToolResults, None);
        }
        carry.skip_begin = false;
        carry.after_answer = false;
        self.emit(AgentIterationEvent::create(
            self.request.request_id,
            self.iteration,
            setup.max,
            carry.previous_tools,
            self.tools_executed,
            self.started.elapsed(),
        ));
        None
    }

    /// The model request of this iteration, and whether its reply is text only.
    fn llm_request(&self, setup: &Setup) -> (LlmRequest, bool) {
        let mut request = llm_request(setup, &self.request, &self.history, self.iteration);
        let template = &self.shared.config.answer_template;
        let answering = request.tool_choice == ToolChoice::None && !self.done.is_empty();
        if setup.decides && answering && !template.is_empty() {
            // The answer, asked as one plain question about the results.
            let results: Vec<String> = self
                .done
                .iter()
                .map(|(_, result)| {
                    prompt::result_text(result, self.shared.config.max_tool_result_tokens)
                })
                .collect();
            // The request, and the messages sent into it since.
            let asked = std::iter::once(self.request.message.trim())
                .chain(self.received.iter().map(|m| m.trim()))
                .collect::<Vec<_>>()
                .join("\n");
            let text = template
                .replace("{results}", results.join("\n").trim_end())
                .replace("{request}", &asked);
            request.messages = setup
                .system
                .iter()
                .map(|s| ChatMessage::system(s.clone()))
                .chain(std::iter::once(ChatMessage::user(text)))
                .collect();
            // A small model that answers runs on into a new "Question: …" of its own.
            request.options.stop.extend(template_labels(template));
        }
        let text_only = request.tool_choice == ToolChoice::None;
        (request, text_only)
    }

    /// The model answered without calling a tool: are messages sent meanwhile waiting
    /// (see [`super::inbox`])? Then the answer is kept, the messages follow it, and the
    /// model is asked again — while the iteration limit allows; at the limit they stay in
    /// the inbox, and the request's end carries them. With none waiting, the inbox is
    /// closed in the same step and the request ends.
    fn answered_with_messages_waiting(
        &mut self,
        setup: &Setup,
        reply: &Reply,
        carry: &mut Carry,
    ) -> bool {
        if self.iteration >= setup.max {
            return false;
        }
        let waiting = self.handle.inbox.gather_or_close();
        if waiting.is_empty() {
            return false;
        }
        self.final_response = reply.visible.trim().to_string();
        self.history.push(ChatMessage::assistant(reply.raw.clone()));
        self.take_messages(waiting);
        self.turn(S::EndOfTurn, Some(MESSAGES_AFTER_ANSWER));
        self.turn(S::WaitingForUserInput, Some(MESSAGES_AFTER_ANSWER));
        carry.previous_tools = 0;
        carry.after_answer = true;
        true
    }

    /// The model answered without calling a tool.
    fn answered(&mut self, reply: Reply) {
        self.agent(T::NoToolCalls, None);
        self.final_response = reply.visible.trim().to_string();
        self.history
            .push(ChatMessage::assistant(reply.into_answer()));
        self.agent(T::Complete, None);
        self.turn(S::EndOfTurn, None);
        self.turn(S::WaitingForUserInput, None);
    }

    /// One round of tool use: prepare the calls, run them, keep their results, and the
    /// checks after tools.
    async fn tool_round(&mut self, reply: Reply, carry: &mut Carry) -> ControlFlow<Outcome> {
        self.agent(T::DetectToolCall, Some(&summarize_calls(&reply.calls)));
        self.turn(S::ToolUseRequested, None);
        self.history.push(reply.message());
        let screened = self.screen(reply.calls);
        self.announce(&screened);
        let (prepared, asked) = match self.decide(screened).await {
            Ok(p) => p,
            Err(Stopped) => return ControlFlow::Break(self.stop_outcome()),
        };

        self.turn(S::CheckingForCancellation, None);
        if self.stopped() {
            self.cancelled_before_running(&prepared);
            return ControlFlow::Break(self.stop_outcome());
        }
        self.turn(S::RunningTool, None);
        let runnable = prepared
            .iter()
            .filter(|p| matches!(p, Prepared::Run { .. }))
            .count();
        if runnable == 0 && asked {
            self.agent(T::ApprovalDenied, Some("no call may run"));
            carry.skip_begin = true;
        } else {
            self.agent(T::ApprovalGranted, None);
        }
        let head_before = self.git_head().await;
        let executed_before = self.tools_executed;
        let results = self.execute_all(prepared).await;
        carry.previous_tools = self.tools_executed.saturating_sub(executed_before);
        if !carry.skip_begin {
            self.agent(T::ToolComplete, None);
        }
        self.keep_results(&results);
        if self.stopped() {
            return ControlFlow::Break(self.stop_outcome());
        }
        self.after_tools(head_before, &results).await
    }

    /// A `tool_call_request` event for each call of the reply, as assessed.
    fn announce(&self, screened: &[super::prepare::Screened]) {
        let total = u32::try_from(screened.len()).unwrap_or(u32::MAX);
        for (i, s) in screened.iter().enumerate() {
            self.emit(ToolCallRequestEvent::create(
                self.request.request_id,
                s.call().clone(),
                u32::try_from(i).unwrap_or(u32::MAX),
                total,
                self.iteration,
            ));
        }
    }

    /// The request was stopped after the calls were prepared: none of them runs.
    fn cancelled_before_running(&self, prepared: &[Prepared]) {
        self.turn(S::Cancelled, Some("cancelled before the tools ran"));
        self.turn(S::WaitingForUserInput, None);
        for p in prepared {
            self.emit(ToolResultEvent::create(
                self.request.request_id,
                p.call(),
                ToolResult::failed("Cancelled before it ran"),
                Duration::ZERO,
                self.iteration,
            ));
        }
    }

    /// The results go into the conversation (or a note that they ran, when the
    /// configuration keeps them out).
    fn keep_results(&mut self, results: &[(ToolCallRequest, ToolResult)]) {
        if self.shared.config.include_tool_results_in_history {
            let instruction = self
                .shared
                .config
                .tool_result_instruction
                .replace("{request}", self.request.message.trim());
            for (call, result) in results {
                self.history.push(prompt::tool_result_message(
                    call,
                    result,
                    self.shared.config.max_tool_result_tokens,
                    &instruction,
                ));
            }
        } else {
            self.history.push(ChatMessage::user(format!(
                "({} tool call(s) ran; their results are not kept in this conversation)",
                results.len()
            )));
        }
    }
}

/// Why the model is asked again after it answered.
const MESSAGES_AFTER_ANSWER: &str = "messages were sent while the model answered";

/// The model request of `iteration` of `request` over `history`.
pub(super) fn llm_request(
    setup: &Setup,
    request: &core_models::AgentRequest,
    history: &[ChatMessage],
    iteration: u32,
) -> LlmRequest {
    let choice = if !setup.any_tools {
        ToolChoice::None
    } else {
        match (&request.tool_choice, iteration) {
            // The decision is a call: of a tool, or of `answer`.
            // The first reply is routed (a call or a plain answer); after the results,
            // the answer.
            (ToolChoice::Auto, 1) if setup.decides => ToolChoice::Required,
            (ToolChoice::Auto, _) if setup.decides => ToolChoice::None,
            (ToolChoice::Auto, _) => ToolChoice::Auto,
            // A forced call (required or a named tool) is one round of tool use: the first
            // reply must call, the replies after the results answer.
            (choice, 1) => choice.clone(),
            _ => ToolChoice::None,
        }
    };
    let mut messages = Vec::with_capacity(history.len() + 1);
    if let Some(system) = &setup.system {
        messages.push(ChatMessage::system(system.clone()));
    }
    messages.extend(history.iter().cloned());
    LlmRequest {
        messages,
        tools: setup.definitions.clone(),
        tool_choice: choice,
        options: request.inference_options.clone().unwrap_or_default(),
    }
}

/// The labels that begin lines of an answer template ("Context:", "Question:"), each
/// as a stop sequence at the start of a line.
fn template_labels(template: &str) -> Vec<String> {
    template
        .lines()
        .filter_map(|line| {
            let (label, _) = line.split_once(':')?;
            let plain = !label.is_empty()
                && label.chars().all(|c| c.is_alphanumeric() || c == ' ')
                && label.starts_with(char::is_alphabetic);
            plain.then(|| format!("\n{label}:"))
        })
        .collect()
}

fn summarize_calls(calls: &[ToolCallRequest]) -> String {
    calls
        .iter()
        .map(|c| c.tool_id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the parser expects: options the agent was built with, else the model's own format
/// as its backend reports it, else every format.
fn parser_options(
    built: &ParserOptions,
    native: Option<&core_models::ChatFormat>,
) -> ParserOptions {
    // A server that finds the calls itself leaves none in the text, whatever else is
    // configured: call-like text is text.
    if let Some(native) = native.filter(|n| n.call_format == core_models::ChatFormat::NATIVE) {
        // The server finds the calls: the text is text (and reasoning in its markers).
        let text = ParserOptions::only([ToolCallFormat::Reasoning]);
        return if native.starts_in_thinking {
            text.starting_in_thinking()
        } else {
            text
        };
    }
    if *built != ParserOptions::default() {
        return built.clone();
    }
    let Some(native) = native else {
        return built.clone();
    };
    match crate::parser::format_by_name(&native.call_format) {
        Some(format) => crate::parser::TemplateProfile {
            format,
            reasoning: None,
        }
        .parser_options(native.starts_in_thinking),
        None if native.starts_in_thinking => built.clone().starting_in_thinking(),
        None => built.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_labels_of_an_answer_template_stop_the_answer() {
        assert_eq!(
            template_labels("Context:\n{results}\n\nQuestion: {request}\nAnswer in one sentence."),
            ["\nContext:", "\nQuestion:"]
        );
        assert!(template_labels("Use {results}: answer {request}").is_empty());
    }
}
