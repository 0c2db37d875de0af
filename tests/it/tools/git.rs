//! The git and formatter ports over real commands, and the agent that uses them.

use super::*;

/// Each commit's subject and the files it changed.
pub(crate) fn summary(commits: &[core_models::GitCommit]) -> Vec<(&str, Vec<&str>)> {
    commits
        .iter()
        .map(|c| {
            (
                c.subject.as_str(),
                c.files.iter().map(String::as_str).collect(),
            )
        })
        .collect()
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
    let summary = crate::tools::git::summary(&commits);
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
