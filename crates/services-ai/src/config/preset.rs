//! The small-model preset: the settings under which a model of under a billion parameters
//! (the embedded SmolLM2-135M among them) does useful work with tools. The `aintern`
//! command applies it whenever the model reports such a size; an application gets the
//! same behaviour from [`AgentConfig::small_model`], [`ConfigLoader::small_model_defaults`]
//! and [`small_model_inference`].

use super::{AgentConfig, ConfigLoader, SteeringMode, ToolPromptStyle};
use core_models::InferenceOptions;

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

impl ConfigLoader {
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
    fn sampling_is_greedy_and_short() {
        let options = small_model_inference();
        assert_eq!(options.temperature, 0.0);
        assert_eq!(options.max_tokens, 512);
    }
}
