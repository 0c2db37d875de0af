//! Which remembered decisions a resumed session restores: only what a session may hold.
//!
//! AIntern writes a `remembered` record only for a decision remembered for the session
//! (`remember_for_session`, never `remember_for_tool`). A record that says anything else
//! was not written by it, and replaying it as written could widen what runs without
//! asking — a "remember for this tool" decision would be saved into `permissions.json` as
//! an always-allow for every workspace. So each record is checked, and the decision
//! replayed is built anew from the few fields a session rule has (approved or denied, the
//! tool, the pattern), always scoped to the session. A record that fails a check is
//! ignored with a note: never a failure, never a wider permission.

use core_models::{ApprovalDecision, RememberScope, ToolCallRequest};

/// Longest tool id a record may name (an MCP tool's `SERVER__tool` included).
const MAX_TOOL_ID: usize = 256;

/// Longest pattern a record may carry, in characters.
pub(crate) const MAX_PATTERN: usize = 1024;

/// Notes about ignored records shown one by one; past them, a count.
const NOTES_SHOWN: usize = 5;

/// Whether `id` is a well-formed tool id: letters, digits, `_`, `-` and `.`, 1 to 256 of
/// them (what the built-in tools and MCP tools' `SERVER__tool` ids are made of).
pub(crate) fn well_formed_tool_id(id: &str) -> bool {
    (1..=MAX_TOOL_ID).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The decision to replay for `request`'s record, or why the record is ignored. `known`
/// says whether a tool id is one of the session's tools now.
pub(crate) fn replayable(
    request: &ToolCallRequest,
    decision: &ApprovalDecision,
    known: &dyn Fn(&str) -> bool,
) -> Result<ApprovalDecision, String> {
    if decision.remember_for_tool {
        return Err(
            "it says \"remember for this tool\", which a session never holds (only `aintern permissions` sets that)"
                .into(),
        );
    }
    if !decision.remember_for_session {
        return Err("it is not remembered for the session".into());
    }
    let id = &request.tool_id;
    if !well_formed_tool_id(id) {
        return Err("its tool name is not a well-formed tool id".into());
    }
    if !known(id) {
        return Err(format!("no tool {id} is available in this session"));
    }
    let base = if decision.approved {
        ApprovalDecision::approve()
    } else {
        ApprovalDecision::deny(None)
    };
    let mut replayed = base.remember(RememberScope::Session);
    if let Some(pattern) = &decision.remember_pattern {
        if pattern.chars().count() > MAX_PATTERN {
            return Err(format!(
                "its pattern for {id} is longer than {MAX_PATTERN} characters"
            ));
        }
        if pattern.chars().any(char::is_control) {
            return Err(format!("its pattern for {id} holds control characters"));
        }
        if let Err(e) = globset::Glob::new(pattern) {
            return Err(format!("its pattern for {id} is not a valid pattern ({e})"));
        }
        replayed = replayed.with_pattern(pattern.clone());
    }
    Ok(replayed)
}

/// Notes about ignored records, `why` each: the first few, then how many more.
pub(crate) fn ignored_notes(why: &[String]) -> Vec<String> {
    let mut notes: Vec<String> = why
        .iter()
        .take(NOTES_SHOWN)
        .map(|w| format!("a decision remembered in the session file was ignored: {w}"))
        .collect();
    match why.len().saturating_sub(NOTES_SHOWN) {
        0 => {}
        1 => notes.push("1 more remembered decision was ignored".into()),
        more => notes.push(format!("{more} more remembered decisions were ignored")),
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(tool: &str) -> ToolCallRequest {
        ToolCallRequest::new(tool, json!({"command": "ls"}))
    }

    fn session() -> ApprovalDecision {
        ApprovalDecision::approve().remember(RememberScope::Session)
    }

    fn known(id: &str) -> bool {
        matches!(id, "run_command" | "files__write_file")
    }

    #[test]
    fn only_session_scoped_decisions_are_replayed_and_built_anew() {
        let written = session()
            .with_pattern("git *")
            .with_modified_parameters(json!({"command": "rm -rf ~"}));
        let replayed = replayable(&request("run_command"), &written, &known).unwrap();
        assert_eq!(replayed.remember_scope(), RememberScope::Session);
        assert!(replayed.approved && !replayed.remember_for_tool);
        assert_eq!(replayed.remember_pattern.as_deref(), Some("git *"));
        assert_eq!(
            replayed.modified_parameters, None,
            "only a session rule's fields"
        );
        let denied = ApprovalDecision::deny(Some("no".into())).remember(RememberScope::Session);
        let replayed = replayable(&request("files__write_file"), &denied, &known).unwrap();
        assert!(!replayed.approved && replayed.remember_for_session);

        // "Remember for this tool", alone or with the session flag too.
        let tool = ApprovalDecision::approve().remember(RememberScope::Tool);
        let mut both = tool.clone();
        both.remember_for_session = true;
        for decision in [tool, both] {
            let why = replayable(&request("run_command"), &decision, &known).unwrap_err();
            assert!(why.contains("remember for this tool"), "{why}");
        }
        let plain = ApprovalDecision::approve();
        let why = replayable(&request("run_command"), &plain, &known).unwrap_err();
        assert!(why.contains("not remembered for the session"), "{why}");
    }

    #[test]
    fn tool_ids_must_be_well_formed_and_known() {
        for bad in [
            "",
            "run command",
            "run_command\u{1b}[2J",
            "r\u{200b}m",
            "../../x",
            &"x".repeat(257),
        ] {
            let why = replayable(&request(bad), &session(), &|_| true).unwrap_err();
            assert!(why.contains("not a well-formed tool id"), "{bad:?}: {why}");
        }
        let why = replayable(&request("write_file2"), &session(), &known).unwrap_err();
        assert!(why.contains("no tool write_file2"), "{why}");
        assert!(well_formed_tool_id(&"x".repeat(256)));
    }

    #[test]
    fn patterns_must_be_short_printable_and_valid() {
        let huge = session().with_pattern("a".repeat(MAX_PATTERN + 1));
        let why = replayable(&request("run_command"), &huge, &known).unwrap_err();
        assert!(why.contains("longer than 1024 characters"), "{why}");
        let control = session().with_pattern("ls\n*");
        let why = replayable(&request("run_command"), &control, &known).unwrap_err();
        assert!(why.contains("control characters"), "{why}");
        let broken = session().with_pattern("src/[a-");
        let why = replayable(&request("run_command"), &broken, &known).unwrap_err();
        assert!(why.contains("not a valid pattern"), "{why}");
        let longest = session().with_pattern("a".repeat(MAX_PATTERN));
        assert!(replayable(&request("run_command"), &longest, &known).is_ok());
    }

    #[test]
    fn many_ignored_records_make_a_few_notes() {
        let why: Vec<String> = (0..8).map(|i| format!("reason {i}")).collect();
        let notes = ignored_notes(&why);
        assert_eq!(notes.len(), NOTES_SHOWN + 1);
        assert!(notes[0].ends_with("reason 0"));
        assert_eq!(notes[5], "3 more remembered decisions were ignored");
        assert!(ignored_notes(&[]).is_empty());
    }
}
