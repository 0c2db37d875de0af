//! Peak memory of the tools on huge inputs: a 200 MB single-line file read and searched,
//! a 400 MB diff, a 30 MB write and edit. Its own test binary with one test, so no other
//! test shares the process: the peak (`VmHWM`) is reset before each case through
//! `/proc/self/clear_refs` and read after it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use core_models::{Tool, ToolExecutionContext, ToolResult};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::Command;

/// The most any case may hold at its peak (the whole process).
const PEAK_LIMIT_KIB: u64 = 100 * 1024;
const MIB: usize = 1024 * 1024;

/// A field of `/proc/self/status` in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap()
}

/// Run `case`, returning (resident size before, peak during) in KiB.
fn measure(case: impl FnOnce()) -> (u64, u64) {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = status_kib("VmRSS");
    case();
    (before, status_kib("VmHWM"))
}

/// Write `total` bytes made of `piece` repeated to `path`, a MiB at a time.
fn write_big(path: &Path, head: &[u8], piece: &[u8], total: usize, tail: &[u8]) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    file.write_all(head).unwrap();
    let chunk: Vec<u8> = piece.iter().copied().cycle().take(MIB).collect();
    let mut left = total;
    while left > 0 {
        let n = left.min(chunk.len());
        file.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    file.write_all(tail).unwrap();
    file.flush().unwrap();
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Run `tool` with `params` (prepared before the measure starts); (before, peak) and the
/// result.
fn measured(
    rt: &tokio::runtime::Runtime,
    tool: &dyn Tool,
    root: &Path,
    params: Value,
) -> ((u64, u64), ToolResult) {
    let mut ctx = ToolExecutionContext::new(params);
    ctx.workspace_path = Some(root.to_path_buf());
    let mut result = None;
    let figures = measure(|| result = Some(rt.block_on(tool.execute(ctx))));
    (figures, result.unwrap())
}

/// Note a case's figures and check its peak.
fn check(report: &mut Vec<String>, name: &str, (before, peak): (u64, u64), limit: u64) {
    report.push(format!(
        "{name}: peak {} MiB (resident before: {} MiB)",
        peak / 1024,
        before / 1024
    ));
    assert!(peak < limit, "{name}: peak {peak} KiB, before {before} KiB");
}

#[test]
fn memory_stays_bounded_on_huge_inputs() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    let line_len = 200 * MIB;
    write_big(
        &root.join("one-line.txt"),
        b"needle ",
        b"x",
        line_len - 7,
        b"\n",
    );
    let mut report = Vec::new();

    let read = tools::ReadFile::default();
    for params in [
        json!({"path": "one-line.txt", "start_line": 1, "end_line": 1}),
        json!({"path": "one-line.txt", "start_line": 1}),
        json!({"path": "one-line.txt"}),
    ] {
        let (figures, r) = measured(&rt, &read, root, params.clone());
        check(
            &mut report,
            &format!("read_file {params}"),
            figures,
            PEAK_LIMIT_KIB,
        );
        if params.get("start_line").is_some() {
            assert!(r.success, "{r:?}");
            assert!(r
                .content
                .contains(&format!("(line 1 cut: {line_len} bytes)")));
        } else {
            assert!(r.error_message.unwrap().contains("cap"));
        }
    }

    let search = tools::SearchFiles::default();
    let (figures, r) = measured(&rt, &search, root, json!({"pattern": "needle"}));
    check(&mut report, "search_files", figures, PEAK_LIMIT_KIB);
    assert!(
        r.content.starts_with("one-line.txt:1: needle xxx"),
        "{}",
        &r.content[..100]
    );

    // A 400 MB diff: four 100 MB files, each committed as one line.
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q"]);
    let names = ["a.txt", "b.txt", "c.txt", "d.txt"];
    for name in names {
        std::fs::write(repo.path().join(name), "first\n").unwrap();
    }
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-q", "-m", "small"]);
    for name in names {
        write_big(
            &repo.path().join(name),
            b"",
            b"a line of a very large change\n",
            100 * MIB,
            b"",
        );
    }
    let started = std::time::Instant::now();
    let (figures, r) = measured(&rt, &tools::GitDiff::default(), repo.path(), json!({}));
    check(&mut report, "git_diff (400 MB)", figures, PEAK_LIMIT_KIB);
    assert!(r.success, "{r:?}");
    assert!(
        r.content.starts_with("diff --git a/a.txt b/a.txt"),
        "{}",
        &r.content[..100]
    );
    assert!(r.content.len() < tools::GIT_DIFF_CAP + 200);
    assert_eq!(r.data.unwrap()["truncated"], true);
    report.push(format!("git_diff took {:?}", started.elapsed()));

    // A 30 MB write and edit through the tools: the content is the caller's already; the
    // tools add at most one copy (the edit holds the file once).
    let params = json!({"path": "big.txt", "content": format!("unique start\n{}", "0123456789abcdef\n".repeat(30 * MIB / 17))});
    let (figures, r) = measured(&rt, &tools::WriteFile::default(), root, params);
    assert!(r.success, "{r:?}");
    check(&mut report, "write_file 30 MB", figures, PEAK_LIMIT_KIB);
    let extra = figures.1.saturating_sub(figures.0);
    report.push(format!(
        "write_file 30 MB: +{} MiB over what was resident",
        extra / 1024
    ));
    assert!(
        extra < 12 * 1024,
        "write_file copied the content: +{extra} KiB"
    );

    let params = json!({"path": "big.txt", "search": "unique start\n", "replace": "start"});
    let (figures, r) = measured(&rt, &tools::EditFile::default(), root, params);
    assert!(r.success, "{r:?}");
    check(&mut report, "edit_file 30 MB", figures, PEAK_LIMIT_KIB);
    let extra = figures.1.saturating_sub(figures.0);
    report.push(format!(
        "edit_file 30 MB: +{} MiB over what was resident",
        extra / 1024
    ));
    assert!(
        extra < 42 * 1024,
        "edit_file held the file more than once: +{extra} KiB"
    );
    eprintln!("{}", report.join("\n"));
}
