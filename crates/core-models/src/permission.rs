//! Permission models (seed 001 part h).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Component, Path};

/// The outcome of checking whether a call may run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionCheckResult {
    /// The call may run without asking.
    pub is_allowed: bool,
    /// A person must approve the call first.
    pub requires_approval: bool,
    /// Why approval is needed.
    #[serde(default)]
    pub approval_reason: Option<String>,
    /// Why the call is refused outright (an "always deny" setting or a denied pattern).
    #[serde(default)]
    pub denial_reason: Option<String>,
    /// The answer came from a remembered decision.
    #[serde(default)]
    pub was_cached: bool,
}

impl PermissionCheckResult {
    /// Allowed without asking.
    pub fn allowed() -> Self {
        PermissionCheckResult {
            is_allowed: true,
            requires_approval: false,
            approval_reason: None,
            denial_reason: None,
            was_cached: false,
        }
    }

    /// Allowed because of a remembered decision.
    pub fn allowed_cached() -> Self {
        PermissionCheckResult {
            was_cached: true,
            ..Self::allowed()
        }
    }

    /// A person must approve first.
    pub fn requires_approval(reason: impl Into<String>) -> Self {
        PermissionCheckResult {
            is_allowed: false,
            requires_approval: true,
            approval_reason: Some(reason.into()),
            denial_reason: None,
            was_cached: false,
        }
    }

    /// Refused without asking.
    pub fn denied(reason: impl Into<String>, was_cached: bool) -> Self {
        PermissionCheckResult {
            is_allowed: false,
            requires_approval: false,
            approval_reason: None,
            denial_reason: Some(reason.into()),
            was_cached,
        }
    }

    /// Whether the call is refused outright.
    pub fn is_denied(&self) -> bool {
        !self.is_allowed && !self.requires_approval
    }
}

/// Persistent permission settings for one tool.
///
/// Patterns are globs matched against the call's [`PermissionSubjects`]: the normalized
/// workspace-relative path for file tools, each simple command for commands. Deny wins over
/// allow, and explicit settings win over the call's risk level.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ToolPermissionSettings {
    /// The tool.
    pub tool_id: String,
    /// Run every call without asking.
    pub always_allow: bool,
    /// Refuse every call.
    pub always_deny: bool,
    /// Run calls whose subjects all match one of these without asking.
    pub allowed_patterns: Vec<String>,
    /// Refuse calls with a subject that matches one of these.
    pub denied_patterns: Vec<String>,
}

impl ToolPermissionSettings {
    /// Empty settings for `tool_id`.
    pub fn new(tool_id: impl Into<String>) -> Self {
        ToolPermissionSettings {
            tool_id: tool_id.into(),
            ..Default::default()
        }
    }

    /// Whether the settings say nothing.
    pub fn is_empty(&self) -> bool {
        !self.always_allow
            && !self.always_deny
            && self.allowed_patterns.is_empty()
            && self.denied_patterns.is_empty()
    }
}

/// What permission patterns are matched against for one call, normalized so that spelling
/// tricks (`./secret/key`, ` secret//key`, `a/../secret/key`, `'rm'  -rf x`) cannot slip
/// past a pattern.
///
/// A deny pattern refuses the call when it matches any of [`subjects`](Self::subjects) or
/// [`deny_only`](Self::deny_only). Allow patterns allow it only when the subjects are
/// [`complete`](Self::complete), not empty, and every subject matches one of them: `cargo *`
/// allows `cargo test && cargo build`, never `cargo test; rm -rf ~`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct PermissionSubjects {
    /// The normalized forms: a workspace-relative path (and where it leads through
    /// symlinks), or each simple command of a command line.
    pub subjects: Vec<String>,
    /// Forms checked against deny patterns only (the whole command line).
    pub deny_only: Vec<String>,
    /// Whether the subjects cover everything the call does. `false` (a command that could
    /// not be analysed) means allow patterns never apply; deny patterns still do.
    pub complete: bool,
}

/// Parameter keys whose value is a path.
const PATH_KEYS: [&str; 4] = ["path", "file_path", "file", "directory"];

impl PermissionSubjects {
    /// Complete subjects.
    pub fn of(subjects: impl IntoIterator<Item = String>) -> Self {
        let mut seen = std::collections::HashSet::new();
        let mut list: Vec<String> = Vec::new();
        for s in subjects {
            if seen.insert(s.clone()) {
                list.push(s);
            }
        }
        PermissionSubjects {
            subjects: list,
            deny_only: Vec::new(),
            complete: true,
        }
    }

    /// Nothing to match: no pattern applies.
    pub fn none() -> Self {
        PermissionSubjects::default()
    }

    /// The subject of a path argument: [`normalize_path`] relative to `workspace`.
    pub fn path(raw: &str, workspace: Option<&Path>) -> Self {
        Self::of([normalize_path(raw, workspace)])
    }

    /// The default subjects of a call: its main argument (the first string among
    /// [`crate::MAIN_ARGUMENT_KEYS`]); paths normalized by [`normalize_path`], anything else
    /// trimmed with runs of whitespace made one space.
    pub fn from_parameters(parameters: &Value, workspace: Option<&Path>) -> Self {
        match crate::tool_call::main_argument_of(parameters) {
            None => Self::none(),
            Some((key, value)) if PATH_KEYS.contains(&key) => Self::path(value, workspace),
            Some((_, value)) => Self::of([collapse_whitespace(value)]),
        }
    }

    /// Whether any pattern could apply.
    pub fn is_empty(&self) -> bool {
        self.subjects.is_empty() && self.deny_only.is_empty()
    }

    /// Every form a deny pattern is checked against.
    pub fn for_deny(&self) -> impl Iterator<Item = &str> {
        self.subjects
            .iter()
            .chain(&self.deny_only)
            .map(String::as_str)
    }
}

/// `text` trimmed, with each run of whitespace made one space.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A path as permission patterns see it: relative to the workspace, `/`-separated, with
/// `.` and empty components dropped and `..` resolved lexically (a path that climbs out
/// keeps its leading `..`). An absolute path inside `workspace` becomes relative; any other
/// absolute path stays absolute. The workspace itself is `.`. No filesystem access: where
/// a path leads through symlinks is the tool's to add (see [`crate::Tool::assess`]).
pub fn normalize_path(raw: &str, workspace: Option<&Path>) -> String {
    let trimmed = raw.trim();
    let path = Path::new(trimmed);
    let path = match workspace {
        Some(root) if path.is_absolute() => match path.strip_prefix(root) {
            Ok(inside) => inside,
            Err(_) => path,
        },
        _ => path,
    };
    let absolute = path.has_root();
    let mut parts: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => parts.push(name.to_string_lossy().into_owned()),
            Component::ParentDir => match parts.last() {
                Some(last) if last != ".." => {
                    parts.pop();
                }
                _ if absolute => {}
                _ => parts.push("..".to_string()),
            },
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(raw: &str, expected: &str) {
        assert_eq!(
            normalize_path(raw, Some(Path::new("/ws"))),
            expected,
            "{raw:?}"
        );
    }

    #[test]
    fn paths_are_normalized() {
        check("secret/key", "secret/key");
        check("./secret/key", "secret/key");
        check(" secret/key ", "secret/key");
        check("secret//key", "secret/key");
        check("a/../secret/./key", "secret/key");
        check("secret/key/", "secret/key");
        check("/ws/secret/key", "secret/key");
        check("/ws", ".");
        check(".", ".");
        check("", ".");
        check("../x", "../x");
        check("a/../../x", "../x");
        check("/etc/../etc/passwd", "/etc/passwd");
        check("/wsx/a", "/wsx/a");
    }

    #[test]
    fn subjects_come_from_the_main_argument() {
        let ws = Some(Path::new("/ws"));
        let p = PermissionSubjects::from_parameters(&serde_json::json!({"path": "./a//b"}), ws);
        assert_eq!(p.subjects, ["a/b"]);
        assert!(p.complete);
        let c = PermissionSubjects::from_parameters(
            &serde_json::json!({"command": "  rm \t -rf   x "}),
            ws,
        );
        assert_eq!(c.subjects, ["rm -rf x"]);
        let n = PermissionSubjects::from_parameters(&serde_json::json!({"other": 1}), ws);
        assert!(n.is_empty() && !n.complete);
    }
}

setters!(ToolPermissionSettings {
    with_tool_id => tool_id: String,
    with_always_allow => always_allow: bool,
    with_always_deny => always_deny: bool,
    with_allowed_patterns => allowed_patterns: Vec<String>,
    with_denied_patterns => denied_patterns: Vec<String>,
});

setters!(PermissionSubjects {
    with_subjects => subjects: Vec<String>,
    with_deny_only => deny_only: Vec<String>,
    with_complete => complete: bool,
});
