//! The command lines the README and the manual show, run.
//!
//! Every `aintern …` line in a code block of README.md or docs/manual is taken:
//! - a synopsis (`[OPTIONS]`, `…`, `a|b`): its command exists and every `--flag` it names
//!   is in that command's `--help`;
//! - a concrete line: run as a user would type it (through bash, the example workspace
//!   copied in, a home of its own, no model fetched, stdin empty). It must succeed, or fail
//!   because it needs a model or a server (the error says which and how to get one); a line
//!   with a placeholder (`DIR`, `MODEL.gguf`, `ID`) may fail in words, never as bad usage.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One command line found in the documentation.
#[derive(Debug, Clone)]
struct DocLine {
    /// Where it is (file:line).
    at: String,
    /// The line as shown, without its trailing `# comment`.
    text: String,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The documentation files: the README and every chapter of the manual.
fn doc_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root.join("docs/manual"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    files.extend(chapters);
    files
}

/// The `aintern` lines of a document's code blocks (indented, or fenced without a
/// language or as shell).
fn command_lines(file: &Path) -> Vec<DocLine> {
    let text = std::fs::read_to_string(file).unwrap();
    let name = file
        .strip_prefix(root())
        .unwrap_or(file)
        .display()
        .to_string();
    let mut lines = Vec::new();
    let mut fence: Option<bool> = None; // Some(whether the fenced block is shell)
    let mut previous_blank = true;
    let mut indented = false;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") && !trimmed[3..].contains('`') {
            fence = match fence {
                Some(_) => None,
                None => {
                    let lang = trimmed.trim_start_matches('`').trim();
                    Some(matches!(lang, "" | "sh" | "bash" | "console" | "shell"))
                }
            };
            continue;
        }
        let blank = line.trim().is_empty();
        indented = !blank && line.starts_with("    ") && (previous_blank || indented)
            || (blank && indented);
        previous_blank = blank;
        let in_code = fence.unwrap_or(false) || (fence.is_none() && indented && !blank);
        if !in_code {
            continue;
        }
        let command = strip_comment(trimmed.trim_start_matches("$ "))
            .trim()
            .to_string();
        let starts = command.starts_with("aintern ") || command == "aintern";
        let piped = command.contains("| aintern ");
        if starts || piped {
            lines.push(DocLine {
                at: format!("{name}:{}", index + 1),
                text: command,
            });
        }
    }
    lines
}

/// The line without a trailing `# comment` (a `#` outside quotes, after a space).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return &line[..i],
            None => {}
        }
        previous = c;
    }
    line
}

/// The line's words outside quotes.
fn bare_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                word.push('"');
            }
            None if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            None => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// A synopsis shows a command's shape (optional parts, alternatives), not a command.
fn is_synopsis(line: &str) -> bool {
    let words = bare_words(line);
    words.iter().any(|w| {
        w.contains('[') || w.contains('…') || (w.contains('|') && w != "|" && !w.starts_with('"'))
    })
}

/// A word a reader replaces: `DIR`, `MODEL.gguf`, `FILE`, `openai:URL`, `N`, or a file of
/// their own the line names (`my.toml`, `< output.txt`) that the folder `dir` does not have.
fn has_placeholder(line: &str, dir: &Path) -> bool {
    let own_file = |w: &str| {
        let ext = w.rsplit_once('.').map_or("", |(_, e)| e);
        !w.starts_with('"')
            && !w.contains("://")
            && (1..=6).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && !dir.join(w).exists()
    };
    bare_words(line).iter().any(|w| {
        own_file(w) || {
            let value = w.rsplit([':', '=']).next().unwrap_or(w);
            let stem = value.split('.').next().unwrap_or(value);
            !stem.is_empty()
                && !w.starts_with('"')
                && stem.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        }
    })
}

/// The subcommand words of a line (`aintern sessions list …` → `sessions list`).
fn subcommand(line: &str) -> Vec<String> {
    let words = bare_words(line);
    let start = words
        .iter()
        .position(|w| w == "aintern")
        .map_or(0, |i| i + 1);
    words[start..]
        .iter()
        .take_while(|w| {
            w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && w.chars().all(|c| c.is_ascii_lowercase() || c == '-')
        })
        .take(2)
        .cloned()
        .collect()
}

fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_aintern"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The `--help` of `aintern WORDS…`, when it has one.
fn help_of(words: &[&str]) -> Option<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_aintern"))
        .args(words)
        .arg("--help")
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Check a synopsis: its command has a `--help`, and names every flag the line shows
/// (with alternatives, `show|check`, the flag of any of them).
fn check_synopsis(line: &DocLine) -> Result<(), String> {
    let words = subcommand(&line.text);
    let Some(first) = words.first() else {
        return Err("no command named".into());
    };
    let mut help = help_of(&[first]).ok_or_else(|| format!("no --help for `{first}`"))?;
    // Its subcommands named anywhere on the line (`list|show`, `check … | explain …`).
    let named: Vec<String> = bare_words(&line.text)
        .iter()
        .flat_map(|w| w.split('|').map(str::to_string).collect::<Vec<_>>())
        .filter(|w| !w.is_empty() && w != first && w.chars().all(|c| c.is_ascii_lowercase()))
        .collect();
    for word in named {
        if let Some(more) = help_of(&[first, &word]) {
            help.push_str(&more);
        }
    }
    for word in bare_words(&line.text) {
        for part in word.split(['[', ']', '|']) {
            let flag = part.split('=').next().unwrap_or(part);
            let is_flag = flag.starts_with("--") && flag.len() > 2;
            if is_flag && !help.contains(flag) {
                return Err(format!(
                    "`{flag}` is not an option of `aintern {}`",
                    words.join(" ")
                ));
            }
        }
    }
    Ok(())
}

/// How a concrete line ended.
struct Ran {
    code: Option<i32>,
    stderr: String,
    took: Duration,
}

/// A folder with the example workspace and a home of its own, where one document's lines
/// run one after the other, as a reader follows them.
fn reader_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(
        &root().join("examples/workspace"),
        &dir.path().join("examples/workspace"),
    );
    std::fs::write(dir.path().join("notes.txt"), "Buy milk. Call Bob.\n").unwrap();
    std::fs::create_dir_all(dir.path().join(".home")).unwrap();
    dir
}

/// Run a line as a user would, in `dir` (see [`reader_folder`]), with no model fetched.
fn run_line(line: &DocLine, dir: &tempfile::TempDir) -> Ran {
    let home = dir.path().join(".home");
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = Instant::now();
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&line.text)
        .current_dir(dir.path())
        .env("PATH", path)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("AINTERN_CACHE_DIR", home.join("cache/aintern"))
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let limit = Duration::from_secs(120);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use std::io::Read;
        let _ = pipe.read_to_string(&mut stderr);
    }
    Ran {
        code,
        stderr,
        took: started.elapsed(),
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Whether a failure says the line needs a model or a server that is not there, or work
/// one would have done first.
fn needs_a_model(stderr: &str) -> bool {
    let stderr = stderr.to_lowercase();
    [
        "scripts/fetch-model",
        "is not fetched",
        "cannot reach",
        "connection refused",
        "no model",
        // Work a model would have done first: a session saved, a request to undo.
        "no saved session",
        "nothing to undo",
    ]
    .iter()
    .any(|s| stderr.contains(s))
}

/// Whether a failure is clap's: the line is not a valid command line.
fn bad_usage(ran: &Ran) -> bool {
    ran.code == Some(2)
        && [
            "unexpected argument",
            "unrecognized subcommand",
            "invalid value",
            "Usage:",
        ]
        .iter()
        .any(|s| ran.stderr.contains(s))
}

/// Judge a concrete line's run in `dir`; an error says what went wrong.
fn judge(line: &DocLine, ran: &Ran, dir: &Path) -> Result<Outcome, String> {
    let tail: String = ran
        .stderr
        .lines()
        .rev()
        .take(6)
        .collect::<Vec<_>>()
        .join(" / ");
    match ran.code {
        Some(0) => Ok(Outcome::Ran),
        None => Err(format!("did not end within {} s", ran.took.as_secs())),
        _ if bad_usage(ran) => Err(format!("not a valid command line: {tail}")),
        _ if ran.stderr.contains("panicked") => Err(format!("crashed: {tail}")),
        _ if needs_a_model(&ran.stderr) => Ok(Outcome::NeedsModel),
        _ if has_placeholder(&line.text, dir) => Ok(Outcome::Placeholder),
        code => Err(format!(
            "failed (exit {code:?}) without needing a model: {tail}"
        )),
    }
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Ran,
    NeedsModel,
    Placeholder,
}

#[test]
fn every_documented_command_line_runs_or_says_it_needs_a_model() {
    let mut failures = Vec::new();
    let mut ran = Vec::new();
    let mut found = 0;
    for file in doc_files() {
        // One folder a document: its lines run in order, as a reader follows them.
        let dir = reader_folder();
        for line in command_lines(&file) {
            found += 1;
            let result = if is_synopsis(&line.text) {
                check_synopsis(&line)
            } else {
                let result = run_line(&line, &dir);
                judge(&line, &result, dir.path()).map(|o| ran.push((line.text.clone(), o)))
            };
            if let Err(e) = result {
                failures.push(format!("{} `{}`: {e}", line.at, line.text));
            }
        }
    }
    assert!(found >= 40, "only {found} command lines found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let succeeded = ran.iter().filter(|(_, o)| *o == Outcome::Ran).count();
    assert!(
        succeeded >= 15,
        "only {succeeded} documented lines ran: {ran:?}"
    );
}

#[test]
fn the_line_reader_tells_synopses_placeholders_and_comments() {
    assert!(is_synopsis("aintern undo [--session ID] [--to N]"));
    assert!(is_synopsis("aintern sessions list|show ID|rm ID…"));
    assert!(!is_synopsis("echo 'a | b' | aintern parse --format hermes"));
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(has_placeholder(
        "aintern run --backend llama:MODEL.gguf \"x\"",
        here
    ));
    assert!(has_placeholder("aintern run --workspace DIR \"x\"", here));
    assert!(has_placeholder("aintern parse < output.txt", here));
    assert!(!has_placeholder("aintern parse < Cargo.toml", here));
    assert!(!has_placeholder(
        "aintern run --workspace src \"READ IT\"",
        here
    ));
    assert_eq!(
        strip_comment("aintern chat   # a conversation"),
        "aintern chat   "
    );
    assert_eq!(
        strip_comment("aintern run \"is # a hash\""),
        "aintern run \"is # a hash\""
    );
    assert_eq!(
        subcommand("aintern sessions list --json"),
        vec!["sessions", "list"]
    );
    let ran = Ran {
        code: Some(2),
        stderr: "error: unexpected argument '--nope' found\n\nUsage: aintern run".into(),
        took: Duration::ZERO,
    };
    let line = DocLine {
        at: "x:1".into(),
        text: "aintern run --nope DIR".into(),
    };
    assert!(
        judge(&line, &ran, here).is_err(),
        "bad usage passes even with a placeholder"
    );
}
