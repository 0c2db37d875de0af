//! The built-in tools, and the git and formatter ports over real commands.

use core_models::{Formatter, GitInspector, Tool, ToolExecutionContext, ToolResult};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use test_support::processes::{process_gone, written_pid};
use tools::{
    CommandFormatter, GitCommandInspector, GitDiff, GitStatus, ListDir, ReadFile, RunCommand,
    SearchFiles, Workspace,
};

fn ws() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("notes.txt"),
        "line one\nline two\nline three\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("src/deep/er")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.path().join("src/deep/er/x.txt"), "x").unwrap();
    std::fs::write(dir.path().join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    std::fs::write(dir.path().join("target/out.bin"), "bin").unwrap();
    std::fs::write(dir.path().join("debug.log"), "log").unwrap();
    dir
}

async fn exec(tool: &dyn Tool, root: &Path, params: Value) -> ToolResult {
    assert!(tool.validate(&params).is_valid, "{params}");
    let mut ctx = ToolExecutionContext::new(params);
    ctx.workspace_path = Some(root.to_path_buf());
    tool.execute(ctx).await
}

fn error(result: &ToolResult) -> &str {
    assert!(!result.success, "expected a failure, got {result:?}");
    result.error_message.as_deref().unwrap()
}

#[tokio::test]
async fn read_file_whole_and_by_lines() {
    let dir = ws();
    let read = ReadFile::default();
    let r = exec(&read, dir.path(), json!({"path": "notes.txt"})).await;
    assert_eq!(r.content, "line one\nline two\nline three\n");
    let r = exec(
        &read,
        dir.path(),
        json!({"path": "notes.txt", "start_line": 2, "end_line": 3}),
    )
    .await;
    assert_eq!(r.content, "line two\nline three\n");
    assert_eq!(r.data.unwrap()["total_lines"], 3);
    let r = exec(
        &read,
        dir.path(),
        json!({"path": "./src/../notes.txt", "start_line": 3}),
    )
    .await;
    assert_eq!(r.content, "line three\n");
    assert!(error(
        &exec(
            &read,
            dir.path(),
            json!({"path": "notes.txt", "start_line": 9})
        )
        .await
    )
    .contains("only 3 lines"));
    assert!(
        error(&exec(&read, dir.path(), json!({"path": "missing.txt"})).await)
            .contains("does not exist")
    );
    assert!(error(&exec(&read, dir.path(), json!({"path": "src"})).await).contains("is a folder"));
    std::fs::write(dir.path().join("big.txt"), "x".repeat(300 * 1024)).unwrap();
    assert!(error(&exec(&read, dir.path(), json!({"path": "big.txt"})).await).contains("cap"));
    std::fs::write(dir.path().join("bin.dat"), b"ab\0cd").unwrap();
    assert!(error(&exec(&read, dir.path(), json!({"path": "bin.dat"})).await).contains("binary"));
    let v = read.validate(&json!({"start_line": 0, "end_line": 1}));
    assert_eq!(
        v.errors,
        [
            "path is required (a non-empty string)",
            "start_line must be a whole number of at least 1"
        ]
    );
    assert!(
        !read
            .validate(&json!({"path": "a", "start_line": 5, "end_line": 2}))
            .is_valid
    );
    assert_eq!(
        read.execution_summary(&json!({"path": "a", "start_line": 1, "end_line": 2})),
        "Read lines 1-2 of a"
    );
}

#[tokio::test]
async fn paths_cannot_leave_the_workspace() {
    let dir = ws();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            dir.path().join("link.txt"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("linkdir")).unwrap();
    }
    let read = ReadFile::default();
    let absolute = outside
        .path()
        .join("secret.txt")
        .to_string_lossy()
        .into_owned();
    let cases = [
        ("../secret.txt", "leads outside the workspace"),
        ("src/../../x", "leads outside the workspace"),
        (absolute.as_str(), "is absolute"),
        ("link.txt", "through a symbolic link"),
        ("linkdir/secret.txt", "through a symbolic link"),
    ];
    for (path, why) in cases {
        let r = exec(&read, dir.path(), json!({"path": path})).await;
        let message = error(&r);
        assert!(message.contains(why), "{path}: {message}");
        assert!(!r.content.contains("secret"));
    }
    let list = ListDir::default();
    assert!(error(&exec(&list, dir.path(), json!({"path": ".."})).await).contains("outside"));
    assert!(
        error(&exec(&list, dir.path(), json!({"path": "linkdir"})).await).contains("symbolic link")
    );
    // A new file's path is checked too.
    let w = Workspace::new(dir.path()).unwrap();
    assert!(w.resolve_new("src/new.rs").is_ok());
    assert!(w
        .resolve_new("nofolder/new.rs")
        .unwrap_err()
        .to_string()
        .contains("folder that does not exist"));
    assert!(w
        .resolve_new("linkdir/new.rs")
        .unwrap_err()
        .to_string()
        .contains("outside"));
    assert!(Workspace::new(dir.path().join("notes.txt"))
        .unwrap_err()
        .to_string()
        .contains("not a folder"));
}

#[tokio::test]
async fn list_dir_honours_gitignore_and_depth() {
    let dir = ws();
    let list = ListDir::default();
    let r = exec(&list, dir.path(), json!({})).await;
    assert_eq!(r.content, ".gitignore\nnotes.txt\nsrc/");
    let r = exec(&list, dir.path(), json!({"path": "src", "depth": 3})).await;
    assert_eq!(
        r.content,
        "src/deep/\nsrc/deep/er/\nsrc/deep/er/x.txt\nsrc/main.rs"
    );
    let r = exec(&list, dir.path(), json!({"depth": 10})).await;
    assert!(
        !r.content.contains("target") && !r.content.contains("debug.log"),
        "{}",
        r.content
    );
    assert!(!list.validate(&json!({"depth": 11})).is_valid);
    assert!(
        error(&exec(&list, dir.path(), json!({"path": "notes.txt"})).await).contains("is a file")
    );
}

#[tokio::test]
async fn tools_need_a_workspace_and_stop_when_cancelled() {
    let read = ReadFile::default();
    let r = read
        .execute(ToolExecutionContext::new(json!({"path": "a"})))
        .await;
    assert_eq!(error(&r), "no workspace is open");
    let dir = ws();
    let mut ctx = ToolExecutionContext::new(json!({"path": "notes.txt"}));
    ctx.workspace_path = Some(dir.path().to_path_buf());
    ctx.cancellation.cancel();
    assert_eq!(error(&read.execute(ctx).await), "Cancelled");
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test]
async fn git_inspector_on_a_real_repository() {
    let dir = tempfile::tempdir().unwrap();
    let inspector = GitCommandInspector::default();
    assert_eq!(
        inspector.head(dir.path()).await.unwrap(),
        None,
        "not a repository"
    );
    git(dir.path(), &["init", "-q"]);
    assert_eq!(
        inspector.head(dir.path()).await.unwrap(),
        None,
        "no commit yet"
    );
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-q", "-m", "first"]);
    let first = inspector.head(dir.path()).await.unwrap().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/b.rs"), "fn b() {}").unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-q", "-m", "second: add b"]);
    std::fs::write(dir.path().join("a.txt"), "aa").unwrap();
    git(dir.path(), &["commit", "-q", "-am", "third"]);
    let commits = inspector.commits_since(dir.path(), &first).await.unwrap();
    let summary: Vec<(&str, Vec<&str>)> = commits
        .iter()
        .map(|c| {
            (
                c.subject.as_str(),
                c.files.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("second: add b", vec!["src/b.rs"]),
            ("third", vec!["a.txt"])
        ]
    );
    assert_eq!(
        commits[1].hash,
        inspector.head(dir.path()).await.unwrap().unwrap()
    );
    assert!(inspector
        .commits_since(dir.path(), "no-such-rev")
        .await
        .is_err());
}

#[tokio::test]
async fn command_formatter_reports_changed_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "messy").unwrap();
    std::fs::write(dir.path().join("b.txt"), "clean").unwrap();
    let f = CommandFormatter::new("tidy", [".txt"], ["sed", "-i", "s/messy/clean/"]);
    assert!(f.handles("x/a.txt") && !f.handles("a.rs"));
    let changed = f
        .format(
            dir.path(),
            &["a.txt".into(), "b.txt".into(), "gone.txt".into()],
        )
        .await
        .unwrap();
    assert_eq!(changed, ["a.txt"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "clean"
    );
    let broken = CommandFormatter::new("nope", ["txt"], ["definitely-not-a-program-xyz"]);
    assert!(broken
        .format(dir.path(), &["a.txt".into()])
        .await
        .unwrap_err()
        .to_string()
        .contains("not installed"));
}

/// An agent over `llm` and `registry` whose formatter "tidy" turns "messy" into "clean"
/// in .txt files.
fn tidy_agent(
    llm: std::sync::Arc<test_support::ScriptedLlm>,
    registry: std::sync::Arc<dyn core_models::ToolRegistry>,
) -> services_ai::AgentEngineBuilder {
    services_ai::AgentEngine::builder(llm, registry)
        .config(services_ai::AgentConfig {
            iteration_delay_ms: 0,
            ..Default::default()
        })
        .formatter(std::sync::Arc::new(CommandFormatter::new(
            "tidy",
            ["txt"],
            ["sed", "-i", "s/messy/clean/"],
        )))
}

/// The whole seed-004 check on a real repository: a tool commits, the loop notices, the
/// formatter runs on the committed files, and the model is told.
#[tokio::test]
async fn agent_detects_commits_made_by_a_tool() {
    use core_models::AgentService as _;
    use futures::StreamExt;
    use std::sync::Arc;
    use test_support::{MockTool, ScriptedLlm, ScriptedResponse};

    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    std::fs::write(dir.path().join("README.md"), "hi").unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-q", "-m", "start"]);
    let root = dir.path().to_path_buf();
    let committer = Arc::new(MockTool::new("commit").with_execute(move |_| {
        let root = root.clone();
        async move {
            std::fs::write(root.join("style.txt"), "messy").unwrap();
            git(&root, &["add", "."]);
            git(&root, &["commit", "-q", "-m", "Add style"]);
            ToolResult::success("committed")
        }
    }));
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedResponse::chunks([
            "<tool_call>{\"name\": \"commit\", \"arguments\": {}}</tool_call>",
        ]),
        ScriptedResponse::chunks(["Committed."]),
    ]));
    let registry: Arc<dyn core_models::ToolRegistry> = Arc::new(
        [committer as Arc<dyn Tool>]
            .into_iter()
            .collect::<services_ai::InMemoryToolRegistry>(),
    );
    let agent = tidy_agent(llm.clone(), registry)
        .git_inspector(Arc::new(GitCommandInspector::default()))
        .build();
    let request = core_models::AgentRequest::new("commit it").with_tool_context(
        core_models::ToolAvailabilityContext::for_workspace(dir.path()),
    );
    let events: Vec<_> = agent.process_message(request).unwrap().collect().await;
    let commits = events
        .iter()
        .find_map(|e| match e {
            core_models::AgentEvent::GitCommitsDetected(g) => Some(g.commits.clone()),
            _ => None,
        })
        .expect("commit detected");
    assert_eq!(commits.len(), 1);
    assert_eq!(
        (commits[0].subject.as_str(), commits[0].files.clone()),
        ("Add style", vec!["style.txt".to_string()])
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("style.txt")).unwrap(),
        "clean"
    );
    let note = llm.requests()[1].messages.last().unwrap().content.clone();
    assert!(
        note.contains("Add style") && note.contains("tidy reformatted: style.txt"),
        "{note}"
    );
}

/// Files a file-changing tool wrote are formatted too, without any commit; files that
/// only a read-only tool touched are not.
#[tokio::test]
async fn agent_formats_files_the_tools_wrote() {
    use core_models::AgentService as _;
    use futures::StreamExt;
    use std::sync::Arc;
    use test_support::{ScriptedLlm, ScriptedResponse};

    let dir = ws();
    std::fs::write(dir.path().join("old.txt"), "messy").unwrap();
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedResponse::chunks([
            "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"./new.txt\", \"content\": \"messy\"}}</tool_call>",
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"old.txt\"}}</tool_call>",
        ]),
        ScriptedResponse::chunks(["Written."]),
    ]));
    let registry: Arc<dyn core_models::ToolRegistry> = Arc::new(
        tools::builtin_tools()
            .into_iter()
            .collect::<services_ai::InMemoryToolRegistry>(),
    );
    let agent = tidy_agent(llm.clone(), registry)
        .permissions(Arc::new(
            services_ai::DefaultPermissionManager::in_memory()
                .with_auto_approve_up_to(core_models::RiskLevel::High),
        ))
        .build();
    let request = core_models::AgentRequest::new("write it").with_tool_context(
        core_models::ToolAvailabilityContext::for_workspace(dir.path()),
    );
    let events: Vec<_> = agent.process_message(request).unwrap().collect().await;
    let formatted: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            core_models::AgentEvent::Autoformat(a) => {
                Some((a.files.clone(), a.changed_files.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        formatted,
        [(vec!["new.txt".to_string()], vec!["new.txt".to_string()])]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).unwrap(),
        "clean"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("old.txt")).unwrap(),
        "messy"
    );
    let note = llm.requests()[1].messages.last().unwrap().content.clone();
    assert!(note.contains("tidy reformatted: new.txt"), "{note}");
}

#[tokio::test]
async fn write_file_is_atomic_and_confined() {
    let dir = ws();
    let write = tools::WriteFile::default();
    let r = exec(
        &write,
        dir.path(),
        json!({"path": "out/new.txt", "content": "héllo"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.content, "Created out/new.txt (6 bytes)");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/new.txt")).unwrap(),
        "héllo"
    );
    let r = exec(
        &write,
        dir.path(),
        json!({"path": "notes.txt", "content": "new"}),
    )
    .await;
    assert_eq!(r.content, "Replaced notes.txt (3 bytes)");
    assert!(error(
        &exec(
            &write,
            dir.path(),
            json!({"path": "../evil.txt", "content": "x"})
        )
        .await
    )
    .contains("outside"));
    assert!(
        error(&exec(&write, dir.path(), json!({"path": "src", "content": "x"})).await)
            .contains("is a folder")
    );
    assert_eq!(
        write.effective_risk_level(&json!({"path": "src/a.rs"})),
        core_models::RiskLevel::Medium
    );
    assert_eq!(
        write.effective_risk_level(&json!({"path": "./.git/config"})),
        core_models::RiskLevel::High
    );
    assert_eq!(
        write.effective_risk_level(&json!({"path": "sub/.env"})),
        core_models::RiskLevel::High
    );
    assert!(!write.validate(&json!({"path": "a"})).is_valid);
    // A cancelled write leaves the old file as it was and no temporary file behind.
    let mut ctx = ToolExecutionContext::new(json!({"path": "notes.txt", "content": "half"}));
    ctx.workspace_path = Some(dir.path().to_path_buf());
    ctx.cancellation.cancel();
    assert_eq!(error(&write.execute(ctx).await), "Cancelled");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "new"
    );
    let stray: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(".tmp") || name.starts_with(".aintern-")
        })
        .collect();
    assert!(stray.is_empty());
}

#[tokio::test]
async fn edit_file_replaces_exactly_one_occurrence() {
    let dir = ws();
    let edit = tools::EditFile::default();
    let notes = || std::fs::read_to_string(dir.path().join("notes.txt")).unwrap();
    // (search, replace, expected error part or None, expected file after)
    let cases: [(&str, &str, Option<&str>, &str); 4] = [
        (
            "line two\n",
            "line 2\nline 2b\n",
            None,
            "line one\nline 2\nline 2b\nline three\n",
        ),
        (
            "absent",
            "x",
            Some("does not occur in 'notes.txt'"),
            "line one\nline 2\nline 2b\nline three\n",
        ),
        (
            "line 2",
            "x",
            Some("occurs 2 times in 'notes.txt' (lines 2, 3)"),
            "line one\nline 2\nline 2b\nline three\n",
        ),
        ("line 2b", "", None, "line one\nline 2\n\nline three\n"),
    ];
    for (search, replace, failure, after) in cases {
        let r = exec(
            &edit,
            dir.path(),
            json!({"path": "notes.txt", "search": search, "replace": replace}),
        )
        .await;
        match failure {
            Some(part) => assert!(error(&r).contains(part), "{r:?}"),
            None => assert!(r.success, "{r:?}"),
        }
        assert_eq!(notes(), after, "after {search:?}");
    }
    assert!(error(
        &exec(
            &edit,
            dir.path(),
            json!({"path": "../x", "search": "a", "replace": "b"})
        )
        .await
    )
    .contains("outside"));
    assert!(error(
        &exec(
            &edit,
            dir.path(),
            json!({"path": "missing.txt", "search": "a", "replace": "b"})
        )
        .await
    )
    .contains("does not exist"));
    assert!(
        !edit
            .validate(&json!({"path": "a", "search": "", "replace": "b"}))
            .is_valid
    );
    assert!(!edit.validate(&json!({"path": "a", "search": "x"})).is_valid);
    assert_eq!(
        edit.execution_summary(&json!({"path": "a.rs", "search": "x\ny", "replace": "z"})),
        "Edit a.rs: replace 2 line(s) with 1"
    );
    assert_eq!(
        edit.effective_risk_level(&json!({"path": ".github/ci.yml"})),
        core_models::RiskLevel::High
    );
    // A cancelled edit leaves the file as it was.
    let before = notes();
    let mut ctx = ToolExecutionContext::new(
        json!({"path": "notes.txt", "search": "line one", "replace": "changed"}),
    );
    ctx.workspace_path = Some(dir.path().to_path_buf());
    ctx.cancellation.cancel();
    assert_eq!(error(&edit.execute(ctx).await), "Cancelled");
    assert_eq!(notes(), before);
}

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

#[tokio::test]
async fn search_files_finds_lines_and_honours_gitignore() {
    let dir = ws();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "// Line one of lib\npub fn line() {}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("target/hit.txt"), "line in target\n").unwrap();
    std::fs::write(dir.path().join("bin.dat"), b"line\0binary").unwrap();
    let search = SearchFiles::default();
    let r = exec(&search, dir.path(), json!({"pattern": "line (one|two)"})).await;
    assert_eq!(
        r.content,
        "notes.txt:1: line one\nnotes.txt:2: line two\nsrc/lib.rs:1: // Line one of lib"
    );
    assert_eq!(r.data.unwrap()["files"], 2);

    // Case, globs and subfolders; ignored and binary files are skipped.
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "LINE", "case_insensitive": true, "glob": "*.rs"}),
    )
    .await;
    assert_eq!(
        r.content,
        "src/lib.rs:1: // Line one of lib\nsrc/lib.rs:2: pub fn line() {}"
    );
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "line", "path": "src", "case_insensitive": false}),
    )
    .await;
    assert_eq!(r.content, "src/lib.rs:2: pub fn line() {}");
    // Not said: case is ignored when the pattern has no capital letter ("smart case").
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "line", "path": "src"}),
    )
    .await;
    assert_eq!(
        r.content,
        "src/lib.rs:1: // Line one of lib\nsrc/lib.rs:2: pub fn line() {}"
    );
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "Line", "path": "src"}),
    )
    .await;
    assert_eq!(r.content, "src/lib.rs:1: // Line one of lib");
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "line", "max_results": 2}),
    )
    .await;
    assert!(
        r.content
            .ends_with("(only the first 2 matching lines are shown)"),
        "{}",
        r.content
    );
    assert_eq!(r.data.unwrap()["truncated"], true);
    let r = exec(&search, dir.path(), json!({"pattern": "zebra"})).await;
    assert_eq!(r.content, "no match for /zebra/ in .");

    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "x", "path": "../.."}),
    )
    .await;
    assert!(error(&r).contains("outside the workspace"), "{r:?}");
    let v = search.validate(&json!({"pattern": "a(", "glob": "[", "max_results": 0}));
    assert_eq!(v.errors.len(), 3, "{:?}", v.errors);
    assert!(v.errors[0].starts_with("pattern is not a valid regular expression"));
}

#[tokio::test]
async fn git_status_and_diff_show_the_changes() {
    let dir = ws();
    let (status, diff) = (GitStatus::default(), GitDiff::default());
    let r = exec(&status, dir.path(), json!({})).await;
    assert_eq!(error(&r), "the workspace is not a git repository");

    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-q", "-m", "first"]);
    let r = exec(&status, dir.path(), json!({})).await;
    assert_eq!(r.content, "## main\nnothing changed");
    assert_eq!(
        exec(&diff, dir.path(), json!({})).await.content,
        "no changes"
    );

    std::fs::write(
        dir.path().join("notes.txt"),
        "line one\nline 2\nline three\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("new.txt"), "new\n").unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() { }\n").unwrap();
    let r = exec(&status, dir.path(), json!({})).await;
    assert_eq!(
        r.content,
        "## main\n M notes.txt\n M src/main.rs\n?? new.txt\n"
    );
    assert_eq!(r.data.unwrap()["changed_files"], 3);

    let r = exec(&diff, dir.path(), json!({"path": "notes.txt"})).await;
    assert!(r.content.contains("-line two\n+line 2\n"), "{}", r.content);
    assert!(!r.content.contains("main.rs"), "{}", r.content);
    git(dir.path(), &["add", "src/main.rs"]);
    let r = exec(&diff, dir.path(), json!({"staged": true})).await;
    assert!(r.content.contains("+fn main() { }"), "{}", r.content);
    assert!(!r.content.contains("notes.txt"), "{}", r.content);
    assert_eq!(
        diff.execution_summary(&json!({"staged": true, "path": "src"})),
        "Show git staged changes in src"
    );

    let r = exec(&diff, dir.path(), json!({"path": "../outside"})).await;
    assert!(error(&r).contains("outside the workspace"), "{r:?}");
}
