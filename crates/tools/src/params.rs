//! Parameter checks shared by the tools.

use core_models::ToolValidationResult;
use serde_json::Value;

/// Require a non-empty string `path`.
pub(crate) fn require_path(params: &Value, errors: &mut Vec<String>) {
    let ok = params
        .get("path")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.trim().is_empty());
    if !ok {
        errors.push("path is required (a non-empty string)".to_string());
    }
}

/// An optional whole number of at least 1.
pub(crate) fn positive(params: &Value, key: &str, errors: &mut Vec<String>) -> Option<u64> {
    match params.get(key) {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64().filter(|n| *n >= 1) {
            Some(n) => Some(n),
            None => {
                errors.push(format!("{key} must be a whole number of at least 1"));
                None
            }
        },
    }
}

/// Valid when no error was found.
pub(crate) fn verdict(errors: Vec<String>) -> ToolValidationResult {
    if errors.is_empty() {
        ToolValidationResult::valid()
    } else {
        ToolValidationResult::invalid(errors)
    }
}
