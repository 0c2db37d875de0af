//! `search_files`: a regular expression across the workspace, with ripgrep's crates.

use crate::lines::{CappedLines, LINE_CAP};
use crate::offload::blocking;
use crate::params::{assess_path, positive, verdict};
use crate::walk::{secrets_note, walker};
use crate::workspace::Workspace;
use async_trait::async_trait;
use core_models::{
    CallAssessment, CancellationToken, RiskLevel, Tool, ToolCategory, ToolDefinition,
    ToolExecutionContext, ToolResult, ToolValidationResult,
};
use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use sandbox::Launcher;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Most matching lines returned when the call does not say.
pub const SEARCH_DEFAULT_RESULTS: u64 = 100;
/// Most matching lines a call may ask for.
pub const SEARCH_MAX_RESULTS: u64 = 1_000;
/// Most characters of a matching line shown; longer ones are cut around the match.
const SHOWN_CAP: usize = 300;

/// The longest pattern searched for, in bytes: a search is a few words or a short
/// expression, and a long alternation compiles to a matcher of its size many times over.
pub const PATTERN_MAX_BYTES: usize = 4 * 1024;

/// Most bytes a pattern's compiled matcher may take (grep-regex allows 100 MiB): a short
/// counted repetition (`(?:\w{100}){100}`) compiles past it and is refused with a clear
/// error instead of taking hundreds of megabytes.
pub const PATTERN_COMPILED_MAX_BYTES: usize = 4 << 20;

/// Most bytes of the lazy DFA's cache of one search (grep-regex allows 1000 MiB); a
/// pattern that fills it falls back to slower matching, in the same memory.
pub const PATTERN_CACHE_MAX_BYTES: usize = 8 << 20;

/// Searches that run at once in one process: calls beyond it wait their turn, so that
/// parallel searches together stay under `SEARCHES_AT_ONCE` × (compiled + cache) bytes.
pub const SEARCHES_AT_ONCE: usize = 2;

static SEARCHES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(SEARCHES_AT_ONCE);

/// Searches file contents with a regular expression, honouring `.gitignore` and skipping
/// binary files. Files are read a line at a time: only the first 64 KiB of a longer line
/// are searched (a match there is still found, and the line says it was cut), so memory
/// stays bounded whatever the files hold. Secret locations (those of its launcher's
/// sandbox settings) are refused as the path, and left out of the search.
#[derive(Debug)]
pub struct SearchFiles {
    definition: ToolDefinition,
    launcher: Arc<Launcher>,
}

impl Default for SearchFiles {
    fn default() -> Self {
        Self::new(Arc::new(Launcher::default()))
    }
}

impl SearchFiles {
    /// `search_files`, keeping from the model the secret locations `launcher`'s settings
    /// keep from commands.
    pub fn new(launcher: Arc<Launcher>) -> Self {
        SearchFiles {
            launcher,
            definition: ToolDefinition::new(
                "search_files",
                "Search Files",
                "Search the files for a word or regular expression. The matching lines are returned as path:line: text. Files ignored by .gitignore and binary files are skipped.",
            )
            .with_example("Find the files that mention invoices.", json!({"pattern": "invoices"}))
            .with_example("Where is the word timeout used?", json!({"pattern": "timeout"}))
            .with_example("Which file contains the phrase lorem ipsum?", json!({"pattern": "lorem ipsum"}))
            .with_category(ToolCategory::Search)
            .with_risk(RiskLevel::Safe)
            .with_schema(json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)"},
                    "path": {"type": "string", "description": "Folder or file relative to the workspace (default \".\")"},
                    "glob": {"type": "string", "description": "Only files whose name matches this glob (leave it out to search every file)"},
                    "case_insensitive": {"type": "boolean", "description": "Ignore case (default: only when the pattern has no capital letter)"},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX_RESULTS}
                },
                "required": ["pattern"]
            }))
            .with_details(["case_insensitive", "max_results"])
            .requiring_workspace(),
        }
    }
}

#[async_trait]
impl Tool for SearchFiles {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    crate::choices::path_argument_choices!(Any);

    fn validate(&self, params: &Value) -> ToolValidationResult {
        let mut errors = Vec::new();
        match params.get("pattern").and_then(Value::as_str) {
            Some(p) if !p.is_empty() => {
                if let Err(e) = matcher(p, None) {
                    errors.push(format!("pattern {e}"));
                }
            }
            _ => errors.push("pattern is required (a non-empty string)".to_string()),
        }
        for key in ["path", "glob"] {
            if params
                .get(key)
                .is_some_and(|v| !v.is_string() && !v.is_null())
            {
                errors.push(format!("{key} must be a string"));
            }
        }
        if let Some(glob) = params.get("glob").and_then(Value::as_str) {
            if let Err(e) = globset::Glob::new(glob) {
                errors.push(format!("glob is not valid: {e}"));
            }
        }
        if params
            .get("case_insensitive")
            .is_some_and(|v| !v.is_boolean() && !v.is_null())
        {
            errors.push("case_insensitive must be true or false".to_string());
        }
        if let Some(n) = positive(params, "max_results", &mut errors) {
            if n > SEARCH_MAX_RESULTS {
                errors.push(format!("max_results must be at most {SEARCH_MAX_RESULTS}"));
            }
        }
        verdict(errors)
    }

    fn execution_summary(&self, params: &Value) -> String {
        let pattern = params.get("pattern").and_then(Value::as_str).unwrap_or("?");
        let path = params.get("path").and_then(Value::as_str).unwrap_or(".");
        match params.get("glob").and_then(Value::as_str) {
            Some(glob) => format!("Search {path} ({glob}) for /{pattern}/"),
            None => format!("Search {path} for /{pattern}/"),
        }
    }

    fn assess(&self, params: &Value, workspace: Option<&Path>) -> CallAssessment {
        assess_path(params, workspace, |_| self.effective_risk_level(params))
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        let params = context.parameters.clone();
        let token = context.cancellation.clone();
        let _turn = tokio::select! {
            permit = SEARCHES.acquire() => permit,
            () = token.cancelled() => return ToolResult::failed("Cancelled"),
        };
        blocking(&context, &self.launcher, move |workspace| {
            search(workspace, &params, &token)
        })
        .await
    }
}

/// The matcher for `pattern`: case ignored as `case_insensitive` says, or — not given —
/// when the pattern has no capital letter ("smart case": `budget` finds "Budget", `TODO`
/// only "TODO").
/// Bounded: at most [`PATTERN_MAX_BYTES`] long, compiled within
/// [`PATTERN_COMPILED_MAX_BYTES`] with a cache of [`PATTERN_CACHE_MAX_BYTES`]; the error
/// says what is wrong in words (it follows "pattern ").
fn matcher(pattern: &str, case_insensitive: Option<bool>) -> Result<RegexMatcher, String> {
    if pattern.len() > PATTERN_MAX_BYTES {
        return Err(format!(
            "is {} bytes long; at most {PATTERN_MAX_BYTES} are searched for",
            pattern.len()
        ));
    }
    let mut builder = RegexMatcherBuilder::new();
    builder
        .size_limit(PATTERN_COMPILED_MAX_BYTES)
        .dfa_size_limit(PATTERN_CACHE_MAX_BYTES);
    match case_insensitive {
        Some(ignore) => builder.case_insensitive(ignore),
        None => builder.case_smart(true),
    };
    builder.build(pattern).map_err(|e| {
        let why = e.to_string();
        if why.contains("exceeds size limit") || why.contains("size limit") {
            format!(
                "compiles too big (over {} MiB): write a simpler expression, or search \
                 for plain words",
                PATTERN_COMPILED_MAX_BYTES >> 20
            )
        } else {
            format!(
                "is not a valid regular expression: {}",
                syntax_error(pattern, &why)
            )
        }
    })
}

/// Why `pattern` is not a regular expression, in one line: the reason and the character
/// where it is ("unclosed group at character 1 of \"(abc\""), with a word on escaping;
/// else grep-regex's own text `why` (several lines) made one.
fn syntax_error(pattern: &str, why: &str) -> String {
    let found = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern);
    let (reason, offset) = match &found {
        Err(regex_syntax::Error::Parse(e)) => (e.kind().to_string(), e.span().start.offset),
        Err(regex_syntax::Error::Translate(e)) => (e.kind().to_string(), e.span().start.offset),
        _ => {
            let lines: Vec<&str> = why
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            return lines
                .iter()
                .rev()
                .find_map(|l| l.strip_prefix("error: "))
                .map_or_else(|| lines.join(" "), str::to_string);
        }
    };
    let at = pattern
        .get(..offset)
        .map_or(1, |before| before.chars().count() + 1);
    let of = if pattern.chars().count() <= 80 {
        format!(" of {pattern:?}")
    } else {
        String::new()
    };
    format!(
        "{reason} at character {at}{of} (a character such as ( or * is written \\( or \\* \
         to search for it)"
    )
}

fn search(workspace: &Workspace, params: &Value, token: &CancellationToken) -> ToolResult {
    let pattern = params
        .get("pattern")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let path = params.get("path").and_then(Value::as_str).unwrap_or(".");
    let limit = params
        .get("max_results")
        .and_then(Value::as_u64)
        .unwrap_or(SEARCH_DEFAULT_RESULTS)
        .clamp(1, SEARCH_MAX_RESULTS);
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let matcher = match matcher(
        pattern,
        params.get("case_insensitive").and_then(Value::as_bool),
    ) {
        Ok(m) => m,
        Err(e) => return ToolResult::failed(format!("pattern {e}")),
    };
    let glob = match params.get("glob").and_then(Value::as_str) {
        Some(g) => match globset::Glob::new(g) {
            Ok(g) => Some(g.compile_matcher()),
            Err(e) => return ToolResult::failed(format!("invalid glob: {e}")),
        },
        None => None,
    };
    let root = match workspace.resolve_existing(path) {
        Ok(r) => r,
        Err(e) => return ToolResult::failed(e.to_string()),
    };
    let mut lines: Vec<String> = Vec::new();
    let mut files_with_matches = 0usize;
    let mut searched = 0usize;
    let mut truncated = false;
    let mut cut_lines = 0usize;
    let secrets = Arc::new(AtomicUsize::new(0));
    for entry in walker(workspace, &root, &secrets).build() {
        if token.is_cancelled() {
            return ToolResult::failed("Cancelled");
        }
        let Ok(entry) = entry else { continue };
        // Only regular files: FIFOs, sockets and devices are never opened.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Some(glob) = &glob {
            if !glob.is_match(entry.file_name()) {
                continue;
            }
        }
        let rel = workspace.relative(entry.path());
        let Ok(relative) = entry.path().strip_prefix(workspace.root()) else {
            continue;
        };
        let file = match workspace.open_file_beneath(&rel, relative) {
            Ok(f) => f,
            Err(e) => {
                tracing::debug!(file = %rel, error = %e, "search_files skipped a file");
                continue;
            }
        };
        searched += 1;
        let room = limit - lines.len();
        match search_file(&matcher, file, &rel, room, token) {
            Ok(found) => {
                if !found.lines.is_empty() {
                    files_with_matches += 1;
                }
                cut_lines += found.cut;
                truncated = found.more;
                lines.extend(found.lines);
            }
            Err(e) => tracing::debug!(file = %rel, error = %e, "search_files skipped a file"),
        }
        if truncated {
            break;
        }
    }
    let mut text = if lines.is_empty() {
        // Say what was searched: a model that gave a glob or a case it did not mean sees
        // why nothing matched.
        let glob = params.get("glob").and_then(Value::as_str);
        let which = match glob {
            Some(g) if searched == 0 => format!(" (no file's name matches the glob {g})"),
            Some(g) => format!(" (searched {searched} file(s) whose name matches {g})"),
            None => format!(" (searched {searched} file(s))"),
        };
        let case = match params.get("case_insensitive").and_then(Value::as_bool) {
            Some(false) => ", case-sensitive",
            _ => "",
        };
        format!("no match for /{pattern}/ in {path}{which}{case}")
    } else {
        lines.join("\n")
    };
    if truncated {
        text.push_str(&format!(
            "\n(only the first {limit} matching lines are shown)"
        ));
    }
    if cut_lines > 0 {
        text.push_str(&format!(
            "\n({cut_lines} line(s) longer than {} KiB were searched only in their first {} KiB)",
            LINE_CAP / 1024,
            LINE_CAP / 1024
        ));
    }
    let secrets = secrets.load(Ordering::Relaxed);
    text.push_str(&secrets_note(secrets));
    ToolResult::success_with_data(
        text,
        json!({"pattern": pattern, "matches": lines.len(), "files": files_with_matches, "truncated": truncated, "cut_lines": cut_lines, "secret_locations_left_out": secrets}),
    )
}

/// What one file gave.
struct Found {
    /// Its matching lines, as `path:line: text`.
    lines: Vec<String>,
    /// How many of its lines were longer than the cap.
    cut: usize,
    /// Whether it had more matching lines than there was room for.
    more: bool,
}

/// The matching lines of one file, at most `room` of them; none for a binary file (a NUL
/// byte anywhere in it).
fn search_file(
    matcher: &RegexMatcher,
    file: std::fs::File,
    rel: &str,
    room: usize,
    token: &CancellationToken,
) -> std::io::Result<Found> {
    let mut reader = CappedLines::new(std::io::BufReader::new(file), LINE_CAP);
    let mut found = Found {
        lines: Vec::new(),
        cut: 0,
        more: false,
    };
    while let Some(line) = reader.next_line()? {
        if line.nul {
            return Ok(Found {
                lines: Vec::new(),
                cut: 0,
                more: false,
            });
        }
        if line.is_cut() {
            found.cut += 1;
        }
        if line.number % 4096 == 0 && token.is_cancelled() {
            break;
        }
        let text = line.text(true);
        let Ok(Some(at)) = matcher.find(text.as_bytes()) else {
            continue;
        };
        if found.lines.len() >= room {
            found.more = true;
            break;
        }
        let mut shown = excerpt(&text, at.start(), at.end());
        if line.is_cut() {
            shown.push_str(&format!(
                " (line cut: only the first {} of its {} bytes were searched)",
                line.kept.len(),
                line.len
            ));
        }
        found.lines.push(format!("{rel}:{}: {shown}", line.number));
    }
    Ok(found)
}

/// At most [`SHOWN_CAP`] characters of `line`: its start, or a window around the match
/// `start..end` when the match lies further in; `…` marks what is left out.
fn excerpt(line: &str, start: usize, end: usize) -> String {
    let chars_to = |byte: usize| line[..byte].chars().count();
    if line.chars().nth(SHOWN_CAP).is_none() {
        return line.to_string();
    }
    let (match_start, match_end) = (chars_to(start), chars_to(end));
    let from = if match_end <= SHOWN_CAP {
        0
    } else {
        match_start.saturating_sub(SHOWN_CAP / 3)
    };
    let window: String = line.chars().skip(from).take(SHOWN_CAP).collect();
    let more_after = line.chars().nth(from + SHOWN_CAP).is_some();
    format!(
        "{}{window}{}",
        if from > 0 { "…" } else { "" },
        if more_after { "…" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_pattern_is_explained_in_one_line() {
        let tool = SearchFiles::default();
        for (pattern, says) in [
            ("(abc", "unclosed group"),
            ("foo)", "unopened group"),
            ("*abc", "repetition operator missing expression"),
            ("a{2,1}", "invalid repetition count range"),
            ("[z-a]", "invalid character class range"),
        ] {
            let v = tool.validate(&json!({ "pattern": pattern }));
            assert!(!v.is_valid, "{pattern}");
            let error = &v.errors[0];
            assert!(!error.contains('\n'), "{pattern}: {error:?}");
            assert!(
                error.starts_with("pattern is not a valid regular expression: "),
                "{error}"
            );
            assert!(error.contains(says), "{pattern}: {error}");
            assert!(error.contains("at character"), "{pattern}: {error}");
        }
        let v = tool.validate(&json!({ "pattern": "(abc" }));
        assert_eq!(
            v.errors,
            [
                "pattern is not a valid regular expression: unclosed group at character 1 \
              of \"(abc\" (a character such as ( or * is written \\( or \\* to search for it)"
            ]
        );
    }
}
