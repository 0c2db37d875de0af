//! What a server offers: its models (`GET {base}/models`) and, from llama-server, its
//! properties (`GET /props`: the chat template, whether it renders tools, the context, the
//! number of slots).

use serde::Serialize;
use serde_json::Value;

/// One model a server lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelEntry {
    /// The name to ask for.
    pub id: String,
    /// Who owns it, as the server says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<String>,
    /// Other names it answers to (llama-server's aliases).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Its parameters, when the server says (llama-server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameters: Option<u64>,
    /// Its context window in tokens, when the server says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_length: Option<u32>,
    /// Its file's size in bytes, when the server says (llama-server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl ModelEntry {
    /// Whether `name` asks for this model: its id, an alias, or Ollama's `:latest` tag
    /// left out.
    pub fn answers_to(&self, name: &str) -> bool {
        self.id == name
            || self.aliases.iter().any(|a| a == name)
            || self.id.strip_suffix(":latest") == Some(name)
    }
}

/// What AIntern found out about a server when it connected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ServerInfo {
    /// The models it lists.
    pub models: Vec<ModelEntry>,
    /// It is llama.cpp's llama-server (it answered `/props`).
    pub llama_server: bool,
    /// Whether its chat template renders tools, when it says (llama-server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_renders_tools: Option<bool>,
    /// Its chat template, when it says (llama-server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<String>,
    /// The context of one request in tokens, when it says (llama-server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_length: Option<u32>,
    /// How many requests it serves at once, each in its own slot (llama-server's
    /// `total_slots`), when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_slots: Option<u32>,
    /// The model file it loaded, when it says (llama-server's `model_path`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_path: Option<String>,
}

impl ServerInfo {
    /// What a server's saved KV state depends on, as far as it says: the model it loaded
    /// (its file, and each model listed with its size and parameters), its chat template
    /// and its context. Two servers (or one, restarted with another model) that say the
    /// same here may share saved slots; any difference keeps them apart.
    pub(crate) fn model_identity(&self) -> String {
        let mut text = format!(
            "path={:?}\ntemplate={:?}\ncontext={:?}",
            self.model_path, self.chat_template, self.context_length
        );
        for m in &self.models {
            text.push_str(&format!(
                "\nmodel={:?} parameters={:?} size={:?} context={:?}",
                m.id, m.parameters, m.size, m.context_length
            ));
        }
        text
    }
}

/// The models of a `/models` answer (OpenAI's `{"data": [...]}`, or a bare list).
pub(crate) fn models(json: &Value) -> Vec<ModelEntry> {
    let Some(list) = json
        .get("data")
        .or_else(|| json.get("models"))
        .unwrap_or(json)
        .as_array()
    else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|m| {
            let id = m
                .get("id")
                .or_else(|| m.get("name"))
                .and_then(Value::as_str)?
                .to_string();
            let meta = m.get("meta");
            let number = |key: &str| {
                meta.and_then(|meta| meta.get(key))
                    .or_else(|| m.get(key))
                    .and_then(Value::as_u64)
            };
            Some(ModelEntry {
                owned_by: m.get("owned_by").and_then(Value::as_str).map(String::from),
                aliases: m
                    .get("aliases")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .filter(|a| *a != id)
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default(),
                parameters: number("n_params"),
                context_length: number("n_ctx")
                    .or_else(|| number("context_length"))
                    .or_else(|| number("max_model_len"))
                    .and_then(|n| u32::try_from(n).ok()),
                size: meta
                    .and_then(|meta| meta.get("size"))
                    .and_then(Value::as_u64),
                id,
            })
        })
        .collect()
}

/// llama-server's properties into `info`; `false` when `json` is not llama-server's.
pub(crate) fn props(json: &Value, info: &mut ServerInfo) -> bool {
    let caps = json.get("chat_template_caps");
    let settings = json.get("default_generation_settings");
    if caps.is_none() && settings.is_none() {
        return false;
    }
    info.llama_server = true;
    info.template_renders_tools = caps
        .and_then(|c| c.get("supports_tools"))
        .and_then(Value::as_bool);
    info.chat_template = json
        .get("chat_template")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(String::from);
    info.context_length = settings
        .and_then(|s| s.get("n_ctx"))
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok());
    info.total_slots = json
        .get("total_slots")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0);
    info.model_path = json
        .get("model_path")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .map(String::from);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn models_from_llama_server_openai_and_ollama_shapes() {
        let llama = json!({"object": "list", "data": [{"id": "/m/smol.gguf", "aliases": ["/m/smol.gguf", "smol"], "owned_by": "llamacpp", "meta": {"n_params": 134515008, "n_ctx": 4096, "n_ctx_train": 8192}}]});
        let found = models(&llama);
        assert_eq!(found[0].id, "/m/smol.gguf");
        assert_eq!(found[0].aliases, ["smol"]);
        assert_eq!(found[0].parameters, Some(134_515_008));
        assert_eq!(found[0].context_length, Some(4096));
        assert_eq!(found[0].size, None);
        assert!(found[0].answers_to("smol"));
        let ollama = json!({"object": "list", "data": [{"id": "qwen3:latest", "object": "model", "owned_by": "library"}]});
        assert!(models(&ollama)[0].answers_to("qwen3"));
        let vllm = json!({"data": [{"id": "Qwen/Qwen3-8B", "max_model_len": 32768}]});
        assert_eq!(models(&vllm)[0].context_length, Some(32768));
        assert!(models(&json!({"unexpected": true})).is_empty());
    }

    #[test]
    fn the_model_identity_tells_models_apart() {
        let served = |path: &str, size: u64| {
            let mut info = ServerInfo::default();
            let json = json!({"model_path": path, "chat_template": "t", "default_generation_settings": {"n_ctx": 4096}, "total_slots": 4});
            assert!(props(&json, &mut info));
            info.models = models(
                &json!({"data": [{"id": "smol", "meta": {"n_params": 134515008, "size": size}}]}),
            );
            info
        };
        let one = served("/m/smol-q4.gguf", 96_576_768);
        assert_eq!(one.model_path.as_deref(), Some("/m/smol-q4.gguf"));
        assert_eq!(one.models[0].size, Some(96_576_768));
        assert_eq!(
            one.model_identity(),
            served("/m/smol-q4.gguf", 96_576_768).model_identity()
        );
        // Another file, or the same path holding another file, is another model.
        assert_ne!(
            one.model_identity(),
            served("/m/smol-q8.gguf", 96_576_768).model_identity()
        );
        assert_ne!(
            one.model_identity(),
            served("/m/smol-q4.gguf", 144_000_000).model_identity()
        );
        let mut other_context = one.clone();
        other_context.context_length = Some(2048);
        assert_ne!(one.model_identity(), other_context.model_identity());
    }

    #[test]
    fn props_say_whether_the_template_renders_tools() {
        let mut info = ServerInfo::default();
        let json = json!({"chat_template": "{{ messages }}", "chat_template_caps": {"supports_tools": false}, "default_generation_settings": {"n_ctx": 2048}, "total_slots": 4});
        assert!(props(&json, &mut info));
        assert_eq!(info.template_renders_tools, Some(false));
        assert_eq!(info.context_length, Some(2048));
        assert_eq!(info.total_slots, Some(4));
        assert_eq!(info.model_path, None);
        for odd in [json!(0), json!(-1), json!("4"), json!(1u64 << 40)] {
            let mut info = ServerInfo::default();
            assert!(props(
                &json!({"default_generation_settings": {}, "total_slots": odd}),
                &mut info
            ));
            assert_eq!(info.total_slots, None, "{odd}");
        }
        assert!(!props(
            &json!({"version": "0.5"}),
            &mut ServerInfo::default()
        ));
    }
}
