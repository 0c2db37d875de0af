//! The prompt cache in memory, with the real model: a side prompt (a decision asked
//! apart) no longer costs the conversation its cache, in this process or, saved with the
//! session, in the next; a restored state gives the reply the cache itself would have.

use super::warm::{conversation, in_session, keeping};
use super::*;
use core_models::SessionKey;

/// A side prompt asked for `key`: a long instruction of its own (as a decision's list of
/// options is), then `question`.
fn side(question: &str, key: &SessionKey) -> LlmRequest {
    request(
        vec![
            ChatMessage::system(
                "You sort requests into kinds. The kinds are: a question about a planet, a \
                 question about the weather, a question about cooking, a question about \
                 money, a question about travel, a question about health, and anything \
                 else. Reply with the kind only, in a few words, with no explanation and \
                 no full stop. When a request could be of two kinds, choose the first \
                 kind in the list that fits it.",
            ),
            ChatMessage::user(question),
        ],
        greedy(8),
    )
    .with_side_of(Some(key.clone()))
}

/// The conversation's first request, its reply, then the next request.
async fn first_turn(llm: &LlamaLlm, key: &SessionKey) -> Vec<ChatMessage> {
    let first = conversation(&[], "Tell me about the planet Mars in two sentences.");
    let (reply, _) = generate(llm, in_session(first.clone(), key)).await;
    let mut next = first;
    next.push(ChatMessage::assistant(reply.concat()));
    next.push(ChatMessage::user("And what about Venus?"));
    next
}

fn share(usage: &LlmUsage) -> f64 {
    usage.prompt_tokens_evaluated as f64 / usage.prompt_tokens.max(1) as f64
}

#[tokio::test]
async fn a_side_prompt_does_not_cost_the_conversation_its_cache() {
    let Some(path) = model_path() else { return };
    let key = SessionKey::new("stash-test").unwrap();
    let stashing = LlamaLlm::load(config(path.clone())).unwrap();
    let without = LlamaLlm::load(LlamaConfig {
        prompt_cache_bytes: 0,
        ..config(path.clone())
    })
    .unwrap();
    let mut replies = Vec::new();
    let mut usages = Vec::new();
    for llm in [&stashing, &without] {
        let next = first_turn(llm, &key).await;
        generate(llm, side("Is it warm on Mars?", &key)).await;
        let (reply, usage) = generate(llm, in_session(next, &key)).await;
        replies.push(reply.concat());
        usages.push(usage);
    }
    // With the stash the conversation's state comes back: only the new turn is evaluated.
    assert!(share(&usages[0]) <= 0.15, "{:?}", usages[0]);
    // Without, the side prompt took its place.
    assert!(share(&usages[1]) >= 0.8, "{:?}", usages[1]);

    // The same reply as when nothing came between the turns (the cache itself reused).
    let direct = LlamaLlm::load(config(path.clone())).unwrap();
    let next = first_turn(&direct, &key).await;
    let (reply, usage) = generate(&direct, in_session(next, &key)).await;
    assert_eq!(replies[0], reply.concat());
    assert_eq!(
        usages[0].prompt_tokens_evaluated,
        usage.prompt_tokens_evaluated
    );

    // And the side prompt's own state comes back for the next side prompt.
    let (_, again) = generate(&stashing, side("Can I cook rice on Venus?", &key)).await;
    assert!(share(&again) <= 0.3, "{again:?}");
}

#[tokio::test]
async fn a_sessions_side_states_are_saved_with_it_and_no_other_sessions() {
    use std::os::unix::fs::PermissionsExt;
    let Some(path) = model_path() else { return };
    let dir = tempfile::tempdir().unwrap();
    let key = SessionKey::new("stash-saved").unwrap();
    let other = SessionKey::new("stash-other").unwrap();
    let next = {
        let llm = LlamaLlm::load(keeping(path.clone(), dir.path())).unwrap();
        let next = first_turn(&llm, &key).await;
        generate(&llm, side("Is it warm on Mars?", &key)).await;
        // Another session's side prompt, asked in between: kept in memory, not in this
        // session's files.
        generate(&llm, side("Where do I change money in Rome?", &other)).await;
        assert!(llm.keep_session(&key).await.unwrap());
        next
    };
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(format!("{key}.kv.json"))).unwrap())
            .unwrap();
    let entries = manifest["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "the conversation and its side prompt");
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let entry = entry.unwrap();
        let mode = entry.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{:?}", entry.file_name());
        assert!(
            entry
                .file_name()
                .to_string_lossy()
                .starts_with(key.as_str()),
            "{:?}",
            entry.file_name()
        );
    }

    // A new process: the side prompt first, as a decision comes first, then the
    // conversation; each finds its own state.
    let llm = LlamaLlm::load(keeping(path.clone(), dir.path())).unwrap();
    let (_, side_usage) = generate(&llm, side("Is it windy on Venus?", &key)).await;
    assert!(share(&side_usage) <= 0.3, "{side_usage:?}");
    let (_, usage) = generate(&llm, in_session(next, &key)).await;
    assert!(share(&usage) <= 0.15, "{usage:?}");
}
