//! The MCP client against real servers (installed by `scripts/fetch-mcp-servers`, found
//! through `AINTERN_MCP_TEST_SERVERS`; skipped with a notice without it, unless
//! `AINTERN_REQUIRE_MCP_SERVERS` is set, as `scripts/test` sets it): listing, calls with
//! arguments, errors, non-text content, progress, cancellation, a server killed and
//! restarted, servers that fail to start, a Python server, and the filesystem server
//! confined by its own root and by the sandbox.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use core_models::McpServerConfig;
use core_models::{CancellationToken, ProgressReporter, RiskLevel, Tool, ToolExecutionContext};
use mcp::{McpServers, ServerStatus};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn servers_dir() -> Option<PathBuf> {
    test_support::mcp_servers::dir()
}

fn launcher() -> Arc<sandbox::Launcher> {
    Arc::new(sandbox::Launcher::new(sandbox::SandboxSettings::default()))
}

/// The reference "everything" server over stdio, started in `workspace`.
async fn everything(dir: &Path, workspace: &Path) -> McpServers {
    let config = node_server(dir, "mcp-server-everything", &["stdio"]);
    start(&[("everything", config)], workspace).await
}

fn node_server(dir: &Path, bin: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig::default()
        .with_command(Some(
            test_support::mcp_servers::node_bin(dir, bin)
                .display()
                .to_string(),
        ))
        .with_args(args.iter().map(|a| a.to_string()).collect())
        .with_startup_timeout_ms(60_000)
}

async fn start(configs: &[(&str, McpServerConfig)], workspace: &Path) -> McpServers {
    let configs: BTreeMap<String, McpServerConfig> = configs
        .iter()
        .map(|(n, c)| (n.to_string(), c.clone()))
        .collect();
    McpServers::start(&configs, launcher(), workspace).await
}

fn tool(servers: &McpServers, id: &str) -> Arc<dyn Tool> {
    servers
        .tools()
        .into_iter()
        .find(|t| t.definition().id == id)
        .unwrap_or_else(|| panic!("no tool {id}"))
}

fn context(workspace: &Path, params: serde_json::Value) -> ToolExecutionContext {
    let mut c = ToolExecutionContext::new(params);
    c.workspace_path = Some(workspace.to_path_buf());
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_called_and_their_results_kept() {
    let Some(dir) = servers_dir() else { return };
    let ws = tempfile::tempdir().unwrap();
    let servers = everything(&dir, ws.path()).await;
    let report = &servers.reports()[0];
    assert_eq!(report.status, ServerStatus::Running, "{report:?}");
    let ids: Vec<String> = servers
        .tools()
        .iter()
        .map(|t| t.definition().id.clone())
        .collect();
    for id in [
        "everything__echo",
        "everything__get-sum",
        "everything__trigger-long-running-operation",
    ] {
        assert!(ids.iter().any(|i| i == id), "{ids:?}");
    }
    // A read-only hint is the server's word: medium all the same.
    let echo = tool(&servers, "everything__echo");
    assert_eq!(echo.definition().default_risk_level, RiskLevel::Medium);
    assert!(echo
        .definition()
        .input_schema
        .to_string()
        .contains("message"));

    let r = echo
        .execute(context(ws.path(), json!({"message": "hello there"})))
        .await;
    assert!(r.success && r.content.contains("hello there"), "{r:?}");
    let r = tool(&servers, "everything__get-sum")
        .execute(context(ws.path(), json!({"a": 2, "b": 40})))
        .await;
    assert!(r.success && r.content.contains("42"), "{r:?}");
    // Arguments the server refuses: a failed result, in words.
    let r = tool(&servers, "everything__get-sum")
        .execute(context(ws.path(), json!({"a": "two"})))
        .await;
    assert!(!r.success, "{r:?}");
    // Content that is not text is named, not dropped silently.
    let r = tool(&servers, "everything__get-tiny-image")
        .execute(context(ws.path(), json!({})))
        .await;
    assert!(r.content.contains("an image (image/png"), "{r:?}");
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_reported_and_cancellation_ends_a_call_at_once() {
    let Some(dir) = servers_dir() else { return };
    let ws = tempfile::tempdir().unwrap();
    let servers = everything(&dir, ws.path()).await;
    let long = tool(&servers, "everything__trigger-long-running-operation");

    let (reporter, mut reports) = ProgressReporter::channel();
    let mut c = context(ws.path(), json!({"duration": 1, "steps": 4}));
    c.progress = reporter;
    let r = long.execute(c).await;
    assert!(r.success, "{r:?}");
    let mut seen = Vec::new();
    while let Ok(p) = reports.try_recv() {
        seen.push((p.current, p.total));
    }
    assert!(
        seen.len() >= 3 && seen.iter().all(|(_, t)| *t == 4),
        "{seen:?}"
    );

    let mut c = context(ws.path(), json!({"duration": 20, "steps": 20}));
    let cancel = CancellationToken::new();
    c.cancellation = cancel.clone();
    let call = tokio::spawn(async move { long.execute(c).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cancelled_at = Instant::now();
    cancel.cancel();
    let r = call.await.unwrap();
    let took = cancelled_at.elapsed();
    assert!(
        !r.success && took < Duration::from_millis(100),
        "{took:?} {r:?}"
    );
    // The server is still usable.
    let r = tool(&servers, "everything__echo")
        .execute(context(ws.path(), json!({"message": "still here"})))
        .await;
    assert!(r.success, "{r:?}");
    servers.stop().await;
}

/// Kill every process whose working folder is `dir` (the server, started there).
fn kill_in(dir: &Path) -> usize {
    let mut killed = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if std::fs::read_link(entry.path().join("cwd")).ok().as_deref() == Some(dir) {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
            killed += 1;
        }
    }
    killed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_session_is_restarted_and_broken_ones_are_reported() {
    let Some(dir) = servers_dir() else { return };
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    let missing = McpServerConfig::default().with_command(Some("/nonexistent/mcp-server".into()));
    let exits = McpServerConfig::default()
        .with_command(Some("sh".into()))
        .with_args(vec!["-c".into(), "echo broken >&2; exit 3".into()]);
    // Silent: never answers the handshake.
    let silent = McpServerConfig::default()
        .with_command(Some("sleep".into()))
        .with_args(vec!["30".into()])
        .with_startup_timeout_ms(1_000);
    let started = Instant::now();
    let servers = start(
        &[
            ("silent", silent),
            (
                "everything",
                node_server(&dir, "mcp-server-everything", &["stdio"]),
            ),
            ("missing", missing),
            ("exits", exits),
        ],
        &root,
    )
    .await;
    eprintln!("three servers started in {:?}", started.elapsed());
    let reports = servers.reports();
    let status = |name: &str| {
        reports
            .iter()
            .find(|r| r.name == name)
            .unwrap()
            .status
            .clone()
    };
    assert_eq!(status("everything"), ServerStatus::Running);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "each within its own timeout, in parallel"
    );
    assert!(
        matches!(status("silent"), ServerStatus::Failed(why) if why.contains("did not start within 1.0s")),
        "{reports:?}"
    );
    for name in ["missing", "exits"] {
        assert!(
            matches!(status(name), ServerStatus::Failed(_)),
            "{name}: {reports:?}"
        );
    }
    assert!(servers
        .tools()
        .iter()
        .all(|t| t.definition().id.starts_with("everything__")));

    let echo = tool(&servers, "everything__echo");
    assert!(
        echo.execute(context(&root, json!({"message": "one"})))
            .await
            .success
    );
    assert!(kill_in(&root) >= 1, "the server was found");
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The next call starts it again.
    let r = echo
        .execute(context(&root, json!({"message": "two"})))
        .await;
    assert!(r.success && r.content.contains("two"), "{r:?}");
    // Restarts are bounded: after the third, a server that keeps dying stays down.
    for round in 0..3 {
        assert!(kill_in(&root) >= 1);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let r = echo
            .execute(context(&root, json!({"message": "again"})))
            .await;
        if round < 2 {
            assert!(r.success, "restart {}: {r:?}", round + 2);
        } else {
            let why = r.error_message.clone().unwrap_or_default();
            assert!(!r.success && why.contains("restarted 3 times"), "{r:?}");
        }
    }
    assert!(servers.tools().is_empty(), "its tools are unavailable now");
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_server_works_too() {
    let Some(dir) = servers_dir() else { return };
    let ws = tempfile::tempdir().unwrap();
    let time = McpServerConfig::default()
        .with_command(Some("python3".into()))
        .with_args(vec!["-m".into(), "mcp_server_time".into()])
        .with_env(BTreeMap::from([(
            "PYTHONPATH".to_string(),
            dir.join("python").display().to_string(),
        )]))
        .with_startup_timeout_ms(60_000);
    let servers = start(&[("time", time)], ws.path()).await;
    assert_eq!(
        servers.reports()[0].status,
        ServerStatus::Running,
        "{:?}",
        servers.reports()
    );
    let r = tool(&servers, "time__get_current_time")
        .execute(context(ws.path(), json!({"timezone": "UTC"})))
        .await;
    assert!(r.success && r.content.contains("UTC"), "{r:?}");
    // A failure the tool reports (isError) is a failed result, with its words.
    let r = tool(&servers, "time__get_current_time")
        .execute(context(ws.path(), json!({"timezone": "Not/A_Zone"})))
        .await;
    assert!(!r.success && r.content.contains("Not/A_Zone"), "{r:?}");
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filesystem_server_is_confined_by_its_root_and_by_the_sandbox() {
    let Some(dir) = servers_dir() else { return };
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    let outside = tempfile::tempdir_in(std::env::var("HOME").unwrap()).unwrap();
    std::fs::write(outside.path().join("secret.txt"), "plover").unwrap();
    // Its own root: the workspace.
    let own = node_server(&dir, "mcp-server-filesystem", &[root.to_str().unwrap()]);
    // Told it may use everything: the sandbox still keeps its writes in the workspace.
    let everything = node_server(&dir, "mcp-server-filesystem", &["/"]);
    let servers = start(&[("fs", own), ("wide", everything)], &root).await;
    for r in servers.reports() {
        assert_eq!(r.status, ServerStatus::Running, "{r:?}");
    }
    let write = tool(&servers, "fs__write_file");
    let path = root.join("made.txt");
    let r = write
        .execute(context(&root, json!({"path": path, "content": "inside"})))
        .await;
    assert!(r.success, "{r:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "inside");
    let r = tool(&servers, "fs__read_text_file")
        .execute(context(
            &root,
            json!({"path": outside.path().join("secret.txt")}),
        ))
        .await;
    assert!(
        !r.success && !r.content.contains("plover"),
        "its root confines it: {r:?}"
    );

    let target = outside.path().join("written.txt");
    let r = tool(&servers, "wide__write_file")
        .execute(context(
            &root,
            json!({"path": target, "content": "escaped"}),
        ))
        .await;
    assert!(!r.success, "the sandbox refuses: {r:?}");
    assert!(!target.exists());
    servers.stop().await;
}

/// A Python server that adds a tool when asked, and says its tools changed.
const DYNAMIC: &str = r#"
from mcp.server.mcpserver import MCPServer, Context

app = MCPServer("dynamic")


def extra() -> str:
    """A tool added while the session runs."""
    return "extra here"


@app.tool()
async def add_tool(ctx: Context) -> str:
    """Add the tool `extra`, and tell the client its tools changed."""
    app.add_tool(extra)
    await ctx.session.send_tool_list_changed()
    return "added"


app.run()
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_changed_refreshes_the_tools_offered() {
    let Some(dir) = servers_dir() else { return };
    let ws = tempfile::tempdir().unwrap();
    let script = ws.path().join("dynamic.py");
    std::fs::write(&script, DYNAMIC).unwrap();
    let dynamic = McpServerConfig::default()
        .with_command(Some("python3".into()))
        .with_args(vec![script.display().to_string()])
        .with_env(BTreeMap::from([(
            "PYTHONPATH".to_string(),
            dir.join("python").display().to_string(),
        )]))
        .with_startup_timeout_ms(60_000);
    let servers = start(&[("dynamic", dynamic)], ws.path()).await;
    let ids = || -> Vec<String> {
        servers
            .tools()
            .iter()
            .map(|t| t.definition().id.clone())
            .collect()
    };
    assert_eq!(ids(), ["dynamic__add_tool"]);
    let r = tool(&servers, "dynamic__add_tool")
        .execute(context(ws.path(), json!({})))
        .await;
    assert!(r.success, "{r:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ids().contains(&"dynamic__extra".to_string()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ids().contains(&"dynamic__extra".to_string()), "{:?}", ids());
    let r = tool(&servers, "dynamic__extra")
        .execute(context(ws.path(), json!({})))
        .await;
    assert!(r.success && r.content.contains("extra here"), "{r:?}");
    servers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_is_reached_with_its_headers_and_token() {
    let Some(dir) = servers_dir() else { return };
    let ws = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let index = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut node = tokio::process::Command::new("node")
        .arg(&index)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Wait until it listens.
    let mut stderr =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(node.stderr.take().unwrap()));
    let listening = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = stderr.next_line().await {
            if line.contains("listening") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(listening.ok(), Some(true), "the HTTP server started");
    std::env::set_var("AINTERN_TEST_MCP_TOKEN", "not-a-real-token");
    let http = McpServerConfig::default()
        .with_url(Some(format!("http://127.0.0.1:{port}/mcp")))
        .with_headers(BTreeMap::from([("X-Test".to_string(), "yes".to_string())]))
        .with_bearer_token_env(Some("AINTERN_TEST_MCP_TOKEN".into()));
    let missing_token = McpServerConfig::default()
        .with_url(Some(format!("http://127.0.0.1:{port}/mcp")))
        .with_bearer_token_env(Some("AINTERN_TEST_MCP_NO_SUCH_VARIABLE".into()));
    let servers = start(&[("web", http), ("tokenless", missing_token)], ws.path()).await;
    let reports = servers.reports();
    let web = reports.iter().find(|r| r.name == "web").unwrap();
    assert_eq!(web.status, ServerStatus::Running, "{reports:?}");
    let tokenless = reports.iter().find(|r| r.name == "tokenless").unwrap();
    assert!(
        matches!(&tokenless.status, ServerStatus::Failed(why) if why.contains("AINTERN_TEST_MCP_NO_SUCH_VARIABLE")),
        "{reports:?}"
    );
    let r = tool(&servers, "web__echo")
        .execute(context(ws.path(), json!({"message": "over HTTP"})))
        .await;
    assert!(r.success && r.content.contains("over HTTP"), "{r:?}");
    servers.stop().await;
    let _ = node.kill().await;
}
