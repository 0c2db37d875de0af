//! Turning parsed JSON or XML into [`ToolCallRequest`]s.

use super::json;
use core_models::{LlmToolCall, RiskLevel, ToolCallRequest, ToolDefinition, ToolRegistry};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// Where the parser looks tools up: to fill in names, risk and summaries, and to type
/// XML parameters by the tool's JSON schema.
#[derive(Clone, Default)]
pub enum ToolCatalog {
    /// No tools known: every call gets its id as name, medium risk, "Execute {id}".
    #[default]
    Empty,
    /// Live tools: per-invocation risk and summary come from the tool.
    Registry(Arc<dyn ToolRegistry>),
    /// Definitions only (for example from `aintern parse --tools FILE`): name and default
    /// risk come from the definition.
    Definitions(Arc<BTreeMap<String, ToolDefinition>>),
}

impl fmt::Debug for ToolCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolCatalog::Empty => f.write_str("ToolCatalog::Empty"),
            ToolCatalog::Registry(_) => f.write_str("ToolCatalog::Registry(..)"),
            ToolCatalog::Definitions(d) => f
                .debug_tuple("ToolCatalog::Definitions")
                .field(&d.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// Most bytes of a call as written kept in its `raw_json`.
pub(crate) const RAW_JSON_KEPT: usize = 64 * 1024;

impl ToolCatalog {
    /// A catalog of these definitions.
    pub fn from_definitions(definitions: impl IntoIterator<Item = ToolDefinition>) -> Self {
        ToolCatalog::Definitions(Arc::new(
            definitions.into_iter().map(|d| (d.id.clone(), d)).collect(),
        ))
    }

    /// Whether a tool of this id is known (always, for a catalog that knows no tools).
    pub fn knows(&self, id: &str) -> bool {
        match self {
            ToolCatalog::Empty => true,
            ToolCatalog::Registry(r) => r.get_tool(id).is_some(),
            ToolCatalog::Definitions(d) => d.contains_key(id),
        }
    }

    /// The JSON schema of the tool's parameters, when known.
    pub fn schema(&self, id: &str) -> Option<Value> {
        match self {
            ToolCatalog::Empty => None,
            // A tool whose definition panics has no schema here (its call fails later).
            ToolCatalog::Registry(r) => r
                .get_tool(id)
                .and_then(|t| guarded(|| t.definition().input_schema.clone()).ok()),
            ToolCatalog::Definitions(d) => d.get(id).map(|d| d.input_schema.clone()),
        }
    }

    /// A request for `id` with `parameters`, filled from the catalog; `raw`, the call as
    /// written, is kept as its `raw_json` up to 64 KiB (a call carrying
    /// a large file is not held twice).
    pub fn request(&self, id: &str, parameters: Value, raw: &str) -> ToolCallRequest {
        let mut call = ToolCallRequest::new(id, parameters);
        if raw.len() <= RAW_JSON_KEPT {
            call.raw_json = Some(Arc::from(raw));
        }
        match self {
            ToolCatalog::Empty => {}
            ToolCatalog::Registry(r) => {
                if let Some(tool) = r.get_tool(id) {
                    // A tool that panics here keeps its id as name, is judged critical and
                    // summarized by its id; the agent's own guarded screening fails the
                    // call later.
                    if let Ok(name) = guarded(|| tool.definition().name.clone()) {
                        call.tool_name = name;
                    }
                    call.risk_level = guarded(|| tool.effective_risk_level(&call.parameters))
                        .unwrap_or(RiskLevel::Critical);
                    if let Ok(summary) = guarded(|| tool.execution_summary(&call.parameters)) {
                        call.execution_summary = summary;
                    }
                }
            }
            ToolCatalog::Definitions(d) => {
                if let Some(def) = d.get(id) {
                    call.tool_name = def.name.clone();
                    call.risk_level = def.default_risk_level;
                }
            }
        }
        call
    }

    /// A request for a call a server already took apart (OpenAI-compatible `tool_calls`),
    /// filled from the catalog like a parsed one: the name trimmed, the arguments JSON text
    /// that must be an object (empty text is no arguments), the server's id kept.
    ///
    /// # Errors
    /// A message for a call without a name or with arguments that are not a JSON object;
    /// such a call is reported, never run.
    pub fn native_call(&self, call: &LlmToolCall) -> Result<ToolCallRequest, String> {
        let name = call.name.trim();
        if name.is_empty() {
            return Err("the model sent a tool call without a tool name".into());
        }
        let arguments = match call.arguments.trim() {
            "" => Value::Object(Map::new()),
            text => match json::parse(text) {
                Ok(Value::Object(o)) => Value::Object(o),
                Ok(Value::Null) => Value::Object(Map::new()),
                Ok(_) => return Err(format!("the arguments of {name} are not a JSON object")),
                Err(e) => return Err(format!("the arguments of {name} are not valid JSON: {e}")),
            },
        };
        let raw = serde_json::json!({"name": name, "arguments": call.arguments}).to_string();
        let mut request = self.request(name, arguments, &raw);
        request.model_call_id = call.id.clone().filter(|id| !id.trim().is_empty());
        Ok(request)
    }
}

/// How strictly an object must look like a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Inside a marker: any id key ("tool", "name", "function"), arguments optional.
    Marked,
    /// A reply that is a bare JSON call (Llama 3.x): an id key and an arguments key (or
    /// `"type": "function"`).
    Bare,
    /// An object inside prose (the seed's alternative): "tool" and an arguments key.
    Inline,
}

const ID_KEYS: [&str; 4] = ["tool", "name", "function", "tool_name"];
const ARG_KEYS: [&str; 3] = ["parameters", "arguments", "args"];

/// The tool id and arguments of one JSON call object, taken apart (the arguments are
/// moved out, never copied: they may be large).
/// `Ok(None)`: not call-shaped (unmarked text stays text). `Err`: a marked call that is
/// broken (becomes a diagnostic).
pub(crate) fn call_parts(
    mut object: Map<String, Value>,
    shape: Shape,
) -> Result<Option<(String, Value)>, String> {
    // OpenAI style: {"type": "function", "function": {"name": …, "arguments": …}}.
    if matches!(object.get("function"), Some(Value::Object(inner)) if inner.contains_key("name")) {
        if let Some(Value::Object(inner)) = object.remove("function") {
            return call_parts(inner, Shape::Marked)
                .map(|parts| parts.filter(|_| shape != Shape::Inline));
        }
    }
    let id_keys: &[&str] = if shape == Shape::Inline {
        &ID_KEYS[..1]
    } else {
        &ID_KEYS
    };
    let Some((key, id)) = id_keys.iter().find_map(|k| object.get(*k).map(|v| (*k, v))) else {
        return if shape == Shape::Marked {
            Err(
                "the tool call names no tool (expected a \"tool\", \"name\" or \"function\" key)"
                    .into(),
            )
        } else {
            Ok(None)
        };
    };
    let id = match id {
        Value::String(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ if shape != Shape::Marked => return Ok(None),
        _ => {
            return Err(format!(
                "the tool call's \"{key}\" must be a non-empty string"
            ))
        }
    };
    let args = ARG_KEYS
        .iter()
        .find(|k| object.contains_key(**k))
        .and_then(|k| object.remove(*k).map(|v| (*k, v)));
    let args = match args {
        None => {
            let typed_function = object.get("type").and_then(Value::as_str) == Some("function");
            if shape == Shape::Marked || (shape == Shape::Bare && typed_function) {
                Value::Object(Map::new())
            } else {
                return Ok(None);
            }
        }
        Some((_, Value::Null)) => Value::Object(Map::new()),
        Some((_, Value::Object(o))) => Value::Object(o),
        Some((key, Value::String(s))) => match json::parse(&s) {
            Ok(Value::Object(o)) => Value::Object(o),
            Ok(_) if shape != Shape::Marked => return Ok(None),
            Ok(_) => {
                return Err(format!(
                    "the arguments of {id} (\"{key}\") are not a JSON object"
                ))
            }
            Err(_) if s.trim().is_empty() => Value::Object(Map::new()),
            Err(e) if shape == Shape::Marked => {
                return Err(format!(
                    "the arguments of {id} (\"{key}\") are not valid JSON: {e}"
                ))
            }
            Err(_) => return Ok(None),
        },
        Some(_) if shape != Shape::Marked => return Ok(None),
        Some((key, _)) => {
            return Err(format!(
                "the arguments of {id} (\"{key}\") must be a JSON object"
            ))
        }
    };
    Ok(Some((id, args)))
}

/// Calls in a JSON value: one object, or an array of objects. The value is taken apart.
pub(crate) fn calls_from_value(
    value: Value,
    shape: Shape,
    raw: &str,
    catalog: &ToolCatalog,
) -> Result<Option<Vec<ToolCallRequest>>, String> {
    match value {
        // llama.cpp's generic format: {"tool_calls": […]} or {"tool_call": {…}}.
        Value::Object(mut o)
            if shape != Shape::Inline
                && o.len() == 1
                && (matches!(o.get("tool_calls"), Some(Value::Array(_)))
                    || matches!(o.get("tool_call"), Some(Value::Object(_)))) =>
        {
            let inner = o
                .remove("tool_calls")
                .or_else(|| o.remove("tool_call"))
                .unwrap_or(Value::Null);
            calls_from_value(inner, Shape::Marked, raw, catalog)
        }
        Value::Object(o) => {
            Ok(call_parts(o, shape)?.map(|(id, args)| vec![catalog.request(&id, args, raw)]))
        }
        Value::Array(items) if !items.is_empty() => {
            let mut calls = Vec::with_capacity(items.len());
            for item in items {
                let Value::Object(o) = item else {
                    return if shape == Shape::Marked {
                        Err("a tool-call array holds something that is not an object".into())
                    } else {
                        Ok(None)
                    };
                };
                let raw = serde_json::to_string(&o).unwrap_or_default();
                match call_parts(o, shape)? {
                    Some((id, args)) => calls.push(catalog.request(&id, args, &raw)),
                    None => return Ok(None),
                }
            }
            Ok(Some(calls))
        }
        _ if shape == Shape::Marked => Err("the tool call is not a JSON object".into()),
        _ => Ok(None),
    }
}

/// Run `f` (a tool's own code), a panic becoming `Err`: a tool that panics must not take
/// the parse with it.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, ()> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| ())
}
