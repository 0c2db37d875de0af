//! Memory a call's arguments could make aintern take: `search_files` runs unasked, so a
//! pattern that compiles huge (a short counted repetition, a long alternation) is refused
//! before it is compiled big, with an error that says why. And what a command can take
//! of the machine: its files and processes are held to the sandbox's resource limits.

use core_models::Tool;
use serde_json::json;
use tools::SearchFiles;

/// `(?:\w{60}){60}` is 15 bytes, and 3,600 Unicode word classes once compiled: grep-regex
/// alone would build it (its limit is 100 MiB, its cache's 1000 MiB); held to 4 MiB, it is
/// refused — at validation, before anyone is asked, and when run.
#[tokio::test]
async fn a_pattern_that_compiles_huge_is_refused_in_words() {
    let search = SearchFiles::default();
    let v = search.validate(&json!({"pattern": r"(?:\w{60}){60}"}));
    assert!(!v.is_valid);
    assert!(v.errors[0].contains("compiles too big"), "{:?}", v.errors);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "word\n").unwrap();
    let mut ctx = core_models::ToolExecutionContext::new(json!({"pattern": r"(?:\w{60}){60}"}));
    ctx.workspace_path = Some(dir.path().to_path_buf());
    let started = std::time::Instant::now();
    let r = search.execute(ctx).await;
    assert!(!r.success);
    assert!(
        r.error_message
            .as_deref()
            .unwrap_or_default()
            .contains("compiles too big"),
        "{r:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));

    // A long alternation is refused by its length.
    let long = (0..100_000)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join("|");
    let v = search.validate(&json!({"pattern": long}));
    assert!(v.errors[0].contains("at most 4096"), "{:?}", v.errors);
    // An everyday pattern still compiles.
    assert!(
        search
            .validate(&json!({"pattern": r"fn \w+\(|TODO"}))
            .is_valid
    );
}

/// A command in a sandbox whose limits are `limits`.
fn limited(limits: sandbox::ProcessLimits) -> tools::RunCommand {
    tools::RunCommand::new(std::sync::Arc::new(sandbox::Launcher::new(
        sandbox::SandboxSettings {
            limits,
            ..sandbox::SandboxSettings::default()
        },
    )))
}

async fn approved(
    tool: &tools::RunCommand,
    ws: &std::path::Path,
    command: &str,
) -> core_models::ToolResult {
    let mut ctx =
        core_models::ToolExecutionContext::new(json!({"command": command, "timeout_seconds": 60}));
    ctx.workspace_path = Some(ws.to_path_buf());
    ctx.is_approved = true;
    tool.execute(ctx).await
}

/// The processes of the user this test runs as.
fn processes_of_this_user() -> u64 {
    use std::os::unix::fs::MetadataExt;
    let me = std::fs::metadata("/proc/self").unwrap().uid();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == me))
        .count() as u64
}

#[tokio::test]
async fn a_command_s_files_and_processes_are_bounded() {
    let ws = tempfile::tempdir().unwrap();
    // A file past the bound: the write fails, the file stops at the bound.
    let tool = limited(sandbox::ProcessLimits {
        processes: None,
        file_bytes: Some(1024 * 1024),
    });
    let r = approved(
        &tool,
        ws.path(),
        "head -c 5000000 /dev/zero > big; echo wrote",
    )
    .await;
    let size = std::fs::metadata(ws.path().join("big"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert!(size <= 1024 * 1024, "the command wrote {size} bytes: {r:?}");
    assert!(!r.content.contains("wrote") || size < 5_000_000, "{r:?}");

    // Processes past the bound: forks fail; far fewer than asked for are started. The
    // kernel never holds root to this limit (its fork check exempts the initial user).
    let me = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap());
    if me == 0 {
        eprintln!("the process bound is not checked as root: the kernel exempts root from it");
        return;
    }
    let bound = processes_of_this_user() + 40;
    let tool = limited(sandbox::ProcessLimits {
        processes: Some(bound),
        file_bytes: None,
    });
    let r = approved(
        &tool,
        ws.path(),
        "n=0; i=0; while [ $i -lt 300 ]; do if sleep 30 & then n=$((n+1)); fi; i=$((i+1)); done 2>/dev/null; echo started=$n; kill $(jobs -p) 2>/dev/null; true",
    )
    .await;
    // The shell either counts the starts that failed or gives up at the first.
    let started: Option<u64> = r
        .content
        .lines()
        .find_map(|l| l.strip_prefix("started="))
        .and_then(|n| n.trim().parse().ok());
    assert!(
        started.is_some_and(|n| n < 300) || (started.is_none() && !r.success),
        "all 300 processes started under a bound of {bound}: {r:?}"
    );
}
