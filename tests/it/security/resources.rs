//! Memory a call's arguments could make aintern take: `search_files` runs unasked, so a
//! pattern that compiles huge (a short counted repetition, a long alternation) is refused
//! before it is compiled big, with an error that says why.

use core_models::Tool;
use serde_json::json;
use tools::SearchFiles;

/// `(?:\w{60}){60}` is 15 bytes, and 3,600 Unicode word classes once compiled: grep-regex
/// alone would build it (its limit is 100 MiB, its cache's 1000 MiB); held to 4 MiB, it is
/// refused — at validation, before anyone is asked, and when run.
#[tokio::test]
async fn a_pattern_that_compiles_huge_is_refused_in_words() {
    let search = SearchFiles::default();
    let v = search.validate(&json!({"pattern": r"(?:\w{60}){60}"}));
    assert!(!v.is_valid);
    assert!(v.errors[0].contains("compiles too big"), "{:?}", v.errors);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "word\n").unwrap();
    let mut ctx = core_models::ToolExecutionContext::new(json!({"pattern": r"(?:\w{60}){60}"}));
    ctx.workspace_path = Some(dir.path().to_path_buf());
    let started = std::time::Instant::now();
    let r = search.execute(ctx).await;
    assert!(!r.success);
    assert!(
        r.error_message
            .as_deref()
            .unwrap_or_default()
            .contains("compiles too big"),
        "{r:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));

    // A long alternation is refused by its length.
    let long = (0..100_000)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join("|");
    let v = search.validate(&json!({"pattern": long}));
    assert!(v.errors[0].contains("at most 4096"), "{:?}", v.errors);
    // An everyday pattern still compiles.
    assert!(
        search
            .validate(&json!({"pattern": r"fn \w+\(|TODO"}))
            .is_valid
    );
}
