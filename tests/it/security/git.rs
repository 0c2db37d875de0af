//! Git on a hostile repository: its `.git/config` (and a file it includes) names a program
//! for every place git runs one — fsmonitor, hooks, pagers, external diffs, textconv,
//! filter drivers (one with `=` in its name, one long-running `process` driver), gpg for
//! a signed commit, a credential helper — plus a FIFO as excludes and order file (git
//! would block on it) and a work tree outside the workspace. `git_status`, `git_diff` and
//! the inspector must run none of them, not hang, and still show the right answer.

use core_models::{GitInspector, Tool, ToolExecutionContext, ToolResult};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use tools::{GitCommandInspector, GitDiff, GitStatus};

/// How long one call may take before the test calls it hung.
const PATIENCE: Duration = Duration::from_secs(30);

/// Plain git for setting the repository up, with no configuration of the machine's.
pub(super) fn setup_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

async fn call(tool: &dyn Tool, root: &Path, params: Value) -> ToolResult {
    let mut ctx = ToolExecutionContext::new(params.clone());
    ctx.workspace_path = Some(root.to_path_buf());
    tokio::time::timeout(PATIENCE, tool.execute(ctx))
        .await
        .unwrap_or_else(|_| panic!("{} hung on {params}", tool.definition().id))
}

struct Hostile {
    repo: tempfile::TempDir,
    /// Scripts, the marker, the FIFO and the outside work tree live here.
    aside: tempfile::TempDir,
    first: String,
    second: String,
}

impl Hostile {
    fn marker(&self) -> PathBuf {
        self.aside.path().join("marker")
    }

    fn ran(&self) -> String {
        std::fs::read_to_string(self.marker()).unwrap_or_default()
    }
}

/// A repository whose configuration names a marker-writing program everywhere.
fn hostile_repository() -> Hostile {
    let repo = tempfile::tempdir().unwrap();
    let aside = tempfile::tempdir().unwrap();
    let dir = repo.path();
    let marker = aside.path().join("marker");
    let bin = aside.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    // One program per name (some settings are run as a program, not through a shell):
    // each notes its name in the marker file and passes its input through.
    let evil = |name: &str| {
        let program = bin.join(name);
        std::fs::write(
            &program,
            format!("#!/bin/sh\necho {name} >> '{}'\ncat\n", marker.display()),
        )
        .unwrap();
        std::fs::set_permissions(
            &program,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        program.display().to_string()
    };
    let hooks = aside.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    for hook in [
        "post-index-change",
        "post-checkout",
        "pre-commit",
        "post-commit",
        "reference-transaction",
        "fsmonitor-watchman",
        "pre-auto-gc",
    ] {
        std::fs::write(
            hooks.join(hook),
            format!("#!/bin/sh\necho hook-{hook} >> '{}'\n", marker.display()),
        )
        .unwrap();
        std::fs::set_permissions(
            hooks.join(hook),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
    let fifo = aside.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let elsewhere = aside.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("outside-secret.txt"), "secret\n").unwrap();

    setup_git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(
        dir.join(".gitattributes"),
        "a.txt filter=evil diff=evil\nb.txt filter=x=y diff=evil\nc.txt filter=proc\nd.txt filter=inc\n",
    )
    .unwrap();
    for (name, text) in [("a.txt", "hello\n"), ("b.txt", "bee\n"), ("c.txt", "sea\n")] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    setup_git(dir, &["add", "."]);
    setup_git(dir, &["commit", "-q", "-m", "first"]);
    let first = setup_git(dir, &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::write(dir.join("d.txt"), "dee\n").unwrap();
    setup_git(dir, &["add", "d.txt"]);
    setup_git(dir, &["commit", "-q", "-m", "second"]);
    // Make the second commit a signed one, so that showing signatures would run gpg.
    let commit = setup_git(dir, &["cat-file", "commit", "HEAD"]);
    let (head, message) = commit.split_once("\n\n").unwrap();
    let signed = format!(
        "{head}\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\n{message}"
    );
    let signed_file = aside.path().join("signed");
    std::fs::write(&signed_file, signed).unwrap();
    let second = setup_git(
        dir,
        &[
            "hash-object",
            "-t",
            "commit",
            "-w",
            signed_file.to_str().unwrap(),
        ],
    )
    .trim()
    .to_string();
    setup_git(dir, &["update-ref", "HEAD", &second]);
    // A staged change, then unstaged ones and an untracked file.
    std::fs::write(dir.join("c.txt"), "sea shore\n").unwrap();
    setup_git(dir, &["add", "c.txt"]);
    std::fs::write(dir.join("a.txt"), "changed\n").unwrap();
    std::fs::write(dir.join("b.txt"), "bees\n").unwrap();
    std::fs::write(dir.join("new.txt"), "new\n").unwrap();

    let included = aside.path().join("included.config");
    std::fs::write(
        &included,
        format!(
            "[filter \"inc\"]\n\tclean = {}\n\trequired = true\n",
            evil("clean-included")
        ),
    )
    .unwrap();
    let config = format!(
        r#"
[core]
	fsmonitor = {fsmonitor}
	hooksPath = {hooks}
	pager = {pager}
	worktree = {elsewhere}
	excludesFile = {fifo}
	askPass = {askpass}
	sshCommand = {ssh}
[pager]
	status = {pager_status}
	diff = {pager_diff}
	log = {pager_log}
[diff]
	external = {external}
	orderFile = {fifo}
[diff "evil"]
	command = {diff_command}
	textconv = {textconv}
[filter "evil"]
	clean = {clean}
	smudge = {smudge}
	required = true
[filter "x=y"]
	clean = {clean_eq}
	required = true
[filter "proc"]
	process = {process}
	required = true
[gpg]
	program = {gpg}
[gpg "ssh"]
	program = {gpg_ssh}
[log]
	showSignature = true
[status]
	submoduleSummary = true
[credential]
	helper = {credential}
[include]
	path = {included}
"#,
        fsmonitor = evil("fsmonitor"),
        hooks = hooks.display(),
        pager = evil("pager"),
        elsewhere = elsewhere.display(),
        fifo = fifo.display(),
        askpass = evil("askpass"),
        ssh = evil("ssh"),
        pager_status = evil("pager.status"),
        pager_diff = evil("pager.diff"),
        pager_log = evil("pager.log"),
        external = evil("diff.external"),
        diff_command = evil("diff.command"),
        textconv = evil("textconv"),
        clean = evil("clean"),
        smudge = evil("smudge"),
        clean_eq = evil("clean-x=y"),
        process = evil("process"),
        gpg = evil("gpg"),
        gpg_ssh = evil("gpg-ssh"),
        credential = evil("credential"),
        included = included.display(),
    );
    let mut current = std::fs::read_to_string(dir.join(".git/config")).unwrap();
    current.push_str(&config);
    std::fs::write(dir.join(".git/config"), current).unwrap();
    Hostile {
        repo,
        aside,
        first,
        second,
    }
}

/// Plain git on the repository — only the FIFOs and the outside work tree set aside so
/// it does not hang — does run the programs: the set-up is a real attack.
fn plain_git_runs_them(h: &Hostile) -> String {
    let mut said = String::new();
    for args in [&["status"][..], &["diff"], &["log", "-1"]] {
        let out = Command::new("git")
            .args([
                "-c",
                "core.excludesFile=/dev/null",
                "-c",
                "diff.orderFile=/dev/null",
            ])
            // So that the failing process filter does not stop git before the others.
            .args(["-c", "filter.proc.required=false"])
            .args(args)
            .current_dir(h.repo.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_WORK_TREE", h.repo.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        said.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    let ran = h.ran() + &said;
    std::fs::remove_file(h.marker()).unwrap();
    ran
}

#[tokio::test]
async fn git_tools_run_nothing_the_repository_names() {
    let h = hostile_repository();
    let control = plain_git_runs_them(&h);
    for program in ["fsmonitor", "clean", "diff.command", "gpg"] {
        assert!(
            control.lines().any(|l| l == program),
            "plain git did not run {program}; ran: {control:?}"
        );
    }
    let root = h.repo.path();

    let r = call(&GitStatus::default(), root, json!({})).await;
    assert!(r.success, "{r:?}");
    assert_eq!(
        r.content, "## main\n M a.txt\n M b.txt\nM  c.txt\n?? new.txt\n",
        "{r:?}"
    );

    let diff = GitDiff::default();
    let r = call(&diff, root, json!({})).await;
    assert!(r.success, "{r:?}");
    assert!(r.content.contains("-hello\n+changed\n"), "{}", r.content);
    assert!(r.content.contains("-bee\n+bees\n"), "{}", r.content);
    assert!(!r.content.contains("c.txt"), "{}", r.content);
    let r = call(&diff, root, json!({"staged": true})).await;
    assert!(r.content.contains("-sea\n+sea shore\n"), "{}", r.content);
    let r = call(&diff, root, json!({"path": "a.txt"})).await;
    assert!(
        r.content.contains("+changed") && !r.content.contains("b.txt"),
        "{}",
        r.content
    );

    let inspector = GitCommandInspector::default();
    let head = tokio::time::timeout(PATIENCE, inspector.head(root))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(head.as_deref(), Some(h.second.as_str()));
    let commits = tokio::time::timeout(PATIENCE, inspector.commits_since(root, &h.first))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(commits.len(), 1, "{commits:?}");
    assert_eq!(
        (commits[0].subject.as_str(), commits[0].files.clone()),
        ("second", vec!["d.txt".to_string()])
    );

    assert_eq!(h.ran(), "", "a program the repository names was run");
}

/// An option smuggled in as a revision is taken as a revision, never as an option.
#[tokio::test]
async fn the_inspector_takes_no_option_for_a_revision() {
    let h = hostile_repository();
    let base = h.aside.path().join("written");
    let since = format!("--output={}", base.display());
    // What `git log --output=BASE..HEAD` would write.
    let written = PathBuf::from(format!("{}..HEAD", base.display()));
    let result = tokio::time::timeout(
        PATIENCE,
        GitCommandInspector::default().commits_since(h.repo.path(), &since),
    )
    .await
    .unwrap();
    assert!(result.is_err(), "{result:?}");
    assert!(!written.exists());
    assert_eq!(h.ran(), "");
}

// ---- Repositories outside the workspace -------------------------------------------------
//
// The red team's finding: git read the repository it found above the workspace (a home
// folder kept in git) or the one a `.git` file or link names, and printed committed and
// staged secrets from outside the workspace. Nothing from outside may appear now.

/// Text that appears only in files outside the workspace (or in their history).
pub(super) const OUTSIDE: &[&str] = &[
    "OLD-SECRET-1",
    "NEW-SECRET-2",
    "REGION-SECRET-3",
    ".aws",
    "credentials",
    "outside-untracked",
];

/// A home folder kept in git, with `.aws/credentials` committed and a new version staged,
/// and the workspace `proj` a folder of it.
pub(super) struct SecretHome {
    pub(super) home: tempfile::TempDir,
    /// The commit before the last two.
    pub(super) first: String,
}

impl SecretHome {
    pub(super) fn proj(&self) -> PathBuf {
        self.home.path().join("proj")
    }
}

/// See [`SecretHome`]: commits `first` (everything), `outside only` (`.aws/config`),
/// `inside` (`proj/notes.txt`); then the new secret staged, `proj/staged.txt` staged,
/// `proj/src/lib.rs` changed, `proj/untracked.txt` and `outside-untracked.txt` new,
/// `.aws/config` changed.
pub(super) fn secret_home() -> SecretHome {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path();
    std::fs::create_dir_all(dir.join(".aws")).unwrap();
    std::fs::create_dir_all(dir.join("proj/src")).unwrap();
    std::fs::write(
        dir.join(".aws/credentials"),
        "aws_secret_access_key = OLD-SECRET-1\n",
    )
    .unwrap();
    std::fs::write(dir.join(".aws/config"), "region = a\n").unwrap();
    std::fs::write(dir.join("proj/src/lib.rs"), "pub fn a() {}\n").unwrap();
    std::fs::write(dir.join("proj/notes.txt"), "one\n").unwrap();
    setup_git(dir, &["init", "-q", "-b", "main"]);
    setup_git(dir, &["add", "."]);
    setup_git(dir, &["commit", "-q", "-m", "first"]);
    let first = setup_git(dir, &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::write(dir.join(".aws/config"), "region = REGION-SECRET-3\n").unwrap();
    setup_git(dir, &["commit", "-q", "-am", "outside only"]);
    std::fs::write(dir.join("proj/notes.txt"), "two\n").unwrap();
    setup_git(dir, &["commit", "-q", "-am", "inside"]);
    std::fs::write(
        dir.join(".aws/credentials"),
        "aws_secret_access_key = NEW-SECRET-2\n",
    )
    .unwrap();
    std::fs::write(dir.join("proj/staged.txt"), "staged\n").unwrap();
    setup_git(dir, &["add", ".aws/credentials", "proj/staged.txt"]);
    std::fs::write(dir.join("proj/src/lib.rs"), "pub fn b() {}\n").unwrap();
    std::fs::write(dir.join("proj/untracked.txt"), "u\n").unwrap();
    std::fs::write(dir.join("outside-untracked.txt"), "o\n").unwrap();
    std::fs::write(dir.join(".aws/config"), "region = REGION-SECRET-3 again\n").unwrap();
    SecretHome { home, first }
}

/// A repository with a committed and a staged secret, for a workspace to point at.
pub(super) fn secret_repository() -> tempfile::TempDir {
    let other = tempfile::tempdir().unwrap();
    let dir = other.path();
    std::fs::create_dir_all(dir.join(".aws")).unwrap();
    std::fs::write(
        dir.join(".aws/credentials"),
        "aws_secret_access_key = OLD-SECRET-1\n",
    )
    .unwrap();
    setup_git(dir, &["init", "-q", "-b", "main"]);
    setup_git(dir, &["add", "."]);
    setup_git(dir, &["commit", "-q", "-m", "first"]);
    std::fs::write(
        dir.join(".aws/credentials"),
        "aws_secret_access_key = NEW-SECRET-2\n",
    )
    .unwrap();
    setup_git(dir, &["add", "."]);
    other
}

/// How a workspace can name another repository's git directory.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pointer {
    /// A `.git` file `gitdir: OTHER/.git`.
    GitFile,
    /// A `.git` link to `OTHER/.git`.
    Link,
}

/// A workspace (with one file) whose `.git` points at `other`'s git directory.
pub(super) fn pointing_workspace(other: &Path, how: Pointer) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("readme.txt"), "hi\n").unwrap();
    let git_dir = other.join(".git");
    match how {
        Pointer::GitFile => std::fs::write(
            ws.path().join(".git"),
            format!("gitdir: {}\n", git_dir.display()),
        )
        .unwrap(),
        Pointer::Link => std::os::unix::fs::symlink(&git_dir, ws.path().join(".git")).unwrap(),
    }
    ws
}

fn shows_nothing_from_outside(what: &str, r: &ToolResult) {
    let all = format!("{} {:?} {:?}", r.content, r.error_message, r.data);
    for secret in OUTSIDE {
        assert!(!all.contains(secret), "{what} showed {secret:?}: {all}");
    }
}

#[tokio::test]
async fn in_a_folder_of_a_larger_repository_git_shows_the_folder_only() {
    let h = secret_home();
    let proj = h.proj();
    let status = call(&GitStatus::default(), &proj, json!({})).await;
    shows_nothing_from_outside("git_status", &status);
    assert!(status.success, "{status:?}");
    // Paths relative to the workspace, nothing of the rest of the repository.
    assert_eq!(
        status.content, "## main\n M src/lib.rs\nA  staged.txt\n?? untracked.txt\n",
        "{status:?}"
    );
    assert_eq!(status.data.as_ref().unwrap()["changed_files"], 3);

    let diff = GitDiff::default();
    let r = call(&diff, &proj, json!({})).await;
    shows_nothing_from_outside("git_diff", &r);
    assert!(
        r.content.contains("diff --git a/src/lib.rs b/src/lib.rs")
            && r.content.contains("-pub fn a() {}\n+pub fn b() {}"),
        "{r:?}"
    );
    let r = call(&diff, &proj, json!({"staged": true})).await;
    shows_nothing_from_outside("git_diff staged", &r);
    assert!(
        r.content.contains("diff --git a/staged.txt b/staged.txt") && r.content.contains("+staged"),
        "{r:?}"
    );
    let r = call(&diff, &proj, json!({"path": "src", "staged": false})).await;
    shows_nothing_from_outside("git_diff src", &r);
    assert!(r.content.contains("a/src/lib.rs"), "{r:?}");
    // A path that climbs out is refused before git runs.
    let r = call(
        &diff,
        &proj,
        json!({"path": "../.aws/credentials", "staged": true}),
    )
    .await;
    let said = r.error_message.clone().unwrap_or_default();
    assert!(
        said.contains("outside the workspace") && !r.content.contains("SECRET"),
        "{r:?}"
    );

    // The inspector: the commits that change the folder, its files relative to it.
    let inspector = GitCommandInspector::default();
    let head = inspector.head(&proj).await.unwrap();
    assert!(head.is_some());
    let commits = inspector.commits_since(&proj, &h.first).await.unwrap();
    let summary = crate::tools::git::summary(&commits);
    assert_eq!(summary, [("inside", vec!["notes.txt"])]);
}

#[tokio::test]
async fn a_workspace_whose_git_leads_to_another_repository_is_not_a_repository() {
    let other = secret_repository();
    for how in [Pointer::GitFile, Pointer::Link] {
        let ws = pointing_workspace(other.path(), how);
        let expected = "the workspace is not a git repository (its repository is outside it)";
        let r = call(&GitStatus::default(), ws.path(), json!({})).await;
        shows_nothing_from_outside("git_status", &r);
        assert_eq!(r.error_message.as_deref(), Some(expected), "{how:?}: {r:?}");
        for params in [
            json!({}),
            json!({"staged": true}),
            json!({"path": "readme.txt"}),
        ] {
            let r = call(&GitDiff::default(), ws.path(), params.clone()).await;
            shows_nothing_from_outside("git_diff", &r);
            assert_eq!(
                r.error_message.as_deref(),
                Some(expected),
                "{how:?} {params}"
            );
        }
        let inspector = GitCommandInspector::default();
        assert_eq!(inspector.head(ws.path()).await.unwrap(), None, "{how:?}");
        assert!(inspector.commits_since(ws.path(), "HEAD~1").await.is_err());
    }
}

#[tokio::test]
async fn a_linked_work_tree_is_refused_and_a_gitdir_inside_is_used() {
    let main = secret_repository();
    setup_git(main.path(), &["commit", "-q", "-m", "second"]);
    let place = tempfile::tempdir().unwrap();
    let linked = place.path().join("linked");
    setup_git(
        main.path(),
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            linked.to_str().unwrap(),
        ],
    );
    let r = call(&GitDiff::default(), &linked, json!({"staged": true})).await;
    shows_nothing_from_outside("git_diff in a linked work tree", &r);
    assert!(!r.success, "{r:?}");
    assert!(r
        .error_message
        .as_deref()
        .is_some_and(|e| e.contains("its repository is outside it")));

    // A `.git` file naming a git directory inside the workspace is the workspace's own.
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    setup_git(
        ws.path(),
        &["init", "-q", "-b", "main", "--separate-git-dir", "store"],
    );
    let gitfile = std::fs::read_to_string(ws.path().join(".git")).unwrap();
    assert!(gitfile.starts_with("gitdir: "), "{gitfile}");
    let r = call(&GitStatus::default(), ws.path(), json!({})).await;
    assert!(r.success, "{r:?}");
    assert!(r.content.contains("?? a.txt"), "{r:?}");
}

#[tokio::test]
async fn objects_borrowed_from_outside_make_the_repository_outside() {
    let other = secret_repository();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "a\n").unwrap();
    setup_git(ws.path(), &["init", "-q", "-b", "main"]);
    setup_git(ws.path(), &["add", "."]);
    setup_git(ws.path(), &["commit", "-q", "-m", "first"]);
    let r = call(&GitStatus::default(), ws.path(), json!({})).await;
    assert!(r.success, "{r:?}");
    // The other repository's objects, borrowed: its secret blob becomes readable here.
    std::fs::write(
        ws.path().join(".git/objects/info/alternates"),
        format!("{}\n", other.path().join(".git/objects").display()),
    )
    .unwrap();
    let r = call(&GitStatus::default(), ws.path(), json!({})).await;
    assert_eq!(
        r.error_message.as_deref(),
        Some("the workspace is not a git repository (its repository is outside it)"),
        "{r:?}"
    );
}
