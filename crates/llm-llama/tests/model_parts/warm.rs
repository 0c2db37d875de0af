//! Saved states (warm resume across processes) and prompt-lookup drafting, with the real
//! model. Each `LlamaLlm` has its own worker and context: a second one loaded from the
//! same file is what a new process sees.

use super::*;
use core_models::SessionKey;
use std::os::unix::fs::PermissionsExt;

pub(super) fn keeping(path: PathBuf, dir: &std::path::Path) -> LlamaConfig {
    LlamaConfig {
        state_dir: Some(dir.to_path_buf()),
        ..config(path)
    }
}

pub(super) fn conversation(turns: &[(&str, &str)], next: &str) -> Vec<ChatMessage> {
    // A system prompt as long as an agent's, so that the new turn is a small part.
    let mut messages = vec![ChatMessage::system(
        "You are a helpful assistant working in a folder of files. Answer in plain words, \
         briefly and exactly. When you do not know something, say so rather than guess. \
         Prefer short sentences. Do not repeat the question. Never invent file names, \
         numbers or quotations. When asked about a planet, give its place from the sun, \
         its size compared with the Earth, and one fact about its atmosphere or surface. \
         Keep each answer under sixty words unless asked for more, and never use lists \
         when one sentence will do. Be friendly, but do not add greetings or sign-offs.",
    )];
    for (user, assistant) in turns {
        messages.push(ChatMessage::user(*user));
        messages.push(ChatMessage::assistant(*assistant));
    }
    messages.push(ChatMessage::user(next));
    messages
}

pub(super) fn in_session(messages: Vec<ChatMessage>, key: &SessionKey) -> LlmRequest {
    request(messages, greedy(24)).with_session(Some(key.clone()))
}

/// The first request of a session in a "process", its reply saved with `keep_session`.
async fn first_process(
    path: &std::path::Path,
    dir: &std::path::Path,
    key: &SessionKey,
) -> Vec<ChatMessage> {
    let llm = LlamaLlm::load(keeping(path.to_path_buf(), dir)).unwrap();
    let first = conversation(&[], "Tell me about the planet Mars in two sentences.");
    let (reply, _) = generate(&llm, in_session(first.clone(), key)).await;
    assert!(llm.keep_session(key).await.unwrap(), "a state is saved");
    let mut next = first;
    next.push(ChatMessage::assistant(reply.concat()));
    next.push(ChatMessage::user("And what about Venus?"));
    next
}

#[tokio::test]
async fn a_new_process_resumes_from_the_saved_state_and_answers_as_before() {
    let Some(path) = model_path() else { return };
    let dir = tempfile::tempdir().unwrap();
    let key = SessionKey::new("resume-test").unwrap();
    let next = first_process(&path, dir.path(), &key).await;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let entry = entry.unwrap();
        let mode = entry.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{:?}", entry.file_name());
    }

    // Cold: another process without the state.
    let cold = LlamaLlm::load(config(path.clone())).unwrap();
    let (cold_reply, cold_usage) = generate(&cold, in_session(next.clone(), &key)).await;
    assert_eq!(cold_usage.prompt_tokens_evaluated, cold_usage.prompt_tokens);

    // Warm: a new process with the state evaluates only what is new, and answers the same.
    let warm = LlamaLlm::load(keeping(path.clone(), dir.path())).unwrap();
    let (warm_reply, usage) = generate(&warm, in_session(next.clone(), &key)).await;
    assert!(
        usage.prompt_tokens_evaluated * 100 <= usage.prompt_tokens * 15,
        "evaluated {} of {}",
        usage.prompt_tokens_evaluated,
        usage.prompt_tokens
    );
    assert_eq!(warm_reply.concat(), cold_reply.concat());

    // Another session's request does not load this one's state.
    let other = LlamaLlm::load(keeping(path, dir.path())).unwrap();
    let stranger = SessionKey::new("someone-else").unwrap();
    let (_, usage) = generate(&other, in_session(next, &stranger)).await;
    assert_eq!(usage.prompt_tokens_evaluated, usage.prompt_tokens);

    // Removing the session's state leaves nothing behind.
    assert!(llm_llama::remove_session_state(dir.path(), &key).unwrap() >= 2);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A way to spoil a saved sequence file (or its manifest, beside it).
pub(super) type Damage = fn(&std::path::Path);

/// A byte in the middle of `file` changed.
pub(super) fn flip_a_byte(file: &std::path::Path) {
    let mut bytes = std::fs::read(file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x5a;
    std::fs::write(file, bytes).unwrap();
}

/// `file` cut to a third, as a write killed midway leaves it.
pub(super) fn cut_short(file: &std::path::Path) {
    let bytes = std::fs::read(file).unwrap();
    std::fs::write(file, &bytes[..bytes.len() / 3]).unwrap();
}

#[tokio::test]
async fn a_damaged_or_foreign_state_is_ignored_and_the_prompt_evaluated_in_full() {
    let Some(path) = model_path() else { return };
    let key = SessionKey::new("damaged-test").unwrap();
    let cold = LlamaLlm::load(config(path.clone())).unwrap();
    let mut expected = None;
    let damages: [(&str, Damage); 5] = [
        ("a flipped byte", flip_a_byte),
        ("a cut file", cut_short),
        ("garbage", |file| {
            std::fs::write(file, vec![0xffu8; 4096]).unwrap()
        }),
        ("a damaged manifest", |file| {
            let manifest = file.with_extension("kv.json");
            std::fs::write(manifest, b"{\"format\": 1, \"identity\":").unwrap();
        }),
        ("another model's state", |file| {
            let manifest = file.with_extension("kv.json");
            let text = std::fs::read_to_string(&manifest).unwrap();
            let changed = text.replacen("\"model_size\":", "\"model_size\":1", 1);
            assert_ne!(text, changed);
            std::fs::write(manifest, changed).unwrap();
        }),
    ];
    for (what, damage) in damages {
        let dir = tempfile::tempdir().unwrap();
        let next = first_process(&path, dir.path(), &key).await;
        let expected = match &expected {
            Some(reply) => String::clone(reply),
            None => {
                let (reply, _) = generate(&cold, in_session(next.clone(), &key)).await;
                expected.insert(reply.concat()).clone()
            }
        };
        damage(&dir.path().join(format!("{key}.kv0")));
        let warm = LlamaLlm::load(keeping(path.clone(), dir.path())).unwrap();
        let (reply, usage) = generate(&warm, in_session(next, &key)).await;
        assert!(
            usage.prompt_tokens_evaluated * 100 > usage.prompt_tokens * 50,
            "{what}: evaluated {} of {}: the damaged sequence was used",
            usage.prompt_tokens_evaluated,
            usage.prompt_tokens
        );
        assert_eq!(reply.concat(), expected, "{what}: the reply changed");
    }
}

/// Drafting never changes a greedy reply: token for token the reply of plain decoding
/// with the same (8-bit) cache, on copies, edits and free text.
#[tokio::test]
async fn drafting_never_changes_a_greedy_reply() {
    let Some(path) = model_path() else { return };
    let plain = LlamaLlm::load(LlamaConfig {
        kv_cache_q8: true,
        ..config(path.clone())
    })
    .unwrap();
    let drafting = LlamaLlm::load(LlamaConfig {
        speculative: true,
        ..config(path)
    })
    .unwrap();
    let file = "fn main() {\n    let names = vec![\"ada\", \"grace\", \"linus\"];\n    for name in &names {\n        println!(\"hello, {name}\");\n    }\n}\n";
    let prompts = [
        format!("Repeat this file exactly:\n{file}"),
        format!("Here is main.rs:\n{file}\nRewrite it with the names in upper case."),
        format!("Rename `names` to `people` in this code and show the whole file:\n{file}"),
        "Copy this sentence three times: the quick brown fox jumps over the lazy dog.".into(),
        "Write a short poem about the sea.".into(),
        "What is the capital of France? Explain briefly.".into(),
        "List the days of the week.".into(),
        "Count from one to twenty in words.".into(),
        "Tell me a story about a robot who learns to paint.".into(),
        "Give three tips for writing clear code.".into(),
        "Translate 'good morning, how are you' into French and Spanish.".into(),
        "Write the alphabet twice, separated by commas.".into(),
    ];
    let mut drafted_faster = 0;
    for prompt in &prompts {
        let messages = vec![ChatMessage::user(prompt.as_str())];
        let (a, ua) = generate(&plain, request(messages.clone(), greedy(64))).await;
        let (b, ub) = generate(&drafting, request(messages, greedy(64))).await;
        assert_eq!(a.concat(), b.concat(), "the reply to {prompt:?} changed");
        assert_eq!(ua.generated_tokens, ub.generated_tokens);
        if ub.generation_time < ua.generation_time {
            drafted_faster += 1;
        }
    }
    eprintln!(
        "drafting was faster on {drafted_faster} of {} prompts",
        prompts.len()
    );
}

/// The same under a grammar (a forced call in several templates' call languages): the
/// sampler checks each draft token against the grammar as it would a sampled one.
#[tokio::test]
async fn drafting_never_changes_a_grammar_held_reply() {
    let Some(path) = model_path() else { return };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/templates");
    for file in [
        "Qwen3-Coder.jinja",
        "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
        "Qwen-Qwen3-0.6B.jinja",
        "moonshotai-Kimi-K2.jinja",
    ] {
        let source = std::fs::read_to_string(dir.join(file)).unwrap();
        let mut replies = Vec::new();
        for speculative in [false, true] {
            let llm = LlamaLlm::load(LlamaConfig {
                chat_template: Some(source.clone()),
                speculative,
                kv_cache_q8: true,
                ..config(path.clone())
            })
            .unwrap();
            let req = request(
                vec![ChatMessage::user("Read notes.txt and tell me what it says")],
                greedy(96),
            )
            .with_tools(vec![super::read_file_tool()])
            .with_tool_choice(core_models::ToolChoice::Tool("read_file".into()));
            replies.push(generate(&llm, req).await.0.concat());
        }
        assert_eq!(replies[0], replies[1], "{file}: drafting changed the reply");
    }
}
