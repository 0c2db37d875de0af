//! The kernel sandbox under `run_command`: approved commands still cannot write outside
//! the workspace, read secrets, reach the network, signal other processes or see secret
//! environment variables — and toolchains in the home folder keep working.

use core_models::{RiskLevel, SandboxFallback, SandboxMode, Tool, ToolExecutionContext};
use sandbox::{Launcher, SandboxSettings, Support};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tools::RunCommand;

/// A workspace inside a parent folder (so "outside" is a known place next to it), and a
/// fake home folder holding secrets.
struct Scene {
    _root: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    home: PathBuf,
}

const SECRET: &str = "PRIVATE-KEY-MATERIAL-7f3a";

fn scene() -> Scene {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    let outside = root.path().join("outside");
    let home = root.path().join("home");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim.txt"), "original\n").unwrap();
    for (dir, file) in [
        (".ssh", "id_rsa"),
        (".aws", "credentials"),
        (".gnupg", "key"),
    ] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
        std::fs::write(home.join(dir).join(file), SECRET).unwrap();
    }
    std::fs::write(home.join(".netrc"), SECRET).unwrap();
    std::fs::write(home.join(".bashrc"), "# harmless\n").unwrap();
    Scene {
        ws: ws.canonicalize().unwrap(),
        outside: outside.canonicalize().unwrap(),
        home: home.canonicalize().unwrap(),
        _root: root,
    }
}

fn tool(home: Option<&Path>) -> RunCommand {
    RunCommand::new(Arc::new(Launcher::new(SandboxSettings {
        home: home.map(Path::to_path_buf),
        ..SandboxSettings::default()
    })))
}

/// Run `command` as an approved call and return stdout + stderr.
async fn run(tool: &RunCommand, ws: &Path, params: Value) -> (bool, String) {
    assert!(tool.validate(&params).is_valid, "{params}");
    let mut ctx = ToolExecutionContext::new(params);
    ctx.workspace_path = Some(ws.to_path_buf());
    ctx.is_approved = true;
    let r = tokio::time::timeout(Duration::from_secs(120), tool.execute(ctx))
        .await
        .expect("the command ends");
    let data = r.data.clone().unwrap_or_default();
    let text = format!(
        "{}{}{}",
        data["stdout"].as_str().unwrap_or_default(),
        data["stderr"].as_str().unwrap_or_default(),
        r.error_message.clone().unwrap_or_default()
    );
    (r.success, text)
}

fn kernel_sandboxes() -> bool {
    let ok = Support::current().can_enforce();
    assert!(
        ok || std::env::var_os("AINTERN_NO_LANDLOCK_OK").is_some(),
        "this kernel has no Landlock; the sandbox tests need it (set AINTERN_NO_LANDLOCK_OK=1 to accept)"
    );
    ok
}

#[tokio::test]
async fn approved_commands_cannot_write_outside_the_workspace() {
    if !kernel_sandboxes() {
        return;
    }
    let s = scene();
    let victim = s.outside.join("victim.txt");
    let attacks = [
        format!("echo pwned > {}", victim.display()),
        "echo pwned >> ../outside/victim.txt".to_string(),
        format!("touch {}/new.txt", s.outside.display()),
        format!("mkdir {}/newdir", s.outside.display()),
        format!("rm -f {}", victim.display()),
        format!("mv {} ./stolen.txt", victim.display()),
        format!("ln {} hard.txt && echo pwned >> hard.txt", victim.display()),
        format!(
            "ln -s {} soft.txt; echo pwned >> soft.txt",
            victim.display()
        ),
        format!("cp /dev/null {}", victim.display()),
        format!("truncate -s 0 {}", victim.display()),
        format!(
            "python3 -c \"open('{}','w').write('pwned')\"",
            victim.display()
        ),
        format!("echo pwned > {}/.bashrc", s.home.display()),
        "touch /tmp/aintern-escape-marker-1".to_string(),
        "mkdir -p /var/tmp/aintern-escape-marker-2".to_string(),
        "cd .. && touch outside/cd-escape.txt".to_string(),
    ];
    let tool = tool(Some(&s.home));
    for attack in &attacks {
        run(&tool, &s.ws, json!({ "command": attack })).await;
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original\n");
    let mut left: Vec<String> = std::fs::read_dir(&s.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["victim.txt"], "files appeared outside the workspace");
    assert_eq!(
        std::fs::read_to_string(s.home.join(".bashrc")).unwrap(),
        "# harmless\n"
    );
    assert!(!Path::new("/tmp/aintern-escape-marker-1").exists());
    assert!(!Path::new("/var/tmp/aintern-escape-marker-2").exists());

    // …while writing inside the workspace (and the private temporary folder) works.
    let (ok, out) = run(
        &tool,
        &s.ws,
        json!({"command": "mkdir -p a/b && echo hi > a/b/c.txt && t=$(mktemp) && echo tmp > $t && cat $t a/b/c.txt"}),
    )
    .await;
    assert!(ok, "{out}");
    assert_eq!(out, "tmp\nhi\n");
}

#[tokio::test]
async fn approved_commands_cannot_read_secrets() {
    if !kernel_sandboxes() {
        return;
    }
    let s = scene();
    let h = s.home.display().to_string();
    std::os::unix::fs::symlink(s.home.join(".ssh"), s.ws.join("keys")).unwrap();
    let attacks = [
        format!("cat {h}/.ssh/id_rsa"),
        format!("ls -la {h}/.ssh"),
        format!("cat {h}/.aws/credentials {h}/.netrc {h}/.gnupg/key"),
        format!("grep -r PRIVATE {h}"),
        format!("find {h} -type f -exec cat {{}} +"),
        format!("cp -r {h}/.ssh ./copied; cat copied/*"),
        "cat keys/id_rsa".to_string(),
        format!("tar cf - {h} | tar xf - -O"),
        format!("python3 -c \"print(open('{h}/.ssh/id_rsa').read())\""),
    ];
    let tool = tool(Some(&s.home));
    for attack in &attacks {
        let (_, out) = run(&tool, &s.ws, json!({ "command": attack })).await;
        assert!(!out.contains(SECRET), "`{attack}` read a secret: {out}");
    }
    assert!(!s.ws.join("copied/id_rsa").exists());
    // The rest of the home folder stays readable.
    let (ok, out) = run(&tool, &s.ws, json!({"command": format!("cat {h}/.bashrc")})).await;
    assert!(ok && out.contains("# harmless"), "{out}");
}

#[tokio::test]
async fn approved_commands_cannot_reach_a_listener_on_localhost() {
    if !kernel_sandboxes() {
        return;
    }
    let s = scene();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {port}), 2); s.sendall(b'leak'); print('connected')\""
    );
    let tool = tool(Some(&s.home));
    let (ok, out) = run(&tool, &s.ws, json!({ "command": connect })).await;
    assert!(!ok && !out.contains("connected"), "{out}");
    let udp = format!(
        "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port})); print('sent')\""
    );
    let (_, out) = run(&tool, &s.ws, json!({ "command": udp })).await;
    assert!(!out.contains("sent"), "{out}");
    assert!(
        listener.accept().is_err(),
        "a sandboxed command connected to the listener"
    );

    // The same command, approved with the network opened, connects: the test can fail.
    let (ok, out) = run(
        &tool,
        &s.ws,
        json!({ "command": connect, "sandbox": "network" }),
    )
    .await;
    assert!(ok && out.contains("connected"), "{out}");
    assert!(listener.accept().is_ok());
}

#[tokio::test]
async fn toolchains_in_the_home_folder_keep_working() {
    if !kernel_sandboxes() {
        return;
    }
    let s = scene();
    // The real home: cargo, npm and python are installed there.
    let tool = tool(None);
    std::fs::write(
        s.ws.join("Cargo.toml"),
        "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir_all(s.ws.join("src")).unwrap();
    std::fs::write(
        s.ws.join("src/main.rs"),
        "fn main() { println!(\"built in the sandbox\"); }\n#[test]\nfn t() { assert_eq!(1 + 1, 2); }\n",
    )
    .unwrap();
    let (ok, out) = run(
        &tool,
        &s.ws,
        json!({"command": "cargo build --offline -q && ./target/debug/probe && cargo test --offline -q 2>&1 | tail -3", "timeout_seconds": 300}),
    )
    .await;
    assert!(ok, "cargo in the sandbox: {out}");
    assert!(out.contains("built in the sandbox"), "{out}");
    assert!(out.contains("1 passed"), "{out}");

    std::fs::write(
        s.ws.join("package.json"),
        r#"{"name":"probe","version":"1.0.0","scripts":{"test":"node --test"}}"#,
    )
    .unwrap();
    std::fs::write(
        s.ws.join("probe.test.js"),
        "const test = require('node:test'); const assert = require('assert');\ntest('adds', () => assert.strictEqual(1 + 1, 2));\n",
    )
    .unwrap();
    let (ok, out) = run(
        &tool,
        &s.ws,
        json!({"command": "npm test 2>&1", "timeout_seconds": 300}),
    )
    .await;
    assert!(ok && out.contains("pass 1"), "npm in the sandbox: {out}");

    std::fs::write(
        s.ws.join("test_probe.py"),
        "def test_adds():\n    assert 1 + 1 == 2\n",
    )
    .unwrap();
    let (ok, out) = run(
        &tool,
        &s.ws,
        json!({"command": "python3 -m pytest -q test_probe.py 2>&1", "timeout_seconds": 300}),
    )
    .await;
    assert!(
        ok && out.contains("1 passed"),
        "pytest in the sandbox: {out}"
    );
}

#[tokio::test]
async fn sandboxed_commands_cannot_signal_or_spy_on_other_processes() {
    if !kernel_sandboxes() {
        return;
    }
    let s = scene();
    let mut victim = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let pid = victim.id();
    let tool = tool(Some(&s.home));
    run(&tool, &s.ws, json!({"command": format!("kill -9 {pid}")})).await;
    let (_, out) = run(
        &tool,
        &s.ws,
        json!({"command": format!("cat /proc/{}/environ | tr '\\0' '\\n'", std::process::id())}),
    )
    .await;
    assert!(
        victim.try_wait().unwrap().is_none(),
        "a sandboxed command killed an outside process"
    );
    assert!(
        !out.contains("PATH="),
        "a sandboxed command read this process's environment: {out}"
    );
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[tokio::test]
async fn secret_environment_variables_are_not_passed() {
    if !kernel_sandboxes() {
        return;
    }
    let s = scene();
    let launcher = Launcher::new(SandboxSettings {
        home: Some(s.home.clone()),
        pass_env: vec!["KEEP_THIS_TOKEN".into(), "LLM_SERVER".into()],
        // The variable holding the model server's key, whatever it is called, and even
        // when also listed as passed.
        secret_env: vec!["LLM_SERVER".into(), "PLAINLY_NAMED".into()],
        ..SandboxSettings::default()
    });
    let sandbox = launcher
        .sandbox(&s.ws, sandbox::Variant::Configured)
        .unwrap();
    let mut command = std::process::Command::new("sh");
    command
        .args(["-c", "env"])
        .env("GITHUB_TOKEN", "ghp_secret")
        .env("MY_API_KEY", "k")
        .env("KEEP_THIS_TOKEN", "kept")
        .env("LLM_SERVER", "sk-server-key")
        .env("PLAINLY_NAMED", "sk-other-key")
        .env("PLAIN", "visible");
    sandbox.apply(&mut command);
    let out = String::from_utf8(command.output().unwrap().stdout).unwrap();
    assert!(
        !out.contains("ghp_secret") && !out.contains("MY_API_KEY"),
        "{out}"
    );
    assert!(
        !out.contains("sk-server-key") && !out.contains("sk-other-key"),
        "{out}"
    );
    assert!(
        out.contains("PLAIN=visible") && out.contains("KEEP_THIS_TOKEN=kept"),
        "{out}"
    );
    let temp = sandbox.temp_dir().unwrap().display().to_string();
    assert!(out.contains(&format!("TMPDIR={temp}")), "{out}");
}

/// The variable holding the model server's key is kept from commands that run with no
/// sandbox at all too (full access, or a kernel without Landlock and the unsandboxed
/// fallback).
#[test]
fn the_server_key_is_kept_from_unsandboxed_commands_too() {
    let ws = tempfile::tempdir().unwrap();
    let launcher = Launcher::new(SandboxSettings {
        mode: SandboxMode::FullAccess,
        secret_env: vec!["LLM_SERVER".into()],
        ..SandboxSettings::default()
    });
    let sandbox = launcher
        .sandbox(ws.path(), sandbox::Variant::Configured)
        .unwrap();
    assert!(!sandbox.is_enforced());
    let mut command = std::process::Command::new("sh");
    command
        .args(["-c", "env"])
        .env("LLM_SERVER", "sk-server-key")
        .env("PLAIN", "visible");
    sandbox.apply(&mut command);
    let out = String::from_utf8(command.output().unwrap().stdout).unwrap();
    assert!(
        !out.contains("sk-server-key") && out.contains("PLAIN=visible"),
        "{out}"
    );
}

#[tokio::test]
async fn safe_commands_run_read_only_even_when_the_repository_runs_programs() {
    if !kernel_sandboxes() {
        return;
    }
    let s = scene();
    let git = |args: &[&str]| {
        let st = std::process::Command::new("git")
            .args(args)
            .current_dir(&s.ws)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(st.status.success(), "{st:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(s.ws.join("a.txt"), "a\n").unwrap();
    git(&["add", "a.txt"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "one",
    ]);
    // The repository's own config names a program git runs on `git status`.
    let hook = s.ws.join("fsmonitor.sh");
    let victim = s.outside.join("victim.txt");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\necho pwned > \"$(dirname \"$0\")/marker\"\nchmod 4777 {v}\ntouch -d 2001-01-01 {v}\n",
            v = victim.display()
        ),
    )
    .unwrap();
    let before = std::fs::metadata(&victim).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    git(&["config", "core.fsmonitor", hook.to_str().unwrap()]);
    let tool = tool(Some(&s.home));
    assert_eq!(
        tool.effective_risk_level(&json!({"command": "git status"})),
        RiskLevel::Safe
    );
    run(&tool, &s.ws, json!({"command": "git status"})).await;
    assert!(
        !s.ws.join("marker").exists(),
        "a command rated safe changed the workspace"
    );
    let after = std::fs::metadata(&victim).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        after.mode(),
        before.mode(),
        "a command rated safe changed a file's mode"
    );
    assert_eq!(
        after.mtime(),
        before.mtime(),
        "a command rated safe changed a file's times"
    );
    // Control: outside the sandbox the repository's program does run.
    git(&["status", "--short"]);
    assert!(
        s.ws.join("marker").exists(),
        "the fsmonitor hook is not wired"
    );
}

#[tokio::test]
async fn sandboxed_commands_cannot_create_namespaces() {
    if !kernel_sandboxes() {
        return;
    }
    let s = scene();
    let tool = tool(Some(&s.home));
    // unshare(1) and a raw clone(2) with namespace flags, the way a program would do it.
    let raw_clone =
        "python3 -c \"import ctypes, os, signal; libc = ctypes.CDLL(None, use_errno=True); \
pid = libc.syscall(56, 0x10000000 | 0x20000000 | signal.SIGCHLD, 0, 0, 0, 0); \
os._exit(0) if pid == 0 else None; print('cloned' if pid > 0 else 'refused', ctypes.get_errno())\"";
    for command in ["unshare -Ur true && echo namespaces", raw_clone] {
        let (_, out) = run(&tool, &s.ws, json!({ "command": command })).await;
        assert!(
            !out.contains("namespaces") && !out.contains("cloned"),
            "`{command}` created namespaces: {out}"
        );
    }
}

#[tokio::test]
async fn escalations_and_the_fallback_are_put_to_a_person() {
    let s = scene();
    let tool = tool(Some(&s.home));
    let full = tool.assess(
        &json!({"command": "ls", "sandbox": "full-access"}),
        Some(&s.ws),
    );
    assert_eq!(full.risk, RiskLevel::Critical);
    assert!(full.must_ask.is_some());
    let summary = full.sandbox.unwrap();
    assert_eq!(summary.mode, SandboxMode::FullAccess);
    assert!(!summary.enforced);
    let net = tool.assess(&json!({"command": "ls", "sandbox": "network"}), Some(&s.ws));
    assert!(net.risk >= RiskLevel::High && net.must_ask.is_some());
    assert!(net.sandbox.unwrap().network);
    assert!(
        !tool
            .validate(&json!({"command": "ls", "sandbox": "none"}))
            .is_valid
    );

    // A kernel without Landlock: the configured fallback decides.
    let on = |fallback| {
        RunCommand::new(Arc::new(Launcher::with_support(
            SandboxSettings {
                fallback,
                home: Some(s.home.clone()),
                ..SandboxSettings::default()
            },
            Support::fixed(None, false),
        )))
    };
    let ask = on(SandboxFallback::Ask).assess(&json!({"command": "ls"}), Some(&s.ws));
    assert!(ask.must_ask.is_some(), "every command is asked first");
    assert!(!ask.sandbox.unwrap().enforced);
    let deny = on(SandboxFallback::Deny);
    let v = deny.validate(&json!({"command": "ls"}));
    assert!(!v.is_valid, "commands are refused");
    assert!(v.errors[0].contains("sandbox.fallback = deny"), "{v:?}");
    let loose = on(SandboxFallback::Unsandboxed);
    assert!(loose
        .assess(&json!({"command": "ls"}), Some(&s.ws))
        .must_ask
        .is_none());
    let (ok, out) = run(&loose, &s.ws, json!({"command": "echo ran"})).await;
    assert!(ok && out == "ran\n", "{out}");
}

/// `setpriority(PRIO_USER, 0, …)` and `ioprio_set(IOPRIO_WHO_USER, 0, …)`: "0" is the
/// caller's user there, every process of it (`aintern` among them): refused; a command
/// still renices itself. (The filter's own rules are checked call by call in
/// `crates/sandbox/src/filter.rs`; here, through a real command: where the kernel itself
/// refuses, as for a root without capabilities, both hold.)
#[tokio::test]
async fn sandboxed_commands_cannot_renice_every_process_of_their_user() {
    if !kernel_sandboxes() {
        return;
    }
    let s = scene();
    let tool = tool(Some(&s.home));
    let mut victim = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let nice = |pid: u32| -> i64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        // The fields after the command's name (in parentheses); nice is the 19th.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(16).unwrap().parse().unwrap()
    };
    let (victim_before, own_before) = (nice(victim.id()), nice(std::process::id()));
    // ioprio_set's number (the tests do not link libc).
    let ioprio = if cfg!(target_arch = "x86_64") {
        251
    } else {
        30
    };
    let attacks = [
        "python3 -c \"import os; os.setpriority(os.PRIO_USER, 0, 10); print('reniced')\"".to_string(),
        format!("python3 -c \"import ctypes; r = ctypes.CDLL(None).syscall({ioprio}, 3, 0, (3 << 13) | 7); print('ioprio' if r == 0 else 'no')\""),
        "renice -n 10 -u \"$(id -u)\" >/dev/null 2>&1 && echo reniced".to_string(),
    ];
    for attack in &attacks {
        let (_, out) = run(&tool, &s.ws, json!({ "command": attack })).await;
        assert!(
            !out.lines().any(|l| l == "reniced" || l == "ioprio"),
            "`{attack}`: {out}"
        );
    }
    assert_eq!(
        nice(victim.id()),
        victim_before,
        "another process was reniced"
    );
    assert_eq!(nice(std::process::id()), own_before, "aintern was reniced");
    victim.kill().unwrap();
    victim.wait().unwrap();
    let (ok, out) = run(
        &tool,
        &s.ws,
        json!({"command": "python3 -c \"import os; os.setpriority(os.PRIO_PROCESS, 0, 5); print('own')\""}),
    )
    .await;
    assert!(ok && out.trim() == "own", "{out}");
}

#[tokio::test]
async fn sandboxed_commands_cannot_reach_devices_or_other_processes_limits() {
    if !kernel_sandboxes() {
        return;
    }
    let s = scene();
    let tool = tool(Some(&s.home));
    let mut victim = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let pid = victim.id();
    let limits = || std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let before = limits();
    let attacks = [
        format!("prlimit --pid {pid} --nofile=3:3 --cpu=1:2"),
        format!("python3 -c \"import resource; resource.prlimit({pid}, resource.RLIMIT_NOFILE, (3, 3)); print('limited')\""),
        "python3 -c \"import os; os.openpty(); print('pty')\"".to_string(),
        "ls /dev/pts && echo listed".to_string(),
        "head -c 1 /dev/tty0 /dev/console /dev/vda /dev/sda /dev/loop0 2>/dev/null && echo read".to_string(),
    ];
    for attack in &attacks {
        let (_, out) = run(&tool, &s.ws, json!({ "command": attack })).await;
        for marker in ["limited", "pty", "listed", "read"] {
            assert!(!out.lines().any(|l| l == marker), "`{attack}`: {out}");
        }
    }
    assert_eq!(
        limits(),
        before,
        "a sandboxed command changed another process's limits"
    );
    assert!(victim.try_wait().unwrap().is_none());
    victim.kill().unwrap();
    victim.wait().unwrap();
    // The devices commands need still work, and a command may limit itself.
    let (ok, out) = run(
        &tool,
        &s.ws,
        json!({"command": "head -c 4 /dev/urandom | wc -c; echo x > /dev/null; ulimit -n 64 && echo own-limit"}),
    )
    .await;
    assert!(
        ok && out.contains('4') && out.contains("own-limit"),
        "{out}"
    );
}

#[tokio::test]
async fn read_only_commands_make_no_attributes_or_ipc_objects() {
    if !kernel_sandboxes() {
        return;
    }
    let s = scene();
    let launcher = Launcher::new(SandboxSettings {
        home: Some(s.home.clone()),
        ..SandboxSettings::default()
    });
    let sandbox = launcher.sandbox(&s.ws, sandbox::Variant::ReadOnly).unwrap();
    let file = sandbox.temp_dir().unwrap().join("f");
    std::fs::write(&file, "x").unwrap();
    let script = format!(
        "import ctypes, fcntl, struct\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         shm = libc.shmget(0, 4096, 0o1600); print('shm', shm)\n\
         msg = libc.msgget(0, 0o1600); print('msg', msg)\n\
         shm >= 0 and libc.shmctl(shm, 0, None)\n\
         msg >= 0 and libc.msgctl(msg, 0, None)\n\
         try:\n    fd = open('{f}', 'rb'); fcntl.ioctl(fd, 0x40086602, struct.pack('l', 0x80)); print('chattr done')\n\
         except OSError as e:\n    print('chattr', e.errno)\n",
        f = file.display()
    );
    let run = |sandboxed: bool| {
        let mut command = std::process::Command::new("python3");
        command.arg("-c").arg(&script);
        if sandboxed {
            sandbox.apply(&mut command);
        }
        String::from_utf8(command.output().unwrap().stdout).unwrap()
    };
    let out = run(true);
    assert!(out.contains("shm -1") && out.contains("msg -1"), "{out}");
    assert!(!out.contains("chattr done"), "{out}");
    // Control: unsandboxed, the same calls work (the attribute where the file system has
    // attributes), so the test can fail.
    let control = run(false);
    assert!(
        !control.contains("shm -1") && !control.contains("msg -1"),
        "{control}"
    );
}
