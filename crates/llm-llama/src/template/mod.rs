//! The model's own chat template: the Jinja text in the GGUF metadata
//! (`tokenizer.chat_template`), rendered with minijinja the way Hugging Face's
//! `apply_chat_template` does.
//!
//! Templates differ in what they understand. What a template does with tools, tool-role
//! messages and system messages is found out by rendering small probe conversations with
//! unique markers and looking for the markers in the output — the template's behaviour,
//! not its text, decides. A conversation is then adapted to the template: tools are
//! passed only to templates that render them; tool results become user messages for
//! templates that drop (or refuse) the tool role; a system message is folded into the
//! first user message for templates without a system role.

use crate::Error;
use core_models::{ChatMessage, MessageRole, ToolDefinition};
use minijinja::{Environment, ErrorKind, Value};
use serde::Serialize;

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

/// A chat template compiled with minijinja.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
    capabilities: TemplateCapabilities,
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

const TEMPLATE_NAME: &str = "chat";

impl ChatTemplate {
    /// Compile `source`; `bos_token` and `eos_token` are the texts of the model's
    /// beginning- and end-of-sequence tokens (templates refer to them).
    ///
    /// # Errors
    /// [`Error::Template`] when the template is not valid Jinja.
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<Self, Error> {
        let mut env = Environment::new();
        // Hugging Face renders with trim_blocks and lstrip_blocks, and templates use
        // Python's string methods (`.strip()`, `.startswith()`, …).
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |message: String| -> Result<Value, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        env.add_template_owned(TEMPLATE_NAME, source.to_string())
            .map_err(|e| Error::Template(format!("the chat template is not valid Jinja: {e}")))?;
        let mut template = ChatTemplate {
            env,
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
            capabilities: TemplateCapabilities::default(),
        };
        template.capabilities = template.probe();
        Ok(template)
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
        };
        let tool_result = |role: &'static str| TemplateMessage {
            name: Some("probe"),
            tool_call_id: Some("0"),
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
        TemplateCapabilities {
            tools: renders(&[user], Some(&[tool])),
            // A template that writes any role as it comes (plain ChatML) was not written
            // for tool results: the model never saw a "tool" turn, so those templates get
            // tool results as user messages.
            tool_role: renders(&[user, assistant, tool_result("tool")], None)
                && !renders(&[user, assistant, tool_result("aintern_probe_role")], None),
            system_role: renders(&[message("system", MARK), user], None),
        }
    }

    fn render_raw(
        &self,
        messages: &[TemplateMessage<'_>],
        tools: Option<&[TemplateTool<'_>]>,
        add_generation_prompt: bool,
    ) -> Result<String, minijinja::Error> {
        let template = self.env.get_template(TEMPLATE_NAME)?;
        let tools = match tools {
            Some(tools) => Value::from_serialize(tools),
            None => Value::UNDEFINED,
        };
        template.render(minijinja::context! {
            messages => Value::from_serialize(messages),
            tools => tools,
            add_generation_prompt => add_generation_prompt,
            bos_token => &self.bos_token,
            eos_token => &self.eos_token,
        })
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
        let adapted = self.adapt(messages);
        let view: Vec<TemplateMessage<'_>> = adapted
            .iter()
            .map(|m| TemplateMessage {
                role: m.role.as_str(),
                content: &m.content,
                name: m.name.as_deref(),
                tool_call_id: m.tool_call_id.as_deref(),
            })
            .collect();
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
        let tools = (self.capabilities.tools && !tool_view.is_empty()).then_some(&tool_view[..]);
        self.render_raw(&view, tools, true)
            .map_err(|e| Error::Template(format!("the model's chat template failed: {e:#}")))
    }

    /// The conversation reshaped for what the template understands.
    fn adapt(&self, messages: &[ChatMessage]) -> Vec<ChatMessage> {
        let caps = self.capabilities;
        let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
        let mut pending_system: Option<String> = None;
        for message in messages {
            let message = match message.role {
                MessageRole::System if !caps.system_role => {
                    let joined = match pending_system.take() {
                        Some(before) => format!("{before}\n\n{}", message.content),
                        None => message.content.to_string(),
                    };
                    pending_system = Some(joined);
                    continue;
                }
                MessageRole::Tool if !caps.tool_role => ChatMessage::user(format!(
                    "Tool result{}:\n{}",
                    message
                        .name
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default(),
                    message.content
                )),
                _ => message.clone(),
            };
            let message = match (pending_system.take(), message.role) {
                (Some(system), MessageRole::User) => {
                    ChatMessage::user(format!("{system}\n\n{}", message.content))
                }
                (Some(system), _) => {
                    out.push(ChatMessage::user(system));
                    message
                }
                (None, _) => message,
            };
            out.push(message);
        }
        if let Some(system) = pending_system {
            out.push(ChatMessage::user(system));
        }
        out
    }
}

#[cfg(test)]
mod tests;
