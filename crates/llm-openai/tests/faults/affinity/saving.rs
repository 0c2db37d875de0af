//! A session's slot saved when its reply ends (and only from the slot that holds it),
//! restored before its next request, in a bounded pool of files per server and model.

use super::*;

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
