//! The configuration: `aintern config check|show`, the file layers (the user's and the
//! workspace's), invalid settings, and formatters from the configuration.

use super::{aintern, aintern_in, call, completed, run_json, Workspace};
use core_models::AgentEvent;
use serde_json::{json, Value};

#[test]
fn config_check_lists_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("aintern.toml");
    std::fs::write(
        &file,
        "max_agent_iterations = 0\nmax_parallel_tool_calls = 50\n",
    )
    .unwrap();
    let out = aintern(
        &["config", "check", "--config", file.to_str().unwrap()],
        b"",
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("max_agent_iterations") && err.contains("max_parallel_tool_calls"),
        "{err}"
    );
    std::fs::write(&file, "max_agent_iterations = 7\n").unwrap();
    let out = aintern(
        &[
            "config",
            "show",
            "--json",
            "--config",
            file.to_str().unwrap(),
        ],
        b"",
    );
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["max_agent_iterations"], 7);
}

#[test]
fn configuration_layers_and_invalid_configuration() {
    let ws = Workspace::new();
    let home = ws.home.path();
    std::fs::create_dir_all(home.join("aintern")).unwrap();
    std::fs::write(
        home.join("aintern/aintern.toml"),
        "max_agent_iterations = 7\nmax_parallel_tool_calls = 2\n",
    )
    .unwrap();
    std::fs::write(
        ws.dir.path().join("aintern.toml"),
        "max_parallel_tool_calls = 4\n",
    )
    .unwrap();
    let out = aintern_in(
        home,
        &["config", "show", "--json", "--workspace", ws.path()],
        b"",
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            v["max_agent_iterations"].as_u64(),
            v["max_parallel_tool_calls"].as_u64()
        ),
        (Some(7), Some(4))
    );

    // Every problem is listed, and nothing runs (formatters come from the user's own file).
    std::fs::write(
        ws.dir.path().join("aintern.toml"),
        "max_parallel_tool_calls = 0\n",
    )
    .unwrap();
    std::fs::write(
        home.join("aintern/aintern.toml"),
        "[formatters.fmt]\nextensions = []\ncommand = [\"fmt\"]\n",
    )
    .unwrap();
    let script = ws.script(&[&call(
        "write_file",
        json!({"path": "x.txt", "content": "x"}),
    )]);
    let out = aintern_in(
        home,
        &["run", "--workspace", ws.path(), "--backend", &script, "x"],
        b"",
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("max_parallel_tool_calls") && err.contains("fmt: extensions"),
        "{err}"
    );
    assert!(!ws.dir.path().join("x.txt").exists());
}

#[test]
fn formatters_from_the_config_run_on_written_files() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.home.path().join("aintern")).unwrap();
    std::fs::write(
        ws.home.path().join("aintern/aintern.toml"),
        "[formatters.tidy]\nextensions = [\"txt\"]\ncommand = [\"sed\", \"-i\", \"s/messy/clean/\"]\n",
    )
    .unwrap();
    let script = ws.script(&[
        &call("write_file", json!({"path": "new.txt", "content": "messy"})),
        "ok",
    ]);
    let (out, events) = run_json(&ws, &script, &["--approve", "all"], b"");
    completed(&out);
    assert!(events
        .iter()
        .any(|e| matches!(e, AgentEvent::Autoformat(a) if a.changed_files == ["new.txt"])));
    assert_eq!(
        std::fs::read_to_string(ws.dir.path().join("new.txt")).unwrap(),
        "clean"
    );
}
