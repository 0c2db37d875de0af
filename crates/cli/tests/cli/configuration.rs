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

/// `aintern config show --json` with `args`, in `home`.
fn shown_config(home: &std::path::Path, args: &[&str]) -> Value {
    let mut all = vec!["config", "show", "--json"];
    all.extend_from_slice(args);
    let out = aintern_in(home, &all, b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The lines `# key = value` and `# [section]` uncommented (`examples` too, or not).
fn uncommented(text: &str, examples: bool) -> String {
    let setting = regex::Regex::new(r"^# (\[[a-z_.]+\]|[a-z_]+ = )").unwrap();
    text.lines()
        .map(|line| {
            let example = line.contains("(example)");
            if setting.is_match(line) && (examples || !example) {
                line[2..].to_string()
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn init_writes_a_commented_configuration_once_whose_defaults_are_true() {
    let home = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().to_str().unwrap();
    let out = aintern_in(home.path(), &["init"], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = home.path().join("aintern").join("aintern.toml");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.lines().count() > 30, "{written}");
    // Never overwritten: a second init refuses and leaves the file (and a changed one) be.
    std::fs::write(&file, format!("{written}\nmax_agent_iterations = 7\n")).unwrap();
    let again = aintern_in(home.path(), &["init"], b"");
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(kept.ends_with("max_agent_iterations = 7\n"), "{kept}");
    std::fs::write(&file, &written).unwrap();

    // As written it changes nothing; every default it shows is the real default.
    let defaults = shown_config(empty.path(), &["--workspace", ws]);
    assert_eq!(shown_config(home.path(), &["--workspace", ws]), defaults);
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open.toml");
    std::fs::write(&open, uncommented(&written, false)).unwrap();
    let open = open.to_str().unwrap();
    assert_eq!(
        shown_config(empty.path(), &["--workspace", ws, "--config", open]),
        defaults
    );
    // The examples uncommented too: still a valid configuration, and a different one.
    let examples = dir.path().join("examples.toml");
    std::fs::write(&examples, uncommented(&written, true)).unwrap();
    let examples = examples.to_str().unwrap();
    let out = aintern_in(
        empty.path(),
        &["config", "check", "--config", examples],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(
        shown_config(empty.path(), &["--workspace", ws, "--config", examples]),
        defaults
    );

    // --path writes elsewhere, --print writes nothing.
    let elsewhere = dir.path().join("sub").join("my.toml");
    let out = aintern_in(
        empty.path(),
        &["init", "--path", elsewhere.to_str().unwrap()],
        b"",
    );
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), written);
    let out = aintern_in(empty.path(), &["init", "--print"], b"");
    assert_eq!(String::from_utf8_lossy(&out.stdout), written);
    assert!(!empty.path().join("aintern").join("aintern.toml").exists());
}
