//! Text for a person, built apart from the printing: diffs to approve, a short preview of
//! what a tool gave, the files a request changed. Everything from the model, a file or a
//! command passes through [`shown`] first.

use crate::terminal::shown;
use anstyle::{AnsiColor, Style};
use core_models::{ApprovalRequestEvent, FileChange, RiskLevel, ToolResultEvent};
use serde_json::Value;

/// Lines of a diff shown at the approval prompt before "d shows the rest".
pub(crate) const DIFF_PREVIEW_LINES: usize = 40;
/// Lines of output shown from the start and from the end of a tool's output.
const HEAD: usize = 4;
const TAIL: usize = 2;

/// Paint `text` with `style` when colour is on.
pub(crate) fn paint(colour: bool, style: Style, text: &str) -> String {
    if colour {
        format!("{style}{text}{style:#}")
    } else {
        text.to_string()
    }
}

fn fg(colour: AnsiColor) -> Style {
    Style::new().fg_color(Some(colour.into()))
}

/// What the change does to the file, in words: whether it overwrites an existing file.
pub(crate) fn change_headline(change: &FileChange) -> String {
    let path = shown(&change.path, false);
    let counts = format!("+{} −{}", change.lines_added, change.lines_removed);
    if change.exists {
        format!("overwrites {path}, an existing file ({counts})")
    } else {
        format!("creates {path}, a new file ({counts})")
    }
}

/// The diff's lines, coloured, indented by `indent`; at most `max` lines (all with
/// `None`), then how many were left out.
pub(crate) fn diff_lines(
    change: &FileChange,
    colour: bool,
    indent: &str,
    max: Option<usize>,
) -> Vec<String> {
    let lines: Vec<&str> = change.diff.lines().collect();
    let keep = max.unwrap_or(lines.len()).min(lines.len());
    let mut out: Vec<String> = lines[..keep]
        .iter()
        .map(|line| {
            let text = shown(line, false);
            let style = if line.starts_with("+++") || line.starts_with("---") {
                Style::new().bold()
            } else if line.starts_with('+') {
                fg(AnsiColor::Green)
            } else if line.starts_with('-') {
                fg(AnsiColor::Red)
            } else if line.starts_with("@@") {
                fg(AnsiColor::Cyan)
            } else {
                Style::new()
            };
            format!("{indent}{}", paint(colour, style, &text))
        })
        .collect();
    if keep < lines.len() {
        out.push(format!(
            "{indent}{}",
            paint(
                colour,
                Style::new().dimmed(),
                &format!(
                    "… {} more lines (d shows the whole diff)",
                    lines.len() - keep
                )
            )
        ));
    }
    if let Some(note) = &change.note {
        out.push(format!(
            "{indent}{}",
            paint(
                colour,
                Style::new().dimmed(),
                &format!("({})", shown(note, false))
            )
        ));
    }
    out
}

/// The first `HEAD` and last `TAIL` lines of `text` (all of them when `full`), and how
/// many were left out between.
fn head_tail(text: &str, full: bool) -> (Vec<String>, usize) {
    let lines: Vec<&str> = text.lines().collect();
    if full || lines.len() <= HEAD + TAIL + 1 {
        return (
            lines.iter().map(|l| shown(l, false).into_owned()).collect(),
            0,
        );
    }
    let mut out: Vec<String> = lines[..HEAD]
        .iter()
        .map(|l| shown(l, false).into_owned())
        .collect();
    let hidden = lines.len() - HEAD - TAIL;
    out.push(format!("… {hidden} more lines"));
    out.extend(
        lines[lines.len() - TAIL..]
            .iter()
            .map(|l| shown(l, false).into_owned()),
    );
    (out, hidden)
}

/// A short preview of what a tool gave: a command's stdout and stderr (head and tail),
/// lines read, matches found, entries listed. Lines without indentation or colour;
/// `full` shows outputs whole.
pub(crate) fn output_preview(r: &ToolResultEvent, full: bool) -> Vec<String> {
    let data = r.result.data.as_ref();
    let number = |key: &str| data.and_then(|d| d.get(key)).and_then(Value::as_u64);
    let text = |key: &str| data.and_then(|d| d.get(key)).and_then(Value::as_str);
    let mut out = Vec::new();
    match r.tool_id.as_str() {
        // A failed call found, read and listed nothing: its error says what went wrong.
        "read_file" | "search_files" | "list_dir" if !r.result.success => {}
        "run_command" => {
            for (name, stream) in [("stdout", text("stdout")), ("stderr", text("stderr"))] {
                let Some(stream) = stream.filter(|s| !s.trim().is_empty()) else {
                    continue;
                };
                let (lines, _) = head_tail(stream, full);
                out.push(format!("{name}:"));
                out.extend(lines.into_iter().map(|l| format!("  {l}")));
            }
        }
        "read_file" => match (number("start_line"), number("end_line")) {
            // A range: the lines read, of the file's lines.
            (Some(first), Some(last)) => {
                let total = number("total_lines").unwrap_or(last);
                out.push(if first == last {
                    format!("read line {first} of {total}")
                } else {
                    format!("read lines {first}-{last} of {total}")
                });
            }
            _ => {
                if let Some(n) = number("lines") {
                    out.push(format!("read {n} line{}", if n == 1 { "" } else { "s" }));
                }
            }
        },
        "search_files" => {
            let matches = number("matches").unwrap_or(0);
            let files = number("files").unwrap_or(0);
            out.push(format!(
                "{matches} match{} in {files} file{}",
                if matches == 1 { "" } else { "es" },
                if files == 1 { "" } else { "s" }
            ));
        }
        "list_dir" => {
            let n = number("entries").unwrap_or(0);
            out.push(format!("{n} entr{}", if n == 1 { "y" } else { "ies" }));
        }
        "write_file" | "edit_file" => {}
        _ if r.result.success => out.extend(head_tail(&r.result.content, full).0),
        _ => {}
    }
    // A failed command's report (what it printed) is in the content.
    if !r.result.success && r.tool_id == "run_command" && out.is_empty() {
        out.extend(head_tail(&r.result.content, full).0);
    }
    out
}

/// `risk` in words ("medium risk"), coloured by how high it is when colour is on.
pub(crate) fn risk(colour: bool, risk: RiskLevel) -> String {
    let hue = match risk {
        RiskLevel::Safe => AnsiColor::Green,
        RiskLevel::Low | RiskLevel::Medium => AnsiColor::Yellow,
        RiskLevel::High | RiskLevel::Critical => AnsiColor::Red,
    };
    paint(colour, fg(hue), &format!("{risk} risk"))
}

/// Longest note of how a grammar held the call shown at the prompt.
const HELD_SHOWN: usize = 60;

/// The approval prompt's text for `a`, one entry a line: the question (what the call
/// does, its tool and its risk), the command, the event's details each once (the tool
/// is in the question, the command on its own line, the parameters left out when the
/// lines above show them all or a diff shows the change), why it is rated so, the diff,
/// the warnings in one line, why a person is asked, and how a grammar held the call in
/// a few words (the event holds the whole note).
pub(crate) fn approval_prompt(a: &ApprovalRequestEvent, colour: bool) -> Vec<String> {
    let high = a.risk_level >= RiskLevel::High;
    let mut out = vec![format!(
        "{} {} ({}, {}{})",
        paint(colour, Style::new().bold(), "?"),
        shown(&a.summary, false),
        shown(&a.request.tool_id, false),
        risk(colour, a.risk_level),
        if high { ": review it carefully" } else { "" }
    )];
    let params = &a.request.parameters;
    let command = params.get("command").and_then(Value::as_str);
    if let Some(command) = command {
        let line = format!("$ {}", shown(command, false));
        out.push(format!("    {}", paint(colour, Style::new().bold(), &line)));
    }
    let rated = format!("Rated {}: ", a.risk_level);
    for d in &a.details {
        let skip = d.starts_with("Tool: ")
            || (command.is_some() && d.starts_with("Command: "))
            || (d.starts_with("Parameters: ") && (a.change.is_some() || main_only(params)));
        if skip {
            continue;
        }
        let line = match d.strip_prefix(&rated) {
            Some(why) => format!("Why: {why}"),
            None => d.clone(),
        };
        out.push(format!("    {}", shown(&line, false)));
    }
    let yellow = fg(AnsiColor::Yellow);
    if let Some(change) = &a.change {
        let headline = change_headline(change);
        let headline = if change.exists {
            paint(colour, yellow, &format!("⚠ {headline}"))
        } else {
            headline
        };
        out.push(format!("    {headline}"));
        out.extend(diff_lines(change, colour, "    ", Some(DIFF_PREVIEW_LINES)));
    }
    // The rating is in the question already.
    let warnings: Vec<String> = a
        .warnings
        .iter()
        .filter(|w| !w.starts_with("This call is rated "))
        .map(|w| shown(w, false).into_owned())
        .collect();
    if !warnings.is_empty() {
        let line = format!("⚠ {}", warnings.join(" · "));
        out.push(format!("    {}", paint(colour, yellow, &line)));
    }
    if let Some(why) = &a.must_ask {
        out.push(format!("    Asked because: {}", shown(why, false)));
    }
    if let Some(held) = &a.request.held {
        out.push(format!("    Held: {}", held_briefly(held)));
    }
    out
}

/// Whether every parameter is a main argument given as text: each has a line of the
/// details of its own, and the parameters' JSON says nothing more.
fn main_only(params: &Value) -> bool {
    params.as_object().is_some_and(|o| {
        o.iter()
            .all(|(k, v)| v.is_string() && core_models::MAIN_ARGUMENT_KEYS.contains(&k.as_str()))
    })
}

/// How a grammar held the call, in a few words: the note up to its first colon, at most
/// [`HELD_SHOWN`] characters.
fn held_briefly(held: &str) -> String {
    let first = held.split(':').next().unwrap_or(held).trim();
    let mut brief: String = first.chars().take(HELD_SHOWN).collect();
    if first.chars().count() > HELD_SHOWN {
        brief.push('…');
    }
    shown(&brief, false).into_owned()
}

/// What a successful call did to a file, for the summary of files changed: the path and
/// "created" or "edited".
pub(crate) fn file_changed(r: &ToolResultEvent) -> Option<(String, &'static str)> {
    if !r.result.success {
        return None;
    }
    let data = r.result.data.as_ref()?;
    let path = data.get("path")?.as_str()?.to_string();
    match r.tool_id.as_str() {
        "write_file" if data.get("created").and_then(Value::as_bool) == Some(true) => {
            Some((path, "created"))
        }
        "write_file" => Some((path, "overwritten")),
        "edit_file" => Some((path, "edited")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core_models::{ToolCallRequest, ToolResult};
    use serde_json::json;

    fn result(tool: &str, result: ToolResult) -> ToolResultEvent {
        let call = ToolCallRequest::new(tool, json!({}));
        ToolResultEvent::create(uuid::Uuid::nil(), &call, result, Default::default(), 1)
    }

    #[test]
    fn command_output_is_previewed_head_and_tail() {
        let stdout: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let r = result(
            "run_command",
            ToolResult::success_with_data(
                "exit code 0",
                json!({"stdout": stdout, "stderr": "warning: x\n"}),
            ),
        );
        let lines = output_preview(&r, false);
        assert_eq!(lines[0], "stdout:");
        assert_eq!(lines[1], "  line 1");
        assert!(
            lines.contains(&"  … 14 more lines".to_string()),
            "{lines:?}"
        );
        assert!(lines.contains(&"  line 20".to_string()), "{lines:?}");
        assert_eq!(&lines[lines.len() - 2..], ["stderr:", "  warning: x"]);
        assert_eq!(output_preview(&r, true).len(), 20 + 3);
    }

    #[test]
    fn reads_searches_and_changes_are_counted() {
        let r = result(
            "read_file",
            ToolResult::success_with_data("…", json!({"lines": 1})),
        );
        assert_eq!(output_preview(&r, false), ["read 1 line"]);
        let r = result(
            "search_files",
            ToolResult::success_with_data("…", json!({"matches": 3, "files": 1})),
        );
        assert_eq!(output_preview(&r, false), ["3 matches in 1 file"]);
        let r = result(
            "write_file",
            ToolResult::success_with_data("…", json!({"path": "a.txt", "created": true})),
        );
        assert_eq!(file_changed(&r), Some(("a.txt".into(), "created")));
        let r = result("edit_file", ToolResult::failed("no"));
        assert_eq!(file_changed(&r), None);
    }

    #[test]
    fn a_range_of_lines_is_counted_as_the_lines_read() {
        let range = |start: u64, end: u64| {
            let data = json!({"path": "notes.txt", "start_line": start, "end_line": end,
                              "total_lines": 4, "cut_lines": [], "truncated": false});
            result("read_file", ToolResult::success_with_data("…", data))
        };
        assert_eq!(output_preview(&range(1, 1), false), ["read line 1 of 4"]);
        assert_eq!(output_preview(&range(2, 4), false), ["read lines 2-4 of 4"]);
    }

    #[test]
    fn a_failed_call_shows_no_count() {
        for tool in ["search_files", "list_dir", "read_file"] {
            let r = result(tool, ToolResult::failed("Validation failed: pattern …"));
            assert!(output_preview(&r, false).is_empty(), "{tool}");
        }
    }

    #[test]
    fn the_approval_prompt_says_how_a_call_was_held_in_one_short_line() {
        let mut call = ToolCallRequest::new("read_file", json!({"path": "notes.txt"}));
        call.execution_summary = "Read notes.txt".into();
        call.risk_level = RiskLevel::Medium;
        call.held = Some(
            "written under a grammar: the model chose read_file among 3 options (read_file, \
             list_dir, answer), twice (a step that changes something is asked two ways), \
             then wrote its arguments under read_file's schema, its path held to the \
             workspace's existing names"
                .into(),
        );
        let (a, _rx) = ApprovalRequestEvent::create(
            uuid::Uuid::nil(),
            call,
            std::time::Duration::from_secs(60),
            1,
        );
        let a = a.with_details(vec![
            "Tool: Read File (read_file)".into(),
            "Path: notes.txt".into(),
            "Parameters: {\"path\":\"notes.txt\"}".into(),
            "Rated medium: outside the usual".into(),
        ]);
        let lines = approval_prompt(&a, false);
        assert_eq!(
            lines,
            [
                "? Read notes.txt (read_file, medium risk)",
                "    Path: notes.txt",
                "    Why: outside the usual",
                "    Held: written under a grammar",
            ]
        );
    }

    #[test]
    fn diffs_are_cut_and_escaped() {
        let change = FileChange {
            path: "a\u{1b}[2Jb.txt".into(),
            exists: true,
            diff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\u{1b}[8m\n".into(),
            lines_added: 1,
            lines_removed: 1,
            note: None,
        };
        assert_eq!(
            change_headline(&change),
            "overwrites a\\x1b[2Jb.txt, an existing file (+1 −1)"
        );
        let lines = diff_lines(&change, false, "  ", Some(3));
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[3], "  … 2 more lines (d shows the whole diff)");
        let all = diff_lines(&change, false, "", None);
        assert_eq!(all[4], "+new\\x1b[8m");
    }
}
