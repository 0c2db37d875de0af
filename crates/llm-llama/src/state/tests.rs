//! Tests of the state files apart from llama.cpp: names, checksums, the cap, leftovers
//! and the folder.

use super::*;

#[test]
fn the_checksum_does_not_depend_on_how_it_is_fed() {
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
    let whole = checksum(&data);
    for split in [1, 3, 7, 8, 9, 500, 999] {
        let mut hash = Checksum::default();
        for piece in data.chunks(split) {
            hash.update(piece);
        }
        assert_eq!(hash.value(), whole, "fed in pieces of {split}");
    }
    let mut changed = data.clone();
    changed[500] ^= 1;
    assert_ne!(checksum(&changed), whole);
    assert_ne!(checksum(&data[..999]), whole);
}

#[test]
fn only_a_sessions_own_files_are_its_state() {
    let key = "0f8b2c1e-aaaa-bbbb-cccc-000000000001";
    for name in ["K.kv.json", "K.kv0", "K.kv12", "K.kv3.tmp", "K.kv.json.tmp"] {
        assert!(is_state_file(&name.replace('K', key), key), "{name}");
    }
    for name in [
        "K.jsonl",
        "K.kv",
        "K.kvx",
        "K.kv0.bak",
        "KX.kv0",
        "other.kv0",
    ] {
        assert!(!is_state_file(&name.replace('K', key), key), "{name}");
    }
    let dir = tempfile::tempdir().unwrap();
    let key = SessionKey::new(key).unwrap();
    for name in ["kv.json", "kv0", "jsonl"] {
        std::fs::write(dir.path().join(format!("{key}.{name}")), b"x").unwrap();
    }
    assert_eq!(remove_session_state(dir.path(), &key).unwrap(), 2);
    assert!(dir.path().join(format!("{key}.jsonl")).exists());
    assert_eq!(
        remove_session_state(&dir.path().join("missing"), &key).unwrap(),
        0
    );
}

/// An identity for tests of the files alone.
pub(super) fn identity() -> Identity {
    Identity {
        build: String::new(),
        model_path: String::new(),
        model_size: 0,
        model_modified_ns: 0,
        model_head: String::new(),
        n_vocab: 10,
        template: String::new(),
        context_size: 100,
        sequences: 1,
        gpu_layers: 0,
        kv_type: "F16".into(),
    }
}

#[test]
fn the_cap_removes_the_least_recently_saved_states_whole() {
    let dir = tempfile::tempdir().unwrap();
    let identity = identity();
    let keys: Vec<SessionKey> = (1..=3)
        .map(|i| SessionKey::new(format!("s{i}")).unwrap())
        .collect();
    for (i, key) in keys.iter().enumerate() {
        std::fs::write(manifest_path(dir.path(), key), vec![b'{'; 100]).unwrap();
        std::fs::write(entry_path(dir.path(), key, 0), vec![0u8; 900]).unwrap();
        let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + i as u64);
        std::fs::File::options()
            .write(true)
            .open(manifest_path(dir.path(), key))
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
    // A manifest whose name is no session key is none of ours, and not counted.
    std::fs::write(dir.path().join("a b.kv.json"), vec![b'{'; 5000]).unwrap();
    // 3000 bytes held, 2500 allowed: the oldest session goes, with its data file.
    StateStore::new(dir.path().into(), 2500, identity, 512).enforce_cap();
    assert!(!manifest_path(dir.path(), &keys[0]).exists());
    assert!(!entry_path(dir.path(), &keys[0], 0).exists());
    assert!(manifest_path(dir.path(), &keys[1]).exists());
    assert!(entry_path(dir.path(), &keys[2], 0).exists());
    assert!(dir.path().join("a b.kv.json").exists());
}

#[test]
fn files_of_saves_that_never_finished_are_removed_once_old() {
    let dir = tempfile::tempdir().unwrap();
    let identity = identity();
    let (whole, cut, fresh) = (
        SessionKey::new("whole").unwrap(),
        SessionKey::new("cut").unwrap(),
        SessionKey::new("fresh").unwrap(),
    );
    let old = std::time::SystemTime::now() - 2 * ORPHAN_AGE;
    let write = |path: PathBuf, when: Option<std::time::SystemTime>| {
        std::fs::write(&path, b"state").unwrap();
        if let Some(when) = when {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        }
        path
    };
    // A whole state, old: kept.
    let kept = [
        write(manifest_path(dir.path(), &whole), Some(old)),
        write(entry_path(dir.path(), &whole, 0), Some(old)),
    ];
    // A save killed before its manifest, long ago: its files go.
    let left = [
        write(entry_path(dir.path(), &cut, 0), Some(old)),
        write(dir.path().join("cut.kv1.tmp"), Some(old)),
        write(dir.path().join("cut.kv.json.tmp"), Some(old)),
    ];
    // A save another process is writing now: its files stay.
    let writing = write(entry_path(dir.path(), &fresh, 0), None);
    // Files that are no state of a session: left alone.
    let other = [
        write(dir.path().join("notes.txt"), Some(old)),
        write(dir.path().join("a b.kv0"), Some(old)),
    ];
    StateStore::new(dir.path().into(), u64::MAX, identity, 512).enforce_cap();
    assert!(kept.iter().all(|p| p.exists()));
    assert!(left.iter().all(|p| !p.exists()), "{left:?}");
    assert!(writing.exists());
    assert!(other.iter().all(|p| p.exists()));
    assert_eq!(state_key("cut.kv12.tmp"), Some("cut"));
    assert_eq!(state_key("cut.kv.json"), Some("cut"));
    assert_eq!(state_key("cut.kvx"), None);
    assert_eq!(state_key(".kv0"), None);
}

#[test]
fn the_states_folder_is_made_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let states = dir.path().join("sessions");
    std::fs::create_dir(&states).unwrap();
    std::fs::set_permissions(&states, std::fs::Permissions::from_mode(0o755)).unwrap();
    ensure_private_dir(&states).unwrap();
    let mode = std::fs::metadata(&states).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    let new = dir.path().join("a/b");
    ensure_private_dir(&new).unwrap();
    assert_eq!(
        std::fs::metadata(&new).unwrap().permissions().mode() & 0o777,
        0o700
    );
}
