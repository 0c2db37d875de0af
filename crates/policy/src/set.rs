//! A set of rules and its verdict on a call: the strictest rule that matches wins.
//!
//! For a command line (`run_command`'s `command`), the rules see what the built-in judge
//! sees ([`shell_risk::judge`]): every simple command anywhere in the line — behind `sh -c`,
//! `env`, `sudo`, `xargs`, `timeout`, `find -exec`, in substitutions, after quote removal,
//! with assignments set apart. Then:
//!
//! * **forbid** when any command matches a forbidding rule (a guess behind a wrapper whose
//!   options are not understood included); and when the set has forbidding command rules
//!   but part of the line runs commands the judge cannot see at all (it does not parse, a
//!   variable that changes what runs is set, the program's name is not plain text): such a
//!   line cannot be checked against them, and is refused;
//! * **ask** when any command matches an asking rule, or the line cannot be checked against
//!   the asking rules (as above);
//! * **allow** when every command of the line (guesses aside) matches an allowing rule and
//!   nothing is hidden: an allowing rule vouches for what its command runs (`make test` runs
//!   the Makefile's recipe), so an opaque command is covered by the rule that names it.
//!
//! For other tools, tool rules match by tool id and argument patterns. Command rules and
//! tool rules together: the strictest verdict of either.

use crate::rule::{Origin, Pattern, Rule};
use core_models::{CallRules, PolicyDecision, RuleVerdict, ToolCallRequest};
use std::path::Path;

/// The tool whose `command` argument command rules match.
pub const COMMAND_TOOL: &str = "run_command";

/// The rules in force, in the order they were loaded.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    rules: Vec<Rule>,
    /// What was loaded but not put in force (a workspace's allowing rules), in words.
    warnings: Vec<String>,
}

/// How a command line is decided, for `aintern rules explain`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Explanation {
    /// The judge's rating.
    pub risk: core_models::RiskLevel,
    /// The judge's reasons.
    pub reasons: Vec<String>,
    /// Each simple command the judge found, as displayed, with `?` before a guess and
    /// `!` after one that runs what the judge cannot see.
    pub commands: Vec<String>,
    /// Whether part of the line runs commands the judge cannot see at all.
    pub hidden: bool,
    /// The rules' verdict, if any rule applies.
    pub verdict: Option<RuleVerdict>,
}

impl RuleSet {
    /// An empty set.
    pub fn new() -> Self {
        RuleSet::default()
    }

    /// Add a rule (an application's own, or one loaded from a file). A workspace's
    /// allowing rule is never put in force: a workspace may only make things stricter.
    pub fn add(&mut self, rule: Rule) {
        if rule.origin == Origin::Workspace && rule.decision == PolicyDecision::Allow {
            self.warnings.push(format!(
                "{}: ignored: a workspace's rules may only ask or forbid (allowing rules belong in your own configuration)",
                rule.label()
            ));
            return;
        }
        self.rules.push(rule);
    }

    /// Add every rule of `other`, and its warnings.
    pub fn extend(&mut self, other: RuleSet) {
        self.warnings.extend(other.warnings);
        for rule in other.rules {
            self.add(rule);
        }
    }

    /// The rules in force.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// What was loaded but not put in force, in words.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Whether no rule is in force.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The verdict on the command line `command`, run in `cwd` (relative to the
    /// workspace) of `workspace`.
    pub fn decide_command(
        &self,
        command: &str,
        cwd: Option<&str>,
        workspace: Option<&Path>,
    ) -> Option<RuleVerdict> {
        let judgement = shell_risk::judge(command, cwd, workspace);
        self.decide_judged(&judgement)
    }

    fn command_rules(&self) -> impl Iterator<Item = &Rule> + Clone {
        self.rules
            .iter()
            .filter(|r| matches!(r.pattern, Pattern::Command(_)))
    }

    /// The verdict on a judged line (see the module documentation).
    pub(crate) fn decide_judged(&self, j: &shell_risk::Judgement) -> Option<RuleVerdict> {
        let hidden = j.hidden || j.commands.iter().any(|c| c.words.first() == Some(&None));
        for decision in [PolicyDecision::Forbid, PolicyDecision::Ask] {
            let mut rules = self.command_rules().filter(|r| r.decision == decision);
            for cmd in &j.commands {
                if let Some(rule) = rules.clone().find(|r| r.matches_command(cmd)) {
                    return Some(verdict(rule, Some(cmd.display())));
                }
            }
            if hidden {
                if let Some(rule) = rules.next() {
                    let what = match decision {
                        PolicyDecision::Forbid => "forbidding",
                        _ => "asking",
                    };
                    return Some(
                        RuleVerdict::new(decision, rule.label())
                            .with_justification(Some(format!(
                                "part of the line runs commands that cannot be seen, so it cannot be checked against the {what} rules"
                            ))),
                    );
                }
            }
        }
        if hidden {
            return None;
        }
        let allows = self
            .command_rules()
            .filter(|r| r.decision == PolicyDecision::Allow);
        let mut first = None;
        let mut any = false;
        for cmd in j.commands.iter().filter(|c| !c.guess) {
            any = true;
            let rule = allows.clone().find(|r| r.matches_command(cmd))?;
            first.get_or_insert((rule, cmd.display()));
        }
        let (rule, shown) = first.filter(|_| any)?;
        Some(verdict(rule, Some(shown)))
    }

    /// The verdict of the tool rules on a call of `tool_id` with `arguments`.
    fn decide_tool(&self, call: &ToolCallRequest, workspace: Option<&Path>) -> Option<RuleVerdict> {
        let subjects = call.permission_subjects.as_ref();
        let mut best: Option<&Rule> = None;
        for rule in &self.rules {
            if rule.matches_tool(&call.tool_id, &call.parameters, subjects, workspace)
                && best.is_none_or(|b| rule.decision > b.decision)
            {
                best = Some(rule);
            }
        }
        best.map(|r| verdict(r, None))
    }

    /// Explain how `command` is decided, run at the root of `workspace`.
    pub fn explain(&self, command: &str, workspace: Option<&Path>) -> Explanation {
        let j = shell_risk::judge(command, None, workspace);
        let commands = j
            .commands
            .iter()
            .map(|c| {
                format!(
                    "{}{}{}",
                    if c.guess { "?" } else { "" },
                    c.display(),
                    if c.opaque { " !" } else { "" }
                )
            })
            .collect();
        let verdict = self.decide_judged(&j);
        Explanation {
            risk: j.risk,
            reasons: j.reasons,
            commands,
            hidden: j.hidden,
            verdict,
        }
    }
}

fn verdict(rule: &Rule, matched: Option<String>) -> RuleVerdict {
    RuleVerdict::new(rule.decision, rule.label())
        .with_justification(rule.justification.clone())
        .with_matched(matched)
}

impl CallRules for RuleSet {
    fn decide(&self, call: &ToolCallRequest, workspace: Option<&Path>) -> Option<RuleVerdict> {
        let by_tool = self.decide_tool(call, workspace);
        let by_command = if call.tool_id == COMMAND_TOOL {
            match call.parameters.get("command").and_then(|c| c.as_str()) {
                Some(command) => {
                    let cwd = call.parameters.get("cwd").and_then(|c| c.as_str());
                    self.decide_command(command, cwd, workspace)
                }
                None => None,
            }
        } else {
            None
        };
        match (by_tool, by_command) {
            (Some(a), Some(b)) => Some(if b.decision > a.decision { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str, origin: Origin) -> RuleSet {
        crate::parse_rules(text, Path::new("r.toml"), origin).expect("rules load")
    }

    fn decision(set: &RuleSet, line: &str) -> Option<PolicyDecision> {
        set.decide_command(line, None, None).map(|v| v.decision)
    }

    const NO_PUSH: &str = "[[rule]]\ncommand = [\"git\", \"push\"]\ndecision = \"forbid\"\n";

    #[test]
    fn a_forbidden_command_is_found_behind_every_spelling_the_judge_sees() {
        let set = rules(NO_PUSH, Origin::User);
        for line in [
            "git push",
            "'git' push",
            "g\"it\" pu\\sh origin",
            "sh -c 'git push'",
            "bash -lc \"cd x && git push\"",
            "env X=1 git push",
            "X=1 git push",
            "/usr/bin/git push",
            "git -C . push",
            "git -c a=b push --force",
            "command git push",
            "sudo git push",
            "timeout 5 git push",
            "echo $(git push)",
            "true; git push",
            "ls | xargs git push",
            "find . -exec git push \\;",
        ] {
            assert_eq!(decision(&set, line), Some(PolicyDecision::Forbid), "{line}");
        }
        for line in ["git pull", "git status", "echo git push", "gitpush", "ls"] {
            assert_eq!(decision(&set, line), None, "{line}");
        }
    }

    #[test]
    fn a_line_that_hides_what_it_runs_is_refused_when_forbidding_rules_exist() {
        let set = rules(NO_PUSH, Origin::User);
        for line in [
            "$(echo git) push",
            "eval \"git push\"",
            "$X push",
            "${G:-git} push",
        ] {
            assert_eq!(decision(&set, line), Some(PolicyDecision::Forbid), "{line}");
        }
        // Without forbidding rules nothing is decided by rules for such a line.
        assert_eq!(decision(&RuleSet::new(), "$(echo git) push"), None);
    }

    #[test]
    fn allowing_needs_every_command_allowed_and_nothing_hidden() {
        let set = rules(
            "[[rule]]\ncommand = [\"cargo\", [\"test\", \"check\"]]\ndecision = \"allow\"\n",
            Origin::User,
        );
        assert_eq!(decision(&set, "cargo test"), Some(PolicyDecision::Allow));
        assert_eq!(
            decision(&set, "cargo check -p x"),
            Some(PolicyDecision::Allow)
        );
        assert_eq!(
            decision(&set, "cargo test && cargo check"),
            Some(PolicyDecision::Allow)
        );
        for line in [
            "cargo test && rm -rf x",
            "cargo -q test",
            "cargo build",
            "$(echo cargo) test",
            "eval cargo test",
        ] {
            assert_eq!(decision(&set, line), None, "{line}");
        }
    }

    #[test]
    fn forbid_beats_ask_beats_allow() {
        let set = rules(
            "[[rule]]\ncommand = [\"git\"]\ndecision = \"allow\"\n\
             [[rule]]\ncommand = [\"git\", \"push\"]\ndecision = \"ask\"\n\
             [[rule]]\ncommand = [\"git\", \"push\", \"--force\"]\ndecision = \"forbid\"\n",
            Origin::User,
        );
        assert_eq!(decision(&set, "git status"), Some(PolicyDecision::Allow));
        assert_eq!(decision(&set, "git push"), Some(PolicyDecision::Ask));
        assert_eq!(
            decision(&set, "git push --force"),
            Some(PolicyDecision::Forbid)
        );
        assert_eq!(
            decision(&set, "git status; git push"),
            Some(PolicyDecision::Ask)
        );
    }

    #[test]
    fn a_workspace_cannot_loosen() {
        let mut set = rules(NO_PUSH, Origin::User);
        set.extend(rules(
            "[[rule]]\ncommand = [\"git\"]\ndecision = \"allow\"\n",
            Origin::Workspace,
        ));
        assert_eq!(set.rules().len(), 1);
        assert_eq!(set.warnings().len(), 1, "{:?}", set.warnings());
        assert_eq!(decision(&set, "git status"), None);
        assert_eq!(decision(&set, "git push"), Some(PolicyDecision::Forbid));
    }

    #[test]
    fn tool_rules_and_command_rules_take_the_strictest() {
        let set = rules(
            "[[rule]]\ntool = \"run_command\"\ndecision = \"ask\"\n\
             [[rule]]\ncommand = [\"rm\"]\ndecision = \"forbid\"\n",
            Origin::User,
        );
        let call = |command: &str| {
            ToolCallRequest::new("run_command", serde_json::json!({ "command": command }))
        };
        let decide = |c: &str| set.decide(&call(c), None).map(|v| v.decision);
        assert_eq!(decide("ls"), Some(PolicyDecision::Ask));
        assert_eq!(decide("rm -f x"), Some(PolicyDecision::Forbid));
    }
}
