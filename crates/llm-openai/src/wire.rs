//! The protocol's JSON: the request body AIntern sends, and the chunks a server streams
//! back (read leniently: servers differ in what they fill in).

use core_models::{ChatMessage, LlmRequest, MessageRole, ToolChoice};
use serde::Deserialize;
use serde_json::{json, Map, Value};

/// How tools reach the model in one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The protocol's `tools`; calls come back as `tool_calls`.
    Native,
    /// No `tools`: the system prompt describes them, calls are in the text.
    Text,
}

/// What is known about the server that changes the body.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Dialect {
    /// llama.cpp's llama-server: takes its sampling extensions (`top_k`, `min_p`,
    /// `repeat_penalty`) and names on tool messages.
    pub(crate) llama_server: bool,
    /// Send `max_completion_tokens` instead of `max_tokens` (newer hosted models).
    pub(crate) max_completion_tokens: bool,
}

/// The body of `POST /chat/completions` for `request`; `grammar` (llama-server's GBNF
/// extension) holds the reply to it.
pub(crate) fn request_body(
    model: &str,
    request: &LlmRequest,
    mode: Mode,
    dialect: Dialect,
    stream: bool,
    grammar: Option<&str>,
) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| message(m, mode, dialect))
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("messages".into(), messages.into());
    if mode == Mode::Native && !request.tools.is_empty() {
        // llama-server refuses a named tool choice with some templates (its reply parser
        // expects another format): the same request is the named tool alone, required.
        let (named, choice) = match &request.tool_choice {
            ToolChoice::Tool(name) if dialect.llama_server => {
                (Some(name.as_str()), ToolChoice::Required)
            }
            choice => (None, choice.clone()),
        };
        // A server shows the model the tools it is given. Their arguments' choices (the
        // files that exist) would make the prompt's start differ with every workspace and
        // every file made, and the server would read it all again: a reply the model
        // chooses to make gets the tools as they are (as the in-process model sees them).
        // A forced call, which the server writes under a grammar of the tools it is given,
        // is held to the choices.
        let tools = if request.forces_call() {
            request.held_tools()
        } else {
            request.tools.clone()
        };
        let tools: Vec<Value> = tools
            .iter()
            .filter(|t| named.is_none_or(|name| t.id == name))
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.id,
                        "description": t.description,
                        "parameters": t.input_schema,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), tools.into());
        body.insert("tool_choice".into(), tool_choice(&choice));
    }
    let o = &request.options;
    body.insert("temperature".into(), json!(o.temperature));
    body.insert("top_p".into(), json!(o.top_p));
    let length_key = if dialect.max_completion_tokens {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body.insert(length_key.into(), json!(o.max_tokens));
    if let Some(seed) = o.seed {
        body.insert("seed".into(), json!(seed));
    }
    if !o.stop.is_empty() {
        body.insert("stop".into(), json!(o.stop));
    }
    if let Some(grammar) = grammar {
        body.insert("grammar".into(), grammar.into());
    } else if let Some(format) = response_format(request, mode) {
        body.insert("response_format".into(), format);
    }
    if dialect.llama_server {
        body.insert("top_k".into(), json!(o.top_k));
        body.insert("min_p".into(), json!(o.min_p));
        body.insert("repeat_penalty".into(), json!(o.repeat_penalty));
    }
    if stream {
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
        if dialect.llama_server {
            // Its progress through the prompt, whose last report gives the prompt's counts
            // before the reply: a reply stopped early still knows them.
            body.insert("return_progress".into(), true.into());
        }
    }
    Value::Object(body)
}

/// Structured output for an answer held to a schema, where the server may hold it: in
/// native mode unless the request forces a call (llama-server then holds calls or the
/// answer to one grammar), in text mode only when no call may be made (the calls are
/// text there, which a JSON-only reply would forbid).
fn response_format(request: &LlmRequest, mode: Mode) -> Option<Value> {
    let schema = request.answer_schema()?;
    let allowed = match mode {
        Mode::Native => !request.forces_call(),
        Mode::Text => !request.may_call(),
    };
    allowed.then(|| {
        json!({
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema},
        })
    })
}

/// `tool_choice` as the protocol writes it.
fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// One message. Natively: assistant calls as `tool_calls`, results as `tool` messages
/// answering their ids. In text: the assistant's output as the model wrote it, and results
/// as user messages, as the in-process backend shows them to templates without tools.
fn message(m: &ChatMessage, mode: Mode, dialect: Dialect) -> Value {
    match (m.role, mode) {
        (MessageRole::Assistant, Mode::Native) if !m.tool_calls.is_empty() => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments.to_string()},
                    })
                })
                .collect();
            let content = if m.content.is_empty() {
                Value::Null
            } else {
                Value::from(&*m.content)
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        (MessageRole::Assistant, Mode::Text) => json!({"role": "assistant", "content": as_text(m)}),
        (MessageRole::Tool, Mode::Native) => {
            let mut value = json!({
                "role": "tool",
                "tool_call_id": m.tool_call_id.as_deref().unwrap_or_default(),
                "content": &*m.content,
            });
            if let (true, Some(name), Some(object)) =
                (dialect.llama_server, &m.name, value.as_object_mut())
            {
                object.insert("name".into(), name.as_str().into());
            }
            value
        }
        (MessageRole::Tool, Mode::Text) => json!({
            "role": "user",
            "content": tool_calls::prompt::tool_result_as_user_text(m.name.as_deref(), &m.content),
        }),
        (role, _) => json!({"role": role.as_str(), "content": &*m.content}),
    }
}

/// An assistant message as text: the output as the model wrote it; calls a server
/// delivered structured (the text then holds none of them) written after it as AIntern's
/// own call blocks, so that a conversation that moved to text mode still shows them.
fn as_text(m: &ChatMessage) -> String {
    let written = m.as_written();
    let calls_in_text = m.original.as_deref().is_some_and(|o| *o != *m.content);
    if m.tool_calls.is_empty() || calls_in_text {
        return written.to_string();
    }
    let mut text = written.to_string();
    for call in &m.tool_calls {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        let block = json!({"tool": call.name, "parameters": *call.arguments});
        text.push_str(&format!("```tool_call\n{block}\n```"));
    }
    text
}

/// About how many tokens a request's messages are (4 bytes a token), for errors that
/// give no count.
pub(crate) fn estimated_prompt_tokens(request: &LlmRequest) -> u64 {
    let bytes: usize = request
        .messages
        .iter()
        .map(|m| m.content.len() + m.original.as_ref().map_or(0, |o| o.len()))
        .sum();
    (bytes as u64).div_ceil(4)
}

// ---------------------------------------------------------------------------------------
// What comes back
// ---------------------------------------------------------------------------------------

/// One streamed chunk (`chat.completion.chunk`), or a whole non-streamed reply.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default)]
    pub(crate) choices: Vec<Choice>,
    #[serde(default)]
    pub(crate) usage: Option<Usage>,
    /// llama-server's own timings.
    #[serde(default)]
    pub(crate) timings: Option<Timings>,
    /// llama-server's progress through the prompt (`return_progress`).
    #[serde(default)]
    pub(crate) prompt_progress: Option<PromptProgress>,
    /// An error reported inside the stream.
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

/// One choice of a chunk.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Choice {
    #[serde(default)]
    pub(crate) delta: Option<Delta>,
    /// A non-streamed reply's message.
    #[serde(default)]
    pub(crate) message: Option<Delta>,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// New text, reasoning and call pieces.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta {
    /// A string, or (some servers) a list of `{"type": "text", "text": …}` parts.
    #[serde(default)]
    pub(crate) content: Option<Value>,
    #[serde(default)]
    pub(crate) reasoning_content: Option<String>,
    /// The name some servers use for `reasoning_content`.
    #[serde(default)]
    pub(crate) reasoning: Option<String>,
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<ToolCallDelta>>,
}

impl Delta {
    /// The content's text.
    pub(crate) fn text(&self) -> Option<String> {
        match self.content.as_ref()? {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => Some(
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect(),
            ),
            _ => None,
        }
    }

    /// The reasoning's text, under either name.
    pub(crate) fn reasoning_text(&self) -> Option<&str> {
        self.reasoning_content
            .as_deref()
            .or(self.reasoning.as_deref())
    }
}

/// A piece of a tool call.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct ToolCallDelta {
    #[serde(default)]
    pub(crate) index: Option<u64>,
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) function: Option<FunctionDelta>,
}

/// The function part of a call piece.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default)]
    pub(crate) name: Option<String>,
    /// JSON text (or, from some servers, the arguments object itself).
    #[serde(default)]
    pub(crate) arguments: Option<Value>,
}

/// Token counts.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub(crate) prompt_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) completion_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) prompt_tokens_details: Option<PromptDetails>,
}

/// Details of the prompt's tokens.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct PromptDetails {
    #[serde(default)]
    pub(crate) cached_tokens: Option<u64>,
}

/// llama-server's timings of one reply.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct Timings {
    #[serde(default)]
    pub(crate) prompt_n: Option<u64>,
    #[serde(default)]
    pub(crate) prompt_ms: Option<f64>,
    #[serde(default)]
    pub(crate) predicted_n: Option<u64>,
    #[serde(default)]
    pub(crate) predicted_ms: Option<f64>,
    #[serde(default)]
    pub(crate) cache_n: Option<u64>,
}

/// llama-server's progress through a prompt: `processed` of its `total` tokens are in
/// the cache, `cache` of them were there before the request.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct PromptProgress {
    #[serde(default)]
    pub(crate) total: Option<u64>,
    #[serde(default)]
    pub(crate) cache: Option<u64>,
    #[serde(default)]
    pub(crate) processed: Option<u64>,
    #[serde(default)]
    pub(crate) time_ms: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use core_models::{MessageToolCall, ReplyConstraint, ToolDefinition};
    use std::sync::Arc;

    fn conversation() -> LlmRequest {
        let call = MessageToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: Arc::new(json!({"path": "a.txt"})),
        };
        let mut request = LlmRequest::new(vec![
            ChatMessage::system("be brief"),
            ChatMessage::user("read a.txt"),
            ChatMessage::assistant_with_calls(
                "",
                vec![call],
                None,
                "```tool_call\n{\"tool\": \"read_file\"}\n```",
            ),
            ChatMessage::tool("read_file", "call_1", "apples"),
        ]);
        request.tools = vec![ToolDefinition::new(
            "read_file",
            "Read file",
            "Read a file.",
        )];
        request
    }

    #[test]
    fn choices_reach_a_server_only_for_a_forced_call() {
        let mut request = conversation();
        request.tools[0].input_schema = json!({"type": "object",
            "properties": {"path": {"type": "string"}}, "required": ["path"]});
        request.argument_choices = vec![(
            "read_file".to_string(),
            [("path".to_string(), vec!["a.txt".to_string()])].into(),
        )];
        let schema = |request: &LlmRequest| {
            let body = request_body("m", request, Mode::Native, Dialect::default(), true, None);
            body["tools"][0]["function"]["parameters"]["properties"]["path"].clone()
        };
        // The model chooses: the tools as they are, the same for every workspace.
        assert_eq!(schema(&request), json!({"type": "string"}));
        request.tool_choice = ToolChoice::Required;
        assert_eq!(
            schema(&request),
            json!({"type": "string", "enum": ["a.txt"]})
        );
    }

    #[test]
    fn an_answer_schema_asks_for_structured_output_where_the_reply_may_answer() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let held = |choice: ToolChoice, tools: bool| {
            let mut request = conversation();
            if !tools {
                request.tools.clear();
            }
            request.tool_choice = choice;
            request.constraint = Some(ReplyConstraint::JsonSchema(schema.clone()));
            request
        };
        let format = |request: &LlmRequest, mode: Mode, grammar: Option<&str>| {
            request_body("m", request, mode, Dialect::default(), true, grammar)
                .get("response_format")
                .cloned()
        };
        let asked = format(&held(ToolChoice::Auto, true), Mode::Native, None).unwrap();
        assert_eq!(asked["type"], "json_schema");
        assert_eq!(asked["json_schema"]["schema"], schema);
        assert!(asked["json_schema"]["name"].is_string());
        // A forced call is a call.
        assert!(format(&held(ToolChoice::Required, true), Mode::Native, None).is_none());
        // In text mode calls are text: only a reply that cannot call is held.
        assert!(format(&held(ToolChoice::Auto, true), Mode::Text, None).is_none());
        assert!(format(&held(ToolChoice::None, true), Mode::Text, None).is_some());
        assert!(format(&held(ToolChoice::Auto, false), Mode::Text, None).is_some());
        // A grammar holds it already.
        assert!(format(
            &held(ToolChoice::None, false),
            Mode::Text,
            Some("root ::= \"x\"")
        )
        .is_none());
        // Without a schema, nothing.
        assert!(format(&conversation(), Mode::Native, None).is_none());
    }

    #[test]
    fn llama_server_is_asked_for_a_named_tool_as_that_tool_alone_required() {
        let mut request = conversation();
        request
            .tools
            .push(ToolDefinition::new("list_dir", "List", "List."));
        request.tool_choice = ToolChoice::Tool("list_dir".into());
        let dialect = Dialect {
            llama_server: true,
            ..Dialect::default()
        };
        let body = request_body("m", &request, Mode::Native, dialect, true, None);
        assert_eq!(body["tool_choice"], "required");
        let tools = body["tools"].as_array().cloned().unwrap_or_default();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0]["function"]["name"], "list_dir");
    }

    #[test]
    fn native_bodies_carry_tools_calls_and_results_by_id() {
        let mut request = conversation();
        request.tool_choice = ToolChoice::Tool("read_file".into());
        let body = request_body("m", &request, Mode::Native, Dialect::default(), true, None);
        assert_eq!(body["tools"][0]["function"]["name"], "read_file");
        assert_eq!(body["tool_choice"]["function"]["name"], "read_file");
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        assert_eq!(messages[2]["content"], Value::Null);
        assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1");
        assert_eq!(
            messages[2]["tool_calls"][0]["function"]["arguments"],
            "{\"path\":\"a.txt\"}"
        );
        assert_eq!(messages[3]["role"], "tool");
        assert_eq!(messages[3]["tool_call_id"], "call_1");
        assert!(
            messages[3].get("name").is_none(),
            "only llama-server gets names"
        );
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert!(
            body.get("top_k").is_none(),
            "extensions only for llama-server"
        );
    }

    #[test]
    fn text_bodies_show_calls_as_written_and_results_as_user_turns() {
        let body = request_body(
            "m",
            &conversation(),
            Mode::Text,
            Dialect {
                llama_server: true,
                ..Dialect::default()
            },
            false,
            Some("root ::= \"x\""),
        );
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
        assert_eq!(body["grammar"], "root ::= \"x\"");
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        assert!(messages[2]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("```tool_call")));
        assert_eq!(messages[3]["role"], "user");
        assert_eq!(messages[3]["content"], "Tool result (read_file):\napples");
        assert_eq!(body["top_k"], 40);
        assert!(body.get("stream").is_none());
    }

    #[test]
    fn native_calls_are_written_out_in_text_mode() {
        let call = MessageToolCall {
            id: "c".into(),
            name: "list_dir".into(),
            arguments: Arc::new(json!({"path": "."})),
        };
        // A reply made natively: its raw output is its text alone.
        let mut request = LlmRequest::new(vec![ChatMessage::assistant_with_calls(
            "Looking.",
            vec![call],
            None,
            "Looking.",
        )]);
        request.tools.clear();
        let body = request_body("m", &request, Mode::Text, Dialect::default(), true, None);
        assert_eq!(
            body["messages"][0]["content"],
            "Looking.\n\n```tool_call\n{\"tool\":\"list_dir\",\"parameters\":{\"path\":\".\"}}\n```"
        );
    }

    #[test]
    fn llama_server_alone_is_asked_for_its_progress_through_the_prompt() {
        let request = LlmRequest::new(vec![ChatMessage::user("hi")]);
        let llama = Dialect {
            llama_server: true,
            ..Dialect::default()
        };
        let body = request_body("m", &request, Mode::Native, llama, true, None);
        assert_eq!(body["return_progress"], true);
        // Not without a stream to carry it, nor to other servers (which may refuse it).
        let body = request_body("m", &request, Mode::Native, llama, false, None);
        assert!(body.get("return_progress").is_none());
        let body = request_body("m", &request, Mode::Native, Dialect::default(), true, None);
        assert!(body.get("return_progress").is_none());
    }

    #[test]
    fn newer_models_get_max_completion_tokens() {
        let body = request_body(
            "m",
            &conversation(),
            Mode::Native,
            Dialect {
                max_completion_tokens: true,
                ..Dialect::default()
            },
            true,
            None,
        );
        assert!(body.get("max_tokens").is_none());
        assert_eq!(body["max_completion_tokens"], 4096);
    }
}
