//! The file tools against a hostile workspace: paths swapped for symbolic links while a
//! tool runs, folders that lead out, FIFOs, sockets and devices, ignore files that are
//! FIFOs, files the user may not change, and lines too long to hold; and, in
//! [`secrets`], the secret locations a workspace may hold.

mod secrets;

use core_models::{Tool, ToolExecutionContext, ToolResult};
use serde_json::{json, Value};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tools::{EditFile, ListDir, ReadFile, SearchFiles, WriteFile};

/// How long one tool call may take before the test calls it hung.
const PATIENCE: Duration = Duration::from_secs(10);

async fn call(tool: &dyn Tool, root: &Path, params: Value) -> ToolResult {
    assert!(tool.validate(&params).is_valid, "{params}");
    let mut ctx = ToolExecutionContext::new(params);
    ctx.workspace_path = Some(root.to_path_buf());
    tool.execute(ctx).await
}

/// `call`, failing (instead of hanging) when it does not end within [`PATIENCE`]; the
/// FIFOs in `fifos` are then opened for writing so a blocked reader is released.
async fn call_within(tool: &dyn Tool, root: &Path, params: Value, fifos: &[PathBuf]) -> ToolResult {
    match tokio::time::timeout(PATIENCE, call(tool, root, params.clone())).await {
        Ok(r) => r,
        Err(_) => {
            for fifo in fifos {
                // Read-write opens of a FIFO never block; writing releases a reader.
                if let Ok(mut f) = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(fifo)
                {
                    let _ = std::io::Write::write_all(&mut f, b"x\n");
                }
            }
            panic!("{} hung on {params}", tool.definition().id);
        }
    }
}

fn error(result: &ToolResult) -> String {
    assert!(!result.success, "expected a failure, got {result:?}");
    result.error_message.clone().unwrap_or_default()
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// A field of `/proc/self/status` ("Uid", "Umask", …): its first value.
fn proc_status(field: &str) -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_string()
}

fn euid() -> u32 {
    // "Uid:" lists real, effective, saved and filesystem ids.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// Makes the inside version of a swapped path.
type Make = fn(&Path);

/// Swap `path` between a regular thing made by `inside` and a symbolic link to
/// `outside`, by atomic renames, until stopped.
fn swapper(
    path: PathBuf,
    outside: PathBuf,
    inside: Make,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || {
        let parent = path.parent().unwrap().to_path_buf();
        let (link, real) = (parent.join(".swap-link"), parent.join(".swap-real"));
        while !flag.load(Ordering::Relaxed) {
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&outside, &link).unwrap();
            // rename(2) replaces a file by a link at once, but a folder must go first.
            let _ = std::fs::remove_dir_all(&path);
            let _ = std::fs::rename(&link, &path);
            std::thread::yield_now();
            let _ = std::fs::remove_dir_all(&real);
            let _ = std::fs::remove_file(&real);
            inside(&real);
            if real.is_dir() {
                // Nor can it replace a link by a folder.
                let _ = std::fs::remove_file(&path);
            }
            let _ = std::fs::rename(&real, &path);
            std::thread::yield_now();
        }
    });
    (stop, handle)
}

/// A file swapped for a link to an outside file, and a folder swapped for a link to an
/// outside folder, while `read_file` runs over and over: the outside content never shows,
/// yet the inside one does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_never_leaks_through_a_swapped_link() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim.txt"), "SECRET\n").unwrap();
    std::fs::create_dir(outside.path().join("dir")).unwrap();
    std::fs::write(outside.path().join("dir/victim.txt"), "SECRET\n").unwrap();
    let cases: [(&str, PathBuf, Make); 2] = [
        ("victim.txt", outside.path().join("victim.txt"), |p| {
            std::fs::write(p, "inside\n").unwrap()
        }),
        ("dir/victim.txt", outside.path().join("dir"), |p| {
            std::fs::create_dir(p).unwrap();
            std::fs::write(p.join("victim.txt"), "inside\n").unwrap();
        }),
    ];
    let read = ReadFile::default();
    for (path, target, inside) in cases {
        let swapped = ws.path().join(Path::new(path).components().next().unwrap());
        inside(&swapped);
        let (stop, handle) = swapper(swapped, target, inside);
        let mut seen_inside = 0;
        // At least 400 reads, and on until one saw the inside file (a busy machine may
        // need more), within a bound.
        for i in 0..20_000 {
            if i >= 400 && seen_inside > 0 {
                break;
            }
            let params = if i % 2 == 0 {
                json!({"path": path})
            } else {
                json!({"path": path, "start_line": 1})
            };
            let r = call_within(&read, ws.path(), params, &[]).await;
            assert!(!r.content.contains("SECRET"), "{path} leaked: {r:?}");
            if r.content.contains("inside") {
                seen_inside += 1;
            }
        }
        stop.store(true, Ordering::Relaxed);
        handle.join().unwrap();
        assert!(seen_inside > 0, "{path}: no read ever succeeded");
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(),
        "SECRET\n"
    );
}

/// `write_file` into a folder swapped for a link to an outside folder: nothing is ever
/// created outside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_file_never_writes_through_a_swapped_folder() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let swapped = ws.path().join("d");
    let made: Make = |p| std::fs::create_dir(p).unwrap();
    made(&swapped);
    let (stop, handle) = swapper(swapped, outside.path().to_path_buf(), made);
    let write = WriteFile::default();
    for i in 0..300 {
        let path = format!("d/new{i}.txt");
        call_within(
            &write,
            ws.path(),
            json!({"path": path, "content": "x"}),
            &[],
        )
        .await;
    }
    stop.store(true, Ordering::Relaxed);
    handle.join().unwrap();
    let leaked: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(leaked.is_empty(), "written outside: {leaked:?}");
}

/// Missing folders are made only once the whole path is known to stay inside: a path
/// through a link that leads out creates nothing, neither outside nor inside.
#[tokio::test]
async fn write_file_creates_no_folder_through_a_link_out() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        ws.path().join("link.txt"),
    )
    .unwrap();
    let write = WriteFile::default();
    for path in [
        "x/../out/a/b/f.txt",
        "out/a/b/f.txt",
        "new/../out/f.txt",
        "link.txt",
        "out/secret.txt",
    ] {
        let r = call_within(
            &write,
            ws.path(),
            json!({"path": path, "content": "pwned"}),
            &[],
        )
        .await;
        assert!(error(&r).contains("outside the workspace"), "{path}: {r:?}");
    }
    let outside_now: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(outside_now, ["secret.txt"]);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "secret"
    );
    assert!(!ws.path().join("x").exists() && !ws.path().join("new").exists());
    // The same shape inside the workspace works, and makes only the folders it needs.
    std::fs::create_dir(ws.path().join("in")).unwrap();
    let r = call(
        &write,
        ws.path(),
        json!({"path": "y/../in/a/b/f.txt", "content": "ok"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("in/a/b/f.txt")).unwrap(),
        "ok"
    );
    assert!(!ws.path().join("y").exists());
}

/// A replaced file keeps its mode (and, for root, its owner and group); a new file gets
/// 0666 less the umask; a file the user could not write is refused and left as it was.
#[tokio::test]
async fn replacing_a_file_keeps_its_mode_and_owner() {
    let ws = tempfile::tempdir().unwrap();
    let (write, edit) = (WriteFile::default(), EditFile::default());
    let mode = |p: &str| std::fs::metadata(ws.path().join(p)).unwrap().mode() & 0o7777;

    let r = call(
        &write,
        ws.path(),
        json!({"path": "new.txt", "content": "n"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    let umask = u32::from_str_radix(&proc_status("Umask"), 8).unwrap();
    assert_eq!(mode("new.txt"), 0o666 & !umask);

    let script = ws.path().join("run.sh");
    std::fs::write(&script, "echo old\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
    let r = call(
        &write,
        ws.path(),
        json!({"path": "run.sh", "content": "echo new\n"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    assert_eq!(mode("run.sh"), 0o751);
    let r = call(
        &edit,
        ws.path(),
        json!({"path": "run.sh", "search": "new", "replace": "newer"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    assert_eq!(mode("run.sh"), 0o751);
    assert_eq!(std::fs::read_to_string(&script).unwrap(), "echo newer\n");

    // New content never inherits set-user-ID or set-group-ID bits.
    let privileged = ws.path().join("privileged");
    std::fs::write(&privileged, "old").unwrap();
    std::fs::set_permissions(&privileged, std::fs::Permissions::from_mode(0o6755)).unwrap();
    assert_eq!(mode("privileged"), 0o6755);
    let r = call(
        &write,
        ws.path(),
        json!({"path": "privileged", "content": "new"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    assert_eq!(mode("privileged"), 0o755);

    let locked = ws.path().join("locked.txt");
    std::fs::write(&locked, "keep").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o444)).unwrap();
    if euid() == 0 {
        // Root may replace any file; it stays the other user's, with its mode.
        std::os::unix::fs::chown(&locked, Some(4242), Some(4343)).unwrap();
        let r = call(
            &write,
            ws.path(),
            json!({"path": "locked.txt", "content": "new"}),
        )
        .await;
        assert!(r.success, "{r:?}");
        let meta = std::fs::metadata(&locked).unwrap();
        assert_eq!(
            (meta.uid(), meta.gid(), meta.mode() & 0o7777),
            (4242, 4343, 0o444)
        );
        assert_eq!(std::fs::read_to_string(&locked).unwrap(), "new");
    } else {
        for r in [
            call(
                &write,
                ws.path(),
                json!({"path": "locked.txt", "content": "new"}),
            )
            .await,
            call(
                &edit,
                ws.path(),
                json!({"path": "locked.txt", "search": "keep", "replace": "x"}),
            )
            .await,
        ] {
            assert!(error(&r).contains("read-only"), "{r:?}");
        }
        assert_eq!(std::fs::read_to_string(&locked).unwrap(), "keep");
    }
    // No temporary file is left behind.
    let names: Vec<String> = std::fs::read_dir(ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".tmp")), "{names:?}");
}

/// FIFOs, sockets and devices in the workspace are refused or skipped by every file
/// tool, never opened in a way that blocks; ignore files that are FIFOs or lead to an
/// endless device do not hang or swell the walk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn special_files_hang_no_tool() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/real.txt"), "needle here\n").unwrap();
    let fifos = [
        root.join("pipe.txt"),
        root.join(".gitignore"),
        root.join("sub/.ignore"),
    ];
    for fifo in &fifos {
        mkfifo(fifo);
    }
    std::os::unix::fs::symlink("/dev/zero", root.join("sub/.gitignore")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(root.join("sock.txt")).unwrap();
    // A device node needs root; without it the FIFO and the socket still stand.
    let device = root.join("zero.txt");
    let have_device = euid() == 0
        && std::process::Command::new("mknod")
            .args([device.to_str().unwrap(), "c", "1", "5"])
            .status()
            .is_ok_and(|s| s.success());

    let (read, edit, write) = (
        ReadFile::default(),
        EditFile::default(),
        WriteFile::default(),
    );
    let mut specials = vec![("pipe.txt", "FIFO"), ("sock.txt", "socket")];
    if have_device {
        specials.push(("zero.txt", "device"));
    }
    for (path, kind) in &specials {
        for params in [
            json!({"path": path}),
            json!({"path": path, "start_line": 1}),
        ] {
            let r = call_within(&read, root, params, &fifos).await;
            assert!(error(&r).contains(kind), "{path}: {r:?}");
        }
        let r = call_within(
            &edit,
            root,
            json!({"path": path, "search": "a", "replace": "b"}),
            &fifos,
        )
        .await;
        assert!(error(&r).contains(kind), "{path}: {r:?}");
        let r = call_within(&write, root, json!({"path": path, "content": "x"}), &fifos).await;
        assert!(error(&r).contains(kind), "{path}: {r:?}");
    }
    assert!(is_fifo(&root.join("pipe.txt")), "the FIFO was replaced");

    let r = call_within(
        &SearchFiles::default(),
        root,
        json!({"pattern": "needle|x"}),
        &fifos,
    )
    .await;
    assert_eq!(r.content, "sub/real.txt:1: needle here", "{r:?}");
    let r = call_within(&ListDir::default(), root, json!({"depth": 3}), &fifos).await;
    assert!(r.success, "{r:?}");
    for name in ["pipe.txt", "sock.txt", "sub/", "sub/real.txt", ".gitignore"] {
        assert!(
            r.content.lines().any(|l| l == name),
            "{name}: {}",
            r.content
        );
    }
}

/// The walk never follows a link out: a linked folder's files are neither listed nor
/// searched.
#[tokio::test]
async fn walks_do_not_follow_links_out() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("leak.txt"), "needle outside\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("linkdir")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("leak.txt"), ws.path().join("leak.txt"))
        .unwrap();
    let r = call(
        &SearchFiles::default(),
        ws.path(),
        json!({"pattern": "needle"}),
    )
    .await;
    assert_eq!(
        r.content, "no match for /needle/ in . (searched 0 file(s))",
        "{r:?}"
    );
    let r = call(&ListDir::default(), ws.path(), json!({"depth": 5})).await;
    assert_eq!(r.content, "leak.txt\nlinkdir", "{r:?}");
}

/// One line far longer than the line cap: it is cut with a note when read, searched in
/// its kept part (a match there is found, one past it is not), and a line range still
/// reaches the lines after it.
#[tokio::test]
async fn a_huge_line_is_cut_and_said_to_be() {
    let ws = tempfile::tempdir().unwrap();
    let long = 3 * 1024 * 1024;
    let mut text = String::with_capacity(long + 64);
    text.push_str("start-needle ");
    text.push_str(&"x".repeat(long - "start-needle ".len() - "late-needle".len()));
    text.push_str("late-needle");
    text.push_str("\nsecond line with needle\n");
    std::fs::write(ws.path().join("min.js"), &text).unwrap();

    let read = ReadFile::default();
    let r = call(&read, ws.path(), json!({"path": "min.js", "start_line": 1})).await;
    assert!(r.success, "{r:?}");
    assert!(
        r.content.starts_with("start-needle xxx"),
        "{}",
        &r.content[..40]
    );
    assert!(
        r.content
            .contains(&format!("… (line 1 cut: {long} bytes)\n")),
        "{}",
        &r.content[r.content.len() - 200..]
    );
    assert!(r.content.ends_with("second line with needle\n"));
    assert!((r.content.len() as u64) < tools::READ_FILE_CAP);
    assert!(!r.content.contains("late-needle"));
    let r = call(&read, ws.path(), json!({"path": "min.js", "start_line": 2})).await;
    assert_eq!(r.content, "second line with needle\n");
    assert!(error(&call(&read, ws.path(), json!({"path": "min.js"})).await).contains("cap"));

    let search = SearchFiles::default();
    let r = call(&search, ws.path(), json!({"pattern": "start-needle"})).await;
    let first = r.content.lines().next().unwrap();
    assert!(first.starts_with("min.js:1: start-needle xxx"), "{first}");
    assert!(
        first.contains(&format!("of its {long} bytes were searched")),
        "{first}"
    );
    assert!(first.len() < 1000, "{}", first.len());
    assert!(r.content.contains("longer than 64 KiB"), "{}", r.content);
    let r = call(&search, ws.path(), json!({"pattern": "late-needle"})).await;
    assert!(r.content.starts_with("no match"), "{}", r.content);
    let r = call(&search, ws.path(), json!({"pattern": "needle$"})).await;
    assert!(
        r.content.starts_with("min.js:2: second line with needle"),
        "{}",
        r.content
    );
}

/// The ignore files, now read by the tools rather than the walker, mean what they meant:
/// a deeper file wins over a shallower one, `!` brings a file back, `.ignore` wins over
/// `.gitignore`, `.git/info/exclude` counts, and (as before) the rules reach into a nested
/// repository.
#[tokio::test]
async fn ignore_files_keep_their_meaning() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    let files = [
        (".gitignore", "*.log\n!keep.log\n/only-top.txt\n"),
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".git/info/exclude", "excluded.txt\n"),
        ("a.log", "x"),
        ("keep.log", "x"),
        ("only-top.txt", "x"),
        ("excluded.txt", "x"),
        ("sub/only-top.txt", "x"),
        ("sub/.gitignore", "!b.log\n"),
        ("sub/.ignore", "b.log\n"),
        ("sub/b.log", "x"),
        ("sub/c.log", "x"),
        ("nested/.git/HEAD", "ref: refs/heads/main\n"),
        ("nested/d.log", "x"),
    ];
    for (path, text) in files {
        std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
        std::fs::write(root.join(path), text).unwrap();
    }
    let r = call(&ListDir::default(), root, json!({"depth": 3})).await;
    assert_eq!(
        r.content,
        ".gitignore\nkeep.log\nnested/\nsub/\nsub/.gitignore\nsub/.ignore\nsub/only-top.txt"
    );
    let r = call(&SearchFiles::default(), root, json!({"pattern": "^x$"})).await;
    assert_eq!(r.content, "keep.log:1: x\nsub/only-top.txt:1: x");
}
