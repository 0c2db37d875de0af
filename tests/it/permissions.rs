//! The permission manager and its stores.

use core_models::{
    ApprovalDecision, PermissionManager, PermissionStore, RememberScope, RiskLevel,
    ToolCallRequest, ToolPermissionSettings,
};
use serde_json::json;
use services_ai::{DefaultPermissionManager, FilePermissionStore};
use std::sync::Arc;
use test_support::fixtures::tool_call;
use uuid::Uuid;

#[derive(Debug, PartialEq)]
enum Verdict {
    Allowed,
    Approval,
    Denied,
}

async fn verdict(pm: &DefaultPermissionManager, conv: Uuid, call: &ToolCallRequest) -> Verdict {
    let r = pm.check_permission(conv, call).await.unwrap();
    match (r.is_allowed, r.requires_approval, r.is_denied()) {
        (true, false, false) => Verdict::Allowed,
        (false, true, false) => Verdict::Approval,
        (false, false, true) => Verdict::Denied,
        other => panic!("inconsistent result {other:?} {r:?}"),
    }
}

fn read(path: &str) -> ToolCallRequest {
    tool_call("read_file", json!({"path": path}), RiskLevel::Safe)
}

fn write(path: &str) -> ToolCallRequest {
    tool_call(
        "write_file",
        json!({"path": path, "content": "x"}),
        RiskLevel::Medium,
    )
}

fn cmd(command: &str) -> ToolCallRequest {
    tool_call("run_command", json!({"command": command}), RiskLevel::High)
}

#[tokio::test]
async fn risk_decides_when_nothing_is_remembered() {
    let pm = DefaultPermissionManager::in_memory();
    let conv = Uuid::new_v4();
    assert_eq!(verdict(&pm, conv, &read("a")).await, Verdict::Allowed);
    assert_eq!(verdict(&pm, conv, &write("a")).await, Verdict::Approval);
    let r = pm.check_permission(conv, &cmd("ls")).await.unwrap();
    assert_eq!(
        r.approval_reason.as_deref(),
        Some("Tool run_command has risk level high")
    );
    assert!(!r.was_cached);

    let lenient = DefaultPermissionManager::in_memory().with_auto_approve_up_to(RiskLevel::Medium);
    assert_eq!(verdict(&lenient, conv, &write("a")).await, Verdict::Allowed);
    assert_eq!(verdict(&lenient, conv, &cmd("ls")).await, Verdict::Approval);
}

#[tokio::test]
async fn session_decisions_stay_in_their_conversation() {
    let pm = DefaultPermissionManager::in_memory();
    let (conv, other) = (Uuid::new_v4(), Uuid::new_v4());
    let call = write("a.txt");
    pm.remember_decision(
        conv,
        &call,
        &ApprovalDecision::approve().remember(RememberScope::Session),
    )
    .await
    .unwrap();
    let r = pm.check_permission(conv, &write("b.txt")).await.unwrap();
    assert!(r.is_allowed && r.was_cached);
    assert_eq!(
        verdict(&pm, other, &call).await,
        Verdict::Approval,
        "other conversation"
    );
    assert!(
        pm.get_tool_permissions("write_file")
            .await
            .unwrap()
            .is_none(),
        "nothing persisted"
    );
    pm.clear_session_permissions(conv).await.unwrap();
    assert_eq!(verdict(&pm, conv, &call).await, Verdict::Approval);

    // A decision remembered with no scope is not remembered at all.
    pm.remember_decision(conv, &call, &ApprovalDecision::approve())
        .await
        .unwrap();
    assert_eq!(verdict(&pm, conv, &call).await, Verdict::Approval);

    // Session patterns and session denials.
    pm.remember_decision(
        conv,
        &call,
        &ApprovalDecision::approve()
            .remember(RememberScope::Session)
            .with_pattern("docs/*"),
    )
    .await
    .unwrap();
    assert_eq!(
        verdict(&pm, conv, &write("docs/x.md")).await,
        Verdict::Allowed
    );
    assert_eq!(
        verdict(&pm, conv, &write("src/x.rs")).await,
        Verdict::Approval
    );
    pm.remember_decision(
        conv,
        &cmd("rm"),
        &ApprovalDecision::deny(None).remember(RememberScope::Session),
    )
    .await
    .unwrap();
    assert_eq!(verdict(&pm, conv, &cmd("ls")).await, Verdict::Denied);
}

#[tokio::test]
async fn persistent_settings_beat_risk_and_deny_beats_allow() {
    let pm = DefaultPermissionManager::in_memory();
    let conv = Uuid::new_v4();
    pm.set_tool_permissions(
        "read_file",
        ToolPermissionSettings::default().with_always_deny(true),
    )
    .await
    .unwrap();
    assert_eq!(
        verdict(&pm, conv, &read("a")).await,
        Verdict::Denied,
        "explicit deny beats Safe risk"
    );

    pm.set_tool_permissions(
        "run_command",
        ToolPermissionSettings::default()
            .with_allowed_patterns(vec!["git *".into(), "cargo *".into()])
            .with_denied_patterns(vec!["git push*".into()]),
    )
    .await
    .unwrap();
    let cases = [
        ("git status", Verdict::Allowed),
        ("cargo test --workspace", Verdict::Allowed),
        ("git push --force origin main", Verdict::Denied),
        ("rm -rf /", Verdict::Approval),
    ];
    for (command, want) in cases {
        assert_eq!(verdict(&pm, conv, &cmd(command)).await, want, "{command}");
    }
    // A session approval does not override a persistent denial.
    pm.remember_decision(
        conv,
        &cmd("git push"),
        &ApprovalDecision::approve().remember(RememberScope::Session),
    )
    .await
    .unwrap();
    assert_eq!(verdict(&pm, conv, &cmd("git push")).await, Verdict::Denied);
    assert_eq!(
        verdict(&pm, conv, &cmd("rm -rf /")).await,
        Verdict::Allowed,
        "session approval for the rest"
    );

    // always_allow and always_deny together: deny wins.
    pm.set_tool_permissions(
        "write_file",
        ToolPermissionSettings::default()
            .with_always_allow(true)
            .with_always_deny(true),
    )
    .await
    .unwrap();
    assert_eq!(verdict(&pm, conv, &write("a")).await, Verdict::Denied);

    // A call without a main argument never matches a pattern: no allow pattern covers it,
    // and the tool's deny patterns, which cannot be checked against it, refuse it.
    let odd = tool_call(
        "run_command",
        json!({"argv": ["git", "status"]}),
        RiskLevel::High,
    );
    assert_eq!(verdict(&pm, Uuid::new_v4(), &odd).await, Verdict::Denied);
    pm.update_tool_permissions("run_command", |s| s.denied_patterns.clear())
        .await
        .unwrap();
    assert_eq!(verdict(&pm, Uuid::new_v4(), &odd).await, Verdict::Approval);
}

#[tokio::test]
async fn remember_for_tool_is_persisted_to_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config/aintern/permissions.json");
    let conv = Uuid::new_v4();
    {
        let pm = DefaultPermissionManager::new(Arc::new(FilePermissionStore::new(&path)));
        pm.remember_decision(
            conv,
            &write("a"),
            &ApprovalDecision::approve().remember(RememberScope::Tool),
        )
        .await
        .unwrap();
        pm.remember_decision(
            conv,
            &cmd("x"),
            &ApprovalDecision::approve()
                .remember(RememberScope::Tool)
                .with_pattern("ls*"),
        )
        .await
        .unwrap();
        pm.remember_decision(
            conv,
            &cmd("x"),
            &ApprovalDecision::deny(None)
                .remember(RememberScope::Tool)
                .with_pattern("rm *"),
        )
        .await
        .unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["tools"]["write_file"]["always_allow"], true);

    // A new manager (a new run) over the same file sees the decisions.
    let pm = DefaultPermissionManager::new(Arc::new(FilePermissionStore::new(&path)));
    let fresh = Uuid::new_v4();
    assert_eq!(verdict(&pm, fresh, &write("z")).await, Verdict::Allowed);
    assert_eq!(verdict(&pm, fresh, &cmd("ls -la")).await, Verdict::Allowed);
    assert_eq!(verdict(&pm, fresh, &cmd("rm -rf x")).await, Verdict::Denied);
    assert_eq!(verdict(&pm, fresh, &cmd("make")).await, Verdict::Approval);
    let all = pm.all_tool_permissions().await.unwrap();
    assert_eq!(
        all.iter().map(|s| s.tool_id.as_str()).collect::<Vec<_>>(),
        ["run_command", "write_file"]
    );

    assert!(pm.remove_tool_permissions("write_file").await.unwrap());
    assert!(!pm.remove_tool_permissions("write_file").await.unwrap());
    assert_eq!(verdict(&pm, fresh, &write("z")).await, Verdict::Approval);
    let store = FilePermissionStore::new(&path);
    assert!(!store.load().await.unwrap().contains_key("write_file"));
    // No temporary files are left beside it: only the lock file that writers share.
    let mut names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["permissions.json", "permissions.json.lock"]);
}

#[tokio::test]
async fn a_corrupt_or_unreadable_file_is_an_error_never_allow() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.json");
    std::fs::write(&path, "{ this is not json").unwrap();
    let pm = DefaultPermissionManager::new(Arc::new(FilePermissionStore::new(&path)));
    let err = pm
        .check_permission(Uuid::new_v4(), &read("a"))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("permissions.json") && text.contains("corrupt"),
        "{text}"
    );
    // Writing does not replace the corrupt file either.
    assert!(pm
        .set_tool_permissions(
            "x",
            ToolPermissionSettings::default().with_always_allow(true)
        )
        .await
        .is_err());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{ this is not json"
    );

    std::fs::write(&path, r#"{"version": 9, "tools": {}}"#).unwrap();
    let err = FilePermissionStore::new(&path).load().await.unwrap_err();
    assert!(err.to_string().contains("version 9"), "{err}");

    // A folder where the file should be cannot be read.
    let dir_path = dir.path().join("is_a_dir");
    std::fs::create_dir(&dir_path).unwrap();
    assert!(FilePermissionStore::new(&dir_path).load().await.is_err());

    // A missing file is simply empty.
    assert!(FilePermissionStore::new(dir.path().join("none.json"))
        .load()
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn invalid_patterns_are_refused_and_failed_saves_change_nothing() {
    let pm = DefaultPermissionManager::in_memory();
    let err = pm
        .set_tool_permissions(
            "run_command",
            ToolPermissionSettings::default().with_allowed_patterns(vec!["[unclosed".into()]),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("[unclosed"), "{err}");
    assert!(pm
        .get_tool_permissions("run_command")
        .await
        .unwrap()
        .is_none());

    let mut store = test_support::mocks::MockPermissionStore::new();
    store.expect_load().returning(|| Ok(Default::default()));
    store
        .expect_save()
        .returning(|_| Err(core_models::Error::permission_store("disk full", None)));
    let pm = DefaultPermissionManager::new(Arc::new(store));
    assert!(pm
        .set_tool_permissions(
            "read_file",
            ToolPermissionSettings::default().with_always_deny(true)
        )
        .await
        .is_err());
    assert_eq!(
        verdict(&pm, Uuid::new_v4(), &read("a")).await,
        Verdict::Allowed,
        "the failed change was not kept"
    );
}

#[tokio::test]
async fn update_tool_permissions_changes_one_tool_as_stored_now() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("permissions.json");
    let store = FilePermissionStore::new(&path);
    assert_eq!(store.lock_path(), dir.path().join("permissions.json.lock"));
    let pm = DefaultPermissionManager::new(Arc::new(FilePermissionStore::new(&path)));
    let after = pm
        .update_tool_permissions("run_command", |s| s.allowed_patterns.push("ls *".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.tool_id, "run_command");
    assert_eq!(after.allowed_patterns, ["ls *"]);
    // Another writer meanwhile; the next change starts from what is stored.
    FilePermissionStore::new(&path)
        .update(Box::new(|all| {
            all.get_mut("run_command")
                .unwrap()
                .denied_patterns
                .push("rm *".into());
            Ok(())
        }))
        .await
        .unwrap();
    let after = pm
        .update_tool_permissions("run_command", |s| s.allowed_patterns.push("cat *".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.allowed_patterns, ["ls *", "cat *"]);
    assert_eq!(after.denied_patterns, ["rm *"]);
    // An invalid pattern changes nothing.
    assert!(pm
        .update_tool_permissions("run_command", |s| s.denied_patterns.push("[x".into()))
        .await
        .is_err());
    assert_eq!(
        store.load().await.unwrap()["run_command"].denied_patterns,
        ["rm *"]
    );
    // Settings left empty are dropped.
    let gone = pm
        .update_tool_permissions("run_command", |s| {
            *s = ToolPermissionSettings::default();
        })
        .await
        .unwrap();
    assert!(gone.is_none());
    assert!(store.load().await.unwrap().is_empty());
}

#[tokio::test]
async fn the_memory_store_applies_a_failed_change_not_at_all() {
    let store = services_ai::MemoryPermissionStore::default();
    store
        .update(Box::new(|all| {
            all.insert("a".into(), ToolPermissionSettings::new("a"));
            Ok(())
        }))
        .await
        .unwrap();
    assert!(store
        .update(Box::new(|all| {
            all.clear();
            Err(core_models::Error::permission_store("refused", None))
        }))
        .await
        .is_err());
    assert!(store.load().await.unwrap().contains_key("a"));
}
