//! A hostile workspace against checkpoints: links leading out are recorded as links and
//! never written through, a FIFO is never opened (no hang), a 1 GiB file is noted and not
//! copied, names with newlines come back, and a folder the agent swapped for a link
//! leading out is not restored through it.

use crate::tools::checkpoint::{store, tree};
use core_models::CancellationToken;
use std::path::Path;
use std::time::{Duration, Instant};
use tools::checkpoint::{Entry, Limits, Moment, NotKept};

#[test]
fn links_leading_out_fifos_huge_files_and_odd_names_neither_escape_nor_hang() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "outside\n").unwrap();
    let ws = tempfile::tempdir().unwrap();
    let p = ws.path();
    std::os::unix::fs::symlink(outside.path(), p.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), p.join("secret-link")).unwrap();
    assert!(std::process::Command::new("mkfifo")
        .arg(p.join("pipe"))
        .status()
        .unwrap()
        .success());
    let huge = std::fs::File::create(p.join("huge.bin")).unwrap();
    huge.set_len(1 << 30).unwrap();
    drop(huge);
    std::fs::write(p.join("two\nlines.txt"), "odd name\n").unwrap();
    std::fs::create_dir(p.join("sub")).unwrap();
    std::fs::write(p.join("sub/inner.txt"), "inner\n").unwrap();

    let data = tempfile::tempdir().unwrap();
    let cps = store(p, data.path(), Limits::default());
    let started = Instant::now();
    let before = cps.record(Moment::Before, None, "hostile").unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(before.entries["out"], Entry::Link { .. }));
    assert!(
        !before.entries.keys().any(|k| k.starts_with("out/")),
        "a link is not followed"
    );
    assert!(matches!(
        &before.entries["pipe"],
        Entry::NotKept {
            why: NotKept::Special { .. }
        }
    ));
    assert!(matches!(
        &before.entries["huge.bin"],
        Entry::NotKept {
            why: NotKept::TooLarge { .. }
        }
    ));
    assert!(
        dir_bytes(data.path()) < 1 << 20,
        "the huge file was not copied"
    );

    // The agent's changes: the odd file edited, the folder swapped for a link leading
    // out, the link to the outside file replaced by a file.
    std::fs::write(p.join("two\nlines.txt"), "changed\n").unwrap();
    std::fs::remove_dir_all(p.join("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), p.join("sub")).unwrap();
    std::fs::remove_file(p.join("secret-link")).unwrap();
    std::fs::write(p.join("secret-link"), "not a link now").unwrap();
    let outside_before = tree(outside.path());

    let plan = cps.plan(before.id).unwrap();
    let done = cps
        .apply(&plan, false, None, &CancellationToken::new())
        .unwrap();
    assert!(done.failed.is_empty(), "{:?}", done.failed);
    assert_eq!(
        tree(outside.path()),
        outside_before,
        "nothing outside changed"
    );
    assert!(!outside.path().join("inner.txt").exists());
    assert_eq!(
        std::fs::read_to_string(p.join("sub/inner.txt")).unwrap(),
        "inner\n"
    );
    assert!(std::fs::symlink_metadata(p.join("sub")).unwrap().is_dir());
    assert_eq!(
        std::fs::read_link(p.join("secret-link")).unwrap(),
        outside.path().join("secret.txt")
    );
    assert_eq!(
        std::fs::read_to_string(p.join("two\nlines.txt")).unwrap(),
        "odd name\n"
    );
    assert!(
        plan.lost.iter().all(|(path, _)| path != "huge.bin"),
        "unchanged: nothing lost"
    );
}

fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        total += if m.is_dir() {
            dir_bytes(&e.path())
        } else {
            m.len()
        };
    }
    total
}
