//! MCP servers that attack the client (part of the security suite): a message far over
//! the size limit for one message — 200 MB as one line over stdio, as one JSON body or
//! one SSE event over HTTP — fails its call at once with the reason, never waits for the
//! tool timeout, and never makes the client hold more than the limit; a stdio server that
//! sent one is stopped and restarted for the next call, and one that sends one while it
//! starts fails to start at once, saying why.
//!
//! The servers are small Python 3 scripts speaking just enough MCP, written into a
//! temporary folder by each test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use core_models::McpServerConfig;
use core_models::{Tool, ToolExecutionContext, ToolResult};
use mcp::{McpServers, ServerStatus};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The tests measure this process's memory: one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What the servers share: the answers to the handshake, the listing, and `echo`; a
/// `flood*` tool answers with 200 MB in one message, written a MiB at a time (the
/// server itself stays small).
const COMMON: &str = r#"
import json, os, sys

FLOOD_MIB = 200
CHUNK = b"x" * (1 << 20)

def answer(msg):
    """The JSON-RPC answer to `msg`, or None for a flood (or a notification)."""
    method, ident = msg.get("method"), msg.get("id")
    if ident is None:
        return None
    if method == "initialize":
        result = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [
            {"name": name, "inputSchema": {"type": "object"}}
            for name in TOOLS
        ]}
    elif method == "tools/call" and msg["params"]["name"] == "echo":
        result = {"content": [{"type": "text", "text": "still here"}]}
    elif method == "tools/call":
        return None
    else:
        return {"jsonrpc": "2.0", "id": ident,
                "error": {"code": -32601, "message": "no such method"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}

def flood_parts(ident):
    """The head and tail around 200 MB of text in one call result."""
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(ident).encode() + \
        b',"result":{"content":[{"type":"text","text":"'
    return head, b'"}]}}'
"#;

/// Over stdio: the flood is one line.
const STDIO: &str = r#"
TOOLS = ["flood", "echo"]
with open(sys.argv[1], "a") as pids:
    pids.write(f"{os.getpid()}\n")
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if msg.get("method") == "tools/list" and sys.argv[2:] == ["flood-list"]:
        for _ in range(FLOOD_MIB):
            out.write(CHUNK)
        out.write(b"\n")
        out.flush()
        continue
    reply = answer(msg)
    if reply is not None:
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()
    elif msg.get("method") == "tools/call":
        head, tail = flood_parts(msg["id"])
        out.write(head)
        for _ in range(FLOOD_MIB):
            out.write(CHUNK)
        out.write(tail + b"\n")
        out.flush()
"#;

/// Over streamable HTTP: the flood is a JSON body of unknown length, or one SSE event.
const HTTP: &str = r#"
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOLS = ["flood_json", "flood_sse", "echo"]

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def empty(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.empty(405)

    def do_DELETE(self):
        self.empty(200)

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        reply = answer(msg)
        if msg.get("id") is None:
            return self.empty(202)
        if reply is not None:
            body = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        head, tail = flood_parts(msg["id"])
        sse = msg["params"]["name"] == "flood_sse"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
        self.end_headers()
        try:
            self.wfile.write(b"data: " + head if sse else head)
            for _ in range(FLOOD_MIB):
                self.wfile.write(CHUNK)
            self.wfile.write(tail + (b"\n\n" if sse else b""))
        except (BrokenPipeError, ConnectionResetError):
            pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

fn launcher() -> Arc<sandbox::Launcher> {
    Arc::new(sandbox::Launcher::new(sandbox::SandboxSettings::default()))
}

/// Write `body` (after the common part) as `name` in `dir`.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("{COMMON}\n{body}")).unwrap();
    path.display().to_string()
}

async fn start(name: &str, config: McpServerConfig, workspace: &Path) -> McpServers {
    let configs = BTreeMap::from([(name.to_string(), config)]);
    let servers = McpServers::start(&configs, launcher(), workspace).await;
    assert_eq!(
        servers.reports()[0].status,
        ServerStatus::Running,
        "{:?}",
        servers.reports()
    );
    servers
}

async fn call(servers: &McpServers, id: &str, workspace: &Path) -> ToolResult {
    let tool: Arc<dyn Tool> = servers
        .tools()
        .into_iter()
        .find(|t| t.definition().id == id)
        .unwrap_or_else(|| panic!("no tool {id}"));
    let mut context = ToolExecutionContext::new(json!({}));
    context.workspace_path = Some(workspace.to_path_buf());
    tool.execute(context).await
}

/// A field of /proc/self/status, in bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map(|kb| kb * 1024)
        .unwrap_or_else(|| panic!("{field} not in /proc/self/status"))
}

/// Memory measured around `f`: how far this process's peak resident memory rose above
/// what it held before (the peak is reset first where the kernel allows it).
async fn peak_growth<F: std::future::Future>(f: F) -> (F::Output, u64) {
    // "5" resets the peak (VmHWM) to the present resident size.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = if reset {
        status_bytes("VmRSS:")
    } else {
        status_bytes("VmHWM:")
    };
    let out = f.await;
    let growth = status_bytes("VmHWM:").saturating_sub(before);
    (out, growth)
}

const MIB: u64 = 1024 * 1024;

/// A call that must fail at once because of the message size: its result, how long it
/// took, and how far memory rose.
async fn flooded(servers: &McpServers, id: &str, workspace: &Path) -> (ToolResult, Duration, u64) {
    let started = Instant::now();
    // Without the fix the call waits for the tool timeout (2 minutes by default): cut
    // short here, so that a hang fails the test quickly.
    let bounded = tokio::time::timeout(Duration::from_secs(30), call(servers, id, workspace));
    let (result, growth) = peak_growth(bounded).await;
    let took = started.elapsed();
    let result = result.unwrap_or_else(|_| ToolResult::failed("the call hung"));
    eprintln!(
        "{id}: failed in {took:?}, peak memory rose by {} MiB: {:?}",
        growth / MIB,
        result.error_message
    );
    (result, took, growth)
}

/// The call failed at once, saying why (`reason`), and memory stayed bounded.
fn assert_over_limit(result: &ToolResult, took: Duration, growth: u64, server: &str, reason: &str) {
    let why = result.error_message.clone().unwrap_or_default();
    assert!(!result.success, "{result:?}");
    assert!(
        why.contains(&format!("'{server}'")) && why.contains(reason),
        "names the server and says why ({reason}): {why}"
    );
    assert!(
        took < Duration::from_secs(10),
        "failed at once, not at the tool timeout: {took:?}"
    );
    assert!(
        growth < 64 * MIB,
        "memory stays bounded: it rose by {} MiB",
        growth / MIB
    );
}

/// Whether the process `pid` is gone (or a zombie nobody waits for any more).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_message_over_the_limit_fails_the_call_at_once_and_restarts_the_server() {
    let _one = ONE_AT_A_TIME.lock().await;
    let ws = tempfile::tempdir().unwrap();
    let pids = ws.path().join("pids");
    let config = McpServerConfig::default()
        .with_command(Some("python3".into()))
        .with_args(vec![
            script(ws.path(), "stdio_server.py", STDIO),
            pids.display().to_string(),
        ])
        .with_startup_timeout_ms(30_000);
    let servers = start("big", config, ws.path()).await;
    let (result, took, growth) = flooded(&servers, "big__flood", ws.path()).await;
    assert_over_limit(&result, took, growth, "big", "longer than 16 MiB");

    // The server that sent it is stopped at once.
    assert!(
        wait_gone(first_pid(&pids)).await,
        "the server that sent it was stopped"
    );

    // The next call starts it again.
    let r = call(&servers, "big__echo", ws.path()).await;
    assert!(r.success && r.content.contains("still here"), "{r:?}");
    assert_eq!(std::fs::read_to_string(&pids).unwrap().lines().count(), 2);
    servers.stop().await;
}

/// The first pid written in `pids`.
fn first_pid(pids: &Path) -> u32 {
    std::fs::read_to_string(pids)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Wait (5 s at most) until the process `pid` is gone.
async fn wait_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gone(pid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_over_the_limit_fails_the_start_at_once() {
    let _one = ONE_AT_A_TIME.lock().await;
    let ws = tempfile::tempdir().unwrap();
    let pids = ws.path().join("pids");
    let config = McpServerConfig::default()
        .with_command(Some("python3".into()))
        .with_args(vec![
            script(ws.path(), "stdio_server.py", STDIO),
            pids.display().to_string(),
            "flood-list".into(),
        ])
        .with_startup_timeout_ms(60_000);
    let configs = BTreeMap::from([("big".to_string(), config)]);
    let started = Instant::now();
    let (servers, growth) = peak_growth(McpServers::start(&configs, launcher(), ws.path())).await;
    let took = started.elapsed();
    let status = servers.reports()[0].status.clone();
    eprintln!(
        "failed to start in {took:?}, memory rose by {} MiB: {status:?}",
        growth / MIB
    );
    assert!(
        matches!(&status, ServerStatus::Failed(why)
            if why.contains("'big' could not start") && why.contains("longer than 16 MiB")),
        "{status:?}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(growth < 64 * MIB, "{} MiB", growth / MIB);
    assert!(servers.tools().is_empty());
    assert!(wait_gone(first_pid(&pids)).await, "its process was ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_answer_over_the_limit_fails_the_call_at_once() {
    let _one = ONE_AT_A_TIME.lock().await;
    let ws = tempfile::tempdir().unwrap();
    let mut server = tokio::process::Command::new("python3")
        .arg(script(ws.path(), "web_server.py", HTTP))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs");
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(server.stdout.take().unwrap()));
    let port = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the HTTP server started")
        .unwrap()
        .unwrap();
    let config = McpServerConfig::default().with_url(Some(format!("http://127.0.0.1:{port}/mcp")));
    let servers = start("web", config, ws.path()).await;
    for tool in ["web__flood_json", "web__flood_sse"] {
        let (result, took, growth) = flooded(&servers, tool, ws.path()).await;
        assert_over_limit(&result, took, growth, "web", "longer than 16 MiB");
        // Only that call failed: the server answers the next one.
        let r = call(&servers, "web__echo", ws.path()).await;
        assert!(r.success && r.content.contains("still here"), "{r:?}");
    }
    servers.stop().await;
    let _ = server.kill().await;
}
