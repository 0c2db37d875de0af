//! Permission rules that cannot be slipped past or lost: patterns see normalized subjects
//! (no spelling of a denied path gets through), deny patterns fail closed (a call they
//! cannot be checked against is refused, even when every call is approved), critical calls
//! always reach a person, and the permission file loses no rule to a concurrent writer or
//! a stale copy.

use crate::agent::{call, harness_with, results, run, run_answering, text};
use core_models::AgentService as _;
use core_models::{
    ApprovalDecision, PermissionManager, PermissionStore, PermissionSubjects, RememberScope,
    RiskLevel, Tool, ToolAvailabilityContext, ToolCallRequest, ToolPermissionSettings,
};
use serde_json::json;
use services_ai::{AgentConfig, DefaultPermissionManager, FilePermissionStore};
use std::path::Path;
use std::sync::{Arc, Barrier};
use test_support::fixtures::tool_call;
use test_support::MockTool;
use uuid::Uuid;

#[derive(Debug, PartialEq)]
enum Verdict {
    Allowed,
    Approval,
    Denied,
}

async fn verdict(pm: &DefaultPermissionManager, conv: Uuid, call: &ToolCallRequest) -> Verdict {
    let r = pm.check_permission(conv, call).await.unwrap();
    match (r.is_allowed, r.requires_approval) {
        (true, false) => Verdict::Allowed,
        (false, true) => Verdict::Approval,
        (false, false) => Verdict::Denied,
        other => panic!("inconsistent result {other:?} {r:?}"),
    }
}

const WS: &str = "/home/user/project";

/// Ways to name `secret/key` inside the workspace.
fn spellings_of_secret_key() -> Vec<String> {
    [
        "secret/key",
        "./secret/key",
        " secret/key",
        "secret/key ",
        "\tsecret/key\n",
        "secret//key",
        "secret///key",
        "a/../secret/key",
        "a/b/../../secret/key",
        "secret/./key",
        "./././secret/key",
        "secret/key/",
        "secret/other/../key",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("{WS}/secret/key"), format!("{WS}//secret/./key")])
    .collect()
}

/// A call as the agent sees it after assessment: subjects computed with the workspace.
fn assessed(tool: &str, parameters: serde_json::Value, risk: RiskLevel) -> ToolCallRequest {
    let mut c = tool_call(tool, parameters.clone(), risk);
    c.permission_subjects = Some(PermissionSubjects::from_parameters(
        &parameters,
        Some(Path::new(WS)),
    ));
    c
}

async fn manager_with(tool: &str, settings: ToolPermissionSettings) -> DefaultPermissionManager {
    let pm = DefaultPermissionManager::in_memory();
    pm.set_tool_permissions(tool, settings).await.unwrap();
    pm
}

#[tokio::test]
async fn every_spelling_of_a_denied_path_is_denied() {
    let pm = manager_with(
        "read_file",
        ToolPermissionSettings::default()
            .with_denied_patterns(vec!["secret/*".into()])
            .with_allowed_patterns(vec!["*".into()]),
    )
    .await;
    let conv = Uuid::new_v4();
    for path in spellings_of_secret_key() {
        let c = assessed("read_file", json!({ "path": path }), RiskLevel::Safe);
        assert_eq!(verdict(&pm, conv, &c).await, Verdict::Denied, "{path:?}");
        // Without an assessment the main argument is still normalized (no workspace).
        if !path.contains(WS) {
            let raw = tool_call("read_file", json!({ "path": path }), RiskLevel::Safe);
            assert_eq!(verdict(&pm, conv, &raw).await, Verdict::Denied, "{path:?}");
        }
    }
    let fine = assessed(
        "read_file",
        json!({"path": "./src/main.rs"}),
        RiskLevel::Safe,
    );
    assert_eq!(verdict(&pm, conv, &fine).await, Verdict::Allowed);
    // A deny pattern written with a spelling of its own still applies.
    let pm = manager_with(
        "read_file",
        ToolPermissionSettings::default().with_denied_patterns(vec!["./secret//*".into()]),
    )
    .await;
    let c = assessed("read_file", json!({"path": "secret/key"}), RiskLevel::Safe);
    assert_eq!(verdict(&pm, conv, &c).await, Verdict::Denied);
}

#[tokio::test]
async fn session_patterns_match_normalized_subjects_too() {
    let pm = DefaultPermissionManager::in_memory();
    let conv = Uuid::new_v4();
    let any = assessed("write_file", json!({"path": "x"}), RiskLevel::Medium);
    pm.remember_decision(
        conv,
        &any,
        &ApprovalDecision::deny(None)
            .remember(RememberScope::Session)
            .with_pattern("secret/*"),
    )
    .await
    .unwrap();
    pm.remember_decision(
        conv,
        &any,
        &ApprovalDecision::approve()
            .remember(RememberScope::Session)
            .with_pattern("docs/*"),
    )
    .await
    .unwrap();
    for path in spellings_of_secret_key() {
        let c = assessed("write_file", json!({ "path": path }), RiskLevel::Medium);
        assert_eq!(verdict(&pm, conv, &c).await, Verdict::Denied, "{path:?}");
    }
    // An allow pattern does not cover a path that only starts like it.
    for path in ["docs/../src/main.rs", "docs/../../outside", "./docs/../x"] {
        let c = assessed("write_file", json!({ "path": path }), RiskLevel::Medium);
        assert_eq!(verdict(&pm, conv, &c).await, Verdict::Approval, "{path:?}");
    }
    let c = assessed(
        "write_file",
        json!({"path": "./docs//a.md"}),
        RiskLevel::Medium,
    );
    assert_eq!(verdict(&pm, conv, &c).await, Verdict::Allowed);
}

#[tokio::test]
async fn allow_patterns_must_cover_every_subject_of_a_complete_call() {
    let pm = manager_with(
        "run_command",
        ToolPermissionSettings::default()
            .with_allowed_patterns(vec!["cargo *".into()])
            .with_denied_patterns(vec!["*rm -rf*".into()]),
    )
    .await;
    let conv = Uuid::new_v4();
    let with = |subjects: &[&str], deny_only: &[&str], complete: bool| {
        let mut c = tool_call(
            "run_command",
            json!({"command": "whatever the model wrote"}),
            RiskLevel::High,
        );
        c.permission_subjects = Some(
            PermissionSubjects::default()
                .with_subjects(subjects.iter().map(|s| s.to_string()).collect())
                .with_deny_only(deny_only.iter().map(|s| s.to_string()).collect())
                .with_complete(complete),
        );
        c
    };
    assert_eq!(
        verdict(&pm, conv, &with(&["cargo test", "cargo build"], &[], true)).await,
        Verdict::Allowed
    );
    assert_eq!(
        verdict(&pm, conv, &with(&["cargo test", "curl x"], &[], true)).await,
        Verdict::Approval,
        "one subject not covered"
    );
    // Incomplete or empty subjects: never allowed by a pattern; with deny patterns they
    // are refused (the patterns cannot be checked), without them a person is asked.
    assert_eq!(
        verdict(&pm, conv, &with(&["cargo test"], &[], false)).await,
        Verdict::Denied,
        "incomplete subjects cannot be checked against the deny patterns"
    );
    assert_eq!(
        verdict(&pm, conv, &with(&[], &[], true)).await,
        Verdict::Denied,
        "nothing to match"
    );
    let allow_only = manager_with(
        "run_command",
        ToolPermissionSettings::default().with_allowed_patterns(vec!["cargo *".into()]),
    )
    .await;
    assert_eq!(
        verdict(&allow_only, conv, &with(&["cargo test"], &[], false)).await,
        Verdict::Approval,
        "incomplete subjects are never allowed by a pattern"
    );
    assert_eq!(
        verdict(&allow_only, conv, &with(&[], &[], true)).await,
        Verdict::Approval,
        "nothing to match"
    );
    assert_eq!(
        verdict(
            &pm,
            conv,
            &with(&["cargo test"], &["cargo test; rm -rf ~"], true)
        )
        .await,
        Verdict::Denied,
        "deny-only forms are checked against deny patterns"
    );
}

/// A `run_command` call assessed by the real command judge.
fn judged_command(command: &str, risk: RiskLevel) -> ToolCallRequest {
    let parameters = json!({ "command": command });
    let mut c = tool_call("run_command", parameters.clone(), risk);
    let assessment = tools::RunCommand::default().assess(&parameters, None);
    c.permission_subjects = Some(assessment.subjects);
    c
}

/// Commands whose subjects cannot show every command they run.
const UNCHECKABLE: &[&str] = &[
    "$(echo rm) v18",
    "rm${IFS}v19",
    "sh <<EOF\nrm v12\nEOF",
    "echo 'rm v13' | sh",
    "alias r=rm\nr v11",
    "echo v7 | xargs --max-a 1 rm",
    "git -c alias.x='!rm v14' x",
    "python3 x.py",
];

#[tokio::test]
async fn deny_patterns_that_cannot_be_checked_refuse_the_call() {
    let conv = Uuid::new_v4();
    // Persistent deny patterns: refused whatever allows it, critical or not.
    let pm = manager_with(
        "run_command",
        ToolPermissionSettings::default()
            .with_denied_patterns(vec!["rm *".into()])
            .with_always_allow(true),
    )
    .await
    .with_auto_approve_up_to(RiskLevel::Critical);
    for command in UNCHECKABLE {
        for risk in [RiskLevel::Safe, RiskLevel::High, RiskLevel::Critical] {
            let c = judged_command(command, risk);
            let r = pm.check_permission(conv, &c).await.unwrap();
            assert!(r.is_denied(), "{command:?} ({risk}): {r:?}");
            // Refused by a pattern where one of its subjects shows it, else because the
            // patterns cannot be checked.
            let why = r.denial_reason.unwrap_or_default();
            assert!(
                why.contains("cannot be checked against the deny rules")
                    || why.contains("matches denied pattern"),
                "{why}"
            );
        }
    }
    let r = pm
        .check_permission(conv, &judged_command("$(echo rm) v18", RiskLevel::High))
        .await
        .unwrap();
    assert!(r
        .denial_reason
        .unwrap_or_default()
        .contains("cannot be checked against the deny rules"));
    // Subjects naming nothing.
    let mut c = tool_call("run_command", json!({"argv": ["rm", "x"]}), RiskLevel::Safe);
    c.permission_subjects = Some(PermissionSubjects::none());
    assert_eq!(verdict(&pm, conv, &c).await, Verdict::Denied);
    // What the patterns can be checked against is judged as before.
    assert_eq!(
        verdict(&pm, conv, &judged_command("ls -la", RiskLevel::Safe)).await,
        Verdict::Allowed
    );
    assert_eq!(
        verdict(&pm, conv, &judged_command("/bin/rm v2", RiskLevel::High)).await,
        Verdict::Denied
    );

    // A denial remembered for the session with a pattern counts the same.
    let pm = DefaultPermissionManager::in_memory().with_auto_approve_up_to(RiskLevel::Critical);
    let any = judged_command("rm x", RiskLevel::High);
    pm.remember_decision(
        conv,
        &any,
        &ApprovalDecision::deny(None)
            .remember(RememberScope::Session)
            .with_pattern("rm *"),
    )
    .await
    .unwrap();
    for command in UNCHECKABLE {
        let c = judged_command(command, RiskLevel::High);
        assert_eq!(verdict(&pm, conv, &c).await, Verdict::Denied, "{command:?}");
        // Another conversation has no such denial.
        let other = verdict(&pm, Uuid::new_v4(), &c).await;
        assert_eq!(other, Verdict::Allowed, "{command:?}");
    }

    // Without deny patterns an incomplete call is not refused: nothing allows it by a
    // pattern, so a person is asked.
    let pm = manager_with(
        "run_command",
        ToolPermissionSettings::default().with_allowed_patterns(vec!["*".into()]),
    )
    .await;
    let c = judged_command("$(echo rm) v18", RiskLevel::Medium);
    assert_eq!(verdict(&pm, conv, &c).await, Verdict::Approval);
}

#[tokio::test]
async fn approving_everything_never_runs_a_command_the_deny_rules_cannot_check() {
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().to_path_buf();
    let judge = tools::RunCommand::default();
    let tool = Arc::new(
        MockTool::new("run_command")
            .with_risk(RiskLevel::High)
            .with_assess(move |params, workspace| judge.assess(params, workspace)),
    );
    let pm = DefaultPermissionManager::in_memory();
    pm.set_tool_permissions(
        "run_command",
        ToolPermissionSettings::default().with_denied_patterns(vec!["rm *".into()]),
    )
    .await
    .unwrap();
    let pm: Arc<dyn PermissionManager> = Arc::new(pm);
    let approve_all = (ToolAvailabilityContext::for_workspace(&ws_path))
        .with_max_auto_approval_risk_level(RiskLevel::Critical);
    for command in UNCHECKABLE.iter().chain(&["/bin/rm v2", "env -S'rm v5'"]) {
        let h = harness_with(
            vec![
                text(&call("run_command", json!({ "command": command }))),
                text("ok"),
            ],
            vec![tool.clone() as Arc<dyn Tool>],
            crate::agent::config(),
            pm.clone(),
        );
        let request = core_models::AgentRequest::new("go").with_tool_context(approve_all.clone());
        let agent = h.agent.clone();
        let events = run_answering(&h.agent, request, move |a| {
            agent
                .provide_approval(a.request.id, ApprovalDecision::approve())
                .unwrap();
        })
        .await;
        assert_eq!(tool.executions(), 0, "{command:?} ran");
        let r = results(&events);
        let message = r[0].result.error_message.as_deref().unwrap_or_default();
        assert!(
            message.starts_with("Denied by the permission settings"),
            "{command:?}: {message}"
        );
    }
    // A command the rules can be checked against, and that no pattern denies, runs.
    let h = harness_with(
        vec![
            text(&call("run_command", json!({"command": "ls -la"}))),
            text("ok"),
        ],
        vec![tool.clone() as Arc<dyn Tool>],
        crate::agent::config(),
        pm.clone(),
    );
    let request = core_models::AgentRequest::new("go").with_tool_context(approve_all);
    let agent = h.agent.clone();
    run_answering(&h.agent, request, move |a| {
        agent
            .provide_approval(a.request.id, ApprovalDecision::approve())
            .unwrap();
    })
    .await;
    assert_eq!(tool.executions(), 1);
}

#[tokio::test]
async fn critical_calls_are_never_approved_by_an_allow_rule() {
    let critical = || {
        assessed(
            "run_command",
            json!({"command": "sudo x"}),
            RiskLevel::Critical,
        )
    };
    let conv = Uuid::new_v4();
    for settings in [
        ToolPermissionSettings::default().with_always_allow(true),
        ToolPermissionSettings::default().with_allowed_patterns(vec!["*".into()]),
    ] {
        let pm = manager_with("run_command", settings.clone()).await;
        assert_eq!(
            verdict(&pm, conv, &critical()).await,
            Verdict::Approval,
            "{settings:?}"
        );
    }
    let pm = DefaultPermissionManager::in_memory().with_auto_approve_up_to(RiskLevel::Critical);
    assert_eq!(verdict(&pm, conv, &critical()).await, Verdict::Approval);
    pm.remember_decision(
        conv,
        &critical(),
        &ApprovalDecision::approve().remember(RememberScope::Session),
    )
    .await
    .unwrap();
    pm.remember_decision(
        conv,
        &critical(),
        &ApprovalDecision::approve().remember(RememberScope::Tool),
    )
    .await
    .unwrap();
    let r = pm.check_permission(conv, &critical()).await.unwrap();
    assert!(r.requires_approval && !r.is_allowed, "{r:?}");
    assert!(r.approval_reason.unwrap().contains("critical"));
    // A deny rule refuses it before anyone is asked.
    let pm = manager_with(
        "run_command",
        ToolPermissionSettings::default()
            .with_always_allow(true)
            .with_denied_patterns(vec!["sudo *".into()]),
    )
    .await;
    assert_eq!(verdict(&pm, conv, &critical()).await, Verdict::Denied);
}

#[tokio::test]
async fn no_spelling_of_a_denied_path_reaches_the_tool_through_the_agent() {
    let ws = tempfile::tempdir().unwrap();
    let ws_path = ws.path().to_path_buf();
    let tool = Arc::new(MockTool::new("read_file"));
    let pm = DefaultPermissionManager::in_memory();
    pm.set_tool_permissions(
        "read_file",
        ToolPermissionSettings::default().with_denied_patterns(vec!["secret/*".into()]),
    )
    .await
    .unwrap();
    let mut spellings = spellings_of_secret_key();
    spellings.retain(|s| !s.contains(WS));
    spellings.push(format!("{}/secret/key", ws_path.display()));
    spellings.push(format!("{}/./secret//key", ws_path.display()));
    let reply: String = spellings
        .iter()
        .map(|p| call("read_file", json!({ "path": p })))
        .collect();
    let tools: Vec<Arc<dyn Tool>> = vec![tool.clone()];
    let h = harness_with(
        vec![text(&reply), text("ok")],
        tools,
        AgentConfig {
            max_parallel_tool_calls: 2,
            ..crate::agent::config()
        },
        Arc::new(pm),
    );
    let request = core_models::AgentRequest::new("read")
        .with_tool_context(ToolAvailabilityContext::for_workspace(&ws_path));
    let events = run(&h.agent, request).await;
    assert_eq!(tool.executions(), 0, "{:?}", tool.received_parameters());
    let r = results(&events);
    assert_eq!(r.len(), spellings.len());
    for result in r {
        let message = result.result.error_message.as_deref().unwrap_or_default();
        assert!(
            message.starts_with("Denied by the permission settings"),
            "{message}"
        );
    }
}

// --- the file shared by processes -------------------------------------------------------------

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn concurrent_changes_from_separate_stores_keep_every_rule() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.json");
    const WRITERS: usize = 20;
    let barrier = Arc::new(Barrier::new(WRITERS));
    let threads: Vec<_> = (0..WRITERS)
        .map(|i| {
            let (path, barrier) = (path.clone(), barrier.clone());
            std::thread::spawn(move || {
                let store = FilePermissionStore::new(&path);
                barrier.wait();
                runtime()
                    .block_on(async {
                        if i % 2 == 0 {
                            // Straight through the store: one tool each.
                            store
                                .update(Box::new(move |all| {
                                    all.insert(
                                        format!("tool{i}"),
                                        ToolPermissionSettings::default()
                                            .with_tool_id(format!("tool{i}"))
                                            .with_always_allow(true),
                                    );
                                    Ok(())
                                }))
                                .await
                        } else {
                            // Through a manager: patterns of one shared tool.
                            let pm = DefaultPermissionManager::new(Arc::new(store));
                            let c = tool_call("shared", json!({"command": "x"}), RiskLevel::High);
                            pm.remember_decision(
                                Uuid::new_v4(),
                                &c,
                                &ApprovalDecision::approve()
                                    .remember(RememberScope::Tool)
                                    .with_pattern(format!("cmd{i} *")),
                            )
                            .await
                            .map(|_| Default::default())
                        }
                    })
                    .unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let all = runtime()
        .block_on(FilePermissionStore::new(&path).load())
        .unwrap();
    for i in (0..WRITERS).step_by(2) {
        assert!(all[&format!("tool{i}")].always_allow, "tool{i} lost");
    }
    let mut patterns = all["shared"].allowed_patterns.clone();
    patterns.sort();
    let mut expected: Vec<String> = (1..WRITERS)
        .step_by(2)
        .map(|i| format!("cmd{i} *"))
        .collect();
    expected.sort();
    assert_eq!(patterns, expected);
}

#[tokio::test]
async fn a_running_manager_never_erases_a_rule_another_process_added() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.json");
    let a = DefaultPermissionManager::new(Arc::new(FilePermissionStore::new(&path)));
    let conv = Uuid::new_v4();
    let denied_call = tool_call("read_file", json!({"path": "secret/key"}), RiskLevel::Safe);
    assert_eq!(verdict(&a, conv, &denied_call).await, Verdict::Allowed);

    // Another process adds a deny rule.
    FilePermissionStore::new(&path)
        .update(Box::new(|all| {
            all.insert(
                "read_file".into(),
                ToolPermissionSettings::default()
                    .with_tool_id("read_file".into())
                    .with_denied_patterns(vec!["secret/*".into()]),
            );
            Ok(())
        }))
        .await
        .unwrap();

    // A remembers an allow for another tool: the deny rule survives in the file…
    a.remember_decision(
        conv,
        &tool_call("write_file", json!({"path": "a"}), RiskLevel::Medium),
        &ApprovalDecision::approve().remember(RememberScope::Tool),
    )
    .await
    .unwrap();
    let saved = FilePermissionStore::new(&path).load().await.unwrap();
    assert_eq!(saved["read_file"].denied_patterns, ["secret/*"]);
    assert!(saved["write_file"].always_allow);
    // …and A's next check obeys it.
    assert_eq!(verdict(&a, conv, &denied_call).await, Verdict::Denied);

    // The same for every kind of change A makes.
    FilePermissionStore::new(&path)
        .update(Box::new(|all| {
            all.entry("read_file".into())
                .or_default()
                .denied_patterns
                .push(".env".into());
            Ok(())
        }))
        .await
        .unwrap();
    a.set_tool_permissions(
        "list_dir",
        ToolPermissionSettings::default().with_always_allow(true),
    )
    .await
    .unwrap();
    assert!(a.remove_tool_permissions("write_file").await.unwrap());
    let saved = FilePermissionStore::new(&path).load().await.unwrap();
    assert_eq!(saved["read_file"].denied_patterns, ["secret/*", ".env"]);
    assert!(saved["list_dir"].always_allow);
    assert!(!saved.contains_key("write_file"));
}

#[tokio::test]
async fn a_corrupt_file_is_never_overwritten_and_never_allows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.json");
    let garbage = "{\"version\": 1, \"tools\": {\"read_file\": {\"always_deny\": tr";
    std::fs::write(&path, garbage).unwrap();
    let store = FilePermissionStore::new(&path);
    assert!(store
        .update(Box::new(|all| {
            all.clear();
            Ok(())
        }))
        .await
        .is_err());
    let pm = DefaultPermissionManager::new(Arc::new(FilePermissionStore::new(&path)));
    let c = tool_call("read_file", json!({"path": "a"}), RiskLevel::Safe);
    assert!(pm.check_permission(Uuid::new_v4(), &c).await.is_err());
    assert!(pm
        .remember_decision(
            Uuid::new_v4(),
            &c,
            &ApprovalDecision::approve().remember(RememberScope::Tool),
        )
        .await
        .is_err());
    assert!(pm.remove_tool_permissions("read_file").await.is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), garbage);
}
