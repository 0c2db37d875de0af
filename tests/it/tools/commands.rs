//! `run_command`: its exit code and output, its time limit and cancellation.

use super::*;

/// The pid a shell wrote to `path`, waiting up to 5 s for it.
async fn wait_for_pid(path: &Path) -> u32 {
    for _ in 0..200 {
        if let Some(pid) = written_pid(path) {
            return pid;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("{} was not written", path.display());
}

#[tokio::test]
async fn run_command_reports_exit_code_and_output() {
    let dir = ws();
    let run = RunCommand::default();
    let r = exec(
        &run,
        dir.path(),
        json!({"command": "cat notes.txt; echo oops >&2"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    assert!(
        r.content.contains("--- stdout ---\nline one\nline two"),
        "{}",
        r.content
    );
    assert!(
        r.content.contains("--- stderr ---\noops\n"),
        "{}",
        r.content
    );
    let data = r.data.unwrap();
    assert_eq!(data["exit_code"], 0);
    assert_eq!(data["stderr"], "oops\n");

    let r = exec(
        &run,
        dir.path(),
        json!({"command": "ls", "cwd": "src/deep"}),
    )
    .await;
    // Output alone, whole: the output itself.
    assert_eq!(r.content, "er\n");
    assert_eq!(r.data.unwrap()["stdout"], "er\n");

    let r = exec(&run, dir.path(), json!({"command": "echo bad; exit 3"})).await;
    let message = error(&r);
    assert!(
        message.starts_with("the command exited with code 3\n"),
        "{message}"
    );
    assert!(message.contains("bad"), "{message}");
    assert_eq!(r.data.unwrap()["exit_code"], 3);

    // Output is kept head and tail, with the total said.
    let r = exec(&run, dir.path(), json!({"command": "seq 1 100000"})).await;
    let out = r.data.unwrap()["stdout"].as_str().unwrap().to_string();
    assert!(out.len() < tools::COMMAND_OUTPUT_CAP + 100, "{}", out.len());
    assert!(out.starts_with("1\n2\n3\n") && out.ends_with("99999\n100000\n"));
    assert!(out.contains("bytes left out"));
    assert!(
        r.content.contains("588895 bytes in all, shortened"),
        "{}",
        r.content
    );

    // The working folder cannot leave the workspace.
    let r = exec(&run, dir.path(), json!({"command": "ls", "cwd": "../"})).await;
    assert!(error(&r).contains("outside the workspace"), "{r:?}");

    let v = run.validate(&json!({"command": " ", "timeout_seconds": 9999, "cwd": 1}));
    assert_eq!(
        v.errors,
        [
            "command is required (a non-empty string)",
            "timeout_seconds must be at most 600",
            "cwd must be a string"
        ]
    );
    assert_eq!(
        run.effective_risk_level(&json!({"command": "ls"})),
        core_models::RiskLevel::Safe
    );
    assert_eq!(
        run.effective_risk_level(&json!({"command": "rm -rf target"})),
        core_models::RiskLevel::High
    );
    assert_eq!(
        run.execution_summary(&json!({"command": "make", "cwd": "src"})),
        "Run `make` in src"
    );
}

#[tokio::test]
async fn run_command_timeout_and_cancel_end_the_whole_process_group() {
    let dir = ws();
    let run = RunCommand::default();
    // A background child that would outlive its shell, and a foreground sleep.
    let script = "sleep 300 & echo $! > bg.pid; sleep 300";

    let started = std::time::Instant::now();
    let r = exec(
        &run,
        dir.path(),
        json!({"command": script, "timeout_seconds": 1}),
    )
    .await;
    assert!(error(&r).contains("did not finish within 1 s"), "{r:?}");
    assert_eq!(r.data.unwrap()["timed_out"], true);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let pid = wait_for_pid(&dir.path().join("bg.pid")).await;
    assert!(
        process_gone(pid),
        "the background sleep {pid} survived the timeout"
    );

    std::fs::remove_file(dir.path().join("bg.pid")).unwrap();
    let mut ctx = ToolExecutionContext::new(json!({"command": script}));
    ctx.workspace_path = Some(dir.path().to_path_buf());
    let token = ctx.cancellation.clone();
    let task = tokio::spawn(async move { RunCommand::default().execute(ctx).await });
    let pid = wait_for_pid(&dir.path().join("bg.pid")).await;
    assert!(!process_gone(pid));
    token.cancel();
    let r = tokio::time::timeout(std::time::Duration::from_secs(5), task)
        .await
        .expect("cancel ends the call promptly")
        .unwrap();
    assert_eq!(error(&r), "Cancelled");
    assert!(
        process_gone(pid),
        "the background sleep {pid} survived the cancel"
    );

    // A background job left running by a command that exits is ended too.
    let r = exec(
        &run,
        dir.path(),
        json!({"command": "sleep 300 & echo $! > left.pid"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    let pid = wait_for_pid(&dir.path().join("left.pid")).await;
    assert!(process_gone(pid), "the job {pid} outlived its command");
}
