//! The secret locations the sandbox keeps from commands (`~/.ssh`, `~/.aws`, aintern's own
//! configuration…) kept from the file tools too, when the workspace holds them: no tool
//! reads, lists, searches, writes, edits or creates them, by any spelling, through any
//! link; and permission patterns see where a path leads through links.

use super::{call, error, swapper, Make};
use core_models::{PermissionManager, PermissionSubjects, RiskLevel, Tool, ToolPermissionSettings};
use sandbox::{Launcher, SandboxSettings};
use serde_json::{json, Value};
use services_ai::DefaultPermissionManager;
use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use test_support::fixtures::tool_call;
use tools::Workspace;
use uuid::Uuid;

/// What every secret holds, and an ordinary file too: a search for it finds only that one.
const MARKER: &str = "MARKER-7f3a";

/// The secret files of the fake home folder.
const SECRETS: [&str; 3] = [
    ".ssh/id_rsa",
    ".aws/credentials",
    ".config/aintern/permissions.json",
];

/// A fake home folder as the workspace: secrets, aintern's own configuration, an ordinary
/// project, and links into the secrets (`lnk -> .ssh`, `klink -> .ssh/id_rsa`, `cfg ->
/// .config`, and an absolute `abs -> HOME/.aws`); and the built-in tools, by id, built
/// with a launcher that takes it for the home folder and protects aintern's
/// configuration folder, as the application does.
fn fake_home() -> (tempfile::TempDir, BTreeMap<String, Arc<dyn Tool>>) {
    let home = tempfile::tempdir().unwrap();
    let root = home.path();
    for path in SECRETS {
        std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
        std::fs::write(root.join(path), format!("secret {MARKER}\n")).unwrap();
    }
    std::fs::create_dir(root.join("project")).unwrap();
    std::fs::write(root.join("project/main.rs"), format!("// {MARKER}\n")).unwrap();
    symlink(".ssh", root.join("lnk")).unwrap();
    symlink(".ssh/id_rsa", root.join("klink")).unwrap();
    symlink(".config", root.join("cfg")).unwrap();
    symlink(root.join(".aws"), root.join("abs")).unwrap();
    let tools = tools::builtin_tools_with(Arc::new(launcher(root)))
        .into_iter()
        .map(|t| (t.definition().id.clone(), t))
        .collect();
    (home, tools)
}

/// A launcher that takes `home` for the home folder and protects aintern's configuration
/// folder in it, as the application does.
fn launcher(home: &Path) -> Launcher {
    Launcher::new(SandboxSettings {
        home: Some(home.to_path_buf()),
        deny_read: vec!["~/.config/aintern".into()],
        ..SandboxSettings::default()
    })
}

/// A refusal of a secret location.
fn refused(result: &core_models::ToolResult, what: &str) {
    let message = error(result);
    assert!(message.contains("secret location"), "{what}: {message}");
    assert!(!result.content.contains(MARKER), "{what}: {result:?}");
}

/// Every secret keeps its content.
fn secrets_untouched(root: &Path) {
    for path in SECRETS {
        assert_eq!(
            std::fs::read_to_string(root.join(path)).unwrap(),
            format!("secret {MARKER}\n"),
            "{path}"
        );
    }
    assert!(!root.join(".ssh/authorized_keys").exists());
}

#[tokio::test]
async fn secrets_in_the_workspace_are_never_read() {
    let (home, tools) = fake_home();
    let root = home.path();
    let abs_key = root.join(".ssh/id_rsa").display().to_string();
    let spellings = [
        ".ssh/id_rsa",
        " ./.ssh//id_rsa ",
        "project/../.ssh/id_rsa",
        ".aws/credentials",
        ".config/aintern/permissions.json",
        "cfg/aintern/permissions.json",
        "lnk/id_rsa",
        "klink",
        "abs/credentials",
        ".ssh",
        abs_key.as_str(),
    ];
    for path in spellings {
        let r = call(tools["read_file"].as_ref(), root, json!({ "path": path })).await;
        if path.starts_with('/') {
            // Absolute paths are refused anyway.
            assert!(!r.success && !r.content.contains(MARKER), "{r:?}");
            continue;
        }
        refused(&r, &format!("read_file {path}"));
    }
    let r = call(
        tools["read_file"].as_ref(),
        root,
        json!({"path": ".ssh/id_rsa"}),
    )
    .await;
    assert_eq!(
        error(&r),
        "the path '.ssh/id_rsa' is a secret location; tools do not read or write it"
    );
    // Ordinary files still read; the workspace itself is not refused.
    let r = call(
        tools["read_file"].as_ref(),
        root,
        json!({"path": "project/main.rs"}),
    )
    .await;
    assert!(r.success && r.content.contains(MARKER), "{r:?}");
    // A workspace inside a secret location: everything in it is refused.
    let inner = Workspace::with_launcher(root.join(".ssh"), &launcher(root)).unwrap();
    assert!(inner.resolve_existing("id_rsa").is_err());
    let r = call(tools["list_dir"].as_ref(), &root.join(".ssh"), json!({})).await;
    refused(&r, "list_dir in .ssh");
    // git_diff's path is refused before git runs.
    for path in [".ssh", "lnk", ".config/aintern"] {
        let r = call(tools["git_diff"].as_ref(), root, json!({ "path": path })).await;
        refused(&r, &format!("git_diff {path}"));
    }
}

#[tokio::test]
async fn searches_and_listings_leave_secrets_out() {
    let (home, tools) = fake_home();
    let root = home.path();
    let search = tools["search_files"].as_ref();
    let r = call(search, root, json!({ "pattern": MARKER })).await;
    assert!(r.success, "{r:?}");
    let found: Vec<&str> = r.content.lines().filter(|l| l.contains(MARKER)).collect();
    assert_eq!(found, [format!("project/main.rs:1: // {MARKER}")], "{r:?}");
    assert!(
        r.content.contains("secret locations were left out"),
        "{r:?}"
    );
    for path in [
        ".ssh",
        ".config/aintern",
        "lnk",
        "cfg/aintern",
        "klink",
        "abs",
    ] {
        let r = call(search, root, json!({ "pattern": MARKER, "path": path })).await;
        refused(&r, &format!("search_files in {path}"));
    }
    // `.config` is no secret, but `.config/aintern` in it is.
    let r = call(
        search,
        root,
        json!({ "pattern": MARKER, "path": ".config" }),
    )
    .await;
    assert!(r.content.starts_with("no match for"), "{r:?}");
    assert!(
        r.content.contains("1 secret location was left out"),
        "{r:?}"
    );

    let list = tools["list_dir"].as_ref();
    let r = call(list, root, json!({"depth": 5})).await;
    assert!(r.success, "{r:?}");
    let entries: Vec<&str> = r.content.lines().filter(|l| !l.starts_with('(')).collect();
    assert_eq!(
        entries,
        [
            ".config/",
            "abs",
            "cfg",
            "klink",
            "lnk",
            "project/",
            "project/main.rs"
        ],
        "{r:?}"
    );
    for path in [
        ".ssh",
        ".aws",
        ".config/aintern",
        "lnk",
        "cfg/aintern",
        "abs",
    ] {
        let r = call(list, root, json!({ "path": path })).await;
        refused(&r, &format!("list_dir {path}"));
        assert!(!r.content.contains("id_rsa") && !r.content.contains("credentials"));
    }
}

#[tokio::test]
async fn secrets_are_never_written_or_edited() {
    let (home, tools) = fake_home();
    let root = home.path();
    let (write, edit) = (tools["write_file"].as_ref(), tools["edit_file"].as_ref());
    for path in [
        ".ssh/authorized_keys",
        "lnk/authorized_keys",
        "./project/../.ssh/authorized_keys",
        ".ssh/id_rsa",
        "klink",
        ".config/aintern/permissions.json",
        "cfg/aintern/permissions.json",
        "abs/credentials",
    ] {
        let r = call(
            write,
            root,
            json!({"path": path, "content": "ssh-ed25519 AAAA attacker"}),
        )
        .await;
        refused(&r, &format!("write_file {path}"));
    }
    for path in [
        ".ssh/id_rsa",
        "klink",
        "lnk/id_rsa",
        ".config/aintern/permissions.json",
        "cfg/aintern/permissions.json",
        ".aws/credentials",
    ] {
        let r = call(
            edit,
            root,
            json!({"path": path, "search": "secret", "replace": "always allow"}),
        )
        .await;
        refused(&r, &format!("edit_file {path}"));
    }
    secrets_untouched(root);
    // No temporary file was left in a secret folder either.
    let names: Vec<_> = std::fs::read_dir(root.join(".ssh"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["id_rsa"]);
    // Ordinary files are still written and edited.
    let r = call(
        write,
        root,
        json!({"path": "project/new.rs", "content": "x"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    let r = call(
        edit,
        root,
        json!({"path": "project/new.rs", "search": "x", "replace": "y"}),
    )
    .await;
    assert!(r.success, "{r:?}");
}

/// A secret location that does not exist yet (`~/.config/gh`, `~/.kube`, `~/.netrc`) is
/// not created — by its name, through a link, or through a folder made on the way.
#[tokio::test]
async fn secret_locations_that_do_not_exist_yet_are_never_created() {
    let (home, tools) = fake_home();
    let root = home.path();
    let write = tools["write_file"].as_ref();
    for path in [
        ".config/gh/hosts.yml",
        "cfg/gh/hosts.yml",
        "project/../.config/gh/hosts.yml",
        ".kube/config",
        ".netrc",
        ".docker/config.json",
        "lnk/new_key",
    ] {
        let r = call(write, root, json!({"path": path, "content": "token"})).await;
        refused(&r, &format!("write_file {path}"));
    }
    for made in [".config/gh", ".kube", ".netrc", ".docker", ".ssh/new_key"] {
        assert!(!root.join(made).exists(), "{made} was created");
    }
    // A link to where a secret folder will be: writing through it makes nothing.
    symlink(".gnupg", root.join("later")).unwrap();
    let r = call(
        write,
        root,
        json!({"path": "later/private.key", "content": "x"}),
    )
    .await;
    assert!(!r.success, "{r:?}");
    assert!(!root.join(".gnupg").exists());
    secrets_untouched(root);
}

/// A folder swapped, while the tools run, between an ordinary folder and a link into
/// `.ssh` (a link that stays inside the workspace, which opening beneath the workspace
/// allows): the key is never read, and nothing is ever written into `.ssh`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_link_into_a_secret_reaches_nothing() {
    let (home, tools) = fake_home();
    let root = home.path();
    let swapped = root.join("d");
    let made: Make = |p| {
        std::fs::create_dir(p).unwrap();
        std::fs::write(p.join("id_rsa"), "inside\n").unwrap();
    };
    made(&swapped);
    let (stop, handle) = swapper(swapped, ".ssh".into(), made);
    let (read, write) = (tools["read_file"].as_ref(), tools["write_file"].as_ref());
    let mut seen_inside = 0;
    for i in 0..20_000 {
        if i >= 800 && seen_inside > 0 {
            break;
        }
        let r = call(read, root, json!({"path": "d/id_rsa"})).await;
        assert!(!r.content.contains(MARKER), "the key leaked: {r:?}");
        seen_inside += usize::from(r.content.contains("inside"));
        if i < 500 {
            call(
                write,
                root,
                json!({"path": format!("d/new{i}"), "content": "x"}),
            )
            .await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    handle.join().unwrap();
    assert!(seen_inside > 0, "no read ever succeeded");
    let names: Vec<_> = std::fs::read_dir(root.join(".ssh"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["id_rsa"], "written into .ssh");
    secrets_untouched(root);
}

/// The permission subjects of every path tool: the path's form and where it leads through
/// links, so `deny read_file secret/*` refuses `lnk/key` (`lnk -> secret`) and `klink`
/// (`klink -> secret/key`), and an allow pattern must cover both.
#[tokio::test]
async fn permission_subjects_follow_links() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = ws.path();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join("secret/key"), "k").unwrap();
    std::fs::write(root.join("plain.txt"), "p").unwrap();
    symlink("secret", root.join("lnk")).unwrap();
    symlink("secret/key", root.join("klink")).unwrap();
    symlink("../secret", root.join("docs/lnk")).unwrap();
    symlink(".git", root.join("gitlink")).unwrap();
    symlink(outside.path(), root.join("out")).unwrap();
    let tools: BTreeMap<String, Arc<dyn Tool>> = tools::builtin_tools()
        .into_iter()
        .map(|t| (t.definition().id.clone(), t))
        .collect();
    let subjects = |tool: &str, params: Value| tools[tool].assess(&params, Some(root)).subjects;
    let of = |list: &[&str]| PermissionSubjects::of(list.iter().map(|s| s.to_string()));
    for tool in [
        "read_file",
        "list_dir",
        "search_files",
        "write_file",
        "edit_file",
        "git_diff",
    ] {
        let with = |path: &str| {
            let mut params = json!({"path": path, "content": "", "search": "a", "replace": "b"});
            if tool == "search_files" {
                params["pattern"] = json!("x");
            }
            subjects(tool, params)
        };
        assert_eq!(with("lnk/key"), of(&["lnk/key", "secret/key"]), "{tool}");
        assert_eq!(with("./lnk//key"), of(&["lnk/key", "secret/key"]), "{tool}");
        assert_eq!(with("klink"), of(&["klink", "secret/key"]), "{tool}");
        assert_eq!(with("lnk"), of(&["lnk", "secret"]), "{tool}");
        assert_eq!(
            with("docs/lnk/key"),
            of(&["docs/lnk/key", "secret/key"]),
            "{tool}"
        );
        // A file not made yet, through a link: its folder's place and its name.
        assert_eq!(
            with("lnk/new.txt"),
            of(&["lnk/new.txt", "secret/new.txt"]),
            "{tool}"
        );
        assert_eq!(with("plain.txt"), of(&["plain.txt"]), "{tool}");
        assert_eq!(with("missing/f.txt"), of(&["missing/f.txt"]), "{tool}");
        // Leading outside or climbing out: the form only.
        assert_eq!(with("out/x"), of(&["out/x"]), "{tool}");
        assert_eq!(with("../x"), of(&["../x"]), "{tool}");
    }
    // Without a path, the defaults.
    assert_eq!(subjects("list_dir", json!({})), PermissionSubjects::none());
    assert_eq!(
        subjects("search_files", json!({"pattern": "x"})),
        of(&["x"])
    );
    // A link cannot make a sensitive file look ordinary.
    let risk = tools["write_file"]
        .assess(
            &json!({"path": "gitlink/hooks/pre-commit", "content": ""}),
            Some(root),
        )
        .risk;
    assert_eq!(risk, RiskLevel::High);

    // Through the permission manager: deny matches either subject; allow needs both.
    let verdict = |settings: ToolPermissionSettings, path: &'static str| {
        let read = Arc::clone(&tools["read_file"]);
        let root = root.to_path_buf();
        async move {
            let pm = DefaultPermissionManager::in_memory();
            pm.set_tool_permissions("read_file", settings)
                .await
                .unwrap();
            let params = json!({ "path": path });
            // Rated above safe, so that the patterns decide.
            let mut c = tool_call("read_file", params.clone(), RiskLevel::Medium);
            c.permission_subjects = Some(read.assess(&params, Some(&root)).subjects);
            let r = pm.check_permission(Uuid::new_v4(), &c).await.unwrap();
            (r.is_allowed, r.requires_approval)
        }
    };
    let deny = || {
        ToolPermissionSettings::default()
            .with_denied_patterns(vec!["secret/*".into()])
            .with_allowed_patterns(vec!["*".into()])
    };
    for path in ["secret/key", "lnk/key", "klink", "docs/lnk/key"] {
        assert_eq!(
            verdict(deny(), path).await,
            (false, false),
            "{path} not denied"
        );
    }
    assert_eq!(verdict(deny(), "plain.txt").await, (true, false));
    let allow_docs =
        || ToolPermissionSettings::default().with_allowed_patterns(vec!["docs/*".into()]);
    assert_eq!(verdict(allow_docs(), "docs/a.md").await, (true, false));
    assert_eq!(
        verdict(allow_docs(), "docs/lnk/key").await,
        (false, true),
        "allowed through a link"
    );
}
