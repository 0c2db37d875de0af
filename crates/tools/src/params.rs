//! Parameter checks shared by the tools.

use crate::workspace::path_subjects;
use core_models::{CallAssessment, PermissionSubjects, RiskLevel, ToolValidationResult};
use serde_json::Value;
use std::path::Path;

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

/// The assessment of a call of a path tool: its `path` argument as the permission
/// subjects — the lexical form and where it leads through symbolic links (see
/// `workspace::path_subjects`) — rated by `rate` at the highest of the forms (so a
/// link cannot make a sensitive file look ordinary). Without a `path` argument, the
/// default subjects ([`PermissionSubjects::from_parameters`]) and `rate("")`.
pub(crate) fn assess_path(
    params: &Value,
    workspace: Option<&Path>,
    rate: impl Fn(&str) -> RiskLevel,
) -> CallAssessment {
    let Some(raw) = params.get("path").and_then(Value::as_str) else {
        return CallAssessment::new(
            rate(""),
            PermissionSubjects::from_parameters(params, workspace),
        );
    };
    let subjects = path_subjects(raw, workspace);
    let risk = subjects
        .subjects
        .iter()
        .map(|s| rate(s))
        .fold(rate(raw), RiskLevel::max);
    let reasons = match subjects.subjects.as_slice() {
        [lexical, led] => vec![format!(
            "'{lexical}' leads to '{led}' (through a symbolic link)"
        )],
        _ => Vec::new(),
    };
    CallAssessment::new(risk, subjects).with_reasons(reasons)
}

/// The call's `path`, when it is a string that is not blank.
pub(crate) fn path_of(params: &Value) -> Option<String> {
    params
        .get("path")
        .and_then(Value::as_str)
        .filter(|p| !p.trim().is_empty())
        .map(String::from)
}

/// The call's `path` when it names a regular file of the workspace (reached as the tools
/// reach it, within the launcher's rules) that holds something.
pub(crate) fn nonempty_file(
    params: &Value,
    workspace: Option<&std::path::Path>,
    launcher: &sandbox::Launcher,
) -> Option<String> {
    let path = path_of(params)?;
    let workspace = crate::workspace::Workspace::with_launcher(workspace?, launcher).ok()?;
    let target = workspace.existing_target(&path).ok()?;
    let meta = target.dir.symlink_metadata(&target.name).ok()?;
    (meta.is_file() && meta.len() > 0).then_some(path)
}
