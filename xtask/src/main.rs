//! The project's maintenance tasks.
//!
//! `cargo run -p xtask -- public-api [--bless]`: list the public API of each published
//! library crate (from rustdoc's JSON output, through the `public-api` crate) and compare
//! it with the snapshot in `api/CRATE.txt`. Any difference fails — a removed or changed
//! item is a breaking change; an added one must be taken into the snapshot on purpose —
//! until `--bless` writes the new lists. scripts/test runs it, so CI fails on an
//! accidental change of the public API.

#![allow(clippy::print_stdout)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The crates whose public API is kept, each with the features it is documented with.
const CRATES: &[(&str, &str, &[&str])] = &[
    ("aintern", "aintern", &["tools", "openai", "llama-docs"]),
    ("aintern-core-models", "core_models", &[]),
    ("aintern-services-ai", "services_ai", &[]),
    ("aintern-tool-calls", "tool_calls", &[]),
    ("aintern-tools", "tools", &[]),
    ("aintern-shell-risk", "shell_risk", &[]),
    ("aintern-llm-openai", "llm_openai", &[]),
];

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
        _ => {
            eprintln!("usage: cargo run -p xtask -- public-api [--bless]");
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
    for (package, lib, features) in CRATES {
        let json = rustdoc_json(&root, &target, package, lib, features)?;
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

/// Build `package`'s rustdoc JSON with `features` and return its path.
fn rustdoc_json(
    root: &Path,
    target: &Path,
    package: &str,
    lib: &str,
    features: &[&str],
) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(root)
        .args(["rustdoc", "--quiet", "--locked", "--lib", "-p", package])
        .arg("--target-dir")
        .arg(target);
    // Listed features replace the crate's defaults; none listed: its defaults.
    if !features.is_empty() {
        command
            .arg("--no-default-features")
            .arg("--features")
            .arg(features.join(","));
    }
    // rustdoc's JSON output is unstable: allowed on the stable toolchain this way.
    command.env("RUSTC_BOOTSTRAP", "1").args([
        "--",
        "-Z",
        "unstable-options",
        "--output-format",
        "json",
    ]);
    let status = command
        .status()
        .map_err(|e| format!("cannot run cargo rustdoc: {e}"))?;
    if !status.success() {
        return Err(format!("cargo rustdoc -p {package} failed"));
    }
    Ok(target.join("doc").join(format!("{lib}.json")))
}
