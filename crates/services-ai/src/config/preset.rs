//! The presets by the model's size, which the `aintern` command applies when the backend
//! reports a size ([`defaults_for`]):
//!
//! * the small-model preset — a model of under a billion parameters (SmolLM2-135M among
//!   them): [`AgentConfig::small_model`], [`ConfigLoader::small_model_defaults`],
//!   [`small_model_inference`];
//! * the lean preset — a model of one to ten billion parameters (the default,
//!   Qwen2.5-Coder-1.5B, among them): [`AgentConfig::lean_model`],
//!   [`LEAN_MODEL_DEFAULTS`];
//! * none for a bigger model, or one whose size is not known (a hosted API).

use super::{AgentConfig, ConfigLoader, SteeringMode, ToolPromptStyle};
use core_models::{InferenceOptions, ModelDetails};

/// The small-model preset as configuration keys and values, for
/// [`ConfigLoader::default_value`]: the compact tool prompt; the small-model steering
/// (the model chooses each step among answering and the tools, then writes it under a
/// grammar); path arguments held to the files that exist in a workspace of at most 100
/// entries.
pub const SMALL_MODEL_DEFAULTS: &[(&str, &str)] = &[
    ("tool_prompt_style", "compact"),
    ("steering", "small-model"),
    ("path_choices_limit", "100"),
];

/// The lean preset as configuration keys and values: the lean tool prompt (schemas
/// without their detail parameters, which such models fill in with values they make up)
/// and path arguments held to the files that exist in a workspace of at most 100 entries
/// (by the call grammar, and the names told once before the request). On the tuned
/// `basic` suite with Qwen2.5-Coder-1.5B, when it was chosen: 24 of 34 against 20 with the
/// full schemas and no held paths (median 7.7 s a task against 20.7 s with the choices in
/// the prompt).
pub const LEAN_MODEL_DEFAULTS: &[(&str, &str)] =
    &[("tool_prompt_style", "lean"), ("path_choices_limit", "100")];

/// Parameters from which a model gets no preset.
pub const LEAN_MODEL_PARAMETERS: u64 = 10_000_000_000;

/// The preset for a model of these `details` (see the module documentation): its keys
/// and values, empty for none.
pub fn defaults_for(details: &ModelDetails) -> &'static [(&'static str, &'static str)] {
    match details.parameters {
        _ if details.is_small() => SMALL_MODEL_DEFAULTS,
        Some(p) if p > 0 && p < LEAN_MODEL_PARAMETERS => LEAN_MODEL_DEFAULTS,
        _ => &[],
    }
}

/// The most tokens a small model writes in one reply under the preset.
pub const SMALL_MODEL_MAX_TOKENS: u32 = 512;

impl AgentConfig {
    /// The defaults with the small-model preset ([`SMALL_MODEL_DEFAULTS`]) applied. Pair
    /// it with [`small_model_inference`] for each request.
    ///
    /// ```
    /// use services_ai::{AgentConfig, SteeringMode};
    ///
    /// let config = AgentConfig::small_model();
    /// assert_eq!(config.steering, SteeringMode::SmallModel);
    /// assert!(config.validate().is_ok());
    /// ```
    pub fn small_model() -> AgentConfig {
        AgentConfig {
            tool_prompt_style: ToolPromptStyle::Compact,
            steering: SteeringMode::SmallModel,
            path_choices_limit: 100,
            ..AgentConfig::default()
        }
    }
}

impl AgentConfig {
    /// The defaults with the lean preset ([`LEAN_MODEL_DEFAULTS`]) applied.
    pub fn lean_model() -> AgentConfig {
        AgentConfig {
            tool_prompt_style: ToolPromptStyle::Lean,
            path_choices_limit: 100,
            ..AgentConfig::default()
        }
    }

    /// The defaults of the preset for a model of these `details` ([`defaults_for`]).
    pub fn for_model(details: &ModelDetails) -> AgentConfig {
        match defaults_for(details) {
            preset if preset == SMALL_MODEL_DEFAULTS => AgentConfig::small_model(),
            preset if preset == LEAN_MODEL_DEFAULTS => AgentConfig::lean_model(),
            _ => AgentConfig::default(),
        }
    }
}

impl ConfigLoader {
    /// Make the preset for a model of these `details` the defaults ([`defaults_for`]):
    /// files, environment variables and [`ConfigLoader::set`] still override each setting.
    pub fn model_defaults(self, details: &ModelDetails) -> Self {
        defaults_for(details)
            .iter()
            .fold(self, |loader, (key, value)| {
                loader.default_value(*key, *value)
            })
    }

    /// Make the small-model preset the defaults: files, environment variables and
    /// [`ConfigLoader::set`] still override each setting.
    pub fn small_model_defaults(self) -> Self {
        SMALL_MODEL_DEFAULTS
            .iter()
            .fold(self, |loader, (key, value)| {
                loader.default_value(*key, *value)
            })
    }
}

/// The sampling of every other model: greedy (tool calls and answers from a file want
/// the model's most likely words: with Qwen2.5-Coder-1.5B, sampling at temperature 0.7
/// made calls up and answered with instructions instead of the file's words), at most
/// 4096 tokens a reply (and never more than a quarter of the window: see
/// [`crate::reply_allowance`]).
pub fn standard_inference() -> InferenceOptions {
    InferenceOptions::default().with_temperature(0.0)
}

/// The sampling of a small model under the preset: greedy, at most
/// [`SMALL_MODEL_MAX_TOKENS`] tokens a reply; the other options as their defaults.
pub fn small_model_inference() -> InferenceOptions {
    InferenceOptions::default()
        .with_temperature(0.0)
        .with_max_tokens(SMALL_MODEL_MAX_TOKENS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn the_keys_and_the_config_are_the_same_preset() {
        let loaded = ConfigLoader::new()
            .env_source(HashMap::new())
            .small_model_defaults()
            .load();
        assert_eq!(loaded.ok(), Some(AgentConfig::small_model()));
    }

    #[test]
    fn a_file_still_overrides_the_preset() {
        let loaded = ConfigLoader::new()
            .env_source(HashMap::new())
            .small_model_defaults()
            .toml_text("tool_prompt_style = \"full\"")
            .load()
            .ok();
        let style = loaded.map(|c| c.tool_prompt_style);
        assert_eq!(style, Some(ToolPromptStyle::Full));
    }

    #[test]
    fn each_size_gets_its_preset_and_the_keys_match_the_config() {
        let of = |p: Option<u64>| ModelDetails::default().with_parameters(p);
        assert_eq!(defaults_for(&of(Some(134_515_008))), SMALL_MODEL_DEFAULTS);
        assert_eq!(defaults_for(&of(Some(1_543_714_304))), LEAN_MODEL_DEFAULTS);
        assert!(defaults_for(&of(Some(70_000_000_000))).is_empty());
        assert!(defaults_for(&of(None)).is_empty());
        let loaded = ConfigLoader::new()
            .env_source(HashMap::new())
            .model_defaults(&of(Some(1_543_714_304)))
            .load();
        assert_eq!(loaded.ok(), Some(AgentConfig::lean_model()));
        assert_eq!(
            AgentConfig::for_model(&of(Some(1_543_714_304))),
            AgentConfig::lean_model()
        );
    }

    #[test]
    fn sampling_is_greedy_and_short() {
        let options = small_model_inference();
        assert_eq!(options.temperature, 0.0);
        assert_eq!(options.max_tokens, 512);
    }
}
