//! What the model is given: the tools offered, tool choice, the prompt (plain rendering, the
//! compact style) and the history across iterations and requests.

use super::{call, complete, config, harness, run, text, workspace_request};
use core_models::*;
use serde_json::json;
use services_ai::AgentConfig;
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::MockTool;

#[tokio::test]
async fn tools_offered_follow_the_context_and_tool_choice_applies_to_the_first_iteration() {
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(MockTool::new("read_file")),
        Arc::new(MockTool::new("run").with_category(ToolCategory::Terminal)),
        Arc::new(MockTool::new("secret")),
    ];
    let h = harness(
        vec![text(&call("read_file", json!({}))), text("done")],
        tools,
        config(),
    );
    let context = ToolAvailabilityContext::for_workspace(std::env::temp_dir())
        .with_allow_terminal_tools(false)
        .with_disabled_tool_ids(Some(["secret".to_string()].into()));
    let request = AgentRequest::new("x")
        .with_tool_context(context)
        .with_tool_choice(ToolChoice::Required)
        .with_system_prompt("Be brief.");
    run(&h.agent, request).await;
    let requests = h.llm.requests();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(offered, ["read_file"]);
    assert_eq!(requests[0].tool_choice, ToolChoice::Required);
    // The forced round is over: the reply after the results is the answer.
    assert_eq!(requests[1].tool_choice, ToolChoice::None);
    let system = &requests[0].messages[0].content;
    assert!(system.starts_with("You are AIntern"), "{system}");
    assert!(system.ends_with("Be brief."), "{system}");
    assert!(!requests[0].messages[0].content.contains("## run"));
}

/// Required and named choices force one round of tool use: a call written after the
/// results is text, not run, and the request completes instead of looping.
#[tokio::test]
async fn after_a_forced_call_the_model_answers_and_calls_are_not_run() {
    let tool = Arc::new(MockTool::new("t"));
    for choice in [ToolChoice::Required, ToolChoice::Tool("t".into())] {
        let h = harness(
            vec![
                text(&call("t", json!({}))),
                text(&format!("again {}", call("t", json!({})))),
            ],
            vec![tool.clone()],
            config(),
        );
        let before = tool.executions();
        let events = run(
            &h.agent,
            workspace_request("x").with_tool_choice(choice.clone()),
        )
        .await;
        assert_eq!(tool.executions() - before, 1, "{choice}");
        let requests = h.llm.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].tool_choice, ToolChoice::None);
        // The tools are still described (the prompt's prefix, and the KV cache, stay).
        assert_eq!(requests[1].tools.len(), 1);
        assert_eq!(requests[0].messages[0], requests[1].messages[0]);
        let AgentEvent::AgentComplete(done) = events.last().unwrap() else {
            panic!("{:?}", events.last())
        };
        assert_eq!(done.total_iterations, 2, "{done:?}");
        assert!(!done.was_cancelled);
        assert!(done.final_response.contains("again"), "{done:?}");
    }
}

#[tokio::test]
async fn tool_choice_none_offers_nothing_and_runs_nothing() {
    let tool = Arc::new(MockTool::new("t"));
    let h = harness(
        vec![text(&call("t", json!({})))],
        vec![tool.clone()],
        config(),
    );
    let events = run(
        &h.agent,
        workspace_request("x").with_tool_choice(ToolChoice::None),
    )
    .await;
    assert_eq!(tool.executions(), 0);
    assert!(h.llm.requests()[0].tools.is_empty());
    assert!(
        complete(&events).final_response.contains("<tool_call>"),
        "the call stays text"
    );
}

#[tokio::test]
async fn the_conversation_continues_across_requests() {
    let h = harness(
        vec![
            text(&call("t", json!({}))),
            text("first answer"),
            text("second answer"),
        ],
        vec![Arc::new(MockTool::new("t"))],
        config(),
    );
    let first = workspace_request("one");
    run(&h.agent, first.clone()).await;
    let history = h.agent.conversation();
    assert_eq!(
        history.len(),
        4,
        "user, assistant call, tool result, assistant answer"
    );
    let second = workspace_request("two")
        .with_conversation(first.conversation_id)
        .with_history(history);
    let events = run(&h.agent, second).await;
    assert_eq!(complete(&events).final_response, "second answer");
    let last = h.llm.requests().last().unwrap().clone();
    let contents: Vec<&str> = last.messages.iter().map(|m| &*m.content).collect();
    assert!(
        contents.contains(&"one")
            && contents.contains(&"first answer")
            && contents.contains(&"two")
    );
    // The turn machine followed the conversation: no new Ready -> WaitingForUserInput.
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::StateChanged(s) if s.turn_change().is_some_and(|c| c.previous_state == TurnState::Ready))));
}

#[tokio::test]
async fn iteration_delay_and_results_kept_out_of_history() {
    let cfg = AgentConfig {
        iteration_delay_ms: 120,
        include_tool_results_in_history: false,
        ..config()
    };
    let h = harness(
        vec![text(&call("t", json!({}))), text("done")],
        vec![Arc::new(MockTool::new("t"))],
        cfg,
    );
    let start = Instant::now();
    run(&h.agent, workspace_request("x")).await;
    assert!(
        start.elapsed() >= Duration::from_millis(120),
        "waited between iterations"
    );
    let second = &h.llm.requests()[1];
    assert!(second.messages.iter().all(|m| m.role != MessageRole::Tool));
    assert!(second
        .messages
        .last()
        .unwrap()
        .content
        .contains("not kept in this conversation"));
}

// --- the prompt's rendering and style ------------------------------------------------------

#[test]
fn plain_rendering_for_backends_without_templates() {
    use services_ai::prompt::render_plain;
    let messages = [
        ChatMessage::system("Be brief."),
        ChatMessage::user("Hi"),
        ChatMessage::assistant("Hello"),
        ChatMessage::tool("read_file", "c1", "[Read File]\ntext"),
    ];
    assert_eq!(
        render_plain(&messages),
        "Be brief.\n\nUser: Hi\n\nAssistant: Hello\n\nTool Result: [Read File]\ntext\n\nAssistant:"
    );
}

/// The compact tool prompt: one line per tool with its required parameters only.
#[test]
fn the_compact_tool_prompt_lists_each_tool_on_one_line() {
    use services_ai::prompt::{compact_signature, system_prompt};
    let check = |schema: serde_json::Value, expected: &str| {
        assert_eq!(compact_signature(&schema), expected, "{schema}");
    };
    check(
        json!({"type": "object", "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}}, "required": ["path"]}),
        r#"{"path": string}"#,
    );
    // Required order, not the properties' order; type lists and enums.
    check(
        json!({"properties": {"b": {"type": ["string", "null"]}, "a": {"enum": [1, 2]}}, "required": ["b", "a"]}),
        r#"{"b": string | null, "a": enum}"#,
    );
    check(json!({"type": "object"}), "{}");
    check(
        json!({"properties": {"x": {}}, "required": ["x", "missing"]}),
        r#"{"x": any}"#,
    );

    let config = services_ai::AgentConfig {
        tool_prompt_style: services_ai::ToolPromptStyle::Compact,
        ..services_ai::AgentConfig::default()
    };
    let read = core_models::ToolDefinition::new(
        "read_file",
        "Read File",
        "Read a file. Lines too.",
    )
    .with_schema(
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    );
    let prompt = system_prompt(&config, Some("Be brief."), &[read], false).unwrap();
    assert_eq!(
        prompt,
        "Be brief.\n\nYou are a helpful assistant with tools.\n\nTools:\n\
         - read_file: Read a file. Parameters: {\"path\": string}\n\n\
         To call a tool, reply with:\n```tool_call\n{\"tool\": \"<tool>\", \"parameters\": {<arguments>}}\n```\n\
         Use the exact names the user gives."
    );
    // What the compact prompt asks for is what the parser reads.
    let parsed = services_ai::FunctionCallParser::default().parse_all(
        "```tool_call\n{\"tool\": \"read_file\", \"parameters\": {\"path\": \"a\"}}\n```",
    );
    assert_eq!(parsed.tool_calls.len(), 1);
}

/// With the compact prompt the model is given the tools with only their required
/// parameters, as the prompt shows them; with the full prompt, whole.
#[tokio::test]
async fn compact_style_offers_only_required_parameters() {
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}},
        "required": ["path"]
    });
    let tool = || -> Arc<dyn Tool> {
        Arc::new(
            MockTool::new("read_file").with_definition(
                core_models::ToolDefinition::new("read_file", "Read File", "Read a file.")
                    .with_schema(schema.clone()),
            ),
        )
    };
    for (style, expected) in [
        (services_ai::ToolPromptStyle::Full, schema.clone()),
        (
            services_ai::ToolPromptStyle::Compact,
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
    ] {
        let h = harness(
            vec![text("ok")],
            vec![tool()],
            AgentConfig {
                tool_prompt_style: style,
                ..config()
            },
        );
        run(&h.agent, AgentRequest::new("hi")).await;
        let sent = h.llm.requests();
        assert_eq!(sent[0].tools[0].input_schema, expected, "{style:?}");
    }
}

/// A backend whose template renders tools natively: the system prompt adds no second call
/// language, the parser expects the model's own format (a bare JSON reply is text for a
/// Hermes model), the reply may start inside reasoning, and the history keeps the call
/// structured.
#[tokio::test]
async fn a_native_template_gets_the_tools_in_its_own_language() {
    let llm = Arc::new(
        services_ai::ScriptedLlm::new(vec![
            text(&format!(
                "planning</think>Reading.{}",
                call("read_file", json!({"path": "a"}))
            )),
            text("done</think>{\"name\": \"read_file\", \"parameters\": {}}"),
            text("done</think>Nothing more."),
        ])
        .with_chat_format(
            ChatFormat::default()
                .with_call_format("hermes".into())
                .with_renders_tools(true)
                .with_starts_in_thinking(true),
        ),
    );
    let registry: Arc<dyn ToolRegistry> = Arc::new(
        [Arc::new(MockTool::new("read_file")) as Arc<dyn Tool>]
            .into_iter()
            .collect::<services_ai::InMemoryToolRegistry>(),
    );
    let agent = services_ai::AgentEngine::builder(llm.clone(), registry)
        .config(config())
        .permissions(Arc::new(services_ai::DefaultPermissionManager::in_memory()))
        .build();
    let events = run(
        &agent,
        workspace_request("read a").with_system_prompt("Be brief."),
    )
    .await;
    let done = complete(&events);
    // A reply that is a bare JSON call is a Hermes model's call too (recovered).
    assert_eq!(done.tool_calls_executed, 2);
    assert_eq!(done.final_response, "Nothing more.");
    let requests = llm.requests();
    // The system prompt says what the agent is; the template lists the tools.
    let system = &requests[0].messages[0].content;
    assert!(
        system.starts_with("You are AIntern") && system.ends_with("Be brief."),
        "{system}"
    );
    assert!(!system.contains("Available tools"), "{system}");
    assert_eq!(requests[0].tools.len(), 1);
    let assistant = requests[1]
        .messages
        .iter()
        .find(|m| m.role == MessageRole::Assistant)
        .expect("the assistant's turn is in the history");
    assert_eq!(&*assistant.content, "Reading.");
    assert_eq!(assistant.reasoning.as_deref(), Some("planning"));
    assert_eq!(assistant.tool_calls.len(), 1);
    assert_eq!(assistant.tool_calls[0].name, "read_file");
    assert_eq!(*assistant.tool_calls[0].arguments, json!({"path": "a"}));
    let result = requests[1]
        .messages
        .iter()
        .find(|m| m.role == MessageRole::Tool)
        .expect("the tool result is in the history");
    assert_eq!(
        result.tool_call_id.as_deref(),
        Some(assistant.tool_calls[0].id.as_str())
    );
}
