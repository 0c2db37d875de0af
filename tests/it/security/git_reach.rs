//! Git programs a repository names where the command's own repository does not show
//! them: in a nested repository that is not a submodule, in a file an `[includeIf …]`
//! pulls in once the command itself makes its condition true, and in variables named
//! only by less common commands (`git archive`, `git add -p`, `git imap-send`).
//!
//! For each: plain git runs the program (the attack is real); run as a person approved
//! it, the command runs nothing the repository named and reads nothing outside.

use super::git::setup_git;
use super::git_commands::{everything, execute, repository, Repo, SECRET};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use tools::RunCommand;

/// `command` through plain `sh` and git with no configuration of the machine's.
fn plain_sh(dir: &Path, command: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A textconv the repository at `dir` applies to `*.txt`, naming `repo`'s program.
fn textconv(dir: &Path, repo: &Repo, config_file: &Path) {
    std::fs::write(dir.join(".gitattributes"), "*.txt diff=evil\n").unwrap();
    let mut config = std::fs::read_to_string(config_file).unwrap_or_default();
    config.push_str(&format!("[diff \"evil\"]\n\ttextconv = {}\n", repo.evil()));
    std::fs::write(config_file, config).unwrap();
}

struct Attack {
    name: &'static str,
    /// Sets the repository up (after `repository("")`).
    setup: fn(&Repo),
    /// What a person approved.
    command: &'static str,
}

fn nested(repo: &Repo) {
    let inner = repo.root().join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    setup_git(&inner, &["init", "-q", "-b", "main"]);
    std::fs::write(inner.join("g.txt"), "one\n").unwrap();
    textconv(&inner, repo, &inner.join(".git/config"));
    setup_git(&inner, &["add", "."]);
    setup_git(&inner, &["commit", "-q", "-m", "inner"]);
    std::fs::write(inner.join("g.txt"), "two\n").unwrap();
    std::fs::write(
        repo.root().join("check.sh"),
        "#!/bin/sh\ncd inner || exit 1\ngit diff\n",
    )
    .unwrap();
}

/// `[includeIf COND]` naming a file beside the repository that sets a textconv.
fn conditional(repo: &Repo, condition: &str) {
    let included = repo.aside.path().join("included.inc");
    textconv(repo.root(), repo, &included);
    let config = repo.root().join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[includeIf \"{condition}\"]\n\tpath = {}\n",
        included.display()
    ));
    std::fs::write(config, text).unwrap();
}

fn on_branch(repo: &Repo) {
    conditional(repo, "onbranch:topic");
}

fn has_remote(repo: &Repo) {
    conditional(repo, "hasconfig:remote.*.url:https://example.com/**");
}

fn config_line(repo: &Repo, section: &str) {
    let config = repo.root().join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&section.replace("{evil}", &repo.evil()));
    std::fs::write(config, text).unwrap();
}

const ATTACKS: &[Attack] = &[
    Attack {
        name: "nested repository through -C",
        setup: nested,
        command: "git -C inner diff",
    },
    Attack {
        name: "nested repository through cd",
        setup: nested,
        command: "cd inner && git diff",
    },
    Attack {
        name: "nested repository through a script",
        setup: nested,
        command: "sh check.sh",
    },
    Attack {
        name: "includeIf onbranch switched on by a checkout",
        setup: on_branch,
        command: "git checkout -q -b topic && git diff",
    },
    Attack {
        name: "includeIf hasconfig switched on by a remote",
        setup: has_remote,
        command: "git remote add origin https://example.com/x && git diff",
    },
    Attack {
        name: "tar.<format>.command",
        setup: |repo| config_line(repo, "[tar \"tgz\"]\n\tcommand = {evil}\n"),
        command: "git archive --format=tgz -o out.tgz HEAD",
    },
    Attack {
        name: "interactive.diffFilter",
        // Used on a coloured diff, which the repository can ask for too.
        setup: |repo| {
            config_line(
                repo,
                "[color]\n\tui = always\n[interactive]\n\tdiffFilter = {evil}\n",
            )
        },
        command: "printf 'n\\n' | git add -p",
    },
    Attack {
        name: "imap.tunnel",
        setup: |repo| config_line(repo, "[imap]\n\ttunnel = {evil}\n\tfolder = INBOX\n"),
        command: "git format-patch -1 --stdout HEAD | git imap-send",
    },
];

#[tokio::test]
async fn approved_git_commands_run_no_program_a_repository_names_out_of_sight() {
    let run = RunCommand::default();
    for attack in ATTACKS {
        let repo = repository("", "", false);
        (attack.setup)(&repo);
        // The attack is real.
        let said = plain_sh(repo.root(), attack.command);
        assert!(
            repo.ran(),
            "{}: plain git did not run the repository's program: {said}",
            attack.name
        );
        let _ = std::fs::remove_file(repo.marker());
        // Set up again: the plain run may have changed the repository (a branch, a remote).
        let repo = repository("", "", false);
        (attack.setup)(&repo);
        let r = execute(&run, repo.root(), json!({ "command": attack.command })).await;
        let all = everything(&r);
        assert!(
            !repo.ran(),
            "{}: the approved command ran the repository's program: {all}",
            attack.name
        );
        assert!(
            !all.contains(SECRET),
            "{}: read the secret: {all}",
            attack.name
        );
    }
}
