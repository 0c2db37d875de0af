//! A repository whose own configuration names a program git runs (an fsmonitor that
//! prints a file from another project), end to end: under `--approve safe` the command is
//! put to a person with the reason, and under `--approve all` it runs without running
//! that program or reading that file.

use super::*;

const SECRET: &str = "NOTES-OF-ANOTHER-PROJECT-3391";

/// A workspace that is a git repository with one changed file and `core.fsmonitor`
/// naming a program that prints the secret (kept outside) and leaves a marker.
fn hostile() -> (Workspace, tempfile::TempDir) {
    let ws = Workspace::new();
    let aside = tempfile::tempdir().unwrap();
    let secret = aside.path().join("notes.txt");
    std::fs::write(&secret, SECRET).unwrap();
    let marker = aside.path().join("marker");
    let program = aside.path().join("monitor.sh");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\necho ran > '{}'\ncat '{}' >&2\nexit 1\n",
            marker.display(),
            secret.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
            .args(["-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(ws.dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "notes.txt"]);
    git(&["commit", "-q", "-m", "first"]);
    git(&["config", "core.fsmonitor", program.to_str().unwrap()]);
    std::fs::write(ws.dir.path().join("notes.txt"), "changed\n").unwrap();
    (ws, aside)
}

fn status_script(ws: &Workspace) -> String {
    ws.script(&[
        &call("run_command", json!({"command": "git status --short"})),
        "done",
    ])
}

#[test]
fn under_approve_safe_a_hostile_repository_s_git_is_put_to_a_person() {
    let (ws, aside) = hostile();
    let script = status_script(&ws);
    let (out, events) = run_json(&ws, &script, &["--approve", "safe"], b"");
    let everything = String::from_utf8_lossy(&out.stdout);
    assert!(!everything.contains(SECRET), "{everything}");
    assert!(!aside.path().join("marker").exists(), "the fsmonitor ran");
    let asked: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApprovalRequest(a) => Some(a.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(asked.len(), 1, "{everything}");
    let said = format!("{:?} {:?}", asked[0].details, asked[0].warnings);
    assert!(said.contains("core.fsmonitor"), "{said}");
    let r = results(&events);
    assert_eq!(r.len(), 1);
    assert!(!r[0].result.success, "{:?}", r[0].result);
}

#[test]
fn under_approve_all_a_hostile_repository_s_git_runs_nothing_it_names() {
    let (ws, aside) = hostile();
    let script = status_script(&ws);
    let (out, events) = run_json(&ws, &script, &["--approve", "all"], b"");
    let (_, done) = completed(&out);
    assert_eq!(done.final_response, "done");
    let everything = String::from_utf8_lossy(&out.stdout);
    assert!(!everything.contains(SECRET), "{everything}");
    assert!(!aside.path().join("marker").exists(), "the fsmonitor ran");
    let r = results(&events);
    assert!(r[0].result.success, "{:?}", r[0].result);
    assert!(
        r[0].result.content.contains(" M notes.txt\n"),
        "{:?}",
        r[0].result
    );
}
