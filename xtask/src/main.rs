//! The project's maintenance tasks.
//!
//! `cargo run -p xtask -- public-api [--bless]`: list the public API of each published
//! library crate (from rustdoc's JSON output, through the `public-api` crate) and compare
//! it with the snapshot in `api/CRATE.txt`. Any difference fails — a removed or changed
//! item is a breaking change; an added one must be taken into the snapshot on purpose —
//! until `--bless` writes the new lists. scripts/test runs it, so CI fails on an
//! accidental change of the public API.
//!
//! `cargo run -p xtask -- check-docs`: the README is short, and every link in it, in
//! `docs/ARCHITECTURE.md` and in the manual (`docs/manual`, an mdBook) leads somewhere
//! (see [`docs`]).

#![allow(clippy::print_stdout)]

mod docs;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The crates whose public API is kept: each package with its library's name.
const CRATES: &[(&str, &str)] = &[
    ("aintern", "aintern"),
    ("aintern-core-models", "core_models"),
    ("aintern-services-ai", "services_ai"),
    ("aintern-tool-calls", "tool_calls"),
    ("aintern-tools", "tools"),
    ("aintern-shell-risk", "shell_risk"),
    ("aintern-policy", "policy"),
    ("aintern-llm-openai", "llm_openai"),
];

/// The features enabled beside every crate's defaults: the facade's documented features
/// (its `llama-docs` instead of `llama`, which would compile llama.cpp).
const FEATURES: &[&str] = &["aintern/tools", "aintern/openai", "aintern/llama-docs"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("public-api") => {
            let bless = args.iter().any(|a| a == "--bless");
            match public_api(bless) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("xtask: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("check-docs") => match docs::check(&root()) {
            Ok(problems) if problems.is_empty() => {
                println!("check-docs: the README and the manual hold together");
                ExitCode::SUCCESS
            }
            Ok(problems) => {
                for p in &problems {
                    println!("{}:{}: {}", p.file, p.line, p.what);
                }
                println!("check-docs: {} problem(s)", problems.len());
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("xtask: {e}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: cargo run -p xtask -- public-api [--bless] | check-docs");
            ExitCode::FAILURE
        }
    }
}

/// The workspace's root folder.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Compare (or with `bless`, write) every crate's snapshot; whether all matched.
fn public_api(bless: bool) -> Result<bool, String> {
    let root = root();
    // A target folder of its own: the JSON build does not disturb the normal one.
    let target = root.join("target").join("public-api");
    let mut all_match = true;
    rustdoc_json(&root, &target)?;
    for (package, lib) in CRATES {
        let json = target.join("doc").join(format!("{lib}.json"));
        // Blanket impls (`impl<T> From<T> for T`, …) say nothing about this crate.
        let api = public_api::Builder::from_rustdoc_json(&json)
            .omit_blanket_impls(true)
            .build()
            .map_err(|e| format!("{package}: cannot read rustdoc's JSON: {e}"))?;
        let current: Vec<String> = api.items().map(ToString::to_string).collect();
        let snapshot = root.join("api").join(format!("{package}.txt"));
        if bless {
            let mut text = current.join("\n");
            text.push('\n');
            std::fs::write(&snapshot, text)
                .map_err(|e| format!("cannot write {}: {e}", snapshot.display()))?;
            println!("public-api: wrote {}", snapshot.display());
            continue;
        }
        let kept = std::fs::read_to_string(&snapshot).unwrap_or_default();
        let kept: BTreeSet<&str> = kept.lines().filter(|l| !l.is_empty()).collect();
        let now: BTreeSet<&str> = current.iter().map(String::as_str).collect();
        let removed: Vec<&&str> = kept.difference(&now).collect();
        let added: Vec<&&str> = now.difference(&kept).collect();
        if removed.is_empty() && added.is_empty() {
            println!("public-api: {package}: {} items, unchanged", now.len());
            continue;
        }
        all_match = false;
        println!("public-api: {package} differs from api/{package}.txt");
        for item in &removed {
            println!("  - {item}    (removed or changed: a breaking change)");
        }
        for item in &added {
            println!("  + {item}");
        }
    }
    if !all_match {
        println!(
            "public-api: if the change is meant, take it into the snapshots with: cargo run -p xtask -- public-api --bless"
        );
    }
    Ok(all_match)
}

/// Build every crate's rustdoc JSON in one `cargo doc` (their dependencies are checked
/// once, not once per crate), into `target/doc/LIB.json`.
fn rustdoc_json(root: &Path, target: &Path) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(root)
        .args(["doc", "--quiet", "--locked", "--no-deps"])
        .arg("--target-dir")
        .arg(target);
    for (package, _) in CRATES {
        command.args(["-p", package]);
    }
    command.arg("--features").arg(FEATURES.join(","));
    // rustdoc's JSON output is unstable: allowed on the stable toolchain this way.
    command
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTDOCFLAGS", "-Z unstable-options --output-format json");
    let status = command
        .status()
        .map_err(|e| format!("cannot run cargo doc: {e}"))?;
    if !status.success() {
        return Err("cargo doc (rustdoc JSON) failed".into());
    }
    Ok(())
}
