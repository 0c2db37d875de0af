//! The sandbox's cost per command: the same program started plainly (the anchor), in a
//! prepared sandbox (what every command of a session pays), and with the sandbox prepared
//! first (what the first command pays). Medians: `target/criterion/spawn/*/new/estimates.json`,
//! or `scripts/bench-sandbox`, which prints them and the difference.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, Criterion};
use sandbox::{Sandbox, SandboxMode, SandboxPolicy, Support};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

fn program() -> Command {
    let mut command = Command::new("/bin/true");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

fn spawn(c: &mut Criterion) {
    let workspace = tempfile::tempdir().unwrap();
    let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, workspace.path());
    let support = Support::current();
    assert!(
        support.can_enforce(),
        "this kernel cannot sandbox: nothing to measure"
    );
    let prepared = Sandbox::prepare(&policy, &support).unwrap();
    let mut group = c.benchmark_group("spawn");
    group.bench_function("plain", |b| {
        b.iter(|| {
            let mut command = program();
            command.process_group(0);
            assert!(command.status().unwrap().success());
        })
    });
    group.bench_function("sandboxed", |b| {
        b.iter(|| {
            let mut command = program();
            prepared.apply(&mut command);
            assert!(command.status().unwrap().success());
        })
    });
    group.bench_function("prepare_and_sandboxed", |b| {
        b.iter(|| {
            let sandbox = Sandbox::prepare(&policy, &support).unwrap();
            let mut command = program();
            sandbox.apply(&mut command);
            assert!(command.status().unwrap().success());
        })
    });
    group.finish();
}

criterion_group!(benches, spawn);
criterion_main!(benches);
