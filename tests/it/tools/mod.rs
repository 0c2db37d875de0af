//! The built-in tools, and the git and formatter ports over real commands: the file
//! tools here, `run_command` in `commands`, git and the formatters in `git`.

use core_models::{Formatter, GitInspector, Tool, ToolExecutionContext, ToolResult};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use test_support::processes::{process_gone, written_pid};
use tools::{
    CommandFormatter, GitCommandInspector, GitDiff, GitStatus, ListDir, ReadFile, RunCommand,
    SearchFiles, Workspace,
};

pub(crate) mod checkpoint;
mod commands;
pub(crate) mod git;

fn ws() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("notes.txt"),
        "line one\nline two\nline three\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("src/deep/er")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.path().join("src/deep/er/x.txt"), "x").unwrap();
    std::fs::write(dir.path().join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    std::fs::write(dir.path().join("target/out.bin"), "bin").unwrap();
    std::fs::write(dir.path().join("debug.log"), "log").unwrap();
    dir
}

async fn exec(tool: &dyn Tool, root: &Path, params: Value) -> ToolResult {
    assert!(tool.validate(&params).is_valid, "{params}");
    let mut ctx = ToolExecutionContext::new(params);
    ctx.workspace_path = Some(root.to_path_buf());
    tool.execute(ctx).await
}

fn error(result: &ToolResult) -> &str {
    assert!(!result.success, "expected a failure, got {result:?}");
    result.error_message.as_deref().unwrap()
}

#[tokio::test]
async fn read_file_whole_and_by_lines() {
    let dir = ws();
    let read = ReadFile::default();
    let r = exec(&read, dir.path(), json!({"path": "notes.txt"})).await;
    assert_eq!(r.content, "line one\nline two\nline three\n");
    let r = exec(
        &read,
        dir.path(),
        json!({"path": "notes.txt", "start_line": 2, "end_line": 3}),
    )
    .await;
    assert_eq!(r.content, "line two\nline three\n");
    assert_eq!(r.data.unwrap()["total_lines"], 3);
    let r = exec(
        &read,
        dir.path(),
        json!({"path": "./src/../notes.txt", "start_line": 3}),
    )
    .await;
    assert_eq!(r.content, "line three\n");
    assert!(error(
        &exec(
            &read,
            dir.path(),
            json!({"path": "notes.txt", "start_line": 9})
        )
        .await
    )
    .contains("only 3 lines"));
    assert!(
        error(&exec(&read, dir.path(), json!({"path": "missing.txt"})).await)
            .contains("does not exist")
    );
    assert!(error(&exec(&read, dir.path(), json!({"path": "src"})).await).contains("is a folder"));
    std::fs::write(dir.path().join("big.txt"), "x".repeat(300 * 1024)).unwrap();
    assert!(error(&exec(&read, dir.path(), json!({"path": "big.txt"})).await).contains("cap"));
    std::fs::write(dir.path().join("bin.dat"), b"ab\0cd").unwrap();
    assert!(error(&exec(&read, dir.path(), json!({"path": "bin.dat"})).await).contains("binary"));
    let v = read.validate(&json!({"start_line": 0, "end_line": 1}));
    assert_eq!(
        v.errors,
        [
            "path is required (a non-empty string)",
            "start_line must be a whole number of at least 1"
        ]
    );
    assert!(
        !read
            .validate(&json!({"path": "a", "start_line": 5, "end_line": 2}))
            .is_valid
    );
    assert_eq!(
        read.execution_summary(&json!({"path": "a", "start_line": 1, "end_line": 2})),
        "Read lines 1-2 of a"
    );
}

#[tokio::test]
async fn paths_cannot_leave_the_workspace() {
    let dir = ws();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            dir.path().join("link.txt"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("linkdir")).unwrap();
    }
    let read = ReadFile::default();
    let absolute = outside
        .path()
        .join("secret.txt")
        .to_string_lossy()
        .into_owned();
    let cases = [
        ("../secret.txt", "leads outside the workspace"),
        ("src/../../x", "leads outside the workspace"),
        (absolute.as_str(), "is absolute"),
        ("link.txt", "through a symbolic link"),
        ("linkdir/secret.txt", "through a symbolic link"),
    ];
    for (path, why) in cases {
        let r = exec(&read, dir.path(), json!({"path": path})).await;
        let message = error(&r);
        assert!(message.contains(why), "{path}: {message}");
        assert!(!r.content.contains("secret"));
    }
    let list = ListDir::default();
    assert!(error(&exec(&list, dir.path(), json!({"path": ".."})).await).contains("outside"));
    assert!(
        error(&exec(&list, dir.path(), json!({"path": "linkdir"})).await).contains("symbolic link")
    );
    // A new file's path is checked too.
    let w = Workspace::new(dir.path()).unwrap();
    assert!(w.resolve_new("src/new.rs").is_ok());
    assert!(w
        .resolve_new("nofolder/new.rs")
        .unwrap_err()
        .to_string()
        .contains("folder that does not exist"));
    assert!(w
        .resolve_new("linkdir/new.rs")
        .unwrap_err()
        .to_string()
        .contains("outside"));
    assert!(Workspace::new(dir.path().join("notes.txt"))
        .unwrap_err()
        .to_string()
        .contains("not a folder"));
}

#[tokio::test]
async fn list_dir_honours_gitignore_and_depth() {
    let dir = ws();
    let list = ListDir::default();
    let r = exec(&list, dir.path(), json!({})).await;
    assert_eq!(r.content, ".gitignore\nnotes.txt\nsrc/");
    let r = exec(&list, dir.path(), json!({"path": "src", "depth": 3})).await;
    assert_eq!(
        r.content,
        "src/deep/\nsrc/deep/er/\nsrc/deep/er/x.txt\nsrc/main.rs"
    );
    let r = exec(&list, dir.path(), json!({"depth": 10})).await;
    assert!(
        !r.content.contains("target") && !r.content.contains("debug.log"),
        "{}",
        r.content
    );
    assert!(!list.validate(&json!({"depth": 11})).is_valid);
    assert!(
        error(&exec(&list, dir.path(), json!({"path": "notes.txt"})).await).contains("is a file")
    );
}

#[tokio::test]
async fn tools_need_a_workspace_and_stop_when_cancelled() {
    let read = ReadFile::default();
    let r = read
        .execute(ToolExecutionContext::new(json!({"path": "a"})))
        .await;
    assert_eq!(error(&r), "no workspace is open");
    let dir = ws();
    let mut ctx = ToolExecutionContext::new(json!({"path": "notes.txt"}));
    ctx.workspace_path = Some(dir.path().to_path_buf());
    ctx.cancellation.cancel();
    assert_eq!(error(&read.execute(ctx).await), "Cancelled");
}

#[tokio::test]
async fn write_file_is_atomic_and_confined() {
    let dir = ws();
    let write = tools::WriteFile::default();
    let r = exec(
        &write,
        dir.path(),
        json!({"path": "out/new.txt", "content": "héllo"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.content, "Created out/new.txt (6 bytes)");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/new.txt")).unwrap(),
        "héllo"
    );
    let r = exec(
        &write,
        dir.path(),
        json!({"path": "notes.txt", "content": "new"}),
    )
    .await;
    assert_eq!(r.content, "Replaced notes.txt (3 bytes)");
    assert!(error(
        &exec(
            &write,
            dir.path(),
            json!({"path": "../evil.txt", "content": "x"})
        )
        .await
    )
    .contains("outside"));
    assert!(
        error(&exec(&write, dir.path(), json!({"path": "src", "content": "x"})).await)
            .contains("is a folder")
    );
    assert_eq!(
        write.effective_risk_level(&json!({"path": "src/a.rs"})),
        core_models::RiskLevel::Medium
    );
    assert_eq!(
        write.effective_risk_level(&json!({"path": "./.git/config"})),
        core_models::RiskLevel::High
    );
    assert_eq!(
        write.effective_risk_level(&json!({"path": "sub/.env"})),
        core_models::RiskLevel::High
    );
    assert!(!write.validate(&json!({"path": "a"})).is_valid);
    // A cancelled write leaves the old file as it was and no temporary file behind.
    let mut ctx = ToolExecutionContext::new(json!({"path": "notes.txt", "content": "half"}));
    ctx.workspace_path = Some(dir.path().to_path_buf());
    ctx.cancellation.cancel();
    assert_eq!(error(&write.execute(ctx).await), "Cancelled");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "new"
    );
    let stray: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(".tmp") || name.starts_with(".aintern-")
        })
        .collect();
    assert!(stray.is_empty());
}

#[tokio::test]
async fn edit_file_replaces_exactly_one_occurrence() {
    let dir = ws();
    let edit = tools::EditFile::default();
    let notes = || std::fs::read_to_string(dir.path().join("notes.txt")).unwrap();
    // (search, replace, expected error part or None, expected file after)
    let cases: [(&str, &str, Option<&str>, &str); 4] = [
        (
            "line two\n",
            "line 2\nline 2b\n",
            None,
            "line one\nline 2\nline 2b\nline three\n",
        ),
        (
            "absent",
            "x",
            Some("does not occur in 'notes.txt'"),
            "line one\nline 2\nline 2b\nline three\n",
        ),
        (
            "line 2",
            "x",
            Some("occurs 2 times in 'notes.txt' (lines 2, 3)"),
            "line one\nline 2\nline 2b\nline three\n",
        ),
        ("line 2b", "", None, "line one\nline 2\n\nline three\n"),
    ];
    for (search, replace, failure, after) in cases {
        let r = exec(
            &edit,
            dir.path(),
            json!({"path": "notes.txt", "search": search, "replace": replace}),
        )
        .await;
        match failure {
            Some(part) => assert!(error(&r).contains(part), "{r:?}"),
            None => assert!(r.success, "{r:?}"),
        }
        assert_eq!(notes(), after, "after {search:?}");
    }
    assert!(error(
        &exec(
            &edit,
            dir.path(),
            json!({"path": "../x", "search": "a", "replace": "b"})
        )
        .await
    )
    .contains("outside"));
    assert!(error(
        &exec(
            &edit,
            dir.path(),
            json!({"path": "missing.txt", "search": "a", "replace": "b"})
        )
        .await
    )
    .contains("does not exist"));
    assert!(
        !edit
            .validate(&json!({"path": "a", "search": "", "replace": "b"}))
            .is_valid
    );
    assert!(!edit.validate(&json!({"path": "a", "search": "x"})).is_valid);
    assert_eq!(
        edit.execution_summary(&json!({"path": "a.rs", "search": "x\ny", "replace": "z"})),
        "Edit a.rs: replace 2 line(s) with 1"
    );
    assert_eq!(
        edit.effective_risk_level(&json!({"path": ".github/ci.yml"})),
        core_models::RiskLevel::High
    );
    // A cancelled edit leaves the file as it was.
    let before = notes();
    let mut ctx = ToolExecutionContext::new(
        json!({"path": "notes.txt", "search": "line one", "replace": "changed"}),
    );
    ctx.workspace_path = Some(dir.path().to_path_buf());
    ctx.cancellation.cancel();
    assert_eq!(error(&edit.execute(ctx).await), "Cancelled");
    assert_eq!(notes(), before);
}

#[tokio::test]
async fn search_files_finds_lines_and_honours_gitignore() {
    let dir = ws();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "// Line one of lib\npub fn line() {}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("target/hit.txt"), "line in target\n").unwrap();
    std::fs::write(dir.path().join("bin.dat"), b"line\0binary").unwrap();
    let search = SearchFiles::default();
    let r = exec(&search, dir.path(), json!({"pattern": "line (one|two)"})).await;
    assert_eq!(
        r.content,
        "notes.txt:1: line one\nnotes.txt:2: line two\nsrc/lib.rs:1: // Line one of lib"
    );
    assert_eq!(r.data.unwrap()["files"], 2);

    // Case, globs and subfolders; ignored and binary files are skipped.
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "LINE", "case_insensitive": true, "glob": "*.rs"}),
    )
    .await;
    assert_eq!(
        r.content,
        "src/lib.rs:1: // Line one of lib\nsrc/lib.rs:2: pub fn line() {}"
    );
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "line", "path": "src", "case_insensitive": false}),
    )
    .await;
    assert_eq!(r.content, "src/lib.rs:2: pub fn line() {}");
    // Not said: case is ignored when the pattern has no capital letter ("smart case").
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "line", "path": "src"}),
    )
    .await;
    assert_eq!(
        r.content,
        "src/lib.rs:1: // Line one of lib\nsrc/lib.rs:2: pub fn line() {}"
    );
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "Line", "path": "src"}),
    )
    .await;
    assert_eq!(r.content, "src/lib.rs:1: // Line one of lib");
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "line", "max_results": 2}),
    )
    .await;
    assert!(
        r.content
            .ends_with("(only the first 2 matching lines are shown)"),
        "{}",
        r.content
    );
    assert_eq!(r.data.unwrap()["truncated"], true);
    let r = exec(&search, dir.path(), json!({"pattern": "zebra"})).await;
    assert!(
        r.content
            .starts_with("no match for /zebra/ in . (searched "),
        "{}",
        r.content
    );
    // What was searched is said, so that a glob or a case given by mistake shows.
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "zebra", "glob": "*.nope"}),
    )
    .await;
    assert_eq!(
        r.content,
        "no match for /zebra/ in . (no file's name matches the glob *.nope)"
    );
    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "Zebra", "case_insensitive": false}),
    )
    .await;
    assert!(r.content.ends_with(", case-sensitive"), "{}", r.content);

    let r = exec(
        &search,
        dir.path(),
        json!({"pattern": "x", "path": "../.."}),
    )
    .await;
    assert!(error(&r).contains("outside the workspace"), "{r:?}");
    let v = search.validate(&json!({"pattern": "a(", "glob": "[", "max_results": 0}));
    assert_eq!(v.errors.len(), 3, "{:?}", v.errors);
    assert!(v.errors[0].starts_with("pattern is not a valid regular expression"));
}
