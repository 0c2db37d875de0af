//! Scratch: run a command in the sandbox.
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)]
use sandbox::*;
fn main() {
    let mut args = std::env::args().skip(1);
    let ws = args.next().unwrap();
    let cmd = args.next().unwrap();
    let t = std::time::Instant::now();
    let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &ws);
    let sb = Sandbox::prepare(&policy, &Support::current()).unwrap();
    println!("prepare: {:?}", t.elapsed());
    println!("{}", sb.summary().description);
    let mut c = std::process::Command::new("sh");
    c.arg("-c").arg(&cmd).current_dir(&ws);
    sb.apply(&mut c);
    let t = std::time::Instant::now();
    let out = c.output().unwrap();
    println!("run: {:?} status {:?}", t.elapsed(), out.status);
    print!("{}", String::from_utf8_lossy(&out.stdout));
    print!("{}", String::from_utf8_lossy(&out.stderr));
}
