//! The model's own chat template: the Jinja text in the GGUF metadata
//! (`tokenizer.chat_template`), rendered by the `chat-template` crate exactly as Hugging
//! Face's `apply_chat_template` does.
//!
//! Templates differ in what they understand. What a template does with tools, tool-role
//! messages and system messages is found out by rendering small probe conversations with
//! unique markers and looking for the markers in the output — the template's behaviour,
//! not its text, decides. A conversation is then adapted to the template: tools are
//! passed only to templates that render them; tool results become user messages for
//! templates that drop (or refuse) the tool role; a system message is folded into the
//! first user message for templates without a system role.

use crate::Error;
use core_models::{ChatMessage, ToolDefinition};
use serde::Serialize;
use tool_grammar::GrammarTarget;

/// What a chat template does with the parts of a conversation that not every template
/// understands, found by rendering probe conversations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TemplateCapabilities {
    /// It renders the `tools` list it is given (so the model sees them in its own format).
    pub tools: bool,
    /// It renders messages with the role `tool`, and was written for them (it does not
    /// write just any role it is given).
    pub tool_role: bool,
    /// It renders a system message.
    pub system_role: bool,
}

/// A compiled chat template with the model's special tokens and what it understands.
#[derive(Debug)]
pub struct ChatTemplate {
    template: chat_template::Template,
    bos_token: String,
    eos_token: String,
    capabilities: TemplateCapabilities,
    format: core_models::ChatFormat,
    profile: tool_calls::TemplateProfile,
    /// Mistral's `[TOOL_CALLS]NAME[ARGS]{…}` form.
    #[cfg_attr(not(feature = "llama-cpp"), allow(dead_code))]
    name_then_args: bool,
    /// The special text that opens a message (ChatML's `<|im_start|>`), when the template
    /// has one: see [`ChatTemplate::message_opener`].
    opener: Option<String>,
}

/// One message as templates expect it.
#[derive(Serialize, Clone, Copy)]
struct TemplateMessage<'a> {
    role: &'a str,
    content: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<&'a serde_json::Value>,
}

/// One tool as templates expect it (the OpenAI function-tool shape).
#[derive(Serialize)]
struct TemplateTool<'a> {
    r#type: &'static str,
    function: TemplateFunction<'a>,
}

#[derive(Serialize)]
struct TemplateFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

impl ChatTemplate {
    /// Compile `source`; `bos_token` and `eos_token` are the texts of the model's
    /// beginning- and end-of-sequence tokens (templates refer to them).
    ///
    /// # Errors
    /// [`Error::Template`] when the template is not valid Jinja.
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self, Error> {
        let compiled =
            chat_template::Template::new(source).map_err(|e| Error::Template(e.to_string()))?;
        let mut template = ChatTemplate {
            template: compiled,
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
            capabilities: TemplateCapabilities::default(),
            format: core_models::ChatFormat::default(),
            profile: tool_calls::detect_template(source),
            name_then_args: source.contains("[ARGS]"),
            opener: None,
        };
        template.capabilities = template.probe();
        template.format = template.detect_format();
        // A harmony reply is several messages of its own (analysis, then a call or the
        // final answer), each opened again with `<|start|>assistant`: there the opener
        // does not end the turn (`<|call|>` and `<|return|>` do).
        if template.profile.format != tool_calls::ToolCallFormat::Harmony {
            template.opener = template.find_opener();
        }
        Ok(template)
    }

    /// The special text that opens a message in this template's conversations, when it
    /// has one (ChatML's `<|im_start|>`, Llama 3's `<|start_header_id|>`, Gemma's
    /// `<start_of_turn>`): a reply that writes it has ended its turn and begun another one
    /// of its own invention, so it is a stop. Found from the generation prompt: the text
    /// before the assistant's role name, when it looks like a special token. None for a
    /// harmony template, whose replies open messages of their own.
    pub fn message_opener(&self) -> Option<&str> {
        self.opener.as_deref()
    }

    fn find_opener(&self) -> Option<String> {
        let user = TemplateMessage {
            role: "user",
            content: "Hello",
            name: None,
            tool_call_id: None,
            tool_calls: None,
        };
        let with = self.render_raw(&[user], None, true).ok()?;
        let without = self.render_raw(&[user], None, false).ok()?;
        let generation = with.strip_prefix(without.as_str())?;
        let at = generation
            .find("assistant")
            .or_else(|| generation.find("model"))?;
        let opener = generation[..at].trim();
        let special = (opener.starts_with('<') && opener.ends_with('>'))
            || (opener.starts_with('[') && opener.ends_with(']'));
        (special && opener.len() <= 32).then(|| opener.to_string())
    }

    /// The model's call format and reasoning start, as the template shows them: its
    /// markers decide the format, and the generation prompt for one user message whether
    /// the reply starts inside reasoning.
    fn detect_format(&self) -> core_models::ChatFormat {
        let profile = &self.profile;
        let user = TemplateMessage {
            role: "user",
            content: "Hello",
            name: None,
            tool_call_id: None,
            tool_calls: None,
        };
        let starts_in_thinking = self
            .render_raw(&[user], None, true)
            .map(|prompt| tool_calls::prompt_opens_reasoning(&prompt, profile))
            .unwrap_or(false);
        core_models::ChatFormat::default()
            .with_call_format(profile.format.name().to_string())
            .with_renders_tools(self.capabilities.tools)
            .with_starts_in_thinking(starts_in_thinking)
    }

    #[cfg_attr(not(feature = "llama-cpp"), allow(dead_code))]
    /// What a tool grammar for a reply to `prompt` is written for: the model's own call
    /// format when the template renders tools (else AIntern's fence, which the system
    /// prompt teaches), its reasoning markers, and whether `prompt` opened reasoning.
    pub(crate) fn grammar_target(&self, prompt: &str) -> GrammarTarget {
        GrammarTarget {
            format: if self.capabilities.tools {
                self.profile.format
            } else {
                tool_calls::ToolCallFormat::FencedJson
            },
            reasoning: self.profile.reasoning,
            starts_in_thinking: tool_calls::prompt_opens_reasoning(prompt, &self.profile),
            name_then_args: self.name_then_args,
        }
    }

    /// The model's own call format, as [`LlmService::chat_format`](core_models::LlmService::chat_format) reports it.
    pub fn chat_format(&self) -> core_models::ChatFormat {
        self.format.clone()
    }

    /// What the template does with tools, tool results and system messages.
    pub fn capabilities(&self) -> TemplateCapabilities {
        self.capabilities
    }

    /// The text of the beginning-of-sequence token the template may write itself.
    pub fn bos_token(&self) -> &str {
        &self.bos_token
    }

    fn probe(&self) -> TemplateCapabilities {
        // Plain ASCII, so that filters such as `tojson` keep it as it is.
        const MARK: &str = "aintern_probe_5e1f";
        let message = |role: &'static str, content: &'static str| TemplateMessage {
            role,
            content,
            name: None,
            tool_call_id: None,
            tool_calls: None,
        };
        let tool_result = |role: &'static str| TemplateMessage {
            name: Some("probe"),
            // Mistral templates want 9 alphanumeric characters.
            tool_call_id: Some("a1b2c3d4e"),
            ..message(role, MARK)
        };
        let renders = |messages: &[TemplateMessage<'_>], tools: Option<&[TemplateTool<'_>]>| {
            self.render_raw(messages, tools, false)
                .map(|out| out.contains(MARK))
                .unwrap_or(false)
        };
        let schema = serde_json::json!({"type": "object", "properties": {}});
        let tool = TemplateTool {
            r#type: "function",
            function: TemplateFunction {
                name: MARK,
                description: MARK,
                parameters: &schema,
            },
        };
        let (user, assistant) = (message("user", "hi"), message("assistant", "calling"));
        // Templates that insist a tool result answers a call (gpt-oss) see one.
        let calls = serde_json::json!([{"id": "a1b2c3d4e", "type": "function",
            "function": {"name": "probe", "arguments": {}}}]);
        let calling = TemplateMessage {
            tool_calls: Some(&calls),
            ..assistant
        };
        let answers = |assistant: TemplateMessage<'_>| {
            // A template that writes any role as it comes (plain ChatML) was not written
            // for tool results: the model never saw a "tool" turn, so those templates get
            // tool results as user messages.
            // It was written for them when it shows a tool result differently from a
            // result under a made-up role (Llama 3.1 writes `ipython`; ChatML just
            // writes the role's name).
            const ROLE: &str = "aintern_probe_role";
            let tool = self.render_raw(&[user, assistant, tool_result("tool")], None, false);
            let other = self.render_raw(&[user, assistant, tool_result(ROLE)], None, false);
            match (tool, other) {
                (Ok(tool), Ok(other)) => tool.contains(MARK) && tool != other.replace(ROLE, "tool"),
                (Ok(tool), Err(_)) => tool.contains(MARK),
                _ => false,
            }
        };
        TemplateCapabilities {
            tools: renders(&[user], Some(&[tool])),
            tool_role: answers(assistant) || answers(calling),
            system_role: renders(&[message("system", MARK), user], None),
        }
    }

    fn render_raw(
        &self,
        messages: &[TemplateMessage<'_>],
        tools: Option<&[TemplateTool<'_>]>,
        add_generation_prompt: bool,
    ) -> Result<String, chat_template::Error> {
        let mut context = serde_json::Map::new();
        let as_json = |value: serde_json::Result<serde_json::Value>| {
            value.map_err(|e| chat_template::Error::Render(e.to_string()))
        };
        context.insert("messages".into(), as_json(serde_json::to_value(messages))?);
        if let Some(tools) = tools {
            context.insert("tools".into(), as_json(serde_json::to_value(tools))?);
        }
        context.insert("add_generation_prompt".into(), add_generation_prompt.into());
        // As llama.cpp renders by default: reasoning on where a template can turn it off.
        context.insert("enable_thinking".into(), true.into());
        context.insert("bos_token".into(), self.bos_token.clone().into());
        context.insert("eos_token".into(), self.eos_token.clone().into());
        let context = serde_json::Value::Object(context);
        self.template.render(&context)
    }

    /// The conversation as the model's prompt, ending with the assistant's turn opening.
    /// `tools` reach the template only when it renders them.
    ///
    /// # Errors
    /// [`Error::Template`] when the template fails on this conversation (for example
    /// through its own `raise_exception`).
    pub fn render(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
    ) -> Result<String, Error> {
        let view: Vec<serde_json::Value> = messages
            .iter()
            .map(|m| self.openai_message(m))
            .collect::<Result<_, _>>()
            .map_err(|e| Error::Template(e.to_string()))?;
        let tool_view: Vec<TemplateTool<'_>> = tools
            .iter()
            .map(|t| TemplateTool {
                r#type: "function",
                function: TemplateFunction {
                    name: &t.id,
                    description: &t.description,
                    parameters: &t.input_schema,
                },
            })
            .collect();
        let tools = serde_json::to_value(tool_view).map_err(|e| Error::Template(e.to_string()))?;
        self.render_openai(&view, Some(&tools), true)
    }

    /// A message in the OpenAI shape templates expect: assistant calls as `tool_calls`
    /// (`{id, type: "function", function: {name, arguments}}`) and reasoning as
    /// `reasoning_content`; for templates that know no tools, the assistant's output as
    /// it was written instead of its calls.
    fn openai_message(&self, m: &ChatMessage) -> serde_json::Result<serde_json::Value> {
        let content: &str = if !m.tool_calls.is_empty() && !self.capabilities.tools {
            m.as_written()
        } else {
            &m.content
        };
        let mut value = serde_json::to_value(TemplateMessage {
            role: m.role.as_str(),
            content,
            name: m.name.as_deref(),
            tool_call_id: m.tool_call_id.as_deref(),
            tool_calls: None,
        })?;
        if let Some(object) = value.as_object_mut() {
            if !m.tool_calls.is_empty() && self.capabilities.tools {
                let calls: Vec<serde_json::Value> = m
                    .tool_calls
                    .iter()
                    .map(|call| {
                        serde_json::json!({
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": *call.arguments},
                        })
                    })
                    .collect();
                object.insert("tool_calls".into(), calls.into());
            }
            if let Some(reasoning) = &m.reasoning {
                object.insert("reasoning_content".into(), reasoning.to_string().into());
            }
        }
        Ok(value)
    }

    /// Like [`render`](Self::render) for a conversation in the OpenAI chat shape
    /// (messages with `role`, `content`, assistant `tool_calls`, tool messages with
    /// `tool_call_id` and `name`) and OpenAI function tools: the conversation is adapted
    /// to what the template understands, as AIntern sends it.
    ///
    /// # Errors
    /// [`Error::Template`] when the template fails on this conversation.
    pub fn render_openai(
        &self,
        messages: &[serde_json::Value],
        tools: Option<&serde_json::Value>,
        add_generation_prompt: bool,
    ) -> Result<String, Error> {
        let adapted = self.adapt(messages);
        let tools = tools
            .filter(|t| self.capabilities.tools && t.as_array().is_some_and(|a| !a.is_empty()));
        let mut context = serde_json::Map::new();
        context.insert("messages".into(), serde_json::Value::Array(adapted));
        if let Some(tools) = tools {
            context.insert("tools".into(), tools.clone());
        }
        context.insert("add_generation_prompt".into(), add_generation_prompt.into());
        // As llama.cpp renders by default: reasoning on where a template can turn it off.
        context.insert("enable_thinking".into(), true.into());
        context.insert("bos_token".into(), self.bos_token.clone().into());
        context.insert("eos_token".into(), self.eos_token.clone().into());
        self.template
            .render(&serde_json::Value::Object(context))
            .map_err(|e| Error::Template(format!("the model's chat template failed: {e}")))
    }

    /// The conversation reshaped for what the template understands: system text folded
    /// into the next user message, tool results as user messages, and earlier calls as
    /// AIntern's own ```` ```tool_call ```` blocks for templates that know no tools.
    fn adapt(&self, messages: &[serde_json::Value]) -> Vec<serde_json::Value> {
        use serde_json::{json, Value};
        let caps = self.capabilities;
        let text = |m: &Value, key: &str| match m.get(key) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        let user = |content: String| json!({"role": "user", "content": content});
        let mut out: Vec<Value> = Vec::with_capacity(messages.len());
        let mut pending_system: Option<String> = None;
        for message in messages {
            let role = message.get("role").and_then(Value::as_str).unwrap_or("");
            let message = match role {
                "system" if !caps.system_role => {
                    let content = text(message, "content");
                    pending_system = Some(match pending_system.take() {
                        Some(before) => format!("{before}\n\n{content}"),
                        None => content,
                    });
                    continue;
                }
                "tool" if !caps.tool_role => user(tool_calls::prompt::tool_result_as_user_text(
                    Some(&text(message, "name")),
                    &text(message, "content"),
                )),
                "assistant" if !caps.tools && message.get("tool_calls").is_some() => {
                    calls_as_text(message)
                }
                _ => message.clone(),
            };
            let is_user = message.get("role").and_then(Value::as_str) == Some("user");
            let message = match pending_system.take() {
                Some(system) if is_user => {
                    user(format!("{system}\n\n{}", text(&message, "content")))
                }
                Some(system) => {
                    out.push(user(system));
                    message
                }
                None => message,
            };
            out.push(message);
        }
        if let Some(system) = pending_system {
            out.push(user(system));
        }
        out
    }
}

/// An assistant message with `tool_calls`, for a template that knows no tools: the calls
/// written after its text as AIntern's own ```` ```tool_call ```` blocks.
fn calls_as_text(message: &serde_json::Value) -> serde_json::Value {
    use serde_json::{json, Value};
    let mut content = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let calls = message.get("tool_calls").and_then(Value::as_array);
    for call in calls.into_iter().flatten() {
        let function = call.get("function").unwrap_or(call);
        let name = function.get("name").cloned().unwrap_or(Value::Null);
        let arguments = match function.get("arguments") {
            Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
            Some(other) => other.clone(),
            None => json!({}),
        };
        if !content.is_empty() {
            content.push_str("\n\n");
        }
        content.push_str(&format!(
            "```tool_call\n{}\n```",
            json!({"tool": name, "parameters": arguments})
        ));
    }
    json!({"role": "assistant", "content": content})
}

#[cfg(test)]
mod tests;
