//! Processes a command starts end with it: whatever they do with signals, sessions or
//! its output pipes.

use core_models::{Tool, ToolExecutionContext, ToolResult};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use test_support::processes::{process_gone, written_pid};
use tools::RunCommand;

async fn pid_in(file: &Path) -> u32 {
    for _ in 0..500 {
        if let Some(pid) = written_pid(file) {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no pid was written to {}", file.display());
}

fn context(ws: &Path, params: Value) -> ToolExecutionContext {
    let mut ctx = ToolExecutionContext::new(params);
    ctx.workspace_path = Some(ws.to_path_buf());
    ctx.is_approved = true;
    ctx
}

async fn exec(ws: &Path, params: Value) -> (ToolResult, Duration) {
    let started = Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(60),
        RunCommand::default().execute(context(ws, params)),
    )
    .await
    .expect("the call ends");
    (r, started.elapsed())
}

/// A child that ignores SIGTERM, started in the background; `$1` names the pid file.
const STUBBORN: &str = "sh -c 'trap \"\" TERM; while :; do sleep 1; done' & echo $! > stubborn.pid";

#[tokio::test]
async fn a_child_ignoring_sigterm_is_killed_on_cancel() {
    let ws = tempfile::tempdir().unwrap();
    let ctx = context(
        ws.path(),
        json!({"command": format!("{STUBBORN}; sleep 300")}),
    );
    let token = ctx.cancellation.clone();
    let task = tokio::spawn(async move { RunCommand::default().execute(ctx).await });
    let pid = pid_in(&ws.path().join("stubborn.pid")).await;
    token.cancel();
    let r = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("cancel ends the call")
        .unwrap();
    assert!(!r.success);
    assert!(
        process_gone(pid),
        "the SIGTERM-ignoring child {pid} survived the cancel"
    );
}

#[tokio::test]
async fn a_child_ignoring_sigterm_is_killed_when_the_shell_exits_first() {
    let ws = tempfile::tempdir().unwrap();
    let (r, _) = exec(ws.path(), json!({ "command": STUBBORN })).await;
    assert!(r.success, "{r:?}");
    let pid = pid_in(&ws.path().join("stubborn.pid")).await;
    assert!(
        process_gone(pid),
        "the SIGTERM-ignoring child {pid} outlived its command"
    );
}

#[tokio::test]
async fn a_child_that_leaves_the_session_is_still_ended() {
    let ws = tempfile::tempdir().unwrap();
    let (r, _) = exec(
        ws.path(),
        // The command waits until the escaped child has written its pid: a fixed sleep is
        // too short on a loaded machine, and then there is nothing to check.
        json!({"command": "setsid sh -c 'echo $$ > escaped.pid.tmp && mv escaped.pid.tmp escaped.pid; sleep 300' > /dev/null 2>&1 & while [ ! -s escaped.pid ]; do sleep 0.05; done"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    let pid = pid_in(&ws.path().join("escaped.pid")).await;
    assert!(
        process_gone(pid),
        "{pid} left the process group and survived"
    );
}

#[tokio::test]
async fn the_timeout_covers_the_whole_command_not_the_end_of_its_output() {
    let ws = tempfile::tempdir().unwrap();
    // A detached child holds stdout open long after the shell is done.
    let (r, took) = exec(
        ws.path(),
        json!({"command": "(sleep 60; echo late) & echo early", "timeout_seconds": 2}),
    )
    .await;
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(r.content.contains("early") || r.error_message.unwrap_or_default().contains("early"));

    let (r, took) = exec(
        ws.path(),
        json!({"command": "sleep 60", "timeout_seconds": 1}),
    )
    .await;
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert_eq!(r.data.unwrap()["timed_out"], true);
}

#[tokio::test]
async fn without_a_sandbox_an_escaped_child_cannot_hold_the_call() {
    let ws = tempfile::tempdir().unwrap();
    // Full access (approved): setsid really leaves the group, and the child keeps stdout.
    let (r, took) = exec(
        ws.path(),
        json!({
            "command": "setsid sh -c 'echo $$ > free.pid; sleep 30' & sleep 0.5; echo started",
            "sandbox": "full-access",
            "timeout_seconds": 2
        }),
    )
    .await;
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(r.content.contains("started"), "{r:?}");
    let pid = pid_in(&ws.path().join("free.pid")).await;
    // Not our group any more: end it here so that the test leaves nothing behind.
    let _ = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status();
}
