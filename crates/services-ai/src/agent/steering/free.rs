//! [`Free`]: the model writes what it wants — an answer, or calls in its own call
//! language — and the parser takes the calls from its text. For models able to decide
//! for themselves.

use super::{Chooser, Halt, Plan, Steering, Turn};
use async_trait::async_trait;
use core_models::{ChatMessage, ToolChoice};

/// See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Free;

#[async_trait]
impl Steering for Free {
    fn name(&self) -> &'static str {
        "free"
    }

    async fn before_reply(&self, turn: &Turn<'_>, _model: &dyn Chooser) -> Result<Plan, Halt> {
        let request = turn.base.clone();
        let held = match &request.tool_choice {
            ToolChoice::Tool(id) => Some(format!("the request forced a call of {id}")),
            ToolChoice::Required => Some("the request required a tool call".to_string()),
            ToolChoice::Auto | ToolChoice::None => None,
        };
        Ok(Plan {
            text_only: request.tool_choice == ToolChoice::None,
            request,
            held,
        })
    }

    fn answer(&self, turn: &Turn<'_>) -> Plan {
        let mut request = turn.base.clone();
        request.tool_choice = ToolChoice::None;
        if !turn.done.is_empty() {
            // Asked after a reply that only repeated calls: the model is told why it is
            // asked again (the conversation as it is, with one note after it), and shown
            // no tools (offered them, a model that repeats itself answers with nothing).
            request.messages.push(ChatMessage::user(ANSWER_NOW));
            request.tools.clear();
        }
        Plan {
            request,
            text_only: true,
            held: None,
        }
    }

    fn after_result(&self, turn: &Turn<'_>) -> String {
        turn.config
            .tool_result_instruction
            .replace("{request}", turn.request.message.trim())
    }
}

/// The note after a reply that only repeated calls made already.
const ANSWER_NOW: &str = "(You called that tool with the same arguments already; its result \
is above. Answer my request now from the results, in plain text, without calling a tool.)";
