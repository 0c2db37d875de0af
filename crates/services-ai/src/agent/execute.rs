//! Running the calls that may run. A reply whose calls are all known to be read-only runs
//! them in parallel under a semaphore (at most `max_parallel_tool_calls`); any other
//! reply runs them in order, one at a time, each call checked again after an earlier one
//! could have changed what it touches (see [`super::recheck`]). Each call runs with its
//! timeout, its cancellation token and a short grace to stop; a tool that panics fails its
//! call and nothing else.

use super::guard::panic_message;
use super::recheck::may_change;
use super::run::{Prepared, Run};
use core_models::{
    ProgressReporter, Tool, ToolCallRequest, ToolExecutionContext, ToolExecutionEvent, ToolResult,
    ToolResultEvent, ToolUsageSummary,
};
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// How long a cancelled or timed-out tool may take to return on its own before its future
/// is dropped.
const GRACE: Duration = Duration::from_millis(50);

/// One call's end: the call, its result, how long it ran and whether it ran.
type Ended = (ToolCallRequest, ToolResult, Duration, bool);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Done,
    /// The tool panicked: its call failed, and it is not tried again.
    Panicked,
    TimedOut,
    Cancelled,
}

impl Run {
    /// Run the calls that may run (in parallel only when none of them could change
    /// anything, else in order); results come back in call order.
    pub(super) async fn execute_all(
        &mut self,
        prepared: Vec<Prepared>,
    ) -> Vec<(ToolCallRequest, ToolResult)> {
        let in_order = prepared.iter().any(|p| match p {
            Prepared::Run { call, tool, .. } => may_change(call, tool.as_ref()),
            Prepared::Settled { .. } => false,
        });
        let results = if in_order {
            self.checkpoint_before().await;
            self.run_in_order(prepared).await
        } else {
            self.run_together(prepared).await
        };
        let mut out = Vec::with_capacity(results.len());
        for (call, result, elapsed, ran) in results {
            if ran {
                self.plan_updated(&call, &result);
                self.tools_executed += 1;
                self.usage
                    .entry(call.tool_id.clone())
                    .or_insert_with(|| ToolUsageSummary::new(&call.tool_id, &call.tool_name))
                    .record(result.success, elapsed);
                self.done.push((call.clone(), result.clone()));
            }
            self.tried.push((call.clone(), result.clone()));
            out.push((call, result));
        }
        out
    }

    /// A successful call of the plan tool: the plan it sent, as a `plan_updated` event.
    fn plan_updated(&self, call: &ToolCallRequest, result: &ToolResult) {
        #[derive(serde::Deserialize)]
        struct Sent {
            steps: Vec<core_models::PlanStep>,
            #[serde(default)]
            explanation: Option<String>,
        }
        if call.tool_id != core_models::PLAN_TOOL_ID || !result.success {
            return;
        }
        // As the tool read it: at most 20 steps, each shortened (the tool validated it).
        let short = |t: String| t.trim().chars().take(200).collect::<String>();
        if let Ok(sent) = serde_json::from_value::<Sent>((*call.parameters).clone()) {
            let steps = sent
                .steps
                .into_iter()
                .take(20)
                .map(|s| core_models::PlanStep {
                    step: short(s.step),
                    status: s.status,
                })
                .collect();
            self.emit(core_models::PlanUpdatedEvent::create(
                self.request.request_id,
                steps,
                sent.explanation.map(short),
                self.iteration,
            ));
        }
    }

    /// A call settled without running: its result is reported.
    fn settled(&self, call: ToolCallRequest, result: ToolResult) -> Ended {
        self.emit(ToolResultEvent::create(
            self.request.request_id,
            &call,
            result.clone(),
            Duration::ZERO,
            self.iteration,
        ));
        (call, result, Duration::ZERO, false)
    }

    /// Read-only calls, at most `max_parallel_tool_calls` at once.
    async fn run_together(&self, prepared: Vec<Prepared>) -> Vec<Ended> {
        let permits = Arc::new(Semaphore::new(
            self.shared.config.max_parallel_tool_calls.max(1) as usize,
        ));
        let futures = prepared.into_iter().map(|p| {
            let permits = Arc::clone(&permits);
            async move {
                match p {
                    Prepared::Settled { call, result } => self.settled(call, result),
                    Prepared::Run {
                        call,
                        tool,
                        approved,
                        ..
                    } => {
                        let _permit = permits.acquire().await;
                        let (result, elapsed) = self.execute_one(&call, tool, approved).await;
                        (call, result, elapsed, true)
                    }
                }
            }
        });
        futures::future::join_all(futures).await
    }

    /// The calls one at a time, in order; after a call that could change something ran,
    /// each later call is checked again before it runs. Once the request is stopped, the
    /// calls not started yet do not run.
    async fn run_in_order(&self, prepared: Vec<Prepared>) -> Vec<Ended> {
        let mut changed = false;
        let mut out = Vec::with_capacity(prepared.len());
        for p in prepared {
            let p = match p {
                Prepared::Run { call, .. } if self.stopped() => Prepared::Settled {
                    call,
                    result: ToolResult::failed("Cancelled before it ran"),
                },
                p @ Prepared::Run { .. } if changed => self.recheck(p).await,
                p => p,
            };
            match p {
                Prepared::Settled { call, result } => out.push(self.settled(call, result)),
                Prepared::Run {
                    call,
                    tool,
                    approved,
                    ..
                } => {
                    changed |= may_change(&call, tool.as_ref());
                    let (result, elapsed) = self.execute_one(&call, tool, approved).await;
                    out.push((call, result, elapsed, true));
                }
            }
        }
        out
    }

    /// Run one call with its timeout, forwarding progress; retried once when configured.
    async fn execute_one(
        &self,
        call: &ToolCallRequest,
        tool: Arc<dyn Tool>,
        approved: bool,
    ) -> (ToolResult, Duration) {
        let started = Instant::now();
        let id = self.request.request_id;
        let attempts = if self.shared.config.auto_retry_failed_tools {
            2
        } else {
            1
        };
        let mut result = ToolResult::failed("not run");
        for attempt in 1..=attempts {
            self.emit(ToolExecutionEvent::starting(id, call, self.iteration));
            let (status, r) = self
                .attempt(call, Arc::clone(&tool), approved, started)
                .await;
            result = r;
            let elapsed = started.elapsed();
            match status {
                Status::Done if result.success => {
                    self.emit(ToolExecutionEvent::completed(
                        id,
                        call,
                        elapsed,
                        self.iteration,
                    ));
                    break;
                }
                Status::Done => {
                    let message = result.error_message.clone().unwrap_or_default();
                    self.emit(ToolExecutionEvent::failed(
                        id,
                        call,
                        message,
                        elapsed,
                        self.iteration,
                    ));
                    if attempt < attempts && !self.stopped() {
                        continue;
                    }
                    break;
                }
                Status::Panicked => {
                    let message = result.error_message.clone().unwrap_or_default();
                    self.emit(ToolExecutionEvent::failed(
                        id,
                        call,
                        message,
                        elapsed,
                        self.iteration,
                    ));
                    break;
                }
                Status::TimedOut => {
                    self.emit(ToolExecutionEvent::timed_out(
                        id,
                        call,
                        elapsed,
                        self.iteration,
                    ));
                    break;
                }
                Status::Cancelled => {
                    self.emit(ToolExecutionEvent::cancelled(
                        id,
                        call,
                        elapsed,
                        self.iteration,
                    ));
                    break;
                }
            }
        }
        self.after_tool_hooks(call, &mut result).await;
        let elapsed = started.elapsed();
        self.emit(ToolResultEvent::create(
            id,
            call,
            result.clone(),
            elapsed,
            self.iteration,
        ));
        (result, elapsed)
    }

    async fn attempt(
        &self,
        call: &ToolCallRequest,
        tool: Arc<dyn Tool>,
        approved: bool,
        started: Instant,
    ) -> (Status, ToolResult) {
        let token = self.handle.stop.child_token();
        let (progress, mut progress_rx) = ProgressReporter::channel();
        let context = ToolExecutionContext {
            call_id: call.id,
            request_id: self.request.request_id,
            session_id: self.request.conversation_id,
            workspace_path: self.workspace.clone(),
            parameters: call.parameters.clone(),
            cancellation: token.clone(),
            is_approved: approved,
            progress,
        };
        let executor = Arc::clone(&self.shared.ports.executor);
        // Called inside the guarded future: an executor that panics before its future
        // exists fails the call too.
        let mut run = Box::pin(
            AssertUnwindSafe(async move { executor.execute(tool, context).await }).catch_unwind(),
        );
        let timeout = self.shared.config.tool_execution_timeout();
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut progress_open = true;
        let status = loop {
            tokio::select! {
                biased;
                result = &mut run => {
                    let result = match result {
                        Ok(result) => result,
                        Err(panic) => {
                            let panic = panic_message(panic.as_ref());
                            return (Status::Panicked, self.tool_panicked(call, "execute", &panic));
                        }
                    };
                    // A tool that stopped because the request was stopped was cancelled.
                    let status = if !result.success && self.stopped() { Status::Cancelled } else { Status::Done };
                    return (status, result);
                }
                _ = &mut deadline => break Status::TimedOut,
                _ = self.handle.stop.cancelled() => break Status::Cancelled,
                p = progress_rx.recv(), if progress_open => match p {
                    Some(p) => self.emit(ToolExecutionEvent::in_progress(self.request.request_id, call, p, started.elapsed(), self.iteration)),
                    None => progress_open = false,
                },
            }
        };
        token.cancel();
        // Give the tool a moment to stop on its own; then its future is dropped.
        let _ = tokio::time::timeout(GRACE, &mut run).await;
        let message = match status {
            Status::TimedOut => format!("Timed out after {}s", timeout.as_secs_f64()),
            _ => "Cancelled".to_string(),
        };
        (status, ToolResult::failed(message))
    }
}
