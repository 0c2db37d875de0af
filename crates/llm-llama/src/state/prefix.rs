//! The prefix cache: the state of a prompt's fixed start — the system prompt, the
//! instructions and the tools, before the conversation's first message of its own — kept
//! on disk once per machine, so that a new process whose prompt starts with the same
//! tokens evaluates only the rest.
//!
//! A prefix's state is kept like a session's ([`super`]): a manifest `prefix-HASH.kv.json`
//! and one sequence file `prefix-HASH.kv0`, private, in the same folder, under the same
//! cap, the least recently *used* going first (restoring one touches its manifest). The
//! hash is over what the state is valid for — the loaded model and settings (the store's
//! [`super::Identity`]), the batch size the prompt is read in (a state evaluated in other
//! batches may differ in its last bits) and the exact tokens — and the manifest records
//! all of it: a file whose identity or tokens are not the ones asked for is not used, and
//! the same checks as a session's (size, checksum, vocabulary, the tokens llama.cpp reads
//! back) come before llama.cpp sees a byte of it. A prefix is always evaluated in a batch
//! run of its own (see `Session::evaluate_prompt`), so the rest of the prompt is read the
//! same way whether its prefix was evaluated or restored: a greedy reply is the same.

use super::{checksum, manifest_path, state_key, StateStore};
use core_models::SessionKey;
use std::path::Path;

/// Fewer tokens than this are no prefix worth a file (a template's opening alone).
pub(crate) const PREFIX_MIN_TOKENS: usize = 64;

/// What the state files of a prefix are named after: `prefix-` and this many hex digits.
const NAME: &str = "prefix-";

impl StateStore {
    /// The key a prefix of `tokens` is kept under.
    pub(crate) fn prefix_key(&self, tokens: &[i32]) -> Option<SessionKey> {
        let mut bytes = serde_json::to_vec(&self.identity).unwrap_or_default();
        bytes.extend_from_slice(&(self.batch as u64).to_le_bytes());
        for t in tokens {
            bytes.extend_from_slice(&t.to_le_bytes());
        }
        SessionKey::new(format!("{NAME}{:016x}", checksum(&bytes)))
    }
}

/// Whether a state file's `name` belongs to a prefix.
fn is_prefix_file(name: &str) -> bool {
    state_key(name).is_some_and(|key| {
        key.strip_prefix(NAME)
            .is_some_and(|hash| hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

/// What a states folder holds of prefixes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefixStates {
    /// Prefixes whose manifest is there.
    pub prefixes: usize,
    /// Bytes their files take (manifests, sequence files, unfinished writes).
    pub bytes: u64,
}

/// What `dir` holds of prefix states (none when it is missing).
///
/// # Errors
/// When the folder cannot be listed.
pub fn prefix_states(dir: &Path) -> std::io::Result<PrefixStates> {
    let mut found = PrefixStates::default();
    for (name, meta) in prefix_files(dir)? {
        found.bytes += meta.len();
        if name.ends_with(".kv.json") {
            found.prefixes += 1;
        }
    }
    Ok(found)
}

/// Remove every prefix state in `dir`; returns how many prefixes were removed. Sessions'
/// states stay.
///
/// # Errors
/// When the folder cannot be listed or a file cannot be removed.
pub fn remove_prefix_states(dir: &Path) -> std::io::Result<usize> {
    let mut removed = 0;
    for (name, _) in prefix_files(dir)? {
        std::fs::remove_file(dir.join(&name))?;
        removed += usize::from(name.ends_with(".kv.json"));
    }
    Ok(removed)
}

/// The regular files of prefix states in `dir`, by name.
fn prefix_files(dir: &Path) -> std::io::Result<Vec<(String, std::fs::Metadata)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let meta = entry.metadata()?;
        if meta.is_file() && is_prefix_file(&name) {
            files.push((name, meta));
        }
    }
    Ok(files)
}

/// Mark `key`'s state used now: the cap removes the least recently used first.
fn touch(dir: &Path, key: &SessionKey) {
    let touched = std::fs::File::options()
        .write(true)
        .open(manifest_path(dir, key))
        .and_then(|f| f.set_modified(std::time::SystemTime::now()));
    if let Err(e) = touched {
        tracing::debug!(error = %e, "a prefix state's use could not be recorded");
    }
}

#[cfg(feature = "llama-cpp")]
mod llama {
    use super::*;
    use crate::slots::Slots;
    use crate::stash::{stash_seq, SeqStash};
    use crate::state::llama::clear;
    use crate::state::{ensure_private_dir, entry_path, Restored};
    use llama_cpp_2::context::LlamaContext;
    use llama_cpp_2::token::LlamaToken;

    impl StateStore {
        /// Restore the state of `prefix` into sequence `seq`, when one is kept: what the
        /// sequence held goes to the stash first. Returns what happened; with
        /// [`Restored::Loaded`], the sequence holds exactly `prefix`.
        pub(crate) fn restore_prefix(
            &self,
            ctx: &mut LlamaContext<'_>,
            slots: &mut Slots<LlamaToken>,
            stash: Option<&mut SeqStash>,
            seq: usize,
            prefix: &[LlamaToken],
        ) -> Restored {
            let tokens: Vec<i32> = prefix.iter().map(|t| t.0).collect();
            let Some(key) = self.prefix_key(&tokens) else {
                return Restored::Nothing;
            };
            let entry = match self.manifest(&key) {
                Ok(None) => return Restored::Nothing,
                Err(why) => return Restored::Skipped(why),
                Ok(Some(manifest)) => match manifest.entries.as_slice() {
                    [entry] if entry.tokens == tokens => entry.clone(),
                    _ => return Restored::Skipped("it holds another prefix".into()),
                },
            };
            if let Err(why) = self.check_entry(&key, 0, &entry) {
                return Restored::Skipped(why);
            }
            if let Some(stash) = stash {
                stash_seq(ctx, slots, stash, seq);
            }
            clear(ctx, slots, seq);
            let window = self.identity.context_size as usize;
            while slots.total() + prefix.len() > window {
                let Some(other) = slots.evictable(seq) else {
                    break;
                };
                clear(ctx, slots, other);
            }
            let loaded = i32::try_from(seq).map_err(|e| e.to_string()).and_then(|s| {
                ctx.state_seq_load_file(entry_path(&self.dir, &key, 0), s, window)
                    .map_err(|e| e.to_string())
            });
            match loaded {
                Ok((read, _)) if read.as_slice() == prefix => {
                    slots.set(seq, read);
                    touch(&self.dir, &key);
                    Restored::Loaded {
                        sequences: 1,
                        tokens: prefix.len(),
                    }
                }
                Ok(_) => {
                    clear(ctx, slots, seq);
                    Restored::Skipped("its sequence file holds other tokens".into())
                }
                Err(e) => {
                    clear(ctx, slots, seq);
                    Restored::Skipped(format!("llama.cpp could not load it: {e}"))
                }
            }
        }

        /// Keep the state of sequence `seq`, which holds exactly `prefix`, unless a good
        /// one is kept already; then keep all states under the cap. Returns whether it
        /// was written.
        ///
        /// # Errors
        /// When a file cannot be written; what was half written is removed.
        pub(crate) fn save_prefix(
            &self,
            ctx: &LlamaContext<'_>,
            slots: &Slots<LlamaToken>,
            seq: usize,
            prefix: &[LlamaToken],
        ) -> Result<bool, crate::Error> {
            if slots.tokens(seq) != prefix {
                return Ok(false);
            }
            let tokens: Vec<i32> = prefix.iter().map(|t| t.0).collect();
            let Some(key) = self.prefix_key(&tokens) else {
                return Ok(false);
            };
            let kept = matches!(
                self.manifest(&key),
                Ok(Some(m)) if matches!(m.entries.as_slice(), [e] if e.tokens == tokens && self.check_entry(&key, 0, e).is_ok())
            );
            if kept {
                return Ok(false);
            }
            let failed = |what: &str, e: &dyn std::fmt::Display| {
                let _ = crate::state::remove_session_state(&self.dir, &key);
                crate::Error::SessionState(format!("cannot keep the prompt's prefix ({what}: {e})"))
            };
            ensure_private_dir(&self.dir).map_err(|e| failed("its folder", &e))?;
            let entry = self
                .write_entry(ctx, seq, prefix, &key, 0)
                .map_err(|(what, e)| failed(what, &e))?;
            self.write_manifest(&key, vec![entry])
                .map_err(|e| failed("the manifest", &e))?;
            self.enforce_cap();
            Ok(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_files_are_told_from_sessions_and_cleared_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = StateStore::new(
            dir.path().into(),
            u64::MAX,
            super::super::tests::identity(),
            512,
        );
        let key = store.prefix_key(&[1, 2, 3]).unwrap();
        assert!(key.as_str().starts_with(NAME));
        // Another batch size or other tokens: another key.
        let other = StateStore::new(
            dir.path().into(),
            u64::MAX,
            super::super::tests::identity(),
            256,
        );
        assert_ne!(other.prefix_key(&[1, 2, 3]).unwrap(), key);
        assert_ne!(store.prefix_key(&[1, 2, 4]).unwrap(), key);
        for name in ["kv.json", "kv0", "kv0.tmp"] {
            std::fs::write(dir.path().join(format!("{key}.{name}")), b"xx").unwrap();
        }
        let session = "0f8b2c1e-aaaa-bbbb-cccc-000000000001";
        for name in [
            format!("{session}.kv.json"),
            format!("{session}.kv0"),
            format!("{session}.jsonl"),
            "prefix-notahash.kv0".into(),
            "prefix-0123.kv.json".into(),
        ] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        assert_eq!(
            prefix_states(dir.path()).unwrap(),
            PrefixStates {
                prefixes: 1,
                bytes: 6
            }
        );
        assert_eq!(remove_prefix_states(dir.path()).unwrap(), 1);
        assert_eq!(prefix_states(dir.path()).unwrap(), PrefixStates::default());
        // Everything else stays.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 5);
        assert_eq!(
            prefix_states(&dir.path().join("missing")).unwrap(),
            PrefixStates::default()
        );
    }
}
