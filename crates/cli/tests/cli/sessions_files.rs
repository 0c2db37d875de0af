//! The sessions folder holds what others may have planted: a FIFO named like a session
//! hangs neither `sessions list`, `--last` nor `--resume` (it is left out of the list and
//! refused in words when named), a symbolic link named like a session is never read or
//! appended through, and a folder that others may enter is made private (or refused, when
//! it belongs to another user). Every run has a deadline, so a hang fails the test.

use super::{bin, completed, Workspace};
use serde_json::{json, Value};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// How long one run may take before it counts as hung.
const DEADLINE: Duration = Duration::from_secs(30);

/// `aintern ARGS` in `ws`'s home, killed (and the test failed) past [`DEADLINE`].
fn within_deadline(ws: &Workspace, args: &[&str]) -> Output {
    let mut child = bin(ws.home.path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > DEADLINE {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "aintern {args:?} hung; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn sessions_folder(ws: &Workspace) -> PathBuf {
    ws.home.path().join("data/aintern/sessions")
}

/// A scripted backend answering `answer` once.
fn answering(ws: &Workspace, name: &str, answer: &str) -> String {
    let file = ws.dir.path().join(name);
    let responses = json!({"responses": [{"chunks": [answer]}]});
    std::fs::write(&file, responses.to_string()).unwrap();
    format!("script:{}", file.display())
}

/// Save one session over `ws`; its id.
fn saved_session(ws: &Workspace) -> String {
    let backend = answering(ws, "first.json", "Hello.");
    let out = within_deadline(
        ws,
        &[
            "exec",
            "--workspace",
            ws.path(),
            "--backend",
            &backend,
            "hi",
        ],
    );
    let (_, done) = completed(&out);
    done.session_id.unwrap().to_string()
}

fn listed(ws: &Workspace) -> Vec<Value> {
    let out = within_deadline(ws, &["sessions", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn mkfifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

#[test]
fn a_fifo_named_like_a_session_hangs_nothing() {
    let ws = Workspace::new();
    let real = saved_session(&ws);
    let fifo_id = "0b1e5a6c-9d7f-4e2a-8c3b-1f0e2d3c4b5a";
    mkfifo(&sessions_folder(&ws).join(format!("{fifo_id}.jsonl")));

    // Listed without it.
    let rows = listed(&ws);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["id"], real.as_str());

    // --last resumes the real session.
    let backend = answering(&ws, "second.json", "Again.");
    let out = within_deadline(&ws, &["exec", "--last", "--backend", &backend, "again"]);
    let (_, done) = completed(&out);
    assert_eq!(done.session_id.unwrap().to_string(), real);

    // Named, it is refused in words.
    for args in [
        &["exec", "--resume", fifo_id, "--backend", &backend, "x"][..],
        &["sessions", "show", fifo_id][..],
    ] {
        let out = within_deadline(&ws, args);
        assert!(!out.status.success(), "{args:?}");
        let said = stderr(&out);
        assert!(
            said.contains(fifo_id) && said.contains("not a regular file"),
            "{args:?}: {said}"
        );
    }
}

#[test]
fn a_symlink_named_like_a_session_is_never_read_or_appended_through() {
    let ws = Workspace::new();
    let id = saved_session(&ws);
    // The session's file moved elsewhere, a link to it left in its place.
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("victim.jsonl");
    let link = sessions_folder(&ws).join(format!("{id}.jsonl"));
    std::fs::rename(&link, &target).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let before = std::fs::read(&target).unwrap();

    assert!(listed(&ws).is_empty(), "a link is no session");
    let backend = answering(&ws, "second.json", "Again.");
    for args in [
        &["exec", "--resume", &id, "--backend", &backend, "again"][..],
        &["sessions", "show", &id][..],
    ] {
        let out = within_deadline(&ws, args);
        assert!(!out.status.success(), "{args:?}");
        let said = stderr(&out);
        assert!(
            said.contains(&id) && said.contains("symbolic link"),
            "{args:?}: {said}"
        );
    }
    let out = within_deadline(&ws, &["exec", "--last", "--backend", &backend, "again"]);
    assert!(
        !out.status.success(),
        "no session to resume: {}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(&target).unwrap(),
        before,
        "nothing was appended through the link"
    );
    // Removed by its id, the link goes and what it leads to stays.
    let out = within_deadline(&ws, &["sessions", "rm", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&link).is_err());
    assert_eq!(std::fs::read(&target).unwrap(), before);
}

#[test]
fn a_sessions_folder_open_to_others_is_made_private() {
    let mode = |ws: &Workspace| {
        std::fs::metadata(sessions_folder(ws))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    let open_folder = |ws: &Workspace| {
        let folder = sessions_folder(ws);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o777)).unwrap();
    };
    // Listing the sessions uses the folder.
    let ws = Workspace::new();
    open_folder(&ws);
    assert!(listed(&ws).is_empty());
    assert_eq!(mode(&ws), 0o700);
    // So does saving one.
    let ws = Workspace::new();
    open_folder(&ws);
    saved_session(&ws);
    assert_eq!(mode(&ws), 0o700);
}

#[test]
fn a_sessions_folder_of_another_user_is_refused() {
    let ws = Workspace::new();
    let folder = sessions_folder(&ws);
    std::fs::create_dir_all(&folder).unwrap();
    let me = std::fs::metadata(&folder).unwrap().uid();
    if me != 0 {
        eprintln!("NOTICE: skipped: only root can give a folder to another user");
        return;
    }
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(&folder, Some(65534), Some(65534)).unwrap();

    for args in [&["sessions", "list"][..], &["sessions", "show", "abcd"][..]] {
        let out = within_deadline(&ws, args);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            stderr(&out).contains("belongs to another user"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // A request runs, saving nothing there, and says why.
    let backend = answering(&ws, "first.json", "Hello.");
    let out = within_deadline(
        &ws,
        &[
            "exec",
            "--workspace",
            ws.path(),
            "--backend",
            &backend,
            "hi",
        ],
    );
    completed(&out);
    assert!(
        stderr(&out).contains("belongs to another user"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
    let meta = std::fs::metadata(&folder).unwrap();
    assert_eq!(meta.uid(), 65534, "left as it was");
    assert_eq!(meta.permissions().mode() & 0o777, 0o777, "left as it was");
}
