//! Cache affinity against the scripted server: a session's key as `prompt_cache_key` (and
//! the field dropped where refused) and in a configured header; llama-server's slots
//! chosen idle-first (from `GET /slots`, else from the key), saved as soon as a session's
//! reply ends and restored before a request unless its slot ran nothing since.

use super::{collect, config, connect, request, text};
use core_models::{ChatMessage, LlmChunk, LlmRequest, LlmService, SessionKey};
use futures::StreamExt;
use llm_openai::ApiKey;
use serde_json::{json, Value};
use test_support::stub_server::{content_event, StubEvent, StubReply, StubRequest, StubServer};

fn key(text: &str) -> SessionKey {
    SessionKey::new(text).unwrap_or_else(|| panic!("not a session key: {text}"))
}

/// A new conversation of `session`.
fn fresh(session: &SessionKey) -> LlmRequest {
    request("hi").with_session(Some(session.clone()))
}

/// A conversation of `session` the model already answered (as when a session resumes).
fn resumed(session: &SessionKey) -> LlmRequest {
    LlmRequest::new(vec![
        ChatMessage::user("hi"),
        ChatMessage::assistant("Hello."),
        ChatMessage::user("and now?"),
    ])
    .with_session(Some(session.clone()))
}

fn chats(server: &StubServer) -> Vec<StubRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/chat/completions"))
        .collect()
}

/// The paths of the `POST`s received (chats and slot actions), in order.
fn post_paths(server: &StubServer) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.path)
        .collect()
}

/// Slot actions (save, restore).
fn slot_calls(server: &StubServer) -> Vec<StubRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.starts_with("/slots"))
        .collect()
}

/// How many times the slots' state was asked for.
fn slot_listings(server: &StubServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path == "/slots")
        .count()
}

/// llama-server's `GET /slots` for `total` slots, the `busy` ones processing.
fn listing(total: u64, busy: &[u64]) -> Value {
    Value::Array(
        (0..total)
            .map(|id| json!({"id": id, "n_ctx": 4096, "is_processing": busy.contains(&id), "params": {}}))
            .collect(),
    )
}

/// llama-server's `GET /slots` for `total` slots, none busy, each with the last task it
/// ran: `tasks[id]`.
fn ran(tasks: &[u64]) -> Value {
    Value::Array(
        tasks
            .iter()
            .enumerate()
            .map(|(id, task)| json!({"id": id, "is_processing": false, "id_task": task}))
            .collect(),
    )
}

/// llama-server's answer to a restore of a file it does not have (it empties the slot).
fn no_file() -> StubReply {
    StubReply::status(
        400,
        r#"{"error":{"code":400,"message":"Unable to restore slot: No available space in KV cache or invalid slot save file","type":"invalid_request_error"}}"#,
    )
}

/// The file a slot action named.
fn file_of(call: &StubRequest) -> String {
    call.body["filename"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Whether `name` is one of the slot files this user and machine save states in:
/// `aintern-<owner>-<pool>-<n>.bin`, nothing of a session's key in it.
fn is_slot_file(name: &str) -> bool {
    let hex = |part: &str| part.len() == 8 && part.bytes().all(|b| b.is_ascii_hexdigit());
    let parts: Vec<&str> = name
        .strip_prefix("aintern-")
        .and_then(|rest| rest.strip_suffix(".bin"))
        .map(|rest| rest.split('-').collect())
        .unwrap_or_default();
    matches!(parts.as_slice(), [owner, pool, n] if hex(owner) && hex(pool) && n.parse::<u32>().is_ok())
}

/// The slot the last chat request was sent to.
fn last_slot(server: &StubServer) -> u64 {
    chats(server)
        .last()
        .and_then(|c| c.body["id_slot"].as_u64())
        .unwrap_or_else(|| panic!("no slot in the last chat request"))
}

/// The server says it is llama-server, with `slots` slots when given.
fn llama_server(server: &StubServer, slots: Option<u32>) {
    server.props(json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": slots}));
}

/// A client of llama-server `server` (with `slots` slots) that pins sessions and saves
/// their slots.
async fn saving_client(server: &StubServer, slots: u32) -> llm_openai::OpenAiLlm {
    llama_server(server, Some(slots));
    let mut c = config(server);
    c.pin_slots = true;
    c.save_slots = true;
    connect(c).await
}

/// A client of llama-server `server` (with `slots` slots) that pins sessions.
async fn pinning_client(server: &StubServer, slots: u32) -> llm_openai::OpenAiLlm {
    llama_server(server, Some(slots));
    let mut c = config(server);
    c.pin_slots = true;
    connect(c).await
}

/// A completed generation: no error, the reply's text.
async fn ask(llm: &llm_openai::OpenAiLlm, request: LlmRequest) -> String {
    let (chunks, error) = collect(llm, request).await;
    assert_eq!(error, None);
    text(&chunks)
}

#[tokio::test]
async fn the_session_key_is_sent_as_prompt_cache_key() {
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"]); 3]).await;
    let session = key("9f1c2e-session_A");
    let llm = connect(config(&server)).await;
    ask(&llm, fresh(&session)).await;
    ask(&llm, request("no session")).await;
    let mut off = config(&server);
    off.prompt_cache_key = false;
    ask(&connect(off).await, fresh(&session)).await;
    let sent = chats(&server);
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0].body["prompt_cache_key"], "9f1c2e-session_A");
    assert!(
        sent[1].body.get("prompt_cache_key").is_none(),
        "no session, no key"
    );
    assert!(
        sent[2].body.get("prompt_cache_key").is_none(),
        "the setting is off"
    );
    for chat in &sent {
        assert!(chat.body.get("id_slot").is_none(), "not pinned by default");
    }
    assert!(slot_calls(&server).is_empty());
}

#[tokio::test]
async fn a_server_that_refuses_prompt_cache_key_is_asked_without_it() {
    let server = StubServer::start([
        StubReply::status(
            400,
            r#"{"error":{"message":"property 'prompt_cache_key' is unsupported","type":"invalid_request_error"}}"#,
        ),
        StubReply::text_stream(&["ok"]),
        StubReply::text_stream(&["again"]),
    ])
    .await;
    let session = key("s1");
    let llm = connect(config(&server)).await;
    assert_eq!(ask(&llm, fresh(&session)).await, "ok");
    assert_eq!(ask(&llm, fresh(&session)).await, "again");
    let sent = chats(&server);
    assert_eq!(sent.len(), 3, "one refusal, asked again once");
    assert_eq!(sent[0].body["prompt_cache_key"], "s1");
    assert!(sent[1].body.get("prompt_cache_key").is_none(), "dropped");
    assert!(sent[2].body.get("prompt_cache_key").is_none(), "remembered");
    assert!(sent[2].body.get("temperature").is_some(), "only that field");
}

#[tokio::test]
async fn the_affinity_header_carries_the_key_only_when_configured() {
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"]); 3]).await;
    let session = key("route-me-7");
    let mut c = config(&server);
    c.affinity_header = Some("X-Session-Affinity".into());
    let llm = connect(c).await;
    ask(&llm, fresh(&session)).await;
    ask(&llm, request("no session")).await;
    ask(&connect(config(&server)).await, fresh(&session)).await;
    let sent = chats(&server);
    assert_eq!(sent[0].header("x-session-affinity"), Some("route-me-7"));
    assert_eq!(sent[1].header("x-session-affinity"), None, "no session");
    assert_eq!(sent[2].header("x-session-affinity"), None, "not configured");
    assert!(
        sent[2].headers.iter().all(|(_, v)| v != "route-me-7"),
        "the key is in no other header"
    );

    // A name that is no header name is said at connect.
    let mut c = config(&server);
    c.affinity_header = Some("bad header".into());
    let error = llm_openai::OpenAiLlm::connect(c)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("affinity_header"), "{error}");
}

#[tokio::test]
async fn sessions_are_pinned_to_a_stable_slot_only_when_the_slots_are_known() {
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"]); 7]).await;
    llama_server(&server, Some(4));
    let mut pinned = config(&server);
    pinned.pin_slots = true;
    let first = connect(pinned.clone()).await;
    let second = connect(pinned.clone()).await;
    assert_eq!(first.server_info().total_slots, Some(4));
    let sessions: Vec<SessionKey> = (0..3).map(|i| key(&format!("session-{i}"))).collect();
    for session in &sessions {
        ask(&first, fresh(session)).await;
        ask(&second, fresh(session)).await;
    }
    ask(&first, request("no session")).await;
    let sent = chats(&server);
    for pair in sent[..6].chunks(2) {
        let slot = pair[0].body["id_slot"].as_u64();
        assert!(slot.is_some_and(|s| s < 4), "{slot:?}");
        assert_eq!(
            slot,
            pair[1].body["id_slot"].as_u64(),
            "the same in every client"
        );
    }
    assert!(sent[6].body.get("id_slot").is_none(), "no session, no slot");
    assert!(slot_calls(&server).is_empty(), "nothing saved unless asked");
    assert_eq!(
        slot_listings(&server),
        2,
        "a server that does not list its slots (501) is asked once per client"
    );

    // Pinning off; a llama-server that says no slot count; another server.
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"]); 3]).await;
    llama_server(&server, Some(4));
    ask(&connect(config(&server)).await, fresh(&sessions[0])).await;
    llama_server(&server, None);
    let mut c = config(&server);
    c.pin_slots = true;
    ask(&connect(c.clone()).await, fresh(&sessions[0])).await;
    let other = StubServer::start([StubReply::text_stream(&["ok"])]).await;
    c.base_url = other.url().to_string();
    ask(&connect(c).await, fresh(&sessions[0])).await;
    for chat in chats(&server).iter().chain(&chats(&other)) {
        assert!(chat.body.get("id_slot").is_none(), "{}", chat.body);
        assert_eq!(chat.body["prompt_cache_key"], "session-0");
    }
}

#[tokio::test]
async fn a_reply_is_saved_as_soon_as_it_ends_until_the_server_cannot() {
    let server = StubServer::start([
        StubReply::text_stream(&["ok"]),
        StubReply::status(
            200,
            r#"{"id_slot":1,"filename":"x","n_saved":45,"n_written":1038296}"#,
        ),
        StubReply::text_stream(&["ok"]),
        StubReply::status(500, r#"{"error":{"code":500,"message":"disk full"}}"#),
        StubReply::text_stream(&["ok"]),
        StubReply::status(
            501,
            r#"{"error":{"code":501,"message":"This server does not support slots action. Start it with `--slot-save-path`","type":"not_supported_error"}}"#,
        ),
        StubReply::text_stream(&["ok"]),
    ])
    .await;
    llama_server(&server, Some(4));
    let mut c = config(&server);
    c.pin_slots = true;
    c.save_slots = true;
    c.api_key = Some(ApiKey::new("sk-slots"));
    let llm = connect(c).await;
    let session = key("0b0f4d6c-52a2-4d1e-9a43-0f0c8c1d2e3f");
    let kept = |llm: &llm_openai::OpenAiLlm| {
        let llm = llm.clone();
        let session = session.clone();
        async move { llm.keep_session(&session).await }
    };

    // Nothing of the session ran yet: nothing saved.
    assert!(matches!(kept(&llm).await, Ok(false)));
    assert!(slot_calls(&server).is_empty());

    // A new conversation has nothing to restore; its slot is saved when the reply ends,
    // before the stream does.
    ask(&llm, fresh(&session)).await;
    let calls = slot_calls(&server);
    let slot = chats(&server)[0].body["id_slot"].as_u64().unwrap_or(99);
    assert!(slot < 4);
    assert_eq!(calls.len(), 1, "saved, no restore for a new conversation");
    assert_eq!(calls[0].path, format!("/slots/{slot}?action=save"));
    assert!(is_slot_file(&file_of(&calls[0])), "{}", calls[0].body);
    assert_eq!(
        calls[0].header("authorization"),
        Some("Bearer sk-slots"),
        "the same server, the same key"
    );
    assert!(matches!(kept(&llm).await, Ok(true)));
    assert!(matches!(kept(&llm).await, Ok(false)), "said once");

    // A failure leaves the reply whole, and is an error for the agent to log.
    assert_eq!(ask(&llm, fresh(&session)).await, "ok");
    let error = kept(&llm)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        error.contains(&format!("could not save slot {slot}")) && error.contains("disk full"),
        "{error}"
    );

    // A server without --slot-save-path: nothing saved, and never asked again.
    ask(&llm, fresh(&session)).await;
    assert!(matches!(kept(&llm).await, Ok(false)));
    ask(&llm, resumed(&key("another"))).await;
    assert_eq!(
        slot_calls(&server).len(),
        3,
        "no save nor restore after a 501"
    );
    assert_eq!(chats(&server).len(), 4);
}

#[tokio::test]
async fn a_sessions_slot_is_chosen_idle_first() {
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"]); 7]).await;
    let llm = pinning_client(&server, 4).await;
    let session = key("idle-first");

    // Every slot busy: its hash slot, where the request waits.
    server.slots(listing(4, &[0, 1, 2, 3]));
    ask(&llm, fresh(&session)).await;
    let hashed = last_slot(&server);
    let others: Vec<u64> = (0..4).filter(|&s| s != hashed).collect();
    // Its hash slot busy: the lowest idle one.
    server.slots(listing(4, &[hashed]));
    ask(&llm, fresh(&session)).await;
    assert_eq!(last_slot(&server), others[0]);
    // Every slot idle: the one it last used, before its hash slot.
    server.slots(listing(4, &[]));
    ask(&llm, fresh(&session)).await;
    assert_eq!(last_slot(&server), others[0]);
    // That one busy: its hash slot, idle.
    server.slots(listing(4, &[others[0]]));
    ask(&llm, fresh(&session)).await;
    assert_eq!(last_slot(&server), hashed);
    // Only one idle slot: that one.
    server.slots(listing(4, &[hashed, others[0], others[1]]));
    ask(&llm, fresh(&session)).await;
    assert_eq!(last_slot(&server), others[2]);
    assert_eq!(slot_listings(&server), 5, "asked before every request");

    // A state that is no list of slots: the hash slot, and asked again next time.
    server.slots(json!({"error": "odd"}));
    ask(&llm, fresh(&session)).await;
    assert_eq!(last_slot(&server), hashed);
    server.slots(listing(4, &[hashed]));
    ask(&llm, fresh(&session)).await;
    assert_eq!(last_slot(&server), others[0]);
    assert_eq!(slot_listings(&server), 7);
    assert!(slot_calls(&server).is_empty(), "nothing saved unless asked");
}

#[tokio::test]
async fn a_sessions_slot_is_restored_unless_it_ran_nothing_since_it_was_saved() {
    let saved = || StubReply::status(200, r#"{"id_slot":0,"n_saved":40}"#);
    let server = StubServer::start([
        StubReply::text_stream(&["first"]),
        saved(),
        StubReply::text_stream(&["second"]),
        saved(),
        StubReply::text_stream(&["third"]),
        saved(),
        StubReply::status(200, r#"{"id_slot":0,"n_restored":30}"#),
        StubReply::text_stream(&["fourth"]),
        StubReply::text_stream(&["other shape"]),
        saved(),
        StubReply::text_stream(&["fresh"]),
    ])
    .await;
    llama_server(&server, Some(2));
    let mut c = config(&server);
    c.pin_slots = true;
    c.save_slots = true;
    c.affinity_header = Some("X-Session-Affinity".into());
    let llm = connect(c).await;
    let (one, two) = (key("resumed-one"), key("resumed-two"));
    // The idle slot longest without a task (1). Nothing of the session was saved on this
    // machine: nothing is restored (a restore that finds no file empties the slot), and
    // the reply is saved once it ends.
    server.slots(ran(&[7, 5]));
    assert_eq!(ask(&llm, resumed(&one)).await, "first");
    let slot = 1;
    let other = 1 - slot;
    assert_eq!(last_slot(&server), slot);
    // The slot ran nothing since it was saved: no restore.
    assert_eq!(ask(&llm, resumed(&one)).await, "second");
    assert_eq!(last_slot(&server), slot);
    // Another session takes the slot (the only idle one); nothing of it was saved.
    let mut busy = listing(2, &[other]);
    busy[usize::try_from(slot).unwrap_or(0)]["id_task"] = json!(5);
    server.slots(busy);
    assert_eq!(ask(&llm, resumed(&two)).await, "third");
    assert_eq!(last_slot(&server), slot);
    // The slot ran another task since the first session's state was saved: restored
    // before its request. Its reply is not saved: the slot is busy again by the time the
    // reply ends (another request took it).
    let mut tasks = [5, 5];
    tasks[usize::try_from(slot).unwrap_or(0)] = 9;
    let mut taken = listing(2, &[slot]);
    taken[usize::try_from(slot).unwrap_or(0)]["id_task"] = json!(10);
    server.slots_in_turn([ran(&tasks), taken]);
    assert_eq!(ask(&llm, resumed(&one)).await, "fourth");
    assert_eq!(last_slot(&server), slot, "the slot it last used");
    assert!(matches!(llm.keep_session(&one).await, Ok(false)));
    // A prompt of another shape (another system prompt) is another state, in a file of
    // its own, never saved yet: not restored.
    server.slots(ran(&[20, 20]));
    let mut shaped = resumed(&one);
    shaped
        .messages
        .insert(0, ChatMessage::system("You are terse."));
    assert_eq!(ask(&llm, shaped).await, "other shape");
    assert_eq!(last_slot(&server), slot);
    // A new conversation has nothing saved to restore, and a session with no key is not
    // pinned.
    assert_eq!(ask(&llm, request("no session")).await, "fresh");

    let posts: Vec<StubRequest> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    let paths: Vec<&str> = posts.iter().map(|r| r.path.as_str()).collect();
    let restore = format!("/slots/{slot}?action=restore");
    let save = format!("/slots/{slot}?action=save");
    let chat = "/v1/chat/completions";
    assert_eq!(
        paths,
        [
            chat,
            save.as_str(),
            chat,
            save.as_str(),
            chat,
            save.as_str(),
            restore.as_str(),
            chat,
            chat,
            save.as_str(),
            chat,
        ]
    );
    for i in [1, 3, 5, 6, 9] {
        assert!(is_slot_file(&file_of(&posts[i])), "{i}: {}", posts[i].body);
    }
    assert_eq!(
        file_of(&posts[1]),
        file_of(&posts[3]),
        "one state, one file"
    );
    assert_ne!(
        file_of(&posts[1]),
        file_of(&posts[5]),
        "another session, another file"
    );
    assert_eq!(
        file_of(&posts[1]),
        file_of(&posts[6]),
        "one shape, one file"
    );
    assert_ne!(
        file_of(&posts[1]),
        file_of(&posts[9]),
        "another shape, another file"
    );
    assert_eq!(posts[6].header("x-session-affinity"), Some("resumed-one"));
    assert_eq!(
        posts[7].body["messages"].as_array().map(Vec::len),
        Some(3),
        "the request as it was"
    );
    assert!(posts[10].body.get("id_slot").is_none());
    assert!(posts.iter().all(|p| p.body != Value::Null));
}

/// Leave on this machine what an earlier process that saved `request`'s state on `server`
/// (with `slots` slots) leaves behind: a client of its own sends the request and saves
/// the slot (the server's replies to it go at the end of its queue, which is empty). The
/// requests it made are then forgotten.
async fn saved_earlier(server: &StubServer, slots: u32, request: LlmRequest) {
    let session = request
        .sent_for()
        .cloned()
        .unwrap_or_else(|| panic!("no session"));
    server.slots(ran(&vec![1; usize::try_from(slots).unwrap_or(1)]));
    server.push([
        StubReply::text_stream(&["earlier"]),
        StubReply::status(200, r#"{"id_slot":0,"n_saved":12}"#),
    ]);
    let earlier = saving_client(server, slots).await;
    assert_eq!(ask(&earlier, request).await, "earlier");
    assert!(matches!(earlier.keep_session(&session).await, Ok(true)));
    assert_eq!(slot_calls(server).len(), 1, "saved, nothing restored");
    server.forget_requests();
}

#[tokio::test]
async fn a_state_is_restored_where_this_machine_saved_it_and_not_once_found_missing() {
    let saved =
        |tokens: u32| StubReply::status(200, format!(r#"{{"id_slot":0,"n_saved":{tokens}}}"#));
    let server = StubServer::start([
        StubReply::text_stream(&["a"]),
        saved(40),
        StubReply::status(200, r#"{"id_slot":0,"n_restored":40}"#),
        StubReply::text_stream(&["b"]),
        saved(0),
        StubReply::text_stream(&["c"]),
        saved(40),
        no_file(),
        StubReply::text_stream(&["d"]),
        StubReply::text_stream(&["e"]),
        saved(40),
    ])
    .await;
    let session = key("one-per-process");
    server.slots(ran(&[3]));
    // Each step a new client, as each turn of `exec --last` is a new process.
    let step = |reply: &'static str| {
        let server = &server;
        let session = &session;
        async move {
            let llm = saving_client(server, 1).await;
            assert_eq!(ask(&llm, resumed(session)).await, reply);
            llm.keep_session(session).await
        }
    };
    // Nothing saved yet: not restored; saved.
    assert!(matches!(step("a").await, Ok(true)));
    // Saved by the process before: restored. The slot then held nothing to save (0
    // tokens): not a state to restore.
    assert!(matches!(step("b").await, Ok(false)));
    // So not restored; saved.
    assert!(matches!(step("c").await, Ok(true)));
    // The server lost the file (restarted with another save folder): the restore fails,
    // the request goes unpinned, and its reply is not found in a slot (busy again).
    server.slots_in_turn([ran(&[3]), listing(1, &[0])]);
    assert!(matches!(step("d").await, Ok(false)));
    // Found missing: not asked for again.
    server.slots(ran(&[3]));
    assert!(matches!(step("e").await, Ok(true)));
    let posts = post_paths(&server);
    let chat = "/v1/chat/completions";
    assert_eq!(
        posts,
        [
            chat,
            "/slots/0?action=save",
            "/slots/0?action=restore",
            chat,
            "/slots/0?action=save",
            chat,
            "/slots/0?action=save",
            "/slots/0?action=restore",
            chat,
            chat,
            "/slots/0?action=save",
        ]
    );
    let chats = chats(&server);
    assert!(
        chats[3].body.get("id_slot").is_none(),
        "unpinned after the failed restore"
    );
    assert_eq!(chats[4].body["id_slot"], json!(0));
}

#[tokio::test]
async fn states_share_a_bounded_pool_of_files_the_least_recently_used_reused() {
    let saved = || StubReply::status(200, r#"{"id_slot":0,"n_saved":40}"#);
    let restored = || StubReply::status(200, r#"{"id_slot":0,"n_restored":40}"#);
    let server = StubServer::start([]).await;
    let (one, two, three) = (key("pool-one"), key("pool-two"), key("pool-three"));
    server.slots(ran(&[3]));
    // Each turn a new process, whose client keeps at most 2 files on the server.
    let turn = |session: &SessionKey, replies: Vec<StubReply>| {
        let server = &server;
        let session = session.clone();
        async move {
            server.push(replies);
            llama_server(server, Some(1));
            let mut c = config(server);
            c.pin_slots = true;
            c.save_slots = true;
            c.slot_files = 2;
            let llm = connect(c).await;
            assert_eq!(ask(&llm, resumed(&session)).await, "ok");
            assert!(matches!(llm.keep_session(&session).await, Ok(true)));
        }
    };
    let ok = || StubReply::text_stream(&["ok"]);
    // Two sessions, two files; the second's state restored and saved again.
    turn(&one, vec![ok(), saved()]).await;
    turn(&two, vec![ok(), saved()]).await;
    turn(&two, vec![restored(), ok(), saved()]).await;
    // A third: the least recently used file (the first session's) is reused.
    turn(&three, vec![ok(), saved()]).await;
    // So the first session's state is gone: not restored; it takes the file now least
    // recently used (the second's).
    turn(&one, vec![ok(), saved()]).await;
    let posts = post_paths(&server);
    let (chat, save, restore) = (
        "/v1/chat/completions",
        "/slots/0?action=save",
        "/slots/0?action=restore",
    );
    assert_eq!(
        posts,
        [chat, save, chat, save, restore, chat, save, chat, save, chat, save]
    );
    let files: Vec<String> = slot_calls(&server).iter().map(file_of).collect();
    assert!(files.iter().all(|f| is_slot_file(f)), "{files:?}");
    let (first, second) = (&files[0], &files[1]);
    assert_ne!(first, second);
    assert_eq!(
        files[2..],
        [second, second, first, second].map(String::clone),
        "restored and saved where it was, then the least recently used reused"
    );
}

#[tokio::test]
async fn a_state_saved_with_one_model_is_never_restored_for_another() {
    let saved = || StubReply::status(200, r#"{"id_slot":0,"n_saved":40}"#);
    let restored = || StubReply::status(200, r#"{"id_slot":0,"n_restored":40}"#);
    let ok = || StubReply::text_stream(&["ok"]);
    let server = StubServer::start([]).await;
    let session = key("model-change");
    server.slots(ran(&[3]));
    // Each turn a new process, against the server as it then serves `model`.
    let turn = |model: &'static str, replies: Vec<StubReply>| {
        let server = &server;
        let session = session.clone();
        async move {
            server.push(replies);
            server.props(json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1, "model_path": model}));
            let mut c = config(server);
            c.pin_slots = true;
            c.save_slots = true;
            let llm = connect(c).await;
            assert_eq!(ask(&llm, resumed(&session)).await, "ok");
            assert!(matches!(llm.keep_session(&session).await, Ok(true)));
        }
    };
    turn("/m/one-q4.gguf", vec![ok(), saved()]).await;
    // Restarted with another model of the same architecture: the state the first computed
    // is not asked for, and this model's goes to a file of its own.
    turn("/m/one-q8.gguf", vec![ok(), saved()]).await;
    // Back to the first model: its own state, from its own file.
    turn("/m/one-q4.gguf", vec![restored(), ok(), saved()]).await;
    let (chat, save, restore) = (
        "/v1/chat/completions",
        "/slots/0?action=save",
        "/slots/0?action=restore",
    );
    assert_eq!(
        post_paths(&server),
        [chat, save, chat, save, restore, chat, save]
    );
    let files: Vec<String> = slot_calls(&server).iter().map(file_of).collect();
    assert!(files.iter().all(|f| is_slot_file(f)), "{files:?}");
    assert_ne!(files[0], files[1], "two models, two files");
    assert_eq!(files[2..], [files[0].clone(), files[0].clone()]);
}

#[tokio::test]
async fn a_slot_that_holds_another_reply_is_not_saved() {
    let server = StubServer::start([
        StubReply::text_stream(&["one"]),
        StubReply::text_stream(&["two"]),
        StubReply::status(200, r#"{"id_slot":0,"n_saved":12}"#),
    ])
    .await;
    let llm = saving_client(&server, 1).await;
    let session = key("fingerprint");
    // The stub's reply: 12 prompt tokens and 1 token, of which llama-server keeps 12.
    // Idle, but holding 30 tokens: another request ran there since.
    server.slots(json!([{"id": 0, "is_processing": false, "id_task": 3, "n_prompt_tokens": 30}]));
    assert_eq!(ask(&llm, fresh(&session)).await, "one");
    assert!(matches!(llm.keep_session(&session).await, Ok(false)));
    assert!(slot_calls(&server).is_empty());
    // Holding what the reply left: saved.
    server.slots(json!([{"id": 0, "is_processing": false, "id_task": 4, "n_prompt_tokens": 12}]));
    assert_eq!(ask(&llm, fresh(&session)).await, "two");
    assert!(matches!(llm.keep_session(&session).await, Ok(true)));
    let calls = slot_calls(&server);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].path, "/slots/0?action=save");
}

#[tokio::test]
async fn a_request_of_another_session_means_the_slot_no_longer_holds_the_first() {
    let bad_request = || {
        StubReply::status(
            400,
            r#"{"error":{"code":400,"message":"bad request","type":"invalid_request_error"}}"#,
        )
    };
    let server = StubServer::start([]).await;
    let (one, two, three) = (key("first-session"), key("second-session"), key("third"));
    saved_earlier(&server, 1, resumed(&two)).await;
    server.push([
        StubReply::text_stream(&["one"]),
        StubReply::status(200, r#"{"id_slot":0,"n_saved":12}"#),
        StubReply::status(200, r#"{"id_slot":0,"n_restored":30}"#),
        bad_request(),
        StubReply::status(200, r#"{"id_slot":0,"n_restored":12}"#),
        StubReply::text_stream(&["one again"]),
        StubReply::status(200, r#"{"id_slot":0,"n_saved":14}"#),
        bad_request(),
        StubReply::status(200, r#"{"id_slot":0,"n_restored":14}"#),
        StubReply::text_stream(&["one more"]),
        StubReply::status(200, r#"{"id_slot":0,"n_saved":16}"#),
    ]);
    // One slot whose last task never changes: only what this client did tells.
    server.slots(ran(&[5]));
    let llm = saving_client(&server, 1).await;
    assert_eq!(ask(&llm, fresh(&one)).await, "one");
    // The second session's state (saved by an earlier process) is restored there; its
    // request then fails.
    let (_, error) = collect(&llm, resumed(&two)).await;
    assert!(error.is_some());
    // The first session's state is restored again before its request.
    assert_eq!(ask(&llm, resumed(&one)).await, "one again");
    // A third session, nothing of it saved: nothing restored, but its request goes to the
    // slot all the same, so the first session's state is restored again after it.
    let (_, error) = collect(&llm, resumed(&three)).await;
    assert!(error.is_some());
    assert_eq!(ask(&llm, resumed(&one)).await, "one more");
    let posts = post_paths(&server);
    assert_eq!(
        posts,
        [
            "/v1/chat/completions",
            "/slots/0?action=save",
            "/slots/0?action=restore",
            "/v1/chat/completions",
            "/slots/0?action=restore",
            "/v1/chat/completions",
            "/slots/0?action=save",
            "/v1/chat/completions",
            "/slots/0?action=restore",
            "/v1/chat/completions",
            "/slots/0?action=save",
        ]
    );
}

/// A reply that reports its prompt (12 tokens, 4 of them cached) before its text pieces,
/// then waits for the reader to leave.
fn endless_reply(pieces: &[&str]) -> StubReply {
    let mut events = vec![StubEvent::Data(
        json!({"choices": [], "prompt_progress": {"total": 12, "cache": 4, "processed": 12, "time_ms": 3}})
            .to_string(),
    )];
    events.extend(pieces.iter().map(|p| content_event(p)));
    events.push(StubEvent::Hang);
    StubReply::Stream(events)
}

/// Read `request`'s reply until `pieces` text pieces came, then stop reading.
async fn read_and_stop(llm: &llm_openai::OpenAiLlm, request: LlmRequest, pieces: usize) {
    let mut stream = llm
        .generate(request)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut read = 0;
    while read < pieces {
        match stream.next().await {
            Some(Ok(LlmChunk::Text { .. })) => read += 1,
            Some(Ok(_)) => {}
            other => panic!("the reply ended early: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_reply_its_reader_stopped_is_saved_once_the_slot_holds_it() {
    let server = StubServer::start([
        endless_reply(&["a", "b", "c"]),
        StubReply::status(200, r#"{"id_slot":0,"n_saved":16}"#),
        endless_reply(&["a", "b", "c"]),
    ])
    .await;
    let llm = saving_client(&server, 1).await;
    let session = key("cut-short");
    // Read 2 pieces of a 12-token prompt's reply: the slot holds at least 13 tokens, and a
    // few more the server wrote before it noticed. Busy at first, then idle with 16.
    server.slots_in_turn([
        listing(1, &[]),
        listing(1, &[0]),
        json!([{"id": 0, "is_processing": false, "id_task": 7, "n_prompt_tokens": 16}]),
    ]);
    read_and_stop(&llm, fresh(&session), 2).await;
    assert!(matches!(llm.keep_session(&session).await, Ok(true)));
    let calls = slot_calls(&server);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].path, "/slots/0?action=save");
    assert!(is_slot_file(&file_of(&calls[0])));

    // A slot holding far more than the cut reply left ran something else since: not saved.
    server.slots(json!([{"id": 0, "is_processing": false, "id_task": 9, "n_prompt_tokens": 400}]));
    read_and_stop(&llm, fresh(&session), 2).await;
    assert!(matches!(llm.keep_session(&session).await, Ok(false)));
    assert_eq!(slot_calls(&server).len(), 1, "no second save");
}

/// How many times the slots were listed before the first chat request.
fn listings_before_chat(server: &StubServer) -> usize {
    server
        .requests()
        .iter()
        .take_while(|r| !(r.method == "POST" && r.path.ends_with("/chat/completions")))
        .filter(|r| r.method == "GET" && r.path == "/slots")
        .count()
}

/// A client of llama-server `server` (with `slots` slots) that pins sessions and saves
/// their slots, without claiming them (as a client on another machine).
async fn unclaiming_client(server: &StubServer, slots: u32) -> llm_openai::OpenAiLlm {
    llama_server(server, Some(slots));
    let mut c = config(server);
    c.pin_slots = true;
    c.save_slots = true;
    c.claim_slots = false;
    connect(c).await
}

#[tokio::test]
async fn with_slots_saved_a_request_waits_for_an_idle_slot_instead_of_queueing() {
    // Claimed slots are held until saved: the first idle one will do.
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"])]).await;
    let llm = saving_client(&server, 2).await;
    let session = key("waits-for-idle");
    server.slots_in_turn([
        listing(2, &[0, 1]),
        listing(2, &[0, 1]),
        listing(2, &[0]),
        listing(2, &[1]),
    ]);
    ask(&llm, fresh(&session)).await;
    assert_eq!(last_slot(&server), 1);
    assert_eq!(listings_before_chat(&server), 3);
}

#[tokio::test]
async fn unclaimed_a_request_waits_for_a_slot_idle_twice_instead_of_queueing() {
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"])]).await;
    let llm = unclaiming_client(&server, 2).await;
    let session = key("waits-for-idle");
    // Busy, busy, slot 1 idle (just freed: left to its session's save), idle again.
    server.slots_in_turn([
        listing(2, &[0, 1]),
        listing(2, &[0, 1]),
        listing(2, &[0]),
        listing(2, &[0]),
    ]);
    ask(&llm, fresh(&session)).await;
    assert_eq!(last_slot(&server), 1);
    assert_eq!(listings_before_chat(&server), 4);

    // Slots that go idle one at a time are never taken on their first idle listing.
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"])]).await;
    let llm = unclaiming_client(&server, 2).await;
    server.slots_in_turn([
        listing(2, &[0, 1]),
        listing(2, &[1]),
        listing(2, &[0]),
        listing(2, &[0]),
    ]);
    ask(&llm, fresh(&session)).await;
    assert_eq!(last_slot(&server), 1, "slot 0 was idle once only");
    assert_eq!(listings_before_chat(&server), 4);
}

#[tokio::test]
async fn when_every_slot_stays_busy_the_request_waits_at_its_hash_slot_after_the_timeout() {
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"]); 2]).await;
    llama_server(&server, Some(4));
    let mut c = config(&server);
    c.pin_slots = true;
    c.save_slots = true;
    c.first_token_timeout = std::time::Duration::from_millis(600);
    let llm = connect(c).await;
    let session = key("stays-busy");
    server.slots(listing(4, &[0, 1, 2, 3]));
    let started = std::time::Instant::now();
    ask(&llm, fresh(&session)).await;
    assert!(started.elapsed() >= std::time::Duration::from_millis(600));
    let hashed = last_slot(&server);
    assert!(listings_before_chat(&server) >= 4);
    // The same slot when asked without saving (pinning alone queues at once).
    let server2 = StubServer::start(vec![StubReply::text_stream(&["ok"])]).await;
    llama_server(&server2, Some(4));
    let mut c = config(&server2);
    c.pin_slots = true;
    let llm = connect(c).await;
    server2.slots(listing(4, &[0, 1, 2, 3]));
    ask(&llm, fresh(&session)).await;
    assert_eq!(last_slot(&server2), hashed);
    assert_eq!(listings_before_chat(&server2), 1);
}

#[tokio::test]
async fn after_a_failed_restore_a_reply_is_saved_only_from_the_one_slot_that_holds_it() {
    let server = StubServer::start([]).await;
    let session = key("ambiguous");
    // Saved by an earlier process, but the server lost the file since.
    saved_earlier(&server, 2, resumed(&session)).await;
    server.push([no_file(), StubReply::text_stream(&["a"])]);
    let llm = saving_client(&server, 2).await;
    // Both slots hold as many tokens as the reply: which is its slot is not known.
    let mut both = ran(&[3, 4]);
    both[0]["n_prompt_tokens"] = json!(12);
    both[1]["n_prompt_tokens"] = json!(12);
    server.slots_in_turn([ran(&[3, 4]), both]);
    assert_eq!(ask(&llm, resumed(&session)).await, "a");
    assert!(chats(&server)[0].body.get("id_slot").is_none());
    let actions: Vec<String> = slot_calls(&server).iter().map(|r| r.path.clone()).collect();
    assert_eq!(actions.len(), 1, "the restore only: {actions:?}");
    assert!(actions[0].ends_with("action=restore"));
    assert!(matches!(llm.keep_session(&session).await, Ok(false)));
}

#[tokio::test]
async fn a_cut_reply_the_server_chose_the_slot_of_is_saved_from_the_one_slot_holding_it() {
    let server = StubServer::start([]).await;
    let session = key("cut-unpinned");
    // Saved by an earlier process, but the server lost the file since.
    saved_earlier(&server, 2, resumed(&session)).await;
    server.push([
        no_file(),
        endless_reply(&["a", "b", "c"]),
        StubReply::status(200, r#"{"id_slot":1,"n_saved":16}"#),
    ]);
    let llm = saving_client(&server, 2).await;
    // The restore fails: the request goes unpinned. Once the reader stops, the slots
    // busy, then slot 1 idle holding the cut reply (16 of a 12-token prompt and 2 pieces
    // read), slot 0 holding something else.
    server.slots_in_turn([
        ran(&[3, 4]),
        listing(2, &[0, 1]),
        json!([
            {"id": 0, "is_processing": false, "id_task": 8, "n_prompt_tokens": 300},
            {"id": 1, "is_processing": false, "id_task": 9, "n_prompt_tokens": 16}
        ]),
    ]);
    read_and_stop(&llm, resumed(&session), 2).await;
    assert!(matches!(llm.keep_session(&session).await, Ok(true)));
    assert!(chats(&server)[0].body.get("id_slot").is_none());
    let calls = slot_calls(&server);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[0].path.ends_with("action=restore"));
    assert_eq!(calls[1].path, "/slots/1?action=save");
    assert!(is_slot_file(&file_of(&calls[1])));
}

#[tokio::test]
async fn a_failed_save_is_reported_though_a_later_reply_of_the_session_was_saved() {
    let server = StubServer::start([
        StubReply::text_stream(&["the reply"]),
        StubReply::status(
            400,
            r#"{"error":{"code":400,"message":"failed to save","type":"invalid_request_error"}}"#,
        ),
        StubReply::text_stream(&["answer"]),
        StubReply::status(200, r#"{"id_slot":0,"n_saved":12}"#),
    ])
    .await;
    let llm = saving_client(&server, 1).await;
    let session = key("failed-then-saved");
    server.slots(ran(&[3]));
    assert_eq!(ask(&llm, fresh(&session)).await, "the reply");
    // A side prompt of the session after it, saved.
    server.slots(ran(&[4]));
    let side = request("which step comes next?").with_side_of(Some(session.clone()));
    assert_eq!(ask(&llm, side).await, "answer");
    assert_eq!(slot_calls(&server).len(), 2);
    let kept = llm.keep_session(&session).await;
    assert!(
        matches!(&kept, Err(e) if e.to_string().contains("save")),
        "the conversation's failed save is reported: {kept:?}"
    );
    // Reported once.
    assert!(matches!(llm.keep_session(&session).await, Ok(false)));
}

#[tokio::test]
async fn a_side_prompt_goes_with_its_session_and_is_saved_in_a_file_of_its_own() {
    let saved = || StubReply::status(200, r#"{"id_slot":0,"n_saved":12}"#);
    let server = StubServer::start([
        StubReply::text_stream(&["answer"]),
        saved(),
        StubReply::text_stream(&["the reply"]),
        saved(),
        StubReply::status(200, r#"{"id_slot":0,"n_restored":12}"#),
        StubReply::text_stream(&["answer again"]),
        saved(),
    ])
    .await;
    let llm = saving_client(&server, 1).await;
    let session = key("side-asked");
    server.slots(ran(&[3]));
    // A question asked apart for the session: it carries the session's key, goes to its
    // slot and is saved there (nothing restored: nothing of its shape saved yet).
    let side = || request("which step comes next?").with_side_of(Some(session.clone()));
    assert_eq!(ask(&llm, side()).await, "answer");
    let first = &chats(&server)[0];
    assert_eq!(first.body["prompt_cache_key"], json!(session.as_str()));
    assert_eq!(first.body["id_slot"], json!(0));
    // Then the conversation itself, of another shape: another file.
    server.slots(ran(&[4]));
    let mut conversation = fresh(&session);
    conversation
        .messages
        .insert(0, ChatMessage::system("You are terse."));
    assert_eq!(ask(&llm, conversation).await, "the reply");
    assert!(matches!(llm.keep_session(&session).await, Ok(true)));
    // The next process asks the side question again: though its request carries no
    // conversation, its state was saved, so it is restored.
    let next = saving_client(&server, 1).await;
    assert_eq!(ask(&next, side()).await, "answer again");
    let calls = slot_calls(&server);
    let actions: Vec<&str> = calls.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(
        actions,
        [
            "/slots/0?action=save",
            "/slots/0?action=save",
            "/slots/0?action=restore",
            "/slots/0?action=save",
        ]
    );
    let files: Vec<String> = calls.iter().map(file_of).collect();
    assert!(files.iter().all(|f| is_slot_file(f)), "{files:?}");
    assert_ne!(files[0], files[1], "the conversation's is another file");
    assert_eq!(files[0], files[2], "the side prompt's file");
    assert_eq!(files[2], files[3]);
}

#[tokio::test]
async fn a_slot_another_client_of_this_machine_holds_is_not_taken() {
    let server = StubServer::start([
        endless_reply(&["a", "b"]),
        StubReply::text_stream(&["elsewhere"]),
        StubReply::text_stream(&["home again"]),
    ])
    .await;
    llama_server(&server, Some(2));
    let pinning = || {
        let mut c = config(&server);
        c.pin_slots = true;
        c
    };
    // Two clients (as two processes would be) of one server, both resuming one session
    // from its start: the first takes the session's slot and is still reading its reply
    // there.
    let (first, second) = (connect(pinning()).await, connect(pinning()).await);
    let session = key("claimed-slot");
    server.slots(listing(2, &[]));
    let mut reading = first
        .generate(fresh(&session))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    while !matches!(reading.next().await, Some(Ok(LlmChunk::Text { .. }))) {}
    let home = last_slot(&server);
    // The server lists both slots idle (its reply may have just ended, or the listing be
    // stale): the second client still goes to the other one.
    assert_eq!(ask(&second, fresh(&session)).await, "elsewhere");
    assert_eq!(last_slot(&server), 1 - home);
    // Once the first is done with its slot, a new client of the session goes there again.
    drop(reading);
    let third = connect(pinning()).await;
    assert_eq!(ask(&third, fresh(&session)).await, "home again");
    assert_eq!(last_slot(&server), home);
}

#[tokio::test]
async fn with_slots_saved_a_request_waits_while_another_client_holds_the_idle_slot() {
    let server = StubServer::start([
        endless_reply(&["a", "b"]),
        StubReply::text_stream(&["after"]),
    ])
    .await;
    let (first, second) = (
        saving_client(&server, 1).await,
        saving_client(&server, 1).await,
    );
    // One slot, listed idle throughout (the first client's reply may have just ended),
    // holding nothing a cut reply would leave: the first client saves nothing.
    server.slots(ran(&[3]));
    let mut reading = first
        .generate(fresh(&key("holder")))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    while !matches!(reading.next().await, Some(Ok(LlmChunk::Text { .. }))) {}
    let waiting = tokio::spawn(async move {
        let started = std::time::Instant::now();
        let reply = ask(&second, fresh(&key("waiter"))).await;
        (reply, started.elapsed())
    });
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert_eq!(chats(&server).len(), 1, "the second waits for the slot");
    drop(reading);
    let (reply, waited) = waiting.await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(reply, "after");
    assert!(
        waited >= std::time::Duration::from_millis(400),
        "{waited:?}"
    );
    assert_eq!(last_slot(&server), 0);
    assert_eq!(chats(&server).len(), 2);
}

#[tokio::test]
async fn a_listing_whose_connection_closed_is_asked_again() {
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"]); 2]).await;
    let llm = pinning_client(&server, 4).await;
    let session = key("listed-again");
    // Every slot busy: the hash slot.
    server.slots(listing(4, &[0, 1, 2, 3]));
    ask(&llm, fresh(&session)).await;
    let hashed = last_slot(&server);
    // The server closes the next listing's connection (a kept-alive connection it timed
    // out): listed again, the request goes to the one idle slot, not to its hash slot.
    let idle = (hashed + 2) % 4;
    let busy: Vec<u64> = (0..4).filter(|&s| s != idle).collect();
    server.slots(listing(4, &busy));
    server.close_next_listing();
    ask(&llm, fresh(&session)).await;
    assert_eq!(last_slot(&server), idle);
    assert_eq!(slot_listings(&server), 3, "one listing, then two");
}
