//! The models AIntern knows by name: `qwen2.5-coder-1.5b` (the default) and
//! `smollm2-135m` (the fast model for tests and tiny machines).
//!
//! The catalog is data, `catalog.json` beside this crate's manifest, read by this module
//! and by `scripts/fetch-model`, which fetches a model through pip by package name and
//! checks every part and the assembled file against the SHA-256 given here. This crate
//! downloads nothing: it only knows where the fetch script puts each file
//! ([`models_dir`]) and whether it is there.
//!
//! ```
//! let default = llm_llama::catalog::default_model();
//! assert_eq!(default.map(|m| m.name.as_str()), Some("qwen2.5-coder-1.5b"));
//! assert!(llm_llama::catalog::find("smollm2-135m").is_some());
//! ```

use serde::Deserialize;
use std::path::PathBuf;
use std::sync::LazyLock;

/// One part of a model as it is published: a wheel and the file inside it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ModelPart {
    /// The package and its version, as pip takes it (`name==version`).
    pub package: String,
    /// The file inside the wheel that holds this part.
    pub member: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its SHA-256, in hexadecimal.
    pub sha256: String,
}

/// A model of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CatalogModel {
    /// Its name for `--model` and `--backend llama:NAME`.
    pub name: String,
    /// The model's own name.
    pub title: String,
    /// The GGUF file's name in the models folder.
    pub file: String,
    /// The file's size in bytes.
    pub size: u64,
    /// The file's SHA-256, in hexadecimal.
    pub sha256: String,
    /// How its weights are quantized.
    pub quantization: String,
    /// Its license.
    pub license: String,
    /// What it is for, in a few words.
    pub about: String,
    /// The parts, concatenated in this order.
    pub parts: Vec<ModelPart>,
}

/// The catalog: its models and the default one.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Catalog {
    /// The name of the model used when none is named.
    pub default: String,
    /// Every model, the default first.
    pub models: Vec<CatalogModel>,
}

static CATALOG: LazyLock<Result<Catalog, String>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../catalog.json"))
        .map_err(|e| format!("the model catalog does not parse: {e}"))
});

/// The catalog built into this crate. `None` only if the built-in file were broken (a
/// test checks it is not).
pub fn catalog() -> Option<&'static Catalog> {
    CATALOG.as_ref().ok()
}

/// The model called `name` (its catalog name, ignoring case).
pub fn find(name: &str) -> Option<&'static CatalogModel> {
    catalog()?
        .models
        .iter()
        .find(|m| m.name.eq_ignore_ascii_case(name.trim()))
}

/// The default model.
pub fn default_model() -> Option<&'static CatalogModel> {
    find(&catalog()?.default)
}

/// Where `scripts/fetch-model` puts the catalog's models: `$AINTERN_CACHE_DIR/models`,
/// else `$XDG_CACHE_HOME/aintern/models`, else `~/.cache/aintern/models`.
pub fn models_dir() -> PathBuf {
    let cache = std::env::var_os("AINTERN_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let base = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    std::env::var_os("HOME")
                        .map(PathBuf::from)
                        .unwrap_or_default()
                        .join(".cache")
                });
            base.join("aintern")
        });
    cache.join("models")
}

impl CatalogModel {
    /// Where its file is once fetched.
    pub fn path(&self) -> PathBuf {
        models_dir().join(&self.file)
    }

    /// Whether it is fetched: its file is there, of its size. (The fetch script checks the
    /// checksum; a file of the right size that is not the model fails to load, in words.)
    pub fn is_fetched(&self) -> bool {
        std::fs::metadata(self.path()).is_ok_and(|m| m.is_file() && m.len() == self.size)
    }

    /// The command that fetches it.
    pub fn fetch_command(&self) -> String {
        format!("scripts/fetch-model {}", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_catalog_is_whole() {
        let catalog = catalog().unwrap_or_else(|| panic!("{:?}", *CATALOG));
        assert!(default_model().is_some(), "the default is in the catalog");
        for model in &catalog.models {
            assert_eq!(model.sha256.len(), 64, "{}", model.name);
            assert!(model.file.ends_with(".gguf"), "{}", model.name);
            let total: u64 = model.parts.iter().map(|p| p.size).sum();
            assert_eq!(
                total, model.size,
                "{}: the parts add up to the file",
                model.name
            );
            for part in &model.parts {
                assert_eq!(part.sha256.len(), 64, "{}", part.package);
                assert!(part.package.contains("=="), "{} is pinned", part.package);
            }
        }
        let qwen = find("Qwen2.5-Coder-1.5B").map(|m| m.parts.len());
        assert_eq!(qwen, Some(22));
        assert!(find("no-such-model").is_none());
        assert_eq!(
            crate::DEFAULT_MODEL_FILE,
            default_model().map_or("", |m| &m.file)
        );
    }

    #[test]
    fn the_default_window_is_the_training_context_within_the_budget() {
        let budget = crate::DEFAULT_KV_BUDGET;
        // Qwen2.5-Coder-1.5B: 28 layers, 2 KV heads of 128, 16 bits.
        assert_eq!(
            crate::default_window(32768, 28 * 2 * 128 * 2 * 2, budget),
            32768
        );
        // SmolLM2-135M: 30 layers, 3 KV heads of 64.
        assert_eq!(
            crate::default_window(8192, 30 * 3 * 64 * 2 * 2, budget),
            8192
        );
        // A Llama-3-8B shape: 32 layers, 8 KV heads of 128.
        assert_eq!(
            crate::default_window(131072, 32 * 8 * 128 * 2 * 2, budget),
            8192
        );
        // Never under 2,048 tokens, nor over the training context.
        assert_eq!(crate::default_window(131072, 1 << 30, budget), 2048);
        assert_eq!(crate::default_window(1024, 1, budget), 1024);
    }
}
