//! `aintern bench checkpoint`: what a checkpoint costs a request, on a generated workspace
//! of `--files` files (source-sized, in nested folders), with or without a git
//! repository in it: the first checkpoint (every file read into a fresh store), then one
//! per request after a few files changed (the others known by their metadata), and the
//! plan of a restore. Times are medians over `--reps`; the store is a temporary folder.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};
use tools::checkpoint::{Checkpoints, Limits, Moment};

/// `bench checkpoint` options.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchCheckpointArgs {
    /// Files in the generated workspace.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    files: usize,
    /// Bytes per file.
    #[arg(long, value_name = "BYTES", default_value_t = 2_000)]
    size: usize,
    /// Make the workspace a git repository (with its files committed) first.
    #[arg(long)]
    git: bool,
    /// Requests measured.
    #[arg(long, value_name = "N", default_value_t = 5)]
    reps: usize,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// Run the benchmark.
pub(crate) fn run(args: BenchCheckpointArgs) -> Result<(), String> {
    let ws = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data = tempfile::tempdir().map_err(|e| e.to_string())?;
    generate(ws.path(), args.files, args.size)?;
    if args.git {
        git(ws.path())?;
    }
    let workspace = tools::Workspace::new(ws.path()).map_err(|e| e.to_string())?;
    let store =
        Checkpoints::open(data.path(), &workspace, Limits::default()).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let first = store
        .record(Moment::Before, None, "first")
        .map_err(|e| e.to_string())?;
    let cold = started.elapsed();
    let mut warm = Vec::new();
    let mut plans = Vec::new();
    for rep in 0..args.reps {
        // What a request changes: three files.
        for i in 0..3 {
            let path = ws.path().join(file_name(rep * 7 + i * 131));
            std::fs::write(&path, format!("changed in request {rep}\n"))
                .map_err(|e| e.to_string())?;
        }
        let t = Instant::now();
        let point = store
            .record(Moment::Before, None, "request")
            .map_err(|e| e.to_string())?;
        warm.push((t.elapsed(), point.files_read));
        let t = Instant::now();
        store.plan(first.id).map_err(|e| e.to_string())?;
        plans.push(t.elapsed());
    }
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v.get(v.len() / 2).copied().unwrap_or_default()
    };
    let warm_ms = median(warm.iter().map(|w| w.0).collect()).as_secs_f64() * 1000.0;
    let plan_ms = median(plans).as_secs_f64() * 1000.0;
    let read = warm.iter().map(|w| w.1).max().unwrap_or(0);
    let store_bytes = dir_bytes(data.path());
    let mut out = std::io::stdout().lock();
    let printed = if args.json {
        writeln!(
            out,
            "{}",
            serde_json::json!({
                "files": first.entries.len(), "git": args.git,
                "first_ms": cold.as_secs_f64() * 1000.0,
                "per_request_ms": warm_ms, "files_read_per_request": read,
                "plan_ms": plan_ms, "store_bytes": store_bytes,
            })
        )
    } else {
        writeln!(
            out,
            "{} paths{}: first checkpoint {:.0} ms; each request after {:.1} ms (median of {}, {read} files read); a restore's plan {:.1} ms; store {:.1} MiB",
            first.entries.len(),
            if args.git { " (git)" } else { "" },
            cold.as_secs_f64() * 1000.0,
            warm_ms,
            args.reps,
            plan_ms,
            store_bytes as f64 / (1024.0 * 1024.0)
        )
    };
    printed.map_err(|e| e.to_string())
}

fn file_name(i: usize) -> String {
    format!("src/m{:02}/d{:02}/f{i:05}.rs", i % 50, (i / 50) % 20)
}

fn generate(root: &Path, files: usize, size: usize) -> Result<(), String> {
    let line = "    let value = compute(input, factor) + offset; // a line of code\n";
    for i in 0..files {
        let path = root.join(file_name(i));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        let mut text = format!("// file {i}\n");
        while text.len() < size {
            text.push_str(line);
        }
        std::fs::write(path, text).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn git(root: &Path) -> Result<(), String> {
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-qm",
            "files",
        ],
    ] {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .status()
            .map_err(|e| format!("git: {e}"))?;
        if !status.success() {
            return Err(format!("git {} failed", args.join(" ")));
        }
    }
    Ok(())
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                Ok(m) => m.len(),
                Err(_) => 0,
            })
            .sum()
    })
}
