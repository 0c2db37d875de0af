//! Which slot a session's request goes to: stable, idle first, waiting rather than
//! queueing, and never one another client of this machine holds.

use super::*;

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

/// Where a new session's first request goes on a server of two slots listed as
/// `listings`, one after the other, by a client that claims its slots or not: the slot,
/// and how many listings came before the request.
async fn placed_after(claiming: bool, listings: [&[u64]; 4]) -> (u64, usize) {
    let server = StubServer::start(vec![StubReply::text_stream(&["ok"])]).await;
    let llm = if claiming {
        saving_client(&server, 2).await
    } else {
        unclaiming_client(&server, 2).await
    };
    server.slots_in_turn(listings.map(|busy| listing(2, busy)));
    ask(&llm, fresh(&key("waits-for-idle"))).await;
    (last_slot(&server), listings_before_chat(&server))
}

#[tokio::test]
async fn with_slots_saved_a_request_waits_for_an_idle_slot_instead_of_queueing() {
    // Claimed slots are held until saved: the first idle one will do.
    let busy: [&[u64]; 4] = [&[0, 1], &[0, 1], &[0], &[1]];
    assert_eq!(placed_after(true, busy).await, (1, 3));
}

#[tokio::test]
async fn unclaimed_a_request_waits_for_a_slot_idle_twice_instead_of_queueing() {
    // Busy, busy, slot 1 idle (just freed: left to its session's save), idle again.
    let busy: [&[u64]; 4] = [&[0, 1], &[0, 1], &[0], &[0]];
    assert_eq!(placed_after(false, busy).await, (1, 4));
    // Slots that go idle one at a time are never taken on their first idle listing:
    // slot 0 was idle once only.
    let busy: [&[u64]; 4] = [&[0, 1], &[1], &[0], &[0]];
    assert_eq!(placed_after(false, busy).await, (1, 4));
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
