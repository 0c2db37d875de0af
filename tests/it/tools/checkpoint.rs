//! Checkpoints: a workspace recorded before the agent's changes comes back byte for byte
//! (modes, deleted files, created files and folders), the workspace's `.git` is never
//! touched, a person's later change is reported and kept, unchanged files are not read
//! again, and the store keeps to its budget.

use core_models::CancellationToken;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tools::checkpoint::{Change, Checkpoints, Limits, Moment};
use tools::Workspace;

pub(crate) fn store(ws: &Path, data: &Path, limits: Limits) -> Checkpoints {
    Checkpoints::open(data, &Workspace::new(ws).unwrap(), limits).unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

/// Every path beneath `root` (not following links) with its kind, mode and bytes.
pub(crate) fn tree(root: &Path) -> Vec<(String, u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let bytes = if meta.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else if meta.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                Vec::new()
            };
            if meta.is_dir() {
                stack.push(p);
            }
            out.push((rel, meta.permissions().mode(), bytes));
        }
    }
    out.sort();
    out
}

fn project() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let p = ws.path();
    std::fs::write(p.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::create_dir_all(p.join("src/deep")).unwrap();
    std::fs::write(p.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(p.join("src/deep/data.bin"), [0u8, 159, 146, 150, 255]).unwrap();
    std::fs::write(p.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(p.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(p.join("gone.txt"), "deleted by the agent\n").unwrap();
    std::os::unix::fs::symlink("notes.txt", p.join("link")).unwrap();
    ws
}

#[test]
fn a_restore_brings_back_every_byte_mode_and_file_and_removes_what_was_made() {
    let ws = project();
    let data = tempfile::tempdir().unwrap();
    let cps = store(ws.path(), data.path(), Limits::default());
    let before_tree = tree(ws.path());
    let before = cps
        .record(Moment::Before, Some("s1"), "change things")
        .unwrap();
    let p = ws.path();
    // What a write, an edit and a command might do.
    std::fs::write(p.join("notes.txt"), "rewritten\n").unwrap();
    std::fs::write(p.join("src/main.rs"), "fn main() { panic!() }\n").unwrap();
    std::fs::write(p.join("src/deep/data.bin"), b"text now").unwrap();
    std::fs::set_permissions(p.join("run.sh"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::remove_file(p.join("gone.txt")).unwrap();
    std::fs::remove_file(p.join("link")).unwrap();
    std::fs::write(p.join("link"), "a file where a link was").unwrap();
    std::fs::create_dir_all(p.join("new/nested")).unwrap();
    std::fs::write(p.join("new/nested/made.txt"), "made").unwrap();
    std::fs::write(p.join("made.txt"), "made").unwrap();
    cps.record(Moment::After, Some("s1"), "change things")
        .unwrap();

    let plan = cps.plan(before.id).unwrap();
    assert!(plan.conflicts.is_empty(), "{:?}", plan.conflicts);
    let diff = plan.diff();
    assert!(
        diff.contains("-rewritten") && diff.contains("+one"),
        "{diff}"
    );
    assert!(diff.contains("gone.txt"), "{diff}");
    let removed: Vec<&str> = plan
        .steps
        .iter()
        .filter(|s| matches!(s.change, Change::Remove { .. }))
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(
        removed,
        ["new/nested/made.txt", "new/nested", "new", "made.txt"],
        "removals deepest first"
    );
    let done = cps
        .apply(&plan, false, Some("s1"), &CancellationToken::new())
        .unwrap();
    assert!(done.failed.is_empty(), "{:?}", done.failed);
    assert_eq!(tree(ws.path()), before_tree);
    assert_eq!(mode(&p.join("run.sh")), 0o755);
    assert!(std::fs::symlink_metadata(p.join("link"))
        .unwrap()
        .file_type()
        .is_symlink());

    // The restore recorded what it replaced: undoing it brings the agent's state back.
    let again = cps.plan(done.before_restore).unwrap();
    cps.apply(&again, false, None, &CancellationToken::new())
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(p.join("notes.txt")).unwrap(),
        "rewritten\n"
    );
    assert!(p.join("new/nested/made.txt").exists() && !p.join("gone.txt").exists());
}

#[test]
fn a_change_made_by_someone_else_after_the_request_is_reported_and_kept() {
    let ws = project();
    let data = tempfile::tempdir().unwrap();
    let cps = store(ws.path(), data.path(), Limits::default());
    let p = ws.path();
    let before = cps.record(Moment::Before, None, "edit").unwrap();
    std::fs::write(p.join("notes.txt"), "the agent's\n").unwrap();
    std::fs::write(p.join("src/main.rs"), "the agent's too\n").unwrap();
    cps.record(Moment::After, None, "edit").unwrap();
    // The person edits one of the same files afterwards, and makes a file of their own.
    std::fs::write(p.join("notes.txt"), "the person's\n").unwrap();
    std::fs::write(p.join("theirs.txt"), "the person's own\n").unwrap();

    let plan = cps.plan(before.id).unwrap();
    let conflicts: Vec<&str> = plan
        .conflicts
        .iter()
        .map(|c| c.step.path.as_str())
        .collect();
    assert_eq!(conflicts, ["notes.txt", "theirs.txt"]);
    let done = cps
        .apply(&plan, false, None, &CancellationToken::new())
        .unwrap();
    assert_eq!(done.kept, ["notes.txt", "theirs.txt"]);
    assert_eq!(
        std::fs::read_to_string(p.join("notes.txt")).unwrap(),
        "the person's\n"
    );
    assert!(p.join("theirs.txt").exists());
    assert_eq!(
        std::fs::read_to_string(p.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );

    // Asked for explicitly, the person's change is overwritten too.
    let plan = cps.plan(before.id).unwrap();
    cps.apply(&plan, true, None, &CancellationToken::new())
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(p.join("notes.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    assert!(!p.join("theirs.txt").exists());
}

#[test]
fn the_workspace_git_folder_is_neither_recorded_nor_touched() {
    let ws = project();
    let p = ws.path();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(p)
        .status();
    if !git.is_ok_and(|s| s.success()) {
        // Without git, a folder of the same name stands in for a repository.
        std::fs::create_dir_all(p.join(".git/objects")).unwrap();
        std::fs::write(p.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    }
    std::fs::create_dir_all(p.join("vendor/.git")).unwrap();
    std::fs::write(p.join("vendor/.git/config"), "[core]\n").unwrap();
    let data = tempfile::tempdir().unwrap();
    let cps = store(p, data.path(), Limits::default());
    let git_before = tree(&p.join(".git"));
    let before = cps.record(Moment::Before, None, "edit").unwrap();
    assert!(before
        .entries
        .keys()
        .all(|k| !k.split('/').any(|c| c == ".git")));
    std::fs::write(p.join("notes.txt"), "changed").unwrap();
    std::fs::write(p.join(".git/agent-made"), "x").unwrap();
    let plan = cps.plan(before.id).unwrap();
    assert!(plan.steps.iter().all(|s| !s.path.contains(".git")));
    cps.apply(&plan, false, None, &CancellationToken::new())
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(p.join("notes.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    // What is in .git stays exactly as it is now: the restore did not go in.
    let mut expected = git_before;
    expected.push((
        "agent-made".into(),
        tree(&p.join(".git"))
            .iter()
            .find(|e| e.0 == "agent-made")
            .unwrap()
            .1,
        b"x".to_vec(),
    ));
    expected.sort();
    assert_eq!(tree(&p.join(".git")), expected);
}

#[test]
fn unchanged_files_are_not_read_again_and_the_budget_evicts_the_oldest() {
    let ws = tempfile::tempdir().unwrap();
    for i in 0..50 {
        std::fs::write(
            ws.path().join(format!("f{i}.txt")),
            vec![b'a' + (i % 26) as u8; 1000],
        )
        .unwrap();
    }
    let data = tempfile::tempdir().unwrap();
    let limits = Limits {
        budget_bytes: 60_000,
        ..Limits::default()
    };
    let cps = store(ws.path(), data.path(), limits);
    let first = cps.record(Moment::Before, None, "one").unwrap();
    assert_eq!(first.files_read, 50);
    std::fs::write(ws.path().join("f0.txt"), "changed").unwrap();
    let second = cps.record(Moment::Before, None, "two").unwrap();
    assert_eq!(second.files_read, 1, "only the changed file is read");
    assert_eq!(second.new_bytes, 7);
    // Files of fresh content until the store is past its budget.
    for round in 0..4 {
        for i in 0..20 {
            std::fs::write(
                ws.path().join(format!("f{i}.txt")),
                format!("round {round} file {i} {}", "x".repeat(1000)),
            )
            .unwrap();
        }
        cps.record(Moment::Before, None, "more").unwrap();
    }
    let ids: Vec<u64> = cps.list().unwrap().iter().map(|s| s.id).collect();
    assert!(!ids.contains(&first.id), "the oldest went first: {ids:?}");
    assert_eq!(ids.last(), Some(&6));
    let bytes: u64 = walk_size(&data.path().join("checkpoints"));
    assert!(
        bytes < 60_000 + 200_000,
        "objects and manifests stay near the budget: {bytes}"
    );
    // What is left still restores.
    let last = cps.list().unwrap().last().unwrap().id;
    std::fs::write(ws.path().join("f1.txt"), "later").unwrap();
    let plan = cps.plan(last).unwrap();
    let done = cps
        .apply(&plan, false, None, &CancellationToken::new())
        .unwrap();
    assert!(done.failed.is_empty(), "{:?}", done.failed);
    assert!(std::fs::read_to_string(ws.path().join("f1.txt"))
        .unwrap()
        .starts_with("round 3"));
}

fn walk_size(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        total += if m.is_dir() {
            walk_size(&e.path())
        } else {
            m.len()
        };
    }
    total
}

#[test]
fn ignored_files_are_not_recorded_and_a_restore_leaves_them_alone() {
    let ws = project();
    let p = ws.path();
    std::fs::write(p.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(p.join("target")).unwrap();
    std::fs::write(p.join("target/build.out"), "old build").unwrap();
    let data = tempfile::tempdir().unwrap();
    let cps = store(p, data.path(), Limits::default());
    let before = cps.record(Moment::Before, None, "build").unwrap();
    assert!(!before.entries.contains_key("target/build.out"));
    std::fs::write(p.join("target/build.out"), "new build").unwrap();
    std::fs::write(p.join("target/more.out"), "more").unwrap();
    let plan = cps.plan(before.id).unwrap();
    assert!(plan.is_empty(), "{plan:?}");
    assert_eq!(
        std::fs::read_to_string(p.join("target/build.out")).unwrap(),
        "new build"
    );
}

#[test]
fn a_damaged_copy_is_never_written_back() {
    let ws = project();
    let data = tempfile::tempdir().unwrap();
    let cps = store(ws.path(), data.path(), Limits::default());
    let before = cps.record(Moment::Before, None, "edit").unwrap();
    std::fs::write(ws.path().join("notes.txt"), "changed").unwrap();
    let tools::checkpoint::Entry::File { hash, .. } = &before.entries["notes.txt"] else {
        panic!("notes.txt is a file")
    };
    let checkpoints = data.path().join("checkpoints");
    let key = std::fs::read_dir(&checkpoints)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let object = key.join("objects").join(&hash[..2]).join(&hash[2..]);
    std::fs::write(&object, "tampered").unwrap();
    let plan = cps.plan(before.id).unwrap();
    let done = cps
        .apply(&plan, false, None, &CancellationToken::new())
        .unwrap();
    assert_eq!(done.failed.len(), 1, "{:?}", done.failed);
    assert!(done.failed[0].1.contains("damaged"), "{:?}", done.failed);
    assert_eq!(
        std::fs::read_to_string(ws.path().join("notes.txt")).unwrap(),
        "changed"
    );
    // A damaged manifest is an error in words, not a panic.
    std::fs::write(
        key.join("points").join(format!("{:010}.json", before.id)),
        "{",
    )
    .unwrap();
    let err = cps.plan(before.id).unwrap_err().to_string();
    assert!(err.contains("damaged"), "{err}");
}
