//! The prompt pieces a backend needs when a conversation cannot be given as it is: a
//! tool's result for a prompt without a tool role, and a whole conversation as plain text
//! for a model without a chat template.

use core_models::{ChatMessage, MessageRole};

/// A tool result as a user message's text, for prompts that have no tool role (chat
/// templates written without one, a server asked in text): `Tool result (NAME):\nCONTENT`.
pub fn tool_result_as_user_text(tool: Option<&str>, content: &str) -> String {
    match tool.filter(|t| !t.is_empty()) {
        Some(tool) => format!("Tool result ({tool}):\n{content}"),
        None => format!("Tool result:\n{content}"),
    }
}

/// The seed's plain-text rendering of a conversation ("User: …", "Assistant: …", "Tool
/// Result: …"), for backends that have no chat template.
pub fn render_plain(messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    for message in messages {
        let role = match message.role {
            MessageRole::System => {
                out.push_str(message.as_written());
                out.push_str("\n\n");
                continue;
            }
            MessageRole::User => "User",
            MessageRole::Assistant => "Assistant",
            MessageRole::Tool => "Tool Result",
        };
        out.push_str(&format!("{role}: {}\n\n", message.as_written()));
    }
    out.push_str("Assistant:");
    out
}
