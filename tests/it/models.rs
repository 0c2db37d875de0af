//! Request, tool and tool-call models.

use core_models::*;
use serde_json::json;
use services_ai::InMemoryToolRegistry;
use std::sync::Arc;
use std::time::Duration;
use test_support::MockTool;

#[test]
fn risk_levels_are_ordered_and_parse() {
    assert!(RiskLevel::Safe < RiskLevel::Low);
    assert!(RiskLevel::Low < RiskLevel::Medium);
    assert!(RiskLevel::Medium < RiskLevel::High);
    assert!(RiskLevel::High < RiskLevel::Critical);
    for r in RiskLevel::ALL {
        assert_eq!(r.to_string().parse::<RiskLevel>().unwrap(), r);
    }
    assert_eq!(" HIGH ".parse::<RiskLevel>().unwrap(), RiskLevel::High);
    assert!("severe".parse::<RiskLevel>().is_err());
    assert_eq!(RiskLevel::default(), RiskLevel::Medium);
}

#[test]
fn tool_choice_parses_from_the_command_line() {
    let cases = [
        ("auto", Ok(ToolChoice::Auto)),
        ("required", Ok(ToolChoice::Required)),
        ("none", Ok(ToolChoice::None)),
        ("read_file", Ok(ToolChoice::Tool("read_file".into()))),
        ("", Err(())),
    ];
    for (text, want) in cases {
        assert_eq!(text.parse::<ToolChoice>().map_err(|_| ()), want, "{text:?}");
    }
    assert_eq!(ToolChoice::Tool("x".into()).to_string(), "x");
    assert_eq!(
        "session".parse::<RememberScope>().unwrap(),
        RememberScope::Session
    );
    assert!("forever".parse::<RememberScope>().is_err());
}

fn def(id: &str, category: ToolCategory) -> ToolDefinition {
    ToolDefinition::new(id, id, "d").with_category(category)
}

#[test]
fn tool_availability_context_filters() {
    let read = def("read_file", ToolCategory::FileSystem).requiring_workspace();
    let write = def("write_file", ToolCategory::FileSystem).modifying_files();
    let shell = def("run_command", ToolCategory::Terminal);
    let fetch = def("fetch", ToolCategory::Network);
    let ws = || ToolAvailabilityContext::for_workspace("/ws");
    let ids = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect());
    let cases: Vec<(&str, ToolAvailabilityContext, [bool; 4])> = vec![
        ("everything", ws(), [true, true, true, true]),
        (
            "no workspace",
            ToolAvailabilityContext::default(),
            [false, true, true, true],
        ),
        (
            "enabled ids",
            ws().with_enabled_tool_ids(ids(&["read_file", "fetch"])),
            [true, false, false, true],
        ),
        (
            "disabled wins over enabled",
            ws().with_enabled_tool_ids(ids(&["read_file", "fetch"]))
                .with_disabled_tool_ids(ids(&["fetch"])),
            [true, false, false, false],
        ),
        (
            "categories",
            ws().with_enabled_categories(Some([ToolCategory::Terminal].into())),
            [false, false, true, false],
        ),
        (
            "no terminal",
            ws().with_allow_terminal_tools(false),
            [true, true, false, true],
        ),
        (
            "no network",
            ws().with_allow_network_tools(false),
            [true, true, true, false],
        ),
        (
            "read only",
            ws().with_allow_file_writes(false),
            [true, false, true, true],
        ),
    ];
    for (name, ctx, want) in cases {
        let got = [&read, &write, &shell, &fetch].map(|d| ctx.allows(d));
        assert_eq!(got, want, "{name}");
    }
    assert!(!ToolAvailabilityContext::default()
        .with_workspace_path(Some("".into()))
        .has_workspace());
}

#[test]
fn registry_offers_what_the_context_allows() {
    let shell = Arc::new(MockTool::new("run_command").with_category(ToolCategory::Terminal));
    let hidden = Arc::new(MockTool::new("hidden"));
    hidden.set_available(false);
    let registry: InMemoryToolRegistry = [
        Arc::new(MockTool::new("read_file")) as Arc<dyn Tool>,
        shell,
        hidden,
    ]
    .into_iter()
    .collect();
    let ids = |tools: Vec<Arc<dyn Tool>>| {
        tools
            .iter()
            .map(|t| t.definition().id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(registry.all_tools()),
        ["hidden", "read_file", "run_command"]
    );
    assert_eq!(
        ids(registry.available_tools(None)),
        ["hidden", "read_file", "run_command"]
    );
    let ctx = ToolAvailabilityContext::default().with_allow_terminal_tools(false);
    assert_eq!(ids(registry.available_tools(Some(&ctx))), ["read_file"]);
    assert!(registry.get_tool("read_file").is_some());
    assert!(registry.get_tool("nope").is_none());
    assert!(registry.unregister("read_file").is_some());
    assert!(registry.get_tool("read_file").is_none());
}

#[test]
fn text_selection_and_defaults() {
    let sel = |a, b, c, d| {
        TextSelection::default()
            .with_start_line(a)
            .with_start_column(b)
            .with_end_line(c)
            .with_end_column(d)
            .with_text(String::new())
    };
    assert!(sel(3, 4, 3, 4).is_empty());
    assert!(!sel(3, 4, 3, 5).is_empty());
    assert!(!sel(3, 4, 4, 4).is_empty());
    let r = AgentRequest::new("hi");
    assert!(r.enable_tools);
    assert_eq!(r.tool_choice, ToolChoice::Auto);
    assert_ne!(r.request_id, AgentRequest::new("hi").request_id);
    let ctx = ToolAvailabilityContext::default();
    assert_eq!(ctx.max_auto_approval_risk_level, RiskLevel::Safe);
    assert!(ctx.allow_terminal_tools && ctx.allow_network_tools && ctx.allow_file_writes);
    let o = InferenceOptions::default();
    assert_eq!((o.max_tokens, o.temperature, o.top_p), (4096, 0.7, 0.9));
}

#[test]
fn tool_results_and_validation() {
    let ok = ToolResult::success("out");
    assert!(ok.success && ok.error_message.is_none());
    let bad = ToolResult::failed("no such file");
    assert!(!bad.success);
    assert_eq!(bad.error_message.as_deref(), Some("no such file"));
    assert_eq!(bad.serialized_data().as_deref(), Some("no such file"));
    let v = ToolValidationResult::invalid(["a", "b"]);
    assert!(!v.is_valid);
    assert_eq!(v.errors, ["a", "b"]);
    assert!(ToolValidationResult::valid().is_valid);
}

#[test]
fn tool_call_request_helpers() {
    let c = ToolCallRequest::new("do_it", json!({"x": 1}));
    assert_eq!(c.tool_name, "do_it");
    assert_eq!(c.execution_summary, "Execute do_it");
    assert_eq!(c.risk_level, RiskLevel::Medium);
    assert!(c.is_valid(), "valid until validated");
    let invalid = ToolCallRequest {
        validation_result: Some(ToolValidationResult::invalid(["x"])),
        ..c.clone()
    };
    assert!(!invalid.is_valid());
    let cases = [
        (json!({"path": "a.txt", "command": "ls"}), Some("a.txt")),
        (json!({"command": "ls"}), Some("ls")),
        (json!({"url": "http://x"}), Some("http://x")),
        (json!({"path": 3}), None),
        (json!({}), None),
        (json!("not an object"), None),
    ];
    for (params, want) in cases {
        assert_eq!(
            ToolCallRequest::new("t", params.clone()).main_argument(),
            want,
            "{params}"
        );
    }
    let same = ToolCallRequest::new("do_it", json!({"x": 1}));
    assert!(c.is_same_call(&same));
    assert!(!c.is_same_call(&ToolCallRequest::new("do_it", json!({"x": 2}))));
}

#[test]
fn approval_decision_constructors() {
    let a = ApprovalDecision::approve();
    assert!(a.approved && !a.remember_for_session && !a.remember_for_tool);
    assert_eq!(a.remember_scope(), RememberScope::None);
    assert_eq!(
        ApprovalDecision::approve()
            .remember(RememberScope::Session)
            .remember_scope(),
        RememberScope::Session
    );
    assert_eq!(
        ApprovalDecision::approve()
            .remember(RememberScope::Tool)
            .remember_scope(),
        RememberScope::Tool
    );
    let d = ApprovalDecision::deny(Some("why".into()));
    assert!(!d.approved);
    assert_eq!(d.reason.as_deref(), Some("why"));
}

#[test]
fn tool_call_lifecycle_duration_and_statuses() {
    let mut l = ToolCallLifecycle::new(ToolCallRequest::new("t", json!({})));
    assert_eq!(l.status, ToolCallStatus::Parsed);
    assert_eq!(l.duration(), None);
    let start = chrono::Utc::now();
    l.execution_started = Some(start);
    assert_eq!(l.duration(), None);
    l.execution_completed = Some(start + chrono::Duration::milliseconds(1250));
    assert_eq!(l.duration(), Some(Duration::from_millis(1250)));
    assert_eq!(ToolCallStatus::ALL.len(), 11);
    let finals: Vec<_> = ToolCallStatus::ALL
        .into_iter()
        .filter(|s| s.is_final())
        .collect();
    assert_eq!(
        finals,
        [
            ToolCallStatus::ValidationFailed,
            ToolCallStatus::Denied,
            ToolCallStatus::Completed,
            ToolCallStatus::Failed,
            ToolCallStatus::Cancelled,
            ToolCallStatus::TimedOut
        ]
    );
}

#[tokio::test]
async fn progress_reporter_delivers_and_never_blocks() {
    let (reporter, mut rx) = ProgressReporter::channel();
    reporter
        .clone()
        .report(ToolProgress::determinate(1, 2, None));
    assert_eq!(rx.recv().await.unwrap().current, 1);
    drop(rx);
    reporter.report(ToolProgress::indeterminate(None)); // nobody listens: dropped, no panic
    ProgressReporter::detached().report(ToolProgress::indeterminate(None));
    let ctx = ToolExecutionContext::new(json!({"a": 1}));
    assert!(!ctx.cancellation.is_cancelled() && !ctx.is_approved);
}
