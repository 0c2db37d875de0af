//! `aintern rules`: check the rule files, and explain how a command line is decided.

use crate::settings;
use aintern::policy::{self, Explanation, Origin, RuleSet};
use core_models::{PolicyDecision, RiskLevel};
use std::path::{Path, PathBuf};

/// Print one line on stdout (a closed stdout is not an error worth reporting here).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// What to do with the rules.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum RulesAction {
    /// Load the rule files and check every example: yours (`rules/*.toml` in aintern's
    /// config folder) and the workspace's `.aintern/rules/*.toml`, or only the FILEs given.
    /// Exits non-zero naming the file, the line and the rule of the first problem.
    Check {
        /// Rule files to check instead (read as your own rules).
        files: Vec<PathBuf>,
        /// The workspace whose `.aintern/rules` is read (default: the current folder).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// How a command line would be decided as `run_command`: the commands the judge sees
    /// in it, its rating and reasons, the rule that decides it and what that means.
    Explain {
        /// The command line, as the model would write it.
        command: String,
        /// The workspace it would run in (default: the current folder).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Run the command.
pub(crate) fn run(action: RulesAction) -> Result<(), String> {
    match action {
        RulesAction::Check { files, workspace } => check(&files, workspace),
        RulesAction::Explain {
            command,
            workspace,
            json,
        } => explain(&command, workspace, json),
    }
}

/// The rules in force in `workspace`.
fn in_force(workspace: &Path) -> Result<RuleSet, String> {
    policy::load(settings::rules_dir().as_deref(), Some(workspace)).map_err(|e| e.to_string())
}

fn check(files: &[PathBuf], workspace: Option<PathBuf>) -> Result<(), String> {
    let set = if files.is_empty() {
        in_force(&crate::session::workspace(workspace)?)?
    } else {
        let mut set = RuleSet::new();
        for file in files {
            set.extend(policy::load_file(file, Origin::User).map_err(|e| e.to_string())?);
        }
        set
    };
    for warning in set.warnings() {
        eprintln!("aintern: {warning}");
    }
    let count = set.rules().len();
    outln!(
        "{count} rule{} in force, every example as it says",
        if count == 1 { "" } else { "s" }
    );
    Ok(())
}

/// What happens to the call in the end, in words, and as one word for `--json`.
fn outcome(e: &Explanation) -> (&'static str, String) {
    let floor = e.risk == RiskLevel::Critical;
    match e.verdict.as_ref().map(|v| v.decision) {
        Some(PolicyDecision::Forbid) => (
            "forbid",
            "refused, whoever approves (--approve all and saved permissions included); the model is told why".into(),
        ),
        Some(PolicyDecision::Ask) => (
            "ask",
            "a person is asked, whatever the approval level or saved permissions say".into(),
        ),
        Some(PolicyDecision::Allow) if floor => (
            "ask",
            "a person is asked: the rule allows it, but a critical command is always put to a person".into(),
        ),
        Some(PolicyDecision::Allow) => (
            "allow",
            "runs without asking (in the sandbox, unless it asks for more than the sandbox gives: then a person is asked), unless a saved permission denies it".into(),
        ),
        None if floor => (
            "ask",
            "no rule decides it; a critical command is always put to a person".into(),
        ),
        None => (
            "approval",
            format!(
                "no rule decides it: the approval level and saved permissions do (a {} command)",
                risk_word(e.risk)
            ),
        ),
    }
}

fn risk_word(risk: RiskLevel) -> String {
    serde_json::to_value(risk)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{risk:?}"))
}

fn explain(command: &str, workspace: Option<PathBuf>, json: bool) -> Result<(), String> {
    let workspace = crate::session::workspace(workspace)?;
    let set = in_force(&workspace)?;
    for warning in set.warnings() {
        eprintln!("aintern: {warning}");
    }
    let e = set.explain(command, Some(&workspace));
    let (decision, words) = outcome(&e);
    if json {
        let rule = e.verdict.as_ref().map(|v| {
            serde_json::json!({
                "decision": v.decision,
                "rule": v.rule,
                "justification": v.justification,
                "matched": v.matched,
            })
        });
        let out = serde_json::json!({
            "command": command,
            "commands": e.commands,
            "hidden": e.hidden,
            "risk": e.risk,
            "reasons": e.reasons,
            "rule": rule,
            "decision": decision,
            "explanation": words,
        });
        outln!("{out}");
        return Ok(());
    }
    outln!("command line: {command}");
    if e.commands.is_empty() {
        outln!("commands seen: none");
    } else {
        outln!("commands seen ('?' a guess behind a wrapper, '!' runs what cannot be seen):");
        for c in &e.commands {
            outln!("  {c}");
        }
    }
    if e.hidden {
        outln!("  (part of the line runs commands that cannot be seen)");
    }
    outln!("judge: {}", risk_word(e.risk));
    for reason in &e.reasons {
        outln!("  {reason}");
    }
    match &e.verdict {
        Some(v) => outln!("rule: {}", v.describe()),
        None => outln!(
            "rule: none of {} decides it",
            match set.rules().len() {
                0 => "the rules (there are none)".to_string(),
                1 => "the 1 rule".to_string(),
                n => format!("the {n} rules"),
            }
        ),
    }
    outln!("decision: {words}");
    Ok(())
}
