//! AGENTS.md instructions and Agent Skills: what is found, in which order, within which
//! caps, and what a link leading out cannot bring in.

use core_models::{Tool, ToolExecutionContext};
use serde_json::json;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use tools::{Instructions, LoadSkill, ProjectContext, Skills, INSTRUCTIONS_CAP};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill(root: &Path, folder: &str, name: &str, description: &str, body: &str) {
    write(
        &root.join(folder).join("SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\n{body}"),
    );
}

/// A repository with a workspace two folders down, a folder above the repository, and a
/// user folder.
struct Tree {
    _dir: tempfile::TempDir,
    above: std::path::PathBuf,
    repo: std::path::PathBuf,
    workspace: std::path::PathBuf,
    user: std::path::PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let above = dir.path().canonicalize().unwrap();
    let repo = above.join("repo");
    let workspace = repo.join("packages").join("app");
    let user = above.join("config").join("aintern");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&user).unwrap();
    Tree {
        _dir: dir,
        above,
        repo,
        workspace,
        user,
    }
}

#[test]
fn instructions_run_from_the_user_through_the_repository_root_to_the_workspace() {
    let t = tree();
    write(&t.above.join("AGENTS.md"), "ABOVE the repository");
    write(&t.user.join("AGENTS.md"), "USER rules");
    write(&t.repo.join("AGENTS.md"), "ROOT rules");
    write(&t.repo.join("packages/AGENTS.md"), "PACKAGES rules");
    write(&t.workspace.join("AGENTS.md"), "APP rules");
    let found = Instructions::discover(&t.workspace, Some(&t.user));
    assert_eq!(
        found.sources,
        vec![
            t.user.join("AGENTS.md"),
            t.repo.join("AGENTS.md"),
            t.repo.join("packages/AGENTS.md"),
            t.workspace.join("AGENTS.md"),
        ]
    );
    let prompt = found.prompt().unwrap();
    let at = |s: &str| {
        prompt
            .find(s)
            .unwrap_or_else(|| panic!("{s} missing: {prompt}"))
    };
    assert!(at("USER") < at("ROOT") && at("ROOT") < at("PACKAGES") && at("PACKAGES") < at("APP"));
    assert!(!prompt.contains("ABOVE"), "{prompt}");
    assert!(!found.truncated && found.notes.is_empty());
    // The prompt names files by their folder, never by the machine's paths.
    assert!(!prompt.contains(t.above.to_str().unwrap()), "{prompt}");
}

#[test]
fn without_a_repository_only_the_workspace_speaks() {
    let dir = tempfile::tempdir().unwrap();
    let above = dir.path().canonicalize().unwrap();
    let workspace = above.join("ws");
    write(&above.join("AGENTS.md"), "PARENT");
    write(&workspace.join("AGENTS.md"), "OWN");
    let found = Instructions::discover(&workspace, None);
    assert_eq!(found.sources, vec![workspace.join("AGENTS.md")]);
    assert!(Instructions::discover(&above.join("missing"), None).is_empty());
}

#[test]
fn an_enclosing_repository_of_another_user_does_not_speak() {
    let dir = tempfile::tempdir().unwrap();
    let above = dir.path().canonicalize().unwrap();
    let workspace = above.join("ws");
    std::fs::create_dir_all(above.join(".git")).unwrap();
    write(&above.join("AGENTS.md"), "THEIRS");
    write(&workspace.join("AGENTS.md"), "OWN");
    // Only root can give a folder to another user: elsewhere there is nothing to set up.
    let ours = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&above).unwrap());
    if std::os::unix::fs::chown(&above, Some(65534), None).is_err() {
        eprintln!("skipped: cannot give a folder to another user here");
        return;
    }
    let found = Instructions::discover(&workspace, None);
    assert_eq!(found.sources, vec![workspace.join("AGENTS.md")]);
    assert!(
        found.notes.iter().any(|n| n.contains("another user")),
        "{:?}",
        found.notes
    );
    // Once it is the user's own, it speaks.
    std::os::unix::fs::chown(&above, Some(ours), None).unwrap();
    let found = Instructions::discover(&workspace, None);
    assert_eq!(
        found.sources,
        vec![above.join("AGENTS.md"), workspace.join("AGENTS.md")]
    );
}

#[test]
fn the_cap_cuts_once_and_says_so() {
    let t = tree();
    write(
        &t.repo.join("AGENTS.md"),
        &"r".repeat(INSTRUCTIONS_CAP - 100),
    );
    // Multi-byte characters across the cut: the text stays valid and within the cap.
    write(&t.repo.join("packages/AGENTS.md"), &"é".repeat(1000));
    write(&t.workspace.join("AGENTS.md"), "NEAREST");
    let found = Instructions::discover(&t.workspace, None);
    let total: usize = found.texts.iter().map(String::len).sum();
    assert!(total <= INSTRUCTIONS_CAP, "{total}");
    assert!(total >= INSTRUCTIONS_CAP - 1, "{total}");
    assert!(found.truncated);
    assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
    assert!(found.notes[0].contains("32 KiB"), "{:?}", found.notes);
    assert_eq!(found.sources.len(), 2, "{:?}", found.sources);
    assert!(!found.prompt().unwrap().contains("NEAREST"));
}

#[test]
fn an_agents_file_leading_out_of_the_repository_is_left_out() {
    let t = tree();
    let secret = t.above.join("secret.txt");
    write(&secret, "TOP SECRET");
    symlink(&secret, t.workspace.join("AGENTS.md")).unwrap();
    write(&t.repo.join("docs/shared.md"), "SHARED rules");
    // A relative link that stays in the repository is followed (an absolute one is not:
    // it names this machine, not the repository).
    symlink("docs/shared.md", t.repo.join("AGENTS.md")).unwrap();
    let found = Instructions::discover(&t.workspace, None);
    assert_eq!(found.sources, vec![t.repo.join("AGENTS.md")]);
    let prompt = found.prompt().unwrap();
    assert!(
        prompt.contains("SHARED") && !prompt.contains("TOP SECRET"),
        "{prompt}"
    );
    assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
}

#[test]
fn an_agents_file_that_is_not_a_regular_file_does_not_block() {
    let t = tree();
    let fifo = t.workspace.join("AGENTS.md");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let started = std::time::Instant::now();
    let found = Instructions::discover(&t.workspace, None);
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert!(found.is_empty());
    assert_eq!(found.notes.len(), 1, "{:?}", found.notes);
}

#[test]
fn skills_are_found_in_the_workspace_and_the_user_folder_by_name() {
    let t = tree();
    let ws_skills = t.workspace.join(".agents/skills");
    let user_skills = t.user.join("skills");
    skill(
        &ws_skills,
        "release-notes",
        "release-notes",
        "Write release notes.",
        "Use git log.",
    );
    skill(
        &user_skills,
        "pdf-forms",
        "pdf-forms",
        "Fill PDF forms.",
        "Run scripts/fill.py.",
    );
    skill(
        &user_skills,
        "release-notes",
        "release-notes",
        "The user's version.",
        "Other.",
    );
    skill(&ws_skills, "misnamed", "other-name", "Mismatched.", "x");
    skill(&ws_skills, "Bad_Name", "Bad_Name", "Bad.", "x");
    write(&ws_skills.join("no-front/SKILL.md"), "just text");
    let skills = Skills::discover(&t.workspace, Some(&t.user));
    let names: Vec<&str> = skills.list.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["pdf-forms", "release-notes"]);
    assert_eq!(
        skills.get("release-notes").unwrap().description,
        "Write release notes."
    );
    assert_eq!(skills.notes.len(), 4, "{:?}", skills.notes);
    let prompt = skills.prompt().unwrap();
    assert!(prompt.contains("- pdf-forms: Fill PDF forms."), "{prompt}");
    assert!(
        !prompt.contains("Run scripts"),
        "bodies stay out of the prompt: {prompt}"
    );
    assert_eq!(skills.load("pdf-forms").unwrap(), "Run scripts/fill.py.");
    assert!(skills.load("misnamed").is_err());
}

#[test]
fn a_skill_leading_out_of_its_folder_is_not_loaded_now_or_later() {
    let t = tree();
    let ws_skills = t.workspace.join(".agents/skills");
    let outside = t.above.join("outside");
    skill(&outside, "evil", "evil", "Looks helpful.", "SECRET BODY");
    std::fs::create_dir_all(&ws_skills).unwrap();
    symlink(outside.join("evil"), ws_skills.join("evil")).unwrap();
    skill(&ws_skills, "linked-file", "linked-file", "x", "x");
    std::fs::remove_file(ws_skills.join("linked-file/SKILL.md")).unwrap();
    symlink(
        outside.join("evil/SKILL.md"),
        ws_skills.join("linked-file/SKILL.md"),
    )
    .unwrap();
    skill(&ws_skills, "good", "good", "Fine.", "GOOD BODY");
    let skills = Skills::discover(&t.workspace, None);
    let names: Vec<&str> = skills.list.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good"], "{:?}", skills.notes);
    assert_eq!(skills.notes.len(), 2, "{:?}", skills.notes);
    // Swapped for a link after discovery: loading refuses it too.
    std::fs::remove_file(ws_skills.join("good/SKILL.md")).unwrap();
    symlink(
        outside.join("evil/SKILL.md"),
        ws_skills.join("good/SKILL.md"),
    )
    .unwrap();
    let err = skills.load("good").unwrap_err();
    assert!(!err.contains("SECRET"), "{err}");
}

#[test]
fn skills_folder_itself_leading_out_of_the_workspace_is_not_read() {
    let t = tree();
    let outside = t.above.join("outside-skills");
    skill(&outside, "evil", "evil", "x", "SECRET");
    std::fs::create_dir_all(t.workspace.join(".agents")).unwrap();
    symlink(&outside, t.workspace.join(".agents/skills")).unwrap();
    let skills = Skills::discover(&t.workspace, None);
    assert!(skills.is_empty());
    assert_eq!(skills.notes.len(), 1, "{:?}", skills.notes);
}

#[tokio::test]
async fn load_skill_is_offered_only_with_skills_and_names_only_them() {
    let t = tree();
    skill(
        &t.workspace.join(".agents/skills"),
        "deploy",
        "deploy",
        "Deploy the app.",
        "Step 1: build.",
    );
    let context = ProjectContext::discover(&t.workspace, None);
    let tool = LoadSkill::new(Arc::new(context.skills.clone()));
    let schema = &tool.definition().input_schema;
    assert_eq!(schema["properties"]["name"]["enum"], json!(["deploy"]));
    assert_eq!(
        tool.definition().default_risk_level,
        core_models::RiskLevel::Safe
    );
    assert!(!tool.validate(&json!({"name": "other"})).is_valid);
    assert!(tool.validate(&json!({"name": "deploy"})).is_valid);
    let mut ctx = ToolExecutionContext::new(json!({"name": "deploy"}));
    ctx.workspace_path = Some(t.workspace.clone());
    let result = tool.execute(ctx).await;
    assert!(result.success, "{result:?}");
    assert!(
        result.content.contains("Step 1: build."),
        "{}",
        result.content
    );
    assert!(
        result
            .content
            .contains(".agents/skills/deploy (in the workspace)"),
        "{}",
        result.content
    );
    let empty = LoadSkill::new(Arc::new(Skills::default()));
    let available = core_models::ToolAvailabilityContext::for_workspace(&t.workspace);
    assert!(!empty.is_available(&available));
    assert!(tool.is_available(&available));
    assert!(context
        .prompt()
        .unwrap()
        .contains("deploy: Deploy the app."));
}
