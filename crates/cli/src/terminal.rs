//! What a person sees: streamed text, dimmed thinking, a status line with a spinner, tool
//! calls with their risk, the approval prompt and a closing statistics line — or, with
//! `--json`, every event as one JSON line.
//!
//! Colour and the status line are used only when stdout is a terminal and `NO_COLOR` is
//! not set; the status line is drawn on stderr and only between lines of text, and is
//! always erased before anything else is written.

use crate::render;
use crate::state_view::StateView;
use anstyle::{AnsiColor, Style};
use core_models::{
    AgentEvent, AgentState, ApprovalRequestEvent, CompletionReason, MachineTransition, RiskLevel,
};
use std::io::{IsTerminal, Write};
use std::time::Duration;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Whether output to a terminal may be styled: `NO_COLOR` (any non-empty value) says no.
pub(crate) fn colour_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Prints events for a person, or as JSON lines.
pub(crate) struct Terminal {
    json: bool,
    colour: bool,
    /// Whether the status line may be drawn (stdout and stderr are terminals).
    live: bool,
    at_line_start: bool,
    thinking: bool,
    /// A reply's text ended (its completion event came): the text of the next reply
    /// (one asked for again, with no call between) starts on a line of its own.
    reply_ended: bool,
    /// Lines of the plan drawn last, when nothing was written after it (it is then
    /// redrawn in place).
    plan_lines: usize,
    /// The agent's state while a request is active.
    status: Option<AgentState>,
    status_shown: bool,
    frame: usize,
    /// Keys typed while a request runs, not yet entered (shown on the status line).
    typed: String,
    /// How far the model has read its prompt, while it reads it (on the status line).
    reading: Option<String>,
    /// Show tools' outputs whole instead of a preview.
    pub(crate) full_output: bool,
    /// The last tool's whole output (for `/output`).
    pub(crate) last_output: Option<(String, String)>,
    /// Files changed by the running request, in order, and how.
    changed: Vec<(String, &'static str)>,
    /// Files changed since the session started.
    pub(crate) changed_in_session: Vec<(String, &'static str)>,
    /// What a person reads goes to stderr: stdout carries a result of its own
    /// (`run --output-schema` prints the answer's JSON there).
    to_stderr: bool,
}

impl Terminal {
    /// A terminal printer; `json` prints events as JSON lines instead.
    pub(crate) fn new(json: bool) -> Self {
        let tty = std::io::stdout().is_terminal();
        Terminal {
            json,
            colour: !json && tty && colour_allowed(),
            live: !json && tty && std::io::stderr().is_terminal(),
            at_line_start: true,
            thinking: false,
            reply_ended: false,
            plan_lines: 0,
            status: None,
            status_shown: false,
            frame: 0,
            typed: String::new(),
            reading: None,
            full_output: false,
            last_output: None,
            changed: Vec::new(),
            changed_in_session: Vec::new(),
            to_stderr: false,
        }
    }

    /// Show everything on stderr from now on, keeping stdout for a result (no effect on
    /// JSON lines, which are the result).
    pub(crate) fn keep_stdout(&mut self) {
        if self.json {
            return;
        }
        self.to_stderr = true;
        self.colour = std::io::stderr().is_terminal() && colour_allowed();
    }

    /// Print `value` as one JSON line on stdout: the result of the request.
    pub(crate) fn result(&mut self, value: &serde_json::Value) {
        self.clear_status();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{value}");
        let _ = out.flush();
    }

    fn paint(&self, style: Style, text: &str) -> String {
        render::paint(self.colour, style, text)
    }

    fn risk(&self, risk: RiskLevel) -> String {
        render::risk(self.colour, risk)
    }

    fn clear_status(&mut self) {
        if self.status_shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.status_shown = false;
        }
    }

    /// Write raw text to stdout (the status line erased first).
    fn write(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.plan_lines = 0;
        self.clear_status();
        if self.to_stderr {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{text}");
            let _ = err.flush();
        } else {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{text}");
            let _ = out.flush();
        }
        self.at_line_start = text.ends_with('\n');
    }

    /// Write `text` as whole lines, starting on a fresh line.
    pub(crate) fn line(&mut self, text: &str) {
        let start = if self.at_line_start { "" } else { "\n" };
        self.write(&format!("{start}{text}\n"));
    }

    /// Write `event` as one JSON line, serialized straight into buffered stdout: an event
    /// may carry megabytes (a whole file to write), and no copy of its text is built.
    fn json_line(&mut self, event: &AgentEvent) {
        self.clear_status();
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        if !self.at_line_start {
            let _ = out.write_all(b"\n");
        }
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, LineSafe);
        if let Err(e) = serde::Serialize::serialize(event, &mut serializer) {
            if !e.is_io() {
                eprintln!("aintern: cannot print an event: {e}");
            }
        }
        // The line ends even after an error, so that the next event starts on its own line.
        let _ = out.write_all(b"\n");
        let _ = out.flush();
        self.at_line_start = true;
    }

    /// A message from aintern itself (dimmed).
    pub(crate) fn note(&mut self, text: &str) {
        if self.json {
            eprintln!("aintern: {text}");
        } else {
            let text = self.paint(Style::new().dimmed(), text);
            self.line(&text);
        }
    }

    /// Redraw the spinner (call about ten times a second).
    pub(crate) fn tick(&mut self) {
        self.frame = self.frame.wrapping_add(1);
        let Some(state) = self.status else { return };
        if !self.live || !self.at_line_start {
            return;
        }
        let mut text = match &self.reading {
            Some(reading) => format!("{} {reading}", state.icon()),
            None => format!("{} {}", state.icon(), state.label()),
        };
        if !self.typed.is_empty() {
            // What is typed meanwhile shows here, never in the model's output.
            text.push_str(&format!(" · › {}", shown(&self.typed, false)));
        }
        self.draw_status(&text);
    }

    /// Keys typed so far while the request runs (shown on the status line).
    pub(crate) fn typing(&mut self, typed: &str) {
        self.typed = typed.to_string();
        self.tick();
    }

    /// Draw `text` after the spinner on the status line (stderr), replacing what was there.
    fn draw_status(&mut self, text: &str) {
        let text = format!("{} {text}", SPINNER[self.frame % SPINNER.len()]);
        let text = self.paint(Style::new().dimmed(), &text);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{text}");
        let _ = err.flush();
        self.status_shown = true;
    }

    /// Show that something slow is under way (model loading), with the time so far.
    pub(crate) fn progress(&mut self, what: &str, elapsed: Duration) {
        if self.live {
            self.frame = self.frame.wrapping_add(1);
            self.draw_status(&format!("{what} {:.1}s", elapsed.as_secs_f64()));
        }
    }

    /// Stop showing progress.
    pub(crate) fn done(&mut self) {
        self.clear_status();
    }

    /// Draw the plan as a compact list; at a terminal, over the plan drawn last when
    /// nothing came after it.
    fn plan(&mut self, plan: &core_models::PlanUpdatedEvent) {
        use core_models::PlanStatus;
        let mut text = String::from("plan:\n");
        for s in &plan.steps {
            let (mark, style) = match s.status {
                PlanStatus::Done => ("✔", Style::new().dimmed()),
                PlanStatus::InProgress => ("▸", Style::new().bold()),
                PlanStatus::Pending => ("○", Style::new()),
            };
            let line = format!("  {mark} {}", shown(&s.step, false));
            text.push_str(&self.paint(style, &line));
            text.push('\n');
        }
        let redraw = self.live && self.plan_lines > 0 && self.at_line_start;
        if redraw {
            self.clear_status();
            let mut out: Box<dyn Write> = if self.to_stderr {
                Box::new(std::io::stderr().lock())
            } else {
                Box::new(std::io::stdout().lock())
            };
            let _ = write!(out, "\x1b[{}A\x1b[J", self.plan_lines);
            let _ = out.flush();
        }
        let start = if self.at_line_start { "" } else { "\n" };
        self.write(&format!("{start}{text}"));
        self.plan_lines = plan.steps.len() + 1;
    }

    /// Show one event.
    pub(crate) fn event(&mut self, event: &AgentEvent) {
        if self.json {
            self.json_line(event);
            return;
        }
        if let AgentEvent::TextGeneration(t) = event {
            self.reply_ended |= t.is_complete;
        }
        match event {
            AgentEvent::StateChanged(s) => {
                if let MachineTransition::Agent(record) = &s.change {
                    let state = record.current_state;
                    self.status = (state.is_active() && state != AgentState::WaitingForApproval)
                        .then_some(state);
                    if self.status.is_none() {
                        self.clear_status();
                    }
                }
            }
            AgentEvent::PromptProgress(p) => {
                self.reading = (p.tokens_done < p.tokens_total).then(|| reading(p));
                self.tick();
            }
            AgentEvent::TextGeneration(t) if !t.is_complete => {
                self.reading = None;
                let new_reply = !t.token.is_empty() && std::mem::take(&mut self.reply_ended);
                if (new_reply || t.is_thinking != self.thinking) && !self.at_line_start {
                    self.write("\n");
                }
                self.thinking = t.is_thinking;
                let token = shown(&t.token, true);
                let text = if t.is_thinking {
                    self.paint(Style::new().dimmed().italic(), &token)
                } else {
                    token.into_owned()
                };
                self.write(&text);
            }
            // The plan tool's call and result show as the plan itself.
            AgentEvent::ToolCallRequest(c) if c.request.tool_id == core_models::PLAN_TOOL_ID => {}
            AgentEvent::ToolResult(r)
                if r.tool_id == core_models::PLAN_TOOL_ID && r.result.success => {}
            AgentEvent::PlanUpdated(p) => self.plan(p),
            AgentEvent::PolicyDecision(p)
                if !(p.outcome == core_models::PolicyOutcome::Noted && p.reason.is_none()) =>
            {
                let text = shown(&format!("({})", p.summary()), false).into_owned();
                self.note(&text);
            }
            AgentEvent::ToolCallRequest(c) => {
                let text = format!(
                    "{} {} ({})",
                    self.paint(Style::new().bold(), "→"),
                    shown(&c.request.execution_summary, false),
                    self.risk(c.request.risk_level)
                );
                self.line(&text);
            }
            AgentEvent::ToolResult(r) => self.tool_result(r),
            AgentEvent::Autoformat(a) if !a.changed_files.is_empty() => {
                let text = shown(
                    &format!("{} reformatted {}", a.formatter, a.changed_files.join(", ")),
                    false,
                )
                .into_owned();
                self.note(&text);
            }
            AgentEvent::TextGeneration(t)
                if t.usage.as_ref().is_some_and(|u| u.hit_token_limit) =>
            {
                let generated = t.usage.as_ref().map_or(0, |u| u.generated_tokens);
                self.note(&format!(
                    "(the reply was cut at its token limit, {generated} tokens: raise --max-tokens for longer replies)"
                ));
            }
            AgentEvent::RepetitionDetected(r) => {
                let unit = shown(&r.unit, false).into_owned();
                self.note(&format!(
                    "(the model was repeating itself, {} times \"{unit}\": its reply was stopped)",
                    r.repeats
                ));
            }
            AgentEvent::ContextCompacted(c) => {
                self.note(&format!(
                    "context compacted ({}): {} → {} tokens",
                    c.strategy, c.tokens_before, c.tokens_after
                ));
            }
            AgentEvent::MessagesCarried(m) => {
                let count = m.messages.len();
                self.note(&format!(
                    "({count} message{} typed during the request did not reach the model before it ended: {} with your next message)",
                    if count == 1 { "" } else { "s" },
                    if count == 1 { "it goes" } else { "they go" }
                ));
            }
            AgentEvent::SessionStarted(s) if s.resumed => {
                self.note(&format!(
                    "resumed session {} ({} messages)",
                    s.session_id, s.messages
                ));
            }
            AgentEvent::AgentError(e) => {
                let text = self.paint(
                    Style::new().fg_color(Some(AnsiColor::Red.into())),
                    &format!("! {}", shown(&e.error, false)),
                );
                self.line(&text);
            }
            AgentEvent::AgentComplete(c) => {
                self.status = None;
                self.typed.clear();
                self.files_summary();
                let plural =
                    |n: u32, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
                let mut text = format!(
                    "— {} · {}",
                    plural(c.total_iterations, "iteration"),
                    plural(c.tool_calls_executed, "tool call"),
                );
                if c.tool_calls_denied > 0 {
                    text.push_str(&format!(" · {} denied", c.tool_calls_denied));
                }
                text.push_str(&format!(
                    " · {}",
                    plural(
                        u32::try_from(c.completion_tokens.max(c.total_tokens)).unwrap_or(u32::MAX),
                        "token"
                    ),
                ));
                // The model's speed while it generated (none when it was not measured).
                if let Some(speed) = c.tokens_per_second.filter(|s| s.is_finite()) {
                    text.push_str(&format!(" · {speed:.1} tok/s"));
                }
                text.push_str(&format!(" · {:.1}s", c.total_duration.as_secs_f64()));
                let reason = match c.reason {
                    CompletionReason::Finished => "",
                    CompletionReason::MaxIterations => " · stopped at the iteration limit",
                    CompletionReason::Cancelled => " · cancelled",
                    CompletionReason::Error => " · failed",
                    CompletionReason::Timeout => " · timed out",
                    CompletionReason::BudgetExceeded => " · budget exceeded",
                };
                text.push_str(reason);
                self.note(&text);
            }
            _ => {}
        }
    }

    /// A tool's result: a mark, then a short preview of what it gave (see
    /// [`render::output_preview`]); files it changed are noted for the summary.
    fn tool_result(&mut self, r: &core_models::ToolResultEvent) {
        let text = if r.success() {
            let mark = self.paint(Style::new().fg_color(Some(AnsiColor::Green.into())), "✓");
            format!(
                "{mark} {} ({} ms)",
                shown(&r.tool_name, false),
                r.duration.as_millis()
            )
        } else {
            // The first line: a failed command's output follows in the preview.
            let message = r.result.error_message.as_deref().unwrap_or("failed");
            let first = message.lines().next().unwrap_or(message);
            // A call that was not approved never ran: it did not fail.
            let mark = if r.result.denied {
                self.paint(Style::new().fg_color(Some(AnsiColor::Yellow.into())), "⊘")
            } else {
                self.paint(Style::new().fg_color(Some(AnsiColor::Red.into())), "✗")
            };
            format!(
                "{mark} {}: {}",
                shown(&r.tool_name, false),
                shown(first, false)
            )
        };
        self.line(&text);
        for line in render::output_preview(r, self.full_output) {
            let line = self.paint(Style::new().dimmed(), &format!("  │ {line}"));
            self.line(&line);
        }
        let whole = if r.result.success {
            r.result.content.clone()
        } else {
            r.result.error_message.clone().unwrap_or_default()
        };
        self.last_output = Some((shown(&r.tool_name, false).into_owned(), whole));
        if let Some((path, how)) = render::file_changed(r) {
            for list in [&mut self.changed, &mut self.changed_in_session] {
                match list.iter_mut().find(|(p, _)| *p == path) {
                    // Created, then edited: still a new file.
                    Some((_, was)) if *was == "created" => {}
                    Some((_, was)) => *was = how,
                    None => list.push((path.clone(), how)),
                }
            }
        }
    }

    /// The files the request changed, once it ends.
    fn files_summary(&mut self) {
        if self.changed.is_empty() {
            return;
        }
        let list: Vec<String> = std::mem::take(&mut self.changed)
            .into_iter()
            .map(|(path, how)| format!("{} ({how})", shown(&path, false)))
            .collect();
        self.note(&format!("files changed: {}", list.join(", ")));
    }

    /// Ask a person about a call, with the event's details, warnings and the diff of the
    /// file it changes; `key` when the answer is a single key.
    pub(crate) fn ask(&mut self, a: &ApprovalRequestEvent, key: bool) {
        let text = render::approval_prompt(a, self.colour).join("\n");
        let start = if self.at_line_start { "" } else { "\n" };
        self.write(&format!("{start}{text}\n"));
        self.ask_again(a, key);
    }

    /// The approval question alone, asked (again).
    pub(crate) fn ask_again(&mut self, a: &ApprovalRequestEvent, key: bool) {
        let diff = if a.change.as_ref().is_some_and(|c| !c.diff.is_empty()) {
            " / whole [d]iff"
        } else {
            ""
        };
        let how = if key { "" } else { " (then Enter)" };
        let text = format!(
            "  Approve? [y]es / [n]o / always this [s]ession / always for this [t]ool, in every workspace{diff}{how}: "
        );
        let start = if self.at_line_start { "" } else { "\n" };
        self.write(&format!("{start}{text}"));
        if !key {
            // What the person types ends the line.
            self.at_line_start = true;
        }
    }

    /// Show the whole diff of the call's change.
    pub(crate) fn whole_diff(&mut self, a: &ApprovalRequestEvent) {
        let Some(change) = &a.change else {
            self.note("this call changes no file: there is no diff");
            return;
        };
        let lines = render::diff_lines(change, self.colour, "    ", None);
        self.line("");
        for line in lines {
            self.line(&line);
        }
    }

    /// The answer given with a key, written after the question.
    pub(crate) fn answered(&mut self, answer: crate::approve::Answer) {
        use crate::approve::Answer;
        let word = match answer {
            Answer::Yes => "yes",
            Answer::No => "no",
            Answer::Session => "yes, for the rest of this session",
            Answer::Tool => "yes, for this tool in every workspace",
            Answer::Diff => "diff",
        };
        self.write(&format!("{word}\n"));
    }

    /// Before the line editor takes the terminal: the status line gone, on a fresh line.
    pub(crate) fn before_prompt(&mut self) {
        self.clear_status();
        if !self.at_line_start {
            self.write("\n");
        }
    }

    /// The chat prompt.
    pub(crate) fn chat_prompt(&mut self) {
        let text = self.paint(Style::new().bold(), "› ");
        let start = if self.at_line_start { "" } else { "\n" };
        self.write(&format!("{start}{text}"));
        // What the person types ends the line.
        self.at_line_start = true;
    }
}

/// Text from the model or a tool, made safe to show on a terminal: control characters
/// (escape sequences that could move the cursor, hide or rewrite what the person reads,
/// set the window title or the clipboard), C1 controls, and the invisible characters that
/// reorder or hide text (bidirectional controls, zero-width characters, line and paragraph
/// separators, fillers) are shown as escapes (`\x1b`, `\r`, `\u{202e}`). Newlines and tabs stay when
/// `keep_newlines`, else they are shown as `\n` and `\t` too.
pub(crate) fn shown(text: &str, keep_newlines: bool) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| match c {
        '\n' | '\t' => !keep_newlines,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        // Invisible or zero-width: soft hyphen, Arabic letter mark, Hangul fillers,
        // Mongolian vowel separator, zero-width spaces and joiners, marks, separators,
        // bidirectional embeddings, overrides and isolates, word joiner and invisible
        // operators, the byte-order mark.
        '\u{ad}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{180e}' | '\u{3164}' => true,
        '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' => true,
        '\u{feff}' | '\u{ffa0}' => true,
        _ => false,
    };
    if !text.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !hidden(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if u32::from(c) < 0x100 => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// serde_json's compact formatter, except that the Unicode line and paragraph separators
/// (U+2028, U+2029: valid in JSON, but line breaks to some readers) are escaped, so that
/// one event is always one line whoever splits the stream.
struct LineSafe;

impl serde_json::ser::Formatter for LineSafe {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some(at) = rest.find(['\u{2028}', '\u{2029}']) {
            writer.write_all(&rest.as_bytes()[..at])?;
            let c = rest[at..].chars().next().unwrap_or('\u{2028}');
            writer.write_all(if c == '\u{2028}' {
                b"\\u2028"
            } else {
                b"\\u2029"
            })?;
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }
}

/// The status line's words while the model reads its prompt.
fn reading(progress: &core_models::PromptProgressEvent) -> String {
    let speed = progress
        .tokens_per_second
        .map_or_else(String::new, |s| format!(" · {s:.0} tok/s"));
    format!(
        "reading the prompt · {} of {} tokens{speed}",
        progress.tokens_done, progress.tokens_total
    )
}

#[cfg(test)]
mod shown_tests {
    use super::shown;

    #[test]
    fn control_and_reordering_characters_are_shown_as_escapes() {
        assert_eq!(shown("plain text", false), "plain text");
        assert_eq!(
            shown("rm -rf ~ #\r\x1b[2K? Run `ls`\x1b[8m", false),
            "rm -rf ~ #\\r\\x1b[2K? Run `ls`\\x1b[8m"
        );
        assert_eq!(shown("a\nb\tc", true), "a\nb\tc");
        assert_eq!(shown("a\nb", false), "a\\nb");
        assert_eq!(shown("x\u{202e}gnp.exe", false), "x\\u{202e}gnp.exe");
        assert_eq!(shown("\u{9b}31m", true), "\\x9b31m");
        assert_eq!(
            shown("title\x1b]0;pwned\x07", true),
            "title\\x1b]0;pwned\\x07"
        );
        assert_eq!(shown("r\u{200b}m", false), "r\\u{200b}m");
        assert_eq!(shown("\u{feff}x\u{ad}", false), "\\u{feff}x\\xad");
    }

    #[test]
    fn json_lines_escape_unicode_line_separators() {
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, super::LineSafe);
        serde::Serialize::serialize(&"a\u{2028}b\u{2029}c\nd", &mut ser).unwrap_or_default();
        assert_eq!(String::from_utf8_lossy(&out), "\"a\\u2028b\\u2029c\\nd\"");
    }
}
