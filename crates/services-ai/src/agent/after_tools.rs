//! The checks after tools ran (seed 004): new git commits, the formatters on the files the
//! tools wrote and the commits touched, the budget, and messages the person sent meanwhile.

use super::run::{Outcome, Run};
use core_models::{
    AutoformatEvent, ChatMessage, GitCommitsDetectedEvent, ToolCallRequest, ToolResult,
    TurnState as S,
};
use std::ops::ControlFlow;

impl Run {
    /// Everything after the tools of one round ran: git and formatters, the budget, the
    /// gathered messages, the pause before the next iteration. Breaks when the budget is
    /// spent.
    pub(super) async fn after_tools(
        &mut self,
        head_before: Option<String>,
        results: &[(ToolCallRequest, ToolResult)],
    ) -> ControlFlow<Outcome> {
        let edited = self.edited_files(results);
        self.turn(S::CheckingGitCommits, None);
        self.check_git(head_before, edited).await;
        if self.shared.turn.current_state() != S::CheckingBudget {
            self.turn(S::CheckingBudget, None);
        }
        if let Some(why) = self.budget_exceeded() {
            self.turn(S::BudgetExceeded, Some(&why));
            self.turn(S::WaitingForUserInput, None);
            return ControlFlow::Break(Outcome::Budget(why));
        }
        self.turn(S::GatheringAdditionalMessages, None);
        let gathered = self.handle.inbox.gather();
        self.take_messages(gathered);
        let delay = self.shared.config.iteration_delay();
        if !delay.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = self.handle.stop.cancelled() => {}
            }
        }
        ControlFlow::Continue(())
    }

    /// Messages sent into the request, into the conversation: the model reads them next.
    pub(super) fn take_messages(&mut self, messages: Vec<String>) {
        for text in messages {
            self.history.push(ChatMessage::user(text.clone()));
            self.received.push(text);
        }
    }

    pub(super) async fn git_head(&self) -> Option<String> {
        let (git, workspace) = (self.shared.ports.git.as_ref()?, self.workspace.as_ref()?);
        match git.head(workspace).await {
            Ok(head) => head,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the git HEAD");
                None
            }
        }
    }

    /// The workspace files that successful calls of file-changing tools wrote (their
    /// `path` parameter), for the formatters.
    fn edited_files(&self, results: &[(ToolCallRequest, ToolResult)]) -> Vec<String> {
        results
            .iter()
            .filter(|(call, result)| {
                result.success
                    && self
                        .shared
                        .ports
                        .registry
                        .get_tool(&call.tool_id)
                        .is_some_and(|t| {
                            super::guard::definition(t.as_ref()).is_ok_and(|d| d.modifies_files)
                        })
            })
            .filter_map(|(call, _)| {
                call.parameters
                    .get("path")
                    .and_then(serde_json::Value::as_str)
            })
            .map(|p| p.trim_start_matches("./").to_string())
            .collect()
    }

    /// After tools ran: new commits? Then format the files they touched and the files the
    /// tools wrote, and tell the model.
    async fn check_git(&mut self, before: Option<String>, edited: Vec<String>) {
        let mut note = String::new();
        let mut files = edited;
        if let Some(commits) = self.new_commits(before).await {
            note = format!(
                "Note: {} new git commit(s) appeared while the tools ran:",
                commits.len()
            );
            for c in &commits {
                note.push_str(&format!(
                    "\n- {} {} ({})",
                    short(&c.hash),
                    c.subject,
                    c.files.join(", ")
                ));
            }
            self.emit(GitCommitsDetectedEvent::create(
                self.request.request_id,
                commits.clone(),
                self.iteration,
            ));
            files.extend(commits.iter().flat_map(|c| c.files.iter().cloned()));
        }
        files.sort();
        files.dedup();
        let formatted = self.run_formatters(&files).await;
        if !formatted.is_empty() {
            if note.is_empty() {
                note.push_str("Note: the formatters ran on the changed files:");
            }
            note.push_str(&formatted);
        }
        if !note.is_empty() {
            self.history.push(ChatMessage::user(note));
        }
    }

    /// The commits made since `before`, when there are any.
    async fn new_commits(&self, before: Option<String>) -> Option<Vec<core_models::GitCommit>> {
        let (before, git, workspace) = (
            before?,
            self.shared.ports.git.clone()?,
            self.workspace.clone()?,
        );
        let after = match git.head(&workspace).await {
            Ok(Some(after)) if after != before => after,
            Ok(_) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the git HEAD");
                return None;
            }
        };
        match git.commits_since(&workspace, &before).await {
            Ok(c) if !c.is_empty() => Some(c),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, %after, "cannot list the new commits");
                None
            }
        }
    }

    /// Run each formatter on the `files` it handles; what they did, one line each, for
    /// the model (empty when none ran).
    async fn run_formatters(&mut self, files: &[String]) -> String {
        let Some(workspace) = self.workspace.clone() else {
            return String::new();
        };
        let formatters = self.shared.ports.formatters.clone();
        let mut note = String::new();
        let mut turned = false;
        for formatter in formatters {
            let mine: Vec<String> = files
                .iter()
                .filter(|f| formatter.handles(f))
                .cloned()
                .collect();
            if mine.is_empty() {
                continue;
            }
            if !turned {
                self.turn(S::RunningAutoformatters, None);
                turned = true;
            }
            let mut event = AutoformatEvent::create(
                self.request.request_id,
                formatter.name(),
                mine.clone(),
                Vec::new(),
                self.iteration,
            );
            match formatter.format(&workspace, &mine).await {
                Ok(changed) => {
                    if !changed.is_empty() {
                        note.push_str(&format!(
                            "\n{} reformatted: {}",
                            formatter.name(),
                            changed.join(", ")
                        ));
                    }
                    event.changed_files = changed;
                }
                Err(e) => {
                    note.push_str(&format!("\n{} failed: {e}", formatter.name()));
                    event.error = Some(e.to_string());
                }
            }
            self.emit(event);
        }
        note
    }

    fn budget_exceeded(&self) -> Option<String> {
        let budget = &self.shared.config.budget;
        let used = self.prompt_tokens.saturating_add(self.completion_tokens);
        if let Some(max) = budget.max_total_tokens.filter(|max| used > *max) {
            return Some(format!(
                "token budget exceeded: {used} tokens used of {max}"
            ));
        }
        if let Some(max) = budget
            .max_wall_time()
            .filter(|max| self.started.elapsed() > *max)
        {
            return Some(format!(
                "time budget exceeded: {:.1}s of {:.1}s",
                self.started.elapsed().as_secs_f64(),
                max.as_secs_f64()
            ));
        }
        let cost = budget.cost(self.prompt_tokens, self.completion_tokens);
        if let Some(max) = budget.max_cost.filter(|max| cost > *max) {
            return Some(format!("cost budget exceeded: {cost:.4} of {max:.4}"));
        }
        None
    }
}

fn short(hash: &str) -> &str {
    hash.get(..7).unwrap_or(hash)
}
