//! Git through `run_command` on a hostile repository: one repository per configuration
//! variable through which a repository can name a program git runs or a file git reads
//! (fsmonitor, filter drivers with `.gitattributes`, textconv, a diff driver's command,
//! `diff.external`, `gpg.program` with `log.showSignature`, `blame.ignoreRevsFile`, an
//! attributes file, and each of them pulled in by `include.path` or `includeIf`), and a
//! submodule with its own.
//!
//! For each: plain git does run the program or read the file (the attack is real); the
//! judge rates no git command on that repository safe, and says why (so `--approve
//! safe` asks a person); run anyway — as a person or `--approve all` would have it —
//! the command reads nothing outside the workspace and runs nothing the repository
//! named; and the git tools show nothing of it either.

use super::git::setup_git;
use core_models::{RiskLevel, Tool, ToolExecutionContext, ToolResult};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use tools::{GitDiff, GitStatus, RunCommand};

pub(super) const SECRET: &str = "SECRET-NOTES-of-another-project-4417";
const PATIENCE: Duration = Duration::from_secs(60);

/// Plain git, with no configuration of the machine's.
fn plain_git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A repository and, beside it (outside the workspace), the secret, the marker and the
/// repository's programs.
pub(super) struct Repo {
    pub(super) ws: tempfile::TempDir,
    pub(super) aside: tempfile::TempDir,
}

impl Repo {
    pub(super) fn root(&self) -> &Path {
        self.ws.path()
    }
    pub(super) fn marker(&self) -> PathBuf {
        self.aside.path().join("marker")
    }
    pub(super) fn secret(&self) -> PathBuf {
        self.aside.path().join("notes.txt")
    }
    /// The repository's program: notes it ran, prints the secret on both outputs.
    pub(super) fn evil(&self) -> String {
        self.aside.path().join("evil.sh").display().to_string()
    }
    pub(super) fn ran(&self) -> bool {
        self.marker().exists()
    }
}

/// A repository with `f.txt` committed then changed, whose configuration gets
/// `config` (`{evil}`, `{secret}` and `{aside}` replaced) and whose `.gitattributes` is
/// `attributes`; its last commit signed when `signed`.
pub(super) fn repository(config: &str, attributes: &str, signed: bool) -> Repo {
    let repo = Repo {
        ws: tempfile::tempdir().unwrap(),
        aside: tempfile::tempdir().unwrap(),
    };
    std::fs::write(repo.secret(), format!("{SECRET}\n")).unwrap();
    std::fs::write(
        repo.evil(),
        format!(
            "#!/bin/sh\necho ran >> '{}'\ncat '{}'\ncat '{}' >&2\n",
            repo.marker().display(),
            repo.secret().display(),
            repo.secret().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        repo.evil(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let dir = repo.root();
    setup_git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("f.txt"), "hello\n").unwrap();
    if !attributes.is_empty() {
        std::fs::write(dir.join(".gitattributes"), attributes).unwrap();
    }
    setup_git(dir, &["add", "."]);
    setup_git(dir, &["commit", "-q", "-m", "first"]);
    if signed {
        let commit = setup_git(dir, &["cat-file", "commit", "HEAD"]);
        let (head, message) = commit.split_once("\n\n").unwrap();
        let signed = format!(
            "{head}\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\n{message}"
        );
        let file = repo.aside.path().join("signed");
        std::fs::write(&file, signed).unwrap();
        let id = setup_git(
            dir,
            &["hash-object", "-t", "commit", "-w", file.to_str().unwrap()],
        );
        setup_git(dir, &["update-ref", "HEAD", id.trim()]);
    }
    std::fs::write(dir.join("f.txt"), "hello again\n").unwrap();
    let fill = |text: &str| {
        text.replace("{evil}", &repo.evil())
            .replace("{secret}", &repo.secret().display().to_string())
            .replace("{aside}", &repo.aside.path().display().to_string())
    };
    let mut current = std::fs::read_to_string(dir.join(".git/config")).unwrap();
    current.push_str(&fill(config));
    std::fs::write(dir.join(".git/config"), current).unwrap();
    repo
}

pub(super) async fn execute(tool: &dyn Tool, root: &Path, params: Value) -> ToolResult {
    let mut ctx = ToolExecutionContext::new(params.clone());
    ctx.workspace_path = Some(root.to_path_buf());
    tokio::time::timeout(PATIENCE, tool.execute(ctx))
        .await
        .unwrap_or_else(|_| panic!("{} hung on {params}", tool.definition().id))
}

pub(super) fn everything(r: &ToolResult) -> String {
    format!(
        "{} {} {}",
        r.content,
        r.error_message.clone().unwrap_or_default(),
        r.data.clone().unwrap_or(Value::Null)
    )
}

/// One variable (or a pair) and the commands it acts on.
struct Case {
    name: &'static str,
    config: &'static str,
    attributes: &'static str,
    signed: bool,
    /// Read-only commands: the judge must not rate them safe.
    commands: &'static [&'static str],
    /// The words the judge's reason names.
    reason: &'static str,
    /// Whether an override takes the choice away (else only the judge stands).
    neutralised: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "core.fsmonitor",
        config: "[core]\n\tfsmonitor = {evil}\n",
        attributes: "",
        signed: false,
        commands: &["git status --short", "git diff"],
        reason: "core.fsmonitor",
        neutralised: true,
    },
    Case {
        name: "filter clean",
        config: "[filter \"evil\"]\n\tclean = {evil}\n\trequired = true\n",
        attributes: "*.txt filter=evil\n",
        signed: false,
        commands: &["git diff", "git status --short"],
        reason: "filter.evil.clean",
        neutralised: true,
    },
    Case {
        name: "filter process",
        config: "[filter \"evil\"]\n\tprocess = {evil}\n",
        attributes: "*.txt filter=evil\n",
        signed: false,
        commands: &["git diff"],
        reason: "filter.evil.process",
        neutralised: true,
    },
    Case {
        name: "filter smudge",
        config: "[filter \"evil\"]\n\tsmudge = {evil}\n",
        attributes: "*.txt filter=evil\n",
        signed: false,
        commands: &["git checkout -- f.txt"],
        reason: "",
        neutralised: true,
    },
    Case {
        name: "textconv",
        config: "[diff \"evil\"]\n\ttextconv = {evil}\n",
        attributes: "*.txt diff=evil\n",
        signed: false,
        commands: &["git diff", "git log -p", "git show", "git blame f.txt"],
        reason: "diff.evil.textconv",
        neutralised: true,
    },
    Case {
        name: "diff driver command",
        config: "[diff \"evil\"]\n\tcommand = {evil}\n",
        attributes: "*.txt diff=evil\n",
        signed: false,
        commands: &["git diff", "git log -p"],
        reason: "diff.evil.command",
        neutralised: true,
    },
    Case {
        name: "diff.external",
        config: "[diff]\n\texternal = {evil}\n",
        attributes: "",
        signed: false,
        commands: &["git diff", "git show"],
        reason: "diff.external",
        neutralised: true,
    },
    Case {
        name: "gpg.program with log.showSignature",
        config: "[gpg]\n\tprogram = {evil}\n[log]\n\tshowSignature = true\n",
        attributes: "",
        signed: true,
        commands: &["git log -1", "git show"],
        reason: "gpg.program",
        neutralised: true,
    },
    Case {
        name: "blame.ignoreRevsFile",
        config: "[blame]\n\tignoreRevsFile = {secret}\n",
        attributes: "",
        signed: false,
        commands: &["git blame f.txt"],
        reason: "blame.ignorerevsfile",
        neutralised: false,
    },
    Case {
        name: "an attributes file outside",
        config:
            "[core]\n\tattributesFile = {aside}/attributes\n[filter \"evil\"]\n\tclean = {evil}\n",
        attributes: "",
        signed: false,
        commands: &["git diff"],
        reason: "core.attributesfile",
        neutralised: true,
    },
    Case {
        name: "include.path",
        config: "[include]\n\tpath = {aside}/included\n",
        attributes: "*.txt diff=evil\n",
        signed: false,
        commands: &["git status --short", "git diff"],
        reason: "includes other files",
        neutralised: true,
    },
    Case {
        name: "includeIf",
        config: "[includeIf \"gitdir:/\"]\n\tpath = {aside}/included\n",
        attributes: "*.txt diff=evil\n",
        signed: false,
        commands: &["git status --short", "git diff"],
        reason: "includes other files",
        neutralised: true,
    },
];

/// What an included file sets: an fsmonitor and a textconv.
fn write_included(repo: &Repo) {
    std::fs::write(
        repo.aside.path().join("included"),
        format!(
            "[core]\n\tfsmonitor = {0}\n[diff \"evil\"]\n\ttextconv = {0}\n",
            repo.evil()
        ),
    )
    .unwrap();
    std::fs::write(repo.aside.path().join("attributes"), "*.txt filter=evil\n").unwrap();
}

#[tokio::test]
async fn a_repository_s_configuration_makes_no_git_command_run_or_read_what_it_names() {
    let run = RunCommand::default();
    for case in CASES {
        let repo = repository(case.config, case.attributes, case.signed);
        write_included(&repo);
        let root = repo.root();
        // The attack is real: plain git runs the program or reads the file.
        let mut said = String::new();
        for command in case.commands {
            let args: Vec<&str> = command.split(' ').skip(1).collect();
            let out = plain_git(root, &args);
            said.push_str(&String::from_utf8_lossy(&out.stdout));
            said.push_str(&String::from_utf8_lossy(&out.stderr));
            // Restore what a smudging checkout changed.
            std::fs::write(root.join("f.txt"), "hello again\n").unwrap();
        }
        assert!(
            repo.ran() || said.contains(SECRET),
            "{}: plain git neither ran the program nor read the secret: {said}",
            case.name
        );
        let _ = std::fs::remove_file(repo.marker());
        for command in case.commands {
            // Never safe, and the reason says why.
            let params = json!({ "command": command });
            let assessment = run.assess(&params, Some(root));
            assert!(
                assessment.risk > RiskLevel::Safe,
                "{}: `{command}` was rated safe",
                case.name
            );
            assert!(
                assessment.reasons.iter().any(|r| r.contains(case.reason)),
                "{}: `{command}`: no reason names {}: {:?}",
                case.name,
                case.reason,
                assessment.reasons
            );

            // Run anyway (approved): nothing read from outside, nothing run.
            if case.neutralised {
                let r = execute(&run, root, params).await;
                let all = everything(&r);
                assert!(
                    !all.contains(SECRET),
                    "{}: `{command}` read the secret: {all}",
                    case.name
                );
                assert!(
                    !repo.ran(),
                    "{}: `{command}` ran the repository's program: {all}",
                    case.name
                );
                std::fs::write(root.join("f.txt"), "hello again\n").unwrap();
            }
        }
        // The git tools, on the same repository.
        for (tool, params) in [
            (&GitStatus::default() as &dyn Tool, json!({})),
            (&GitDiff::default() as &dyn Tool, json!({})),
            (&GitDiff::default() as &dyn Tool, json!({"staged": true})),
        ] {
            let r = execute(tool, root, params).await;
            let all = everything(&r);
            assert!(!all.contains(SECRET), "{}: a git tool: {all}", case.name);
            assert!(!repo.ran(), "{}: a git tool ran the program", case.name);
        }
    }
}

#[tokio::test]
async fn what_an_approved_git_command_gets_is_still_the_repository_s_work() {
    // A plain repository with harmless settings: git is safe there and works as usual.
    let repo = repository(
        "[core]\n\thooksPath = .husky\n\teditor = vim\n[pager]\n\tbranch = false\n[alias]\n\tst = status\n",
        "",
        false,
    );
    let root = repo.root();
    let run = RunCommand::default();
    let params = json!({"command": "git status --short"});
    assert_eq!(run.assess(&params, Some(root)).risk, RiskLevel::Safe);
    let r = execute(&run, root, params).await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.content, " M f.txt\n");

    // A hook the repository holds does not run in a commit a person approved, nor does
    // an alias it defines; the commit itself is made.
    let hooks = root.join(".husky");
    std::fs::create_dir_all(&hooks).unwrap();
    // The hook writes in the workspace, which an approved command may.
    let marker = root.join("hook-ran");
    std::fs::write(
        hooks.join("pre-commit"),
        format!("#!/bin/sh\necho hook >> '{}'\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        hooks.join("pre-commit"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let commit = json!({"command": "git -c user.name=T -c user.email=t@example.com -c commit.gpgsign=false commit -q -am second"});
    assert!(run.assess(&commit, Some(root)).risk > RiskLevel::Safe);
    let r = execute(&run, root, commit).await;
    assert!(r.success, "{r:?}");
    assert!(!marker.exists(), "a hook of the repository ran");
    let log = setup_git(root, &["log", "--format=%s"]);
    assert_eq!(log, "second\nfirst\n");

    let r = execute(&run, root, json!({"command": "git st"})).await;
    assert!(!r.success, "{r:?}");
    assert!(
        everything(&r).contains("not run"),
        "the alias ran: {}",
        everything(&r)
    );
}

#[tokio::test]
async fn a_safe_git_command_does_not_enter_submodules() {
    // The outer repository is plain; a submodule (registered with `ignore = none`, which
    // would win over git's own settings) has an fsmonitor and a textconv of its own.
    let repo = repository("", "", false);
    let root = repo.root();
    let sub = root.join("sub");
    std::fs::create_dir(&sub).unwrap();
    setup_git(&sub, &["init", "-q", "-b", "main"]);
    std::fs::write(sub.join("s.txt"), "sub\n").unwrap();
    std::fs::write(sub.join(".gitattributes"), "*.txt diff=evil\n").unwrap();
    setup_git(&sub, &["add", "."]);
    setup_git(&sub, &["commit", "-q", "-m", "sub"]);
    let head = setup_git(&sub, &["rev-parse", "HEAD"]);
    setup_git(
        root,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{},sub", head.trim()),
        ],
    );
    std::fs::write(
        root.join(".gitmodules"),
        "[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n\tignore = none\n",
    )
    .unwrap();
    setup_git(root, &["add", ".gitmodules"]);
    setup_git(root, &["commit", "-q", "-m", "with a submodule"]);
    let mut config = std::fs::read_to_string(sub.join(".git/config")).unwrap();
    config.push_str(&format!(
        "[core]\n\tfsmonitor = {0}\n[diff \"evil\"]\n\ttextconv = {0}\n",
        repo.evil()
    ));
    std::fs::write(sub.join(".git/config"), config).unwrap();
    std::fs::write(sub.join("s.txt"), "sub changed\n").unwrap();

    // Plain git goes into the submodule and runs its program.
    let out = plain_git(root, &["status", "--short"]);
    assert!(
        repo.ran() || String::from_utf8_lossy(&out.stderr).contains(SECRET),
        "{out:?}"
    );
    let _ = std::fs::remove_file(repo.marker());

    let run = RunCommand::default();
    for command in ["git status --short", "git diff", "git status"] {
        let params = json!({ "command": command });
        assert_eq!(
            run.assess(&params, Some(root)).risk,
            RiskLevel::Safe,
            "{command}"
        );
        let r = execute(&run, root, params).await;
        assert!(r.success, "{command}: {r:?}");
        let all = everything(&r);
        assert!(!all.contains(SECRET), "{command}: {all}");
        assert!(!repo.ran(), "{command} ran the submodule's program");
    }
    // Options that would enter the submodules again are not safe.
    for command in [
        "git status --ignore-submodules=none",
        "git diff --ignore-submodules=dirty",
        "git diff --submodule=diff",
        "git ls-files --recurse-submodules",
        "git grep --recurse-submodules x",
    ] {
        let params = json!({ "command": command });
        assert!(
            run.assess(&params, Some(root)).risk > RiskLevel::Safe,
            "{command} was rated safe"
        );
    }
}
