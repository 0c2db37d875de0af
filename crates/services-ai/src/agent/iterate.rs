//! The loop: ask the model, and while it calls tools, prepare and run them and ask again.

use super::prompt;
use super::run::{Outcome, Prepared, Reply, Run, Stopped};
use super::steering::{Halt, ModelChooser, Plan, Steering, Turn};
use core_models::{
    AgentIterationEvent, AgentStateTransition as T, ChatMessage, LlmRequest, ToolCallRequest,
    ToolCallRequestEvent, ToolChoice, ToolDefinition, ToolResult, ToolResultEvent, TurnState as S,
};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;
use tool_calls::{FunctionCallParser, ParserOptions, ToolCallFormat, ToolCatalog};

/// What stays the same across the iterations of one request.
pub(super) struct Setup {
    max: u32,
    any_tools: bool,
    /// The tools offered (for their argument choices).
    pub(super) tools: Vec<Arc<dyn core_models::Tool>>,
    system: Option<String>,
    definitions: Vec<ToolDefinition>,
    parser: FunctionCallParser,
    text_only: FunctionCallParser,
    /// How each reply is asked for ([`super::steering`]).
    steering: Arc<dyn Steering>,
    /// The model is known to be large ([`core_models::ModelDetails::is_known_large`]):
    /// an empty reply is asked again once.
    large: bool,
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
        tracing::debug!(steering = setup.steering.name(), "request started");
        let mut carry = Carry::default();
        let mut asked_after_no_call = false;
        let mut asked_after_empty = false;
        // The model's reply to `plan`; a stop or a failure of the model ends the request.
        macro_rules! ask {
            ($plan:expr) => {
                match self.reply(&setup, $plan).await {
                    Ok(reply) => reply,
                    Err(Ok(Stopped)) => return self.stop_outcome(),
                    Err(Err(e)) => return Outcome::LlmFailed(e),
                }
            };
        }
        loop {
            if let Some(outcome) = self.begin_iteration(&setup, &mut carry) {
                return outcome;
            }
            let plan = match self.plan(&setup).await {
                Ok(plan) => plan,
                Err(Halt::Stopped) => return self.stop_outcome(),
                Err(Halt::Failed(e)) => return Outcome::LlmFailed(e),
            };
            let mut reply = ask!(plan);
            if self.only_repeats(&reply.calls) {
                // The model repeats a call it made: it is asked for its answer instead.
                let plan = setup
                    .steering
                    .answer(&self.turn_view(&setup, &self.base_request(&setup)));
                reply = ask!(plan);
            }
            if reply.calls.is_empty() && !asked_after_no_call {
                // A reply with no call: the steering may ask once more (a model that
                // described a call instead of making it).
                let base = self.base_request(&setup);
                let turn = self.turn_view(&setup, &base);
                if let Some(plan) = setup.steering.after_no_call(&turn, &reply.visible) {
                    asked_after_no_call = true;
                    reply = ask!(plan);
                }
            }
            if reply.calls.is_empty()
                && reply.visible.trim().is_empty()
                && !asked_after_empty
                && setup.large
            {
                // A reply with nothing in it: the steering may ask once more.
                let base = self.base_request(&setup);
                if let Some(plan) = setup.steering.after_empty(&self.turn_view(&setup, &base)) {
                    asked_after_empty = true;
                    reply = ask!(plan);
                }
            }
            if reply.calls.is_empty() && self.answer_unheld(&reply) {
                // The model answered while it could still call tools, and its answer
                // does not match the output schema: it answers again, held to it.
                let mut plan = setup
                    .steering
                    .answer(&self.turn_view(&setup, &self.base_request(&setup)));
                plan.request.constraint = self
                    .request
                    .output_schema
                    .clone()
                    .map(core_models::ReplyConstraint::JsonSchema);
                reply = ask!(plan);
            }
            if reply.calls.is_empty() {
                if self.answered_with_messages_waiting(&setup, &reply, &mut carry) {
                    continue;
                }
                match self.hold_answer(setup.max, &reply) {
                    super::answer::Held::Kept => {}
                    super::answer::Held::Retry(message) => {
                        // The answer that missed stays, and what is wrong with it comes
                        // next, as a message sent after it.
                        self.ask_again_after(&reply, vec![message], ANSWER_MISSED, &mut carry);
                        continue;
                    }
                    super::answer::Held::Invalid(why) => {
                        self.final_response = reply.visible.trim().to_string();
                        self.history
                            .push(ChatMessage::assistant(reply.into_answer()));
                        return Outcome::InvalidOutput(why);
                    }
                }
                self.answered(reply);
                return Outcome::Finished;
            }
            if let ControlFlow::Break(outcome) = self.tool_round(&setup, reply, &mut carry).await {
                return outcome;
            }
        }
    }

    fn setup(&self) -> Setup {
        setup(&self.shared, &self.request, self.tools_offered())
    }

    /// Whether `reply` answers a request held to an output schema without having been
    /// held to it, and does not match it (before any answer was sent back).
    fn answer_unheld(&self, reply: &Reply) -> bool {
        // Once sent back with what was wrong, the model's next answer is final.
        !reply.held_to_schema
            && !self.output_retried
            && self
                .output_schema
                .as_ref()
                .is_some_and(|schema| schema.check(&reply.visible).is_err())
    }

    /// Whether every call of a reply ran already in this request (a call that was refused
    /// or did not run may be made again: what it touches, or the answer, may differ now).
    fn only_repeats(&self, calls: &[ToolCallRequest]) -> bool {
        !calls.is_empty()
            && calls
                .iter()
                .all(|c| self.done.iter().any(|(d, _)| d.is_same_call(c)))
    }

    /// The request this iteration would send as it is, path arguments held to what
    /// exists. It is the conversation, so it carries the conversation's key; requests a
    /// steering builds apart (a decision, an answer asked from the results alone) do not,
    /// and a backend keeps only the conversation warm.
    fn base_request(&self, setup: &Setup) -> LlmRequest {
        let mut request = llm_request(setup, &self.request, &self.history, self.iteration)
            .with_session(Some(self.session_key()));
        self.tell_listing(&mut request.messages);
        request
    }

    /// The workspace's names (see `choices::listing`), as a system message just before
    /// the request's own message: after the stable start of the prompt (system prompt and
    /// tools), which stays the same whatever the workspace holds.
    pub(super) fn tell_listing(&self, messages: &mut Vec<ChatMessage>) {
        let Some(listing) = self.listing.as_deref().filter(|l| !l.is_empty()) else {
            return;
        };
        let system = usize::from(
            messages
                .first()
                .is_some_and(|m| m.role == core_models::MessageRole::System),
        );
        let at = (system + self.request_start).min(messages.len());
        messages.insert(at, ChatMessage::system(listing.to_string()));
    }

    /// What the steering sees of the turn, with `base` the request as it is.
    fn turn_view<'a>(&'a self, setup: &Setup, base: &'a LlmRequest) -> Turn<'a> {
        let _ = setup;
        Turn {
            request: &self.request,
            base,
            done: &self.tried,
            received: &self.received,
            config: &self.shared.config,
        }
    }

    /// How the model is asked for this iteration's reply: the steering's plan, over the
    /// request with path arguments held to what exists.
    async fn plan(&mut self, setup: &Setup) -> Result<Plan, Halt> {
        let mut choices = Vec::new();
        if llm_request(setup, &self.request, &[], self.iteration).tool_choice != ToolChoice::None {
            let workspace = self.workspace.clone();
            let limit = self.shared.config.path_choices_limit;
            choices = super::choices::gather(&setup.tools, workspace, limit).await;
        }
        if self.listing.is_none() {
            // The names that exist, as the request starts: said once, before the request.
            self.listing = Some(super::choices::listing(&choices));
        }
        let mut base = self.base_request(setup);
        base.argument_choices = choices;
        let chooser = ModelChooser {
            llm: Arc::clone(&self.shared.ports.llm),
            stop: self.handle.stop.clone(),
            spent: std::sync::Mutex::new(Vec::new()),
        };
        let planned = setup
            .steering
            .before_reply(&self.turn_view(setup, &base), &chooser)
            .await;
        let spent = chooser
            .spent
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        for usage in &spent {
            self.count_usage(usage);
        }
        planned
    }

    /// The model's reply to `plan`: the request fitted to the context window, generated
    /// and parsed, each call marked with how a grammar held it.
    async fn reply(
        &mut self,
        setup: &Setup,
        plan: Plan,
    ) -> Result<Reply, Result<Stopped, core_models::Error>> {
        let Plan {
            mut request,
            text_only,
            held,
        } = plan;
        self.fit_context(&mut request, setup.system.as_deref())
            .await
            .map_err(Err)?;
        let parser = if text_only {
            &setup.text_only
        } else {
            &setup.parser
        };
        let mut reply = self.generate(request, parser).await?;
        self.normalize(&mut reply.calls);
        for call in &mut reply.calls {
            call.held.clone_from(&held);
        }
        Ok(reply)
    }
}

/// What the iterations of `request` share: the system prompt, the tools as offered, the
/// parsers, the steering; `tools` are the tools it may use.
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
        let details = shared.ports.llm.model_details();
        let steering = super::steering::select(&shared.config, &details);

        let native = shared.ports.llm.chat_format();
        // A template that renders the tools shows them in the model's own call language;
        // the system prompt then adds no second one.
        let renders_tools = native.as_ref().is_some_and(|f| f.renders_tools);
        let mut system = prompt::system_prompt(
            &shared.config,
            request.system_prompt.as_deref(),
            &definitions,
            renders_tools,
        );
        if let Some(schema) = &request.output_schema {
            let told = crate::output::instruction(schema);
            system = Some(match system {
                Some(system) => format!("{system}\n\n{told}"),
                None => told,
            });
        }
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
            tools,
            system,
            definitions,
            parser,
            text_only,
            steering,
            large: details.is_known_large(),
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
        self.ask_again_after(reply, waiting, MESSAGES_AFTER_ANSWER, carry);
        true
    }

    /// Keep the model's answer, then take `messages` as the user's next input: the turn
    /// ends (`why`) and the loop asks the model again, the agent machine still Thinking.
    fn ask_again_after(
        &mut self,
        reply: &Reply,
        messages: Vec<String>,
        why: &str,
        carry: &mut Carry,
    ) {
        self.final_response = reply.visible.trim().to_string();
        self.history
            .push(ChatMessage::assistant(reply.answer_text().to_string()));
        self.take_messages(messages);
        self.turn(S::EndOfTurn, Some(why));
        self.turn(S::WaitingForUserInput, Some(why));
        carry.previous_tools = 0;
        carry.after_answer = true;
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
    async fn tool_round(
        &mut self,
        setup: &Setup,
        reply: Reply,
        carry: &mut Carry,
    ) -> ControlFlow<Outcome> {
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
        let note = setup
            .steering
            .after_result(&self.turn_view(setup, &self.base_request(setup)));
        self.keep_results(&results, &note);
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
    fn keep_results(&mut self, results: &[(ToolCallRequest, ToolResult)], instruction: &str) {
        if self.shared.config.include_tool_results_in_history {
            for (call, result) in results {
                self.history.push(prompt::tool_result_message(
                    call,
                    result,
                    self.shared.config.max_tool_result_tokens,
                    instruction,
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
/// Why the model is asked again after an answer that missed the output schema.
const ANSWER_MISSED: &str = "the answer did not match the output schema";

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
            (ToolChoice::Auto, _) => ToolChoice::Auto,
            // A forced call (required or a named tool) is one round of tool use: the first
            // reply must call, the replies after the results answer.
            (choice, 1) => choice.clone(),
            _ => ToolChoice::None,
        }
    };
    // The answer is held to the output schema when the model may only answer. While it
    // may call tools it writes freely (a grammar over the whole reply would make it
    // answer at once, without looking): an answer that misses the schema is then asked
    // again, held to it (see `answer_unheld`). A forced call is a call.
    let constraint = match choice {
        ToolChoice::None => request
            .output_schema
            .clone()
            .map(core_models::ReplyConstraint::JsonSchema),
        _ => None,
    };
    let mut messages = Vec::with_capacity(history.len() + 1);
    if let Some(system) = &setup.system {
        messages.push(ChatMessage::system(system.clone()));
    }
    messages.extend(history.iter().cloned());
    LlmRequest::default()
        .with_messages(messages)
        .with_tools(setup.definitions.clone())
        .with_tool_choice(choice)
        .with_options(request.inference_options.clone().unwrap_or_default())
        .with_constraint(constraint)
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
        // The server finds the calls. When the model's format is known and its calls are
        // JSON objects, what the server left is read in that format (a fenced or bare
        // call its parser did not take is the model's call all the same); else the text
        // is text (and reasoning in its markers).
        let known = native
            .text_format
            .as_deref()
            .and_then(tool_calls::format_by_name)
            .map(|format| {
                tool_calls::TemplateProfile {
                    format,
                    reasoning: None,
                }
                .parser_options(native.starts_in_thinking)
            });
        if let Some(options) = known.filter(ParserOptions::recovers) {
            return options;
        }
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
    match tool_calls::format_by_name(&native.call_format) {
        Some(format) => tool_calls::TemplateProfile {
            format,
            reasoning: None,
        }
        .parser_options(native.starts_in_thinking),
        None if native.starts_in_thinking => built.clone().starting_in_thinking(),
        None => built.clone(),
    }
}
