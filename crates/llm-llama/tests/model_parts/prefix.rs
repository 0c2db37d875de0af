//! The prefix cache with the real model: the state of a prompt's fixed start (its system
//! message) saved by one process and restored by the next, whatever the conversation
//! after it; replies the same as a cold start's; damaged and foreign files ignored; a
//! session's own state still first. Each `LlamaLlm` is a "process" of its own.

use super::*;
use core_models::SessionKey;
use std::os::unix::fs::PermissionsExt;

fn with_prefixes(path: PathBuf, dir: &std::path::Path) -> LlamaConfig {
    LlamaConfig {
        prefix_dir: Some(dir.to_path_buf()),
        ..config(path)
    }
}

/// A system message as long as an agent's, then one user message.
fn asking(question: &str) -> LlmRequest {
    let system = super::warm::conversation(&[], "")[0].clone();
    let mut long = system.content.to_string();
    long.push_str(
        " You work in a folder of plain text notes about a small garden: what was planted, \
         when it was watered, which plants grew well and which did not. Quote the notes \
         when they answer the question, and say which note you quote. If two notes \
         disagree, say so and give both. Dates are written as day, month and year.",
    );
    request(
        vec![ChatMessage::system(long), ChatMessage::user(question)],
        greedy(24),
    )
}

/// The prefix files in `dir`: (manifests, sequence files).
fn prefix_files(dir: &std::path::Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut found = (Vec::new(), Vec::new());
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("prefix-") {
            continue;
        }
        if name.ends_with(".kv.json") {
            found.0.push(path);
        } else if name.ends_with(".kv0") {
            found.1.push(path);
        }
    }
    found
}

#[tokio::test]
async fn a_new_process_restores_the_prefix_another_saved_and_answers_as_a_cold_start() {
    let Some(path) = model_path() else { return };
    let dir = tempfile::tempdir().unwrap();
    let first = LlamaLlm::load(with_prefixes(path.clone(), dir.path())).unwrap();
    let (_, usage) = generate(&first, asking("Which plants grew well?")).await;
    assert_eq!(usage.prompt_tokens_evaluated, usage.prompt_tokens);
    drop(first);
    let (manifests, sequences) = prefix_files(dir.path());
    assert_eq!(
        (manifests.len(), sequences.len()),
        (1, 1),
        "one prefix kept"
    );
    for file in manifests.iter().chain(&sequences) {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{file:?}");
    }
    let found = llm_llama::prefix_states(dir.path()).unwrap();
    assert_eq!(found.prefixes, 1);

    // Another question in a new process: only what follows the system message is read.
    let question = asking("When was the basil last watered?");
    let warm = LlamaLlm::load(with_prefixes(path.clone(), dir.path())).unwrap();
    let (warm_reply, usage) = generate(&warm, question.clone()).await;
    assert!(
        usage.prompt_tokens_evaluated * 100 <= usage.prompt_tokens * 25,
        "evaluated {} of {}",
        usage.prompt_tokens_evaluated,
        usage.prompt_tokens
    );
    assert!(usage.cached_prompt_tokens >= 64);
    // Nothing new was written for the same prefix.
    assert_eq!(prefix_files(dir.path()).0.len(), 1);

    // A cold start (no prefix kept anywhere) answers the same.
    let empty = tempfile::tempdir().unwrap();
    let cold = LlamaLlm::load(with_prefixes(path.clone(), empty.path())).unwrap();
    let (cold_reply, cold_usage) = generate(&cold, question.clone()).await;
    assert_eq!(cold_usage.prompt_tokens_evaluated, cold_usage.prompt_tokens);
    assert_eq!(warm_reply.concat(), cold_reply.concat());
    // And so does a process that keeps no prefix at all.
    let plain = LlamaLlm::load(config(path.clone())).unwrap();
    let (plain_reply, _) = generate(&plain, question).await;
    assert_eq!(plain_reply.concat(), cold_reply.concat());

    // Another system message: another prefix, kept beside the first (the start it shares
    // with the one the context holds is reused).
    let mut other = asking("Which plants grew well?");
    other.messages[0] =
        ChatMessage::system(format!("{} Answer in French.", other.messages[0].content));
    generate(&warm, other).await;
    assert_eq!(prefix_files(dir.path()).0.len(), 2);
    assert_eq!(llm_llama::remove_prefix_states(dir.path()).unwrap(), 2);
    assert_eq!(prefix_files(dir.path()), (Vec::new(), Vec::new()));
}

use super::warm::{cut_short, flip_a_byte, Damage};

#[tokio::test]
async fn a_damaged_or_foreign_prefix_is_ignored_then_kept_again() {
    let Some(path) = model_path() else { return };
    let question = asking("Which note is the oldest?");
    let plain = LlamaLlm::load(config(path.clone())).unwrap();
    let (expected, _) = generate(&plain, question.clone()).await;
    let damages: [(&str, Damage); 4] = [
        ("a flipped byte", flip_a_byte),
        ("a cut file", cut_short),
        ("a damaged manifest", |file| {
            std::fs::write(file.with_extension("kv.json"), b"{\"format\": 1,").unwrap();
        }),
        ("another prefix's tokens", |file| {
            let manifest = file.with_extension("kv.json");
            let text = std::fs::read_to_string(&manifest).unwrap();
            let changed = text.replacen("\"tokens\":[", "\"tokens\":[17,", 1);
            assert_ne!(text, changed);
            std::fs::write(manifest, changed).unwrap();
        }),
    ];
    for (what, damage) in damages {
        let dir = tempfile::tempdir().unwrap();
        let saving = LlamaLlm::load(with_prefixes(path.clone(), dir.path())).unwrap();
        generate(&saving, asking("Which plants grew well?")).await;
        drop(saving);
        let (_, sequences) = prefix_files(dir.path());
        damage(&sequences[0]);
        let next = LlamaLlm::load(with_prefixes(path.clone(), dir.path())).unwrap();
        let (reply, usage) = generate(&next, question.clone()).await;
        assert_eq!(
            usage.prompt_tokens_evaluated, usage.prompt_tokens,
            "{what}: the spoiled prefix was used"
        );
        assert_eq!(
            reply.concat(),
            expected.concat(),
            "{what}: the reply changed"
        );
        // The prefix evaluated again is kept again, whole: the next process uses it.
        let after = LlamaLlm::load(with_prefixes(path.clone(), dir.path())).unwrap();
        let (reply, usage) = generate(&after, question.clone()).await;
        assert!(
            usage.prompt_tokens_evaluated < usage.prompt_tokens / 2,
            "{what}: the prefix was not kept again"
        );
        assert_eq!(reply.concat(), expected.concat(), "{what}");
    }
}

#[tokio::test]
async fn a_sessions_own_state_wins_over_the_prefix() {
    let Some(path) = model_path() else { return };
    let dir = tempfile::tempdir().unwrap();
    let key = SessionKey::new("prefix-and-session").unwrap();
    let both = |path: PathBuf| LlamaConfig {
        state_dir: Some(dir.path().to_path_buf()),
        ..with_prefixes(path, dir.path())
    };
    let first = LlamaLlm::load(both(path.clone())).unwrap();
    let opening = asking("Which plants grew well?").with_session(Some(key.clone()));
    let (reply, first_usage) = generate(&first, opening.clone()).await;
    assert!(first.keep_session(&key).await.unwrap());
    drop(first);
    let mut next = opening;
    next.messages.push(ChatMessage::assistant(reply.concat()));
    next.messages.push(ChatMessage::user("And which did not?"));
    let resumed = LlamaLlm::load(both(path)).unwrap();
    let (_, usage) = generate(&resumed, next.clone()).await;
    // The whole first turn came from the session's state, not only the system message
    // (the first prompt's user message is past the prefix).
    assert!(
        usage.cached_prompt_tokens + 4 >= first_usage.prompt_tokens,
        "cached {} of {}; the first prompt had {}",
        usage.cached_prompt_tokens,
        usage.prompt_tokens,
        first_usage.prompt_tokens
    );
}
