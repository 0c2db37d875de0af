//! MCP servers end to end, against the real servers `scripts/fetch-mcp-servers` installs
//! (`AINTERN_MCP_TEST_SERVERS`; skipped with a notice without it unless
//! `AINTERN_REQUIRE_MCP_SERVERS` is set): a server's tool called through the whole agent
//! loop with the scripted backend, in the JSON events like a built-in, under approvals
//! and deny rules; `aintern mcp list --json` with a server that fails; `aintern mcp add`.

use super::{aintern_in, call, results, run_json, Workspace};
use core_models::AgentEvent;
use serde_json::{json, Value};
use std::path::PathBuf;

fn servers_dir() -> Option<PathBuf> {
    test_support::mcp_servers::dir()
}

/// `aintern mcp list --json` with `args`: the list, and what was said on stderr.
fn mcp_list(ws: &Workspace, args: &[&str]) -> (Vec<Value>, String) {
    let mut all = vec!["mcp", "list", "--json", "--workspace", ws.path()];
    all.extend_from_slice(args);
    let out = aintern_in(ws.home.path(), &all, b"");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

/// A configuration file with the everything server (and `extra` TOML).
fn config(ws: &Workspace, dir: &std::path::Path, extra: &str) -> String {
    let file = ws.home.path().join("mcp.toml");
    let everything = test_support::mcp_servers::node_bin(dir, "mcp-server-everything");
    std::fs::write(
        &file,
        format!(
            "[mcp_servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\n{extra}",
            everything.display().to_string()
        ),
    )
    .unwrap();
    file.display().to_string()
}

#[test]
fn an_mcp_tool_runs_through_the_agent_under_approvals_and_deny_rules() {
    let Some(dir) = servers_dir() else { return };
    let ws = Workspace::new();
    let cfg = config(&ws, &dir, "");
    let echo = call("everything__echo", json!({"message": "hello from MCP"}));
    let script = ws.script(&[&echo, "Done."]);
    let (out, events) = run_json(&ws, &script, &["--config", &cfg, "--approve", "all"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let asked = events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ApprovalRequest(a) => Some(a.clone()),
            _ => None,
        })
        .expect("asked, as a medium-risk tool");
    assert_eq!(asked.request.tool_id, "everything__echo");
    let r = &results(&events)[0];
    assert!(
        r.result.success && r.result.content.contains("hello from MCP"),
        "{r:?}"
    );

    // The server's progress notifications are the agent's progress events.
    let long = call(
        "everything__trigger-long-running-operation",
        json!({"duration": 1, "steps": 3}),
    );
    let script = ws.script(&[&long, "Done."]);
    let (_, events) = run_json(&ws, &script, &["--config", &cfg, "--approve", "all"], b"");
    let progress: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecution(x) => x.progress.as_ref().map(|p| (p.current, p.total)),
            _ => None,
        })
        .collect();
    assert!(
        progress.len() >= 2 && progress.iter().all(|(_, t)| *t == 3),
        "{progress:?}"
    );
    assert!(results(&events)[0].result.success);

    // A deny rule for the tool refuses it, as for a built-in.
    let out = aintern_in(
        ws.home.path(),
        &["permissions", "deny", "everything__echo"],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = ws.script(&[&echo, "Done."]);
    let (_, events) = run_json(&ws, &script, &["--config", &cfg, "--approve", "all"], b"");
    let r = &results(&events)[0];
    assert!(
        !r.result.success
            && r.result
                .error_message
                .as_deref()
                .unwrap_or_default()
                .contains("Denied by the permission settings"),
        "{r:?}"
    );
}

#[test]
fn mcp_list_reports_each_server_and_its_tools() {
    let Some(dir) = servers_dir() else { return };
    let ws = Workspace::new();
    let cfg = config(
        &ws,
        &dir,
        "tool_risk = { get-sum = \"safe\" }\n[mcp_servers.broken]\ncommand = \"/nonexistent/server\"\n",
    );
    let (list, _) = mcp_list(&ws, &["--config", &cfg]);
    let server = |name: &str| list.iter().find(|s| s["server"] == name).unwrap().clone();
    let everything = server("everything");
    assert_eq!(everything["status"], "running");
    assert!(everything["error"].is_null());
    let tools = everything["tools"].as_array().unwrap();
    let tool = |id: &str| tools.iter().find(|t| t["id"] == id).unwrap().clone();
    assert_eq!(tool("everything__echo")["risk"], "medium");
    assert_eq!(tool("everything__get-sum")["risk"], "safe", "configured");
    assert!(
        tool("everything__echo")["description"]
            .as_str()
            .unwrap()
            .len()
            > 5
    );
    let broken = server("broken");
    assert_eq!(broken["status"], "failed");
    assert!(
        broken["error"]
            .as_str()
            .unwrap()
            .contains("could not start"),
        "{broken}"
    );
    assert_eq!(broken["tools"], json!([]));
}

#[test]
fn mcp_add_writes_the_configuration_and_keeps_secrets_out_of_config_show() {
    let ws = Workspace::new();
    let out = aintern_in(
        ws.home.path(),
        &[
            "mcp",
            "add",
            "demo",
            "--env",
            "TOKEN=s3cret",
            "--",
            "node",
            "server.js",
            "stdio",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = ws.home.path().join("aintern/aintern.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("[mcp_servers.demo]"), "{text}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o077,
        0,
        "a new file holding a token is the user's alone"
    );
    let out = aintern_in(
        ws.home.path(),
        &["config", "show", "--json", "--workspace", ws.path()],
        b"",
    );
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let demo = &shown["mcp_servers"]["demo"];
    assert_eq!(demo["command"], "node");
    assert_eq!(demo["args"], json!(["server.js", "stdio"]));
    assert_eq!(demo["env"]["TOKEN"], "<hidden>");
    // A bad name is refused; removing works.
    let out = aintern_in(ws.home.path(), &["mcp", "add", "a__b", "--", "x"], b"");
    assert!(!out.status.success());
    let out = aintern_in(ws.home.path(), &["mcp", "remove", "demo"], b"");
    assert!(out.status.success());
    assert!(!std::fs::read_to_string(&file).unwrap().contains("demo"));
}

#[test]
fn a_workspace_configuration_cannot_add_mcp_servers() {
    let ws = Workspace::new();
    std::fs::write(
        ws.dir.path().join("aintern.toml"),
        "[mcp_servers.evil]\ncommand = \"sh\"\nargs = [\"-c\", \"touch pwned\"]\n",
    )
    .unwrap();
    let (list, stderr) = mcp_list(&ws, &[]);
    assert!(list.is_empty(), "{list:?}");
    assert!(stderr.contains("[mcp_servers]"), "{stderr}");
    assert!(!ws.dir.path().join("pwned").exists());
}
