use super::*;
use serde_json::json;
use std::collections::HashSet;

fn key(text: &str) -> SessionKey {
    SessionKey::new(text).unwrap_or_else(|| panic!("not a key: {text}"))
}

#[test]
fn fnv1a_is_the_published_function() {
    assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
}

#[test]
fn slots_are_stable_and_in_range() {
    // Fixed here: a session must return to its slot in every later version.
    assert_eq!(slot_of(&key("a"), 4), 0);
    assert_eq!(slot_of(&key("foobar"), 7), 6);
    let id = key("0b0f4d6c-52a2-4d1e-9a43-0f0c8c1d2e3f");
    for total in 1..=64 {
        let slot = slot_of(&id, total);
        assert!(slot < total, "{slot} of {total}");
        assert_eq!(slot, slot_of(&id, total));
    }
    assert_eq!(slot_of(&id, 0), 0, "no division by zero");
    // Keys spread over the slots.
    let used: HashSet<u32> = (0..64)
        .map(|i| slot_of(&key(&format!("session-{i}")), 8))
        .collect();
    assert_eq!(used.len(), 8);
}

#[test]
fn a_state_is_named_by_its_key_and_its_shape() {
    let state = |key: SessionKey, shape| Shaped { key, shape }.name();
    assert_eq!(state(key("Ab_9-z"), 0xab), "Ab_9-z-00000000000000ab");
    let longest = state(key(&"x".repeat(SessionKey::MAX_LEN)), u64::MAX);
    assert!(longest.len() < 128, "a record holds it whole: {longest}");
}

#[test]
fn a_shape_is_the_leading_message_and_the_tools() {
    use core_models::ChatMessage;
    let conversation = |system: &str, rest: &[&str]| {
        LlmRequest::new(
            std::iter::once(ChatMessage::system(system))
                .chain(rest.iter().map(|m| ChatMessage::user(*m)))
                .collect(),
        )
    };
    let base = shape_of(&conversation("plain", &["hi"]));
    // The same beginning, a longer conversation: one shape.
    assert_eq!(
        base,
        shape_of(&conversation("plain", &["hi", "more", "again"]))
    );
    // Another leading message, another role, or tools described: another shape.
    assert_ne!(base, shape_of(&conversation("with tools", &["hi"])));
    assert_ne!(
        base,
        shape_of(&LlmRequest::new(vec![ChatMessage::user("plain")]))
    );
    let mut with_tools = conversation("plain", &["hi"]);
    with_tools.tools.push(core_models::ToolDefinition::new(
        "read_file",
        "Read File",
        "Reads a file.",
    ));
    assert_ne!(base, shape_of(&with_tools));
    assert_eq!(shape_of(&LlmRequest::new(vec![])), fnv1a(b""));
}

/// Sessions pinned to `total` slots of llama-server, the slots saved when `save`; no
/// claims (nor records of saved states) among the clients of this machine.
fn on_slots(total: u32, save: bool) -> Affinity {
    let mut config = OpenAiConfig::new("http://127.0.0.1:1/v1");
    config.pin_slots = true;
    config.save_slots = save;
    config.claim_slots = false;
    let info = ServerInfo {
        llama_server: true,
        total_slots: Some(total),
        ..ServerInfo::default()
    };
    Affinity::new(&config, &info).unwrap_or_else(|e| panic!("{e}"))
}

fn pinned(total: u32) -> Affinity {
    on_slots(total, false)
}

fn saving(total: u32) -> Affinity {
    on_slots(total, true)
}

/// Slots `0..total`, those in `idle` idle, each slot's last task its id plus `task`.
fn listing(total: u32, idle: &[u32], task: u64) -> Vec<SlotView> {
    (0..total)
        .map(|id| SlotView {
            id,
            busy: !idle.contains(&id),
            task: Some(u64::from(id) + task),
            tokens: None,
        })
        .collect()
}

#[test]
fn a_slot_is_chosen_idle_first() {
    let affinity = pinned(4);
    let session = key("foobar");
    let hashed = slot_of(&session, 4);
    // Unknown state, or every slot busy: the hash slot.
    assert_eq!(affinity.pick(&session, 4, None), hashed);
    assert_eq!(
        affinity.pick(&session, 4, Some(&listing(4, &[], 0))),
        hashed
    );
    // Slots not saved: the hash slot when idle, else the lowest idle slot.
    let all = listing(4, &[0, 1, 2, 3], 0);
    assert_eq!(affinity.pick(&session, 4, Some(&all)), hashed);
    let idle: Vec<u32> = (0..4).filter(|&s| s != hashed).collect();
    assert_eq!(
        affinity.pick(&session, 4, Some(&listing(4, &idle, 0))),
        idle[0]
    );
    // The slot the session last used, while idle, before any other.
    let other = (hashed + 1) % 4;
    let there = Pinned::new(other, session.clone(), 7);
    assert!(!affinity.note_request(&there, Some(&all)));
    assert_eq!(affinity.pick(&session, 4, Some(&all)), other);
    assert_eq!(
        affinity.pick(&session, 4, Some(&listing(4, &[hashed], 0))),
        hashed
    );
    // A slot the server names beyond its count is not chosen.
    let beyond = [SlotView {
        id: 7,
        busy: false,
        task: None,
        tokens: None,
    }];
    assert_eq!(
        affinity.pick(&key("new"), 4, Some(&beyond)),
        slot_of(&key("new"), 4)
    );
}

#[test]
fn a_saved_session_takes_its_hash_slot_else_the_slot_longest_without_a_task() {
    let affinity = saving(4);
    let session = key("foobar");
    assert_eq!(slot_of(&session, 4), 0, "the hash slot this test expects");
    // Its hash slot idle: that one, though others went longer without a task (sessions
    // that start together spread over the slots).
    let mut slots = listing(4, &[0, 1, 2, 3], 0);
    slots[0].task = Some(99);
    assert_eq!(affinity.pick(&session, 4, Some(&slots)), 0);
    let mut slots = listing(4, &[1, 2, 3], 0);
    slots[1].task = Some(9);
    slots[2].task = Some(4);
    slots[3].task = Some(7);
    assert_eq!(affinity.pick(&session, 4, Some(&slots)), 2);
    slots[3].task = None;
    assert_eq!(
        affinity.pick(&session, 4, Some(&slots)),
        3,
        "never used first"
    );
    // The slot it last used, while idle, before any other.
    let there = Pinned::new(1, session.clone(), 7);
    assert!(!affinity.note_request(&there, Some(&slots)));
    assert_eq!(affinity.pick(&session, 4, Some(&slots)), 1);
    slots[1].busy = true;
    assert_eq!(affinity.pick(&session, 4, Some(&slots)), 3);
    // Every slot busy: the hash slot.
    assert_eq!(
        affinity.pick(&session, 4, Some(&listing(4, &[], 0))),
        slot_of(&session, 4)
    );
}

#[test]
fn a_slot_holds_a_state_until_it_runs_another_task() {
    let affinity = pinned(4);
    let session = key("held");
    let at = |slot: u32, shape: u64| Pinned::new(slot, session.clone(), shape);
    let before = listing(4, &[0, 1, 2, 3], 10);
    assert!(
        !affinity.note_request(&at(1, 7), Some(&before)),
        "nothing saved"
    );
    // Saved from slot 1 after its task 11.
    affinity.note_held(&at(1, 7), Some(11));
    assert!(affinity.note_request(&at(1, 7), Some(&before)));
    // Not in another slot.
    assert!(!affinity.note_request(&at(2, 7), Some(&before)));
    assert!(affinity.note_request(&at(1, 7), Some(&before)));
    // Not for another shape or another session, whose request then runs there: no longer.
    assert!(!affinity.note_request(&at(1, 8), Some(&before)));
    assert!(!affinity.note_request(&at(1, 7), Some(&before)));
    affinity.note_held(&at(1, 7), Some(11));
    let other = Pinned::new(1, key("other"), 7);
    assert!(!affinity.note_request(&other, Some(&before)));
    assert!(!affinity.note_request(&at(1, 7), Some(&before)));
    // The slot ran another task since: no longer.
    affinity.note_held(&at(1, 7), Some(11));
    let after = listing(4, &[0, 1, 2, 3], 20);
    assert!(!affinity.note_request(&at(1, 7), Some(&after)));
    // Unlisted slots: what this client left there.
    affinity.note_held(&at(1, 7), Some(11));
    assert!(affinity.note_request(&at(1, 7), None));
    // A state saved with no task known is not trusted against a listing.
    affinity.note_held(&at(1, 7), None);
    assert!(!affinity.note_request(&at(1, 7), Some(&before)));
    // Lost, it is not held anywhere.
    affinity.note_lost(&at(1, 7));
    assert!(!affinity.note_request(&at(1, 7), None));
}

#[test]
fn a_missing_file_is_not_asked_for_again_until_saved() {
    let affinity = saving(2);
    let session = key("missing");
    let pinned = Pinned::new(0, session.clone(), 3);
    let fresh = LlmRequest::new(vec![core_models::ChatMessage::user("hi")])
        .with_session(Some(session.clone()));
    let answered = LlmRequest::new(vec![
        core_models::ChatMessage::user("hi"),
        core_models::ChatMessage::assistant("hello"),
        core_models::ChatMessage::user("and?"),
    ])
    .with_session(Some(session.clone()));
    assert!(
        affinity.restore_file(&pinned, &fresh).is_none(),
        "never answered"
    );
    // A side prompt does not carry the conversation: its shape's file may be there.
    let side = LlmRequest::new(vec![core_models::ChatMessage::user("which step?")])
        .with_side_of(Some(session.clone()));
    let side_shape = Pinned::new(0, session.clone(), 5);
    assert!(affinity.restore_file(&side_shape, &side).is_some());
    affinity.note_missing(&side_shape);
    assert!(
        affinity.restore_file(&side_shape, &side).is_none(),
        "found missing"
    );
    assert!(affinity.restore_file(&pinned, &answered).is_some());
    affinity.note_missing(&pinned);
    assert!(affinity.restore_file(&pinned, &answered).is_none());
    let other_shape = Pinned::new(0, session.clone(), 4);
    assert!(affinity.restore_file(&other_shape, &answered).is_some());
    affinity.note_held(&pinned, Some(1));
    assert_eq!(
        affinity.restore_file(&pinned, &answered),
        affinity.files.place(&pinned.of.name()),
        "saved since, where it is saved"
    );
    affinity.refuse_saving();
    assert!(
        affinity.restore_file(&pinned, &answered).is_none(),
        "cannot save"
    );
}

#[test]
fn a_slot_holds_a_reply_by_its_token_count_whatever_the_server_says() {
    let slot = |busy, tokens| SlotView {
        id: 0,
        busy,
        task: Some(1),
        tokens,
    };
    let usage = |prompt, generated| {
        LlmUsage::default()
            .with_prompt_tokens(prompt)
            .with_generated_tokens(generated)
    };
    assert!(holds_reply(&slot(false, Some(69)), Some(&usage(40, 30))));
    assert!(!holds_reply(&slot(false, Some(70)), Some(&usage(40, 30))));
    assert!(!holds_reply(&slot(true, Some(69)), Some(&usage(40, 30))));
    // A count unknown on either side: idle is enough.
    assert!(holds_reply(&slot(false, None), Some(&usage(40, 30))));
    assert!(holds_reply(&slot(false, Some(5)), None));
    // Absurd counts are compared, not added up past their range.
    assert!(!holds_reply(
        &slot(false, Some(u64::MAX)),
        Some(&usage(40, 30))
    ));
    assert!(!holds_reply(
        &slot(false, Some(1)),
        Some(&usage(u64::MAX, u64::MAX))
    ));
    assert!(!holds_reply(&slot(false, Some(0)), Some(&usage(0, 0))));
}

#[test]
fn slots_are_read_from_the_slot_list() {
    let slots = json!([
        {"id": 2, "is_processing": false, "n_ctx": 4096, "id_task": 41, "n_prompt_tokens": 69},
        {"id": 0, "is_processing": true, "id_task": 40},
        {"id": 1, "is_processing": false, "params": {}},
    ]);
    let view = |id, busy, task, tokens| SlotView {
        id,
        busy,
        task,
        tokens,
    };
    assert_eq!(
        slots_in(&slots),
        Some(vec![
            view(0, true, Some(40), None),
            view(1, false, None, None),
            view(2, false, Some(41), Some(69))
        ])
    );
    assert_eq!(slots_in(&json!([])), Some(vec![]));
    for odd in [
        json!({"id": 0}),
        json!([{"id": 0}]),
        json!([{"id": -1, "is_processing": false}]),
    ] {
        assert_eq!(slots_in(&odd), None, "{odd}");
    }
}

#[test]
fn a_cut_reply_is_held_by_a_slot_holding_its_prompt_its_pieces_and_a_few_more() {
    let slot = |busy: bool, tokens: Option<u64>| SlotView {
        id: 0,
        busy,
        task: Some(1),
        tokens,
    };
    // 12 prompt tokens, 3 pieces read: at least 14 held, at most 14 + 64.
    assert!(cut::holds_cut(&slot(false, Some(14)), 12, 3));
    assert!(cut::holds_cut(&slot(false, Some(78)), 12, 3));
    assert!(!cut::holds_cut(&slot(false, Some(13)), 12, 3));
    assert!(!cut::holds_cut(&slot(false, Some(79)), 12, 3));
    // Busy, or holding an unknown count: not known to hold it.
    assert!(!cut::holds_cut(&slot(true, Some(14)), 12, 3));
    assert!(!cut::holds_cut(&slot(false, None), 12, 3));
    // Counts at the ends of the range never overflow.
    assert!(!cut::holds_cut(&slot(false, Some(0)), 0, 0));
    assert!(!cut::holds_cut(&slot(false, Some(u64::MAX)), u64::MAX, 2));
    assert!(cut::holds_cut(
        &slot(false, Some(u64::MAX)),
        u64::MAX - 2,
        2
    ));
}
