//! Answering approval requests: by `--approve` mode, by a line typed on stdin, or by a
//! single key at a terminal. An answer that is not one of the choices asks again; it is
//! never taken as a denial.

use crate::terminal::Terminal;
use core_models::{ApprovalDecision, ApprovalRequestEvent, RememberScope, RiskLevel};

/// How approvals are answered without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ApproveMode {
    /// Approve every call.
    All,
    /// Approve safe-risk calls, deny the rest.
    Safe,
    /// Deny every call that needs approval.
    None,
}

/// A person's answer to an approval prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// This call.
    Yes,
    /// Not this call.
    No,
    /// This call, and the same calls for the rest of the session.
    Session,
    /// This tool, from now on, in every workspace.
    Tool,
    /// Show the whole diff, then ask again.
    Diff,
}

impl Answer {
    /// The answer a key or a typed word stands for; `None` for anything else.
    pub(crate) fn parse(text: &str) -> Option<Answer> {
        Some(match text.trim().to_lowercase().as_str() {
            "y" | "yes" => Answer::Yes,
            "n" | "no" => Answer::No,
            "s" | "session" => Answer::Session,
            "t" | "tool" => Answer::Tool,
            "d" | "diff" => Answer::Diff,
            _ => return None,
        })
    }
}

/// Settle `a` with the person's `answer`; the decision when it is remembered for the
/// session. `Answer::Diff` settles nothing.
pub(crate) fn settle(
    a: &ApprovalRequestEvent,
    answer: Answer,
    terminal: &mut Terminal,
) -> Option<ApprovalDecision> {
    let mut remembered = None;
    let result = match answer {
        Answer::Yes => a.approve(),
        Answer::No => a.deny(Some("denied at the prompt".into())),
        Answer::Session => {
            remembered = Some(ApprovalDecision::approve().remember(RememberScope::Session));
            a.approve_with(RememberScope::Session, None)
        }
        Answer::Tool => {
            terminal.note(&format!(
                "{} is allowed from now on, in every workspace (undo with: aintern permissions reset {})",
                a.request.tool_id, a.request.tool_id
            ));
            a.approve_with(RememberScope::Tool, None)
        }
        Answer::Diff => return None,
    };
    match result {
        Ok(()) => remembered,
        Err(e) => {
            terminal.note(&e.to_string());
            None
        }
    }
}

/// Deny `a`: nobody is left to answer it.
pub(crate) fn no_one_answers(a: &ApprovalRequestEvent) {
    if let Err(e) = a.deny(Some("no one is left to answer (stdin ended)".into())) {
        tracing::debug!(error = %e, "approval already settled");
    }
}

/// Whether the call asks for more than the configured sandbox: the network when it is
/// closed, or no sandbox when there is one. Only a person (or a JSON client) may grant
/// that, never `--approve`.
fn escalates(a: &ApprovalRequestEvent, settings: &sandbox::SandboxSettings) -> bool {
    a.escalates(settings.mode, settings.network)
}

/// Answer `a` as `mode` says.
pub(crate) fn answer_by_mode(
    a: &ApprovalRequestEvent,
    mode: ApproveMode,
    settings: &sandbox::SandboxSettings,
) {
    let result = match mode {
        _ if a.asked_by_policy.is_some() => a.deny(Some(format!(
            "a person must answer this call ({}); --approve does not answer for a person",
            a.asked_by_policy.as_deref().map_or("", String::as_str)
        ))),
        ApproveMode::All if escalates(a, settings) => a.deny(Some(
            "--approve all does not lift the sandbox; approve this call yourself".into(),
        )),
        ApproveMode::All => a.approve(),
        ApproveMode::Safe if a.risk_level == RiskLevel::Safe => a.approve(),
        ApproveMode::Safe => a.deny(Some(format!("--approve safe: {} risk", a.risk_level))),
        ApproveMode::None => a.deny(Some("--approve none".into())),
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "approval already settled");
    }
}

#[cfg(test)]
mod tests {
    use super::Answer;

    #[test]
    fn answers_are_the_choices_and_nothing_else() {
        for (text, answer) in [
            ("y", Some(Answer::Yes)),
            ("YES", Some(Answer::Yes)),
            (" n ", Some(Answer::No)),
            ("s", Some(Answer::Session)),
            ("tool", Some(Answer::Tool)),
            ("d", Some(Answer::Diff)),
            ("ye", None),
            ("", None),
            ("x", None),
            ("yes please", None),
        ] {
            assert_eq!(Answer::parse(text), answer, "{text:?}");
        }
    }
}
