//! What an MCP tool costs: the round trip of a call to the reference "everything" server's
//! `echo` (a stdio server in the sandbox) against a direct built-in tool call (`read_file`
//! of a small file, the anchor), back to back; and a server's start (spawn in the
//! sandbox, handshake, tool list). Needs `AINTERN_MCP_TEST_SERVERS`
//! (`scripts/fetch-mcp-servers`); medians in `target/criterion/mcp/*/new/estimates.json`.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use core_models::{Tool, ToolExecutionContext};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use services_ai::McpServerConfig;
use std::collections::BTreeMap;
use std::sync::Arc;

fn bench(c: &mut Criterion) {
    let Some(dir) = std::env::var_os("AINTERN_MCP_TEST_SERVERS") else {
        eprintln!("skipped: AINTERN_MCP_TEST_SERVERS is not set (scripts/fetch-mcp-servers)");
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("small.txt"), "one line\n").unwrap();
    let launcher = Arc::new(sandbox::Launcher::new(sandbox::SandboxSettings::default()));
    let configs = BTreeMap::from([(
        "everything".to_string(),
        McpServerConfig::default()
            .with_command(Some(
                dir.join("node_modules/.bin/mcp-server-everything")
                    .display()
                    .to_string(),
            ))
            .with_args(vec!["stdio".into()]),
    )]);
    let servers = runtime.block_on(mcp::McpServers::start(
        &configs,
        Arc::clone(&launcher),
        ws.path(),
    ));
    let echo = servers
        .tools()
        .into_iter()
        .find(|t| t.definition().id == "everything__echo")
        .unwrap();
    let read = tools::ReadFile::new(Arc::clone(&launcher));
    let context = |params: serde_json::Value| {
        let mut c = ToolExecutionContext::new(params);
        c.workspace_path = Some(ws.path().to_path_buf());
        c
    };
    let mut group = c.benchmark_group("mcp");
    group.bench_function("builtin_read_file", |b| {
        b.iter(|| {
            let r = runtime.block_on(read.execute(context(json!({"path": "small.txt"}))));
            assert!(r.success);
        })
    });
    group.bench_function("mcp_echo", |b| {
        b.iter(|| {
            let r = runtime.block_on(echo.execute(context(json!({"message": "one line"}))));
            assert!(r.success);
        })
    });
    group.sample_size(10);
    group.bench_function("server_start", |b| {
        b.iter(|| {
            let s = runtime.block_on(mcp::McpServers::start(
                &configs,
                Arc::clone(&launcher),
                ws.path(),
            ));
            assert!(!s.tools().is_empty());
            runtime.block_on(s.stop());
        })
    });
    group.finish();
    runtime.block_on(servers.stop());
}

criterion_group!(benches, bench);
criterion_main!(benches);
