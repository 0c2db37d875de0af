//! Saved states: what the context holds for a session, kept on disk so that the session,
//! resumed in a new process, evaluates only what is new.
//!
//! A session's state is a manifest, `KEY.kv.json`, and one llama.cpp sequence file per
//! cached sequence, `KEY.kv0`, `KEY.kv1`… (all 0600, in a folder the front-end keeps
//! private). The manifest says what the state is valid for — the model file (path, size,
//! modification time and a hash of its first MiB), the chat template, the context's size
//! and layout, this library's version — and, for each sequence file, its tokens, its size
//! and a checksum.
//!
//! Nothing is loaded into llama.cpp unless the manifest matches the loaded model and
//! settings exactly, the file has the recorded size and checksum (llama.cpp's reader can
//! abort the process on a truncated file, so it never sees one), every token is in the
//! model's vocabulary, and the tokens llama.cpp reads back are the recorded ones. A missing,
//! stale, foreign or corrupt state is skipped with a log note: the prompt is then simply
//! evaluated in full. Saving removes the least recently saved sessions' states beyond the
//! disk cap.

use core_models::SessionKey;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The manifest format's version.
const FORMAT: u32 = 1;
/// A manifest larger than this is not read (a full context's tokens take well under it).
const MANIFEST_MAX: u64 = 16 << 20;
/// Sequences shorter than this are not worth a file.
pub(crate) const MIN_TOKENS: usize = 16;
/// How old a state file whose session has no manifest must be to be taken as left by a
/// save that never finished (killed, or its process ended first), and removed: a save
/// writes its sequence files before its manifest, in seconds.
const ORPHAN_AGE: std::time::Duration = std::time::Duration::from_secs(600);
/// Most of a session's states stashed in memory saved with it, beside its sequences
/// (a turn of the small-model steering sends prompts of about three shapes).
const SAVED_STASHED: usize = 3;

/// What a saved state is valid for: every field must match to use it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Identity {
    /// This library's version and the llama.cpp binding it was built with.
    pub(crate) build: String,
    pub(crate) model_path: String,
    pub(crate) model_size: u64,
    pub(crate) model_modified_ns: u128,
    /// A hash of the model file's first MiB (its header and metadata).
    pub(crate) model_head: String,
    pub(crate) n_vocab: i32,
    /// A hash of the chat template's source ("" without one).
    pub(crate) template: String,
    pub(crate) context_size: u32,
    pub(crate) sequences: usize,
    pub(crate) gpu_layers: u32,
    /// The KV cache's element type.
    pub(crate) kv_type: String,
}

impl Identity {
    /// The identity of `model_path` as loaded with these settings.
    ///
    /// # Errors
    /// When the model file cannot be read.
    pub(crate) fn of(
        model_path: &Path,
        n_vocab: i32,
        template: Option<&str>,
        context_size: u32,
        sequences: usize,
        gpu_layers: u32,
        kv_type: &str,
    ) -> std::io::Result<Self> {
        let path = std::fs::canonicalize(model_path)?;
        let meta = std::fs::metadata(&path)?;
        let modified = meta
            .modified()?
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mut head = Vec::with_capacity(1 << 20);
        std::fs::File::open(&path)?
            .take(1 << 20)
            .read_to_end(&mut head)?;
        Ok(Identity {
            build: format!(
                "aintern-llm-llama {} / llama-cpp-2 {LLAMA_CPP_2}",
                env!("CARGO_PKG_VERSION")
            ),
            model_path: path.to_string_lossy().into_owned(),
            model_size: meta.len(),
            model_modified_ns: modified,
            model_head: format!("{:016x}", checksum(&head)),
            n_vocab,
            template: template
                .map_or_else(String::new, |t| format!("{:016x}", checksum(t.as_bytes()))),
            context_size,
            sequences,
            gpu_layers,
            kv_type: kv_type.to_string(),
        })
    }
}

/// The llama.cpp binding's version, as pinned in this crate's manifest: a state file's
/// layout is llama.cpp's, so another build must not read it.
const LLAMA_CPP_2: &str = "0.1.160";

/// A session's saved state, as the manifest records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Manifest {
    format: u32,
    identity: Identity,
    /// One per sequence file, `KEY.kv0` first; the most recently used sequence first.
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    tokens: Vec<i32>,
    bytes: u64,
    checksum: String,
}

/// The manifest's path for `key` in `dir`.
fn manifest_path(dir: &Path, key: &SessionKey) -> PathBuf {
    dir.join(format!("{key}.kv.json"))
}

/// Sequence file `index`'s path for `key` in `dir`.
fn entry_path(dir: &Path, key: &SessionKey, index: usize) -> PathBuf {
    dir.join(format!("{key}.kv{index}"))
}

/// The session a state file's `name` belongs to (`KEY.kv.json`, `KEY.kvN`, or one being
/// written, `….tmp`), when it is one.
fn state_key(name: &str) -> Option<&str> {
    let base = name.strip_suffix(".tmp").unwrap_or(name);
    let key = match base.strip_suffix(".kv.json") {
        Some(key) => key,
        None => base.rsplit_once(".kv")?.0,
    };
    (!key.is_empty() && is_state_file(name, key)).then_some(key)
}

/// Whether `name` is one of `key`'s state files (`KEY.kv.json`, `KEY.kvN`, or one being
/// written, `….tmp`).
fn is_state_file(name: &str, key: &str) -> bool {
    let Some(rest) = name.strip_prefix(key).and_then(|r| r.strip_prefix(".kv")) else {
        return false;
    };
    let rest = rest.strip_suffix(".tmp").unwrap_or(rest);
    rest == ".json" || (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
}

/// Remove every saved state file of `session` in `dir`; returns how many were removed.
/// A missing folder holds none.
///
/// # Errors
/// When the folder cannot be listed or a file cannot be removed.
pub fn remove_session_state(dir: &Path, session: &SessionKey) -> std::io::Result<usize> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        if is_state_file(&name.to_string_lossy(), session.as_str()) {
            std::fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// A 64-bit FNV-1a hash, eight bytes at a time: detects a changed or damaged file (it is
/// no defence against someone who can write the private folder, who could do worse).
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    let mut hash = Checksum::default();
    hash.update(bytes);
    hash.value()
}

/// [`checksum`], fed in pieces of any size.
struct Checksum {
    hash: u64,
    carry: Vec<u8>,
}

impl Default for Checksum {
    fn default() -> Self {
        Checksum {
            hash: 0xcbf2_9ce4_8422_2325,
            carry: Vec::new(),
        }
    }
}

impl Checksum {
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn update(&mut self, mut bytes: &[u8]) {
        if !self.carry.is_empty() {
            let need = 8 - self.carry.len();
            let take = need.min(bytes.len());
            self.carry.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.carry.len() < 8 {
                return;
            }
            let word = std::mem::take(&mut self.carry);
            self.word(&word);
        }
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.word(word);
        }
        self.carry.extend_from_slice(words.remainder());
    }

    fn word(&mut self, word: &[u8]) {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        self.hash = (self.hash ^ u64::from_le_bytes(w)).wrapping_mul(Self::PRIME);
    }

    fn value(mut self) -> u64 {
        for b in std::mem::take(&mut self.carry) {
            self.hash = (self.hash ^ u64::from(b)).wrapping_mul(Self::PRIME);
        }
        self.hash
    }
}

/// The checksum of a file, as hex.
fn file_checksum(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hash = Checksum::default();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hash.update(&buffer[..n]);
    }
    Ok(format!("{:016x}", hash.value()))
}

/// Create (or empty) `path` readable and writable by its owner only.
fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An existing file keeps its mode: make sure.
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

/// The sessions' saved states in one folder, for one loaded model and its settings.
#[derive(Debug)]
pub(crate) struct StateStore {
    dir: PathBuf,
    cap: u64,
    identity: Identity,
    /// Tokens a prompt is read in per batch (part of a prefix's key).
    batch: usize,
    /// Sessions whose state was looked for already in this process: the context holds
    /// what it restored (or evaluated) since.
    tried: std::collections::HashSet<SessionKey>,
}

/// What restoring found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Restored {
    /// No state for the session.
    Nothing,
    /// Sequences restored, with their tokens.
    Loaded { sequences: usize, tokens: usize },
    /// A state that could not be used, and why.
    Skipped(String),
}

impl StateStore {
    /// States in `dir` (created private when missing), at most `cap` bytes of them, of
    /// prompts read `batch` tokens at a time.
    pub(crate) fn new(dir: PathBuf, cap: u64, identity: Identity, batch: usize) -> Self {
        StateStore {
            dir,
            cap,
            identity,
            batch,
            tried: std::collections::HashSet::new(),
        }
    }

    /// Whether `key`'s state should be looked for now (the first time in this process);
    /// notes that it was.
    pub(crate) fn first_sight(&mut self, key: &SessionKey) -> bool {
        self.tried.insert(key.clone())
    }

    /// Read and check `key`'s manifest: `Ok(None)` when there is none.
    fn manifest(&self, key: &SessionKey) -> Result<Option<Manifest>, String> {
        let path = manifest_path(&self.dir, key);
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read it: {e}")),
        };
        let mut text = String::new();
        file.take(MANIFEST_MAX)
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read it: {e}"))?;
        let manifest: Manifest =
            serde_json::from_str(&text).map_err(|e| format!("its manifest is damaged: {e}"))?;
        if manifest.format != FORMAT {
            return Err(format!("its format {} is not {FORMAT}", manifest.format));
        }
        if manifest.identity != self.identity {
            return Err("it was saved for another model, template or context settings".into());
        }
        Ok(Some(manifest))
    }

    /// Check sequence file `index` of `key` against its entry: size, checksum and tokens.
    fn check_entry(&self, key: &SessionKey, index: usize, entry: &Entry) -> Result<(), String> {
        if entry.tokens.len() < MIN_TOKENS
            || entry.tokens.len() >= self.identity.context_size as usize
        {
            return Err(format!("sequence {index} has an impossible length"));
        }
        if entry
            .tokens
            .iter()
            .any(|&t| t < 0 || t >= self.identity.n_vocab)
        {
            return Err(format!(
                "sequence {index} holds tokens outside the vocabulary"
            ));
        }
        let path = entry_path(&self.dir, key, index);
        let size = std::fs::metadata(&path)
            .map_err(|e| format!("sequence file {index}: {e}"))?
            .len();
        if size != entry.bytes {
            return Err(format!(
                "sequence file {index} has {size} bytes, not the {} recorded",
                entry.bytes
            ));
        }
        let sum = file_checksum(&path).map_err(|e| format!("sequence file {index}: {e}"))?;
        if sum != entry.checksum {
            return Err(format!("sequence file {index} is damaged (checksum)"));
        }
        Ok(())
    }

    /// Write `key`'s manifest, listing `entries` (their files written already): to a
    /// temporary file first, renamed into place once whole.
    fn write_manifest(&self, key: &SessionKey, entries: Vec<Entry>) -> std::io::Result<()> {
        let manifest = Manifest {
            format: FORMAT,
            identity: self.identity.clone(),
            entries,
        };
        let temporary = self.dir.join(format!("{key}.kv.json.tmp"));
        let text = serde_json::to_vec(&manifest).map_err(std::io::Error::other)?;
        {
            use std::io::Write;
            let mut file = create_private(&temporary)?;
            file.write_all(&text).and_then(|()| file.sync_all())?;
        }
        std::fs::rename(&temporary, manifest_path(&self.dir, key))
    }

    /// Remove the least recently saved sessions' states until all take at most the cap,
    /// and the files of saves that never finished (no manifest, older than
    /// [`ORPHAN_AGE`]).
    fn enforce_cap(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let files: Vec<(String, u64, std::time::SystemTime)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                meta.is_file().then(|| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        meta.len(),
                        meta.modified().unwrap_or(std::time::UNIX_EPOCH),
                    )
                })
            })
            .collect();
        let now = std::time::SystemTime::now();
        let with_manifest: std::collections::HashSet<&str> = files
            .iter()
            .filter_map(|(name, _, _)| name.strip_suffix(".kv.json"))
            .collect();
        for (name, size, modified) in &files {
            let orphan = state_key(name)
                .is_some_and(|key| SessionKey::new(key).is_some() && !with_manifest.contains(key))
                && now.duration_since(*modified).unwrap_or_default() > ORPHAN_AGE;
            if orphan {
                match std::fs::remove_file(self.dir.join(name)) {
                    Ok(()) => {
                        tracing::info!(file = %name, bytes = size, "a state file an unfinished save left was removed");
                    }
                    Err(e) => {
                        tracing::warn!(file = %name, error = %e, "cannot remove a state file an unfinished save left")
                    }
                }
            }
        }
        let mut sessions: Vec<(String, u64, std::time::SystemTime)> = files
            .iter()
            .filter_map(|(name, _, modified)| {
                // Only a session's manifest: a file named so whose name is no session key
                // is no state of ours, and could not be removed.
                let key = name
                    .strip_suffix(".kv.json")
                    .filter(|key| SessionKey::new(*key).is_some())?;
                let size = files
                    .iter()
                    .filter(|(n, _, _)| is_state_file(n, key))
                    .map(|(_, size, _)| size)
                    .sum();
                Some((key.to_string(), size, *modified))
            })
            .collect();
        let mut total: u64 = sessions.iter().map(|(_, size, _)| size).sum();
        sessions.sort_by_key(|(_, _, modified)| *modified);
        for (key, size, _) in sessions {
            if total <= self.cap {
                break;
            }
            let Some(key) = SessionKey::new(key) else {
                continue;
            };
            match remove_session_state(&self.dir, &key) {
                Ok(_) => {
                    tracing::info!(session = %key, bytes = size, "a saved state removed: the states' disk cap was reached");
                    total = total.saturating_sub(size);
                }
                Err(e) => tracing::warn!(session = %key, error = %e, "cannot remove a saved state"),
            }
        }
    }
}

#[cfg(feature = "llama-cpp")]
mod llama {
    use super::*;
    use crate::slots::Slots;
    use crate::stash::{stash_seq, SeqStash};
    use llama_cpp_2::context::session::LlamaStateSeqFlags;
    use llama_cpp_2::context::LlamaContext;
    use llama_cpp_2::token::LlamaToken;

    impl StateStore {
        /// Load `key`'s saved sequences into the context, each into the least recently
        /// used sequence (evicting what must go to make room); what an entry loaded before
        /// is replaced by goes to the stash, so that the most recent ends up in the
        /// context and the others in memory.
        pub(crate) fn restore(
            &self,
            ctx: &mut LlamaContext<'_>,
            slots: &mut Slots<LlamaToken>,
            stash: &mut SeqStash,
            key: &SessionKey,
        ) -> Restored {
            let manifest = match self.manifest(key) {
                Ok(Some(manifest)) => manifest,
                Ok(None) => return Restored::Nothing,
                Err(why) => return Restored::Skipped(why),
            };
            let window = self.identity.context_size as usize;
            let (mut sequences, mut tokens) = (0, 0);
            let mut skipped = Vec::new();
            // Least recent first, so that the most recent ends up most recently used.
            for (index, entry) in manifest.entries.iter().enumerate().rev() {
                if let Err(why) = self.check_entry(key, index, entry) {
                    skipped.push(why);
                    continue;
                }
                let n = entry.tokens.len();
                while slots.total() + n > window {
                    let Some(other) = slots.evictable(usize::MAX) else {
                        break;
                    };
                    clear(ctx, slots, other);
                }
                let Some(seq) = slots.least_recent(None) else {
                    continue;
                };
                // What the sequence holds (an earlier entry) stays in memory.
                stash_seq(ctx, slots, stash, seq);
                clear(ctx, slots, seq);
                let path = entry_path(&self.dir, key, index);
                let loaded = i32::try_from(seq).map_err(|e| e.to_string()).and_then(|s| {
                    ctx.state_seq_load_file(&path, s, window)
                        .map_err(|e| e.to_string())
                });
                match loaded {
                    Ok((read, _)) if read.iter().map(|t| t.0).eq(entry.tokens.iter().copied()) => {
                        slots.set(seq, read);
                        stash.set_owner(seq, Some(key.clone()));
                        sequences += 1;
                        tokens += n;
                    }
                    Ok(_) => {
                        clear(ctx, slots, seq);
                        skipped.push(format!("sequence file {index} holds other tokens"));
                    }
                    Err(e) => {
                        clear(ctx, slots, seq);
                        skipped.push(format!("llama.cpp could not load sequence {index}: {e}"));
                    }
                }
            }
            if sequences == 0 && !skipped.is_empty() {
                return Restored::Skipped(skipped.join("; "));
            }
            for why in skipped {
                tracing::info!(session = %key, %why, "part of a saved state skipped");
            }
            Restored::Loaded { sequences, tokens }
        }

        /// Save what the context holds for `key`: the sequences its prompts were last
        /// sent to, then its most recent states stashed in memory (at most
        /// [`SAVED_STASHED`]), each of at least [`MIN_TOKENS`] tokens, replacing its
        /// earlier state; then keep all states under the cap. Returns whether anything was
        /// saved. A stashed state is written from the sequence, so the sequence's own is
        /// copied aside meanwhile and put back after.
        ///
        /// # Errors
        /// When a file cannot be written; what was half written is removed.
        pub(crate) fn save(
            &self,
            ctx: &mut LlamaContext<'_>,
            slots: &mut Slots<LlamaToken>,
            stash: &mut SeqStash,
            key: &SessionKey,
        ) -> Result<bool, crate::Error> {
            let failed = |what: &str, e: &dyn std::fmt::Display| {
                let _ = remove_session_state(&self.dir, key);
                crate::Error::SessionState(format!("cannot save the session's state ({what}: {e})"))
            };
            ensure_private_dir(&self.dir).map_err(|e| failed("its folder", &e))?;
            remove_session_state(&self.dir, key).map_err(|e| failed("the old state", &e))?;
            let mut entries = Vec::new();
            for seq in slots.held() {
                let tokens = slots.tokens(seq);
                if tokens.len() < MIN_TOKENS || stash.owner(seq) != Some(key) {
                    continue;
                }
                let entry = self
                    .write_entry(ctx, seq, tokens, key, entries.len())
                    .map_err(|(what, e)| failed(what, &e))?;
                entries.push(entry);
            }
            let stashed: Vec<_> = stash
                .stash
                .of(key)
                .into_iter()
                .filter(|e| e.tokens.len() >= MIN_TOKENS)
                .take(SAVED_STASHED)
                .collect();
            if !stashed.is_empty() {
                let seq = slots.held().first().copied().unwrap_or(0);
                let (seq_id, seq_u32) = match (i32::try_from(seq), u32::try_from(seq)) {
                    (Ok(id), Ok(n)) => (id, n),
                    _ => return Err(failed("a sequence", &seq)),
                };
                let own_tokens = slots.tokens(seq).to_vec();
                let own = (!own_tokens.is_empty())
                    .then(|| ctx.state_seq_get(seq_id, LlamaStateSeqFlags::empty()).ok())
                    .flatten();
                let mut written = Ok(());
                for state in &stashed {
                    let _ = ctx.clear_kv_cache_seq(Some(seq_u32), None, None);
                    let entry = ctx
                        .state_seq_set(&state.payload, seq_id)
                        .map_err(|e| ("llama.cpp", e.to_string()))
                        .and_then(|()| {
                            self.write_entry(ctx, seq, &state.tokens, key, entries.len())
                        });
                    match entry {
                        Ok(entry) => entries.push(entry),
                        Err(e) => {
                            written = Err(e);
                            break;
                        }
                    }
                }
                // The sequence's own state back (else it holds nothing).
                let _ = ctx.clear_kv_cache_seq(Some(seq_u32), None, None);
                slots.clear(seq);
                if let Some(own) = own {
                    if ctx.state_seq_set(&own, seq_id).is_ok() {
                        slots.set(seq, own_tokens);
                    } else {
                        let _ = ctx.clear_kv_cache_seq(Some(seq_u32), None, None);
                    }
                }
                written.map_err(|(what, e)| failed(what, &e))?;
            }
            if entries.is_empty() {
                return Ok(false);
            }
            self.write_manifest(key, entries)
                .map_err(|e| failed("the manifest", &e))?;
            self.enforce_cap();
            Ok(true)
        }

        /// Write what sequence `seq` holds (`tokens`) as `key`'s sequence file `index`.
        pub(super) fn write_entry(
            &self,
            ctx: &LlamaContext<'_>,
            seq: usize,
            tokens: &[LlamaToken],
            key: &SessionKey,
            index: usize,
        ) -> Result<Entry, (&'static str, String)> {
            let path = entry_path(&self.dir, key, index);
            let temporary = path.with_extension(format!(
                "{}.tmp",
                path.extension().and_then(|e| e.to_str()).unwrap_or("kv")
            ));
            create_private(&temporary).map_err(|e| ("a sequence file", e.to_string()))?;
            let seq_id = i32::try_from(seq).map_err(|e| ("a sequence", e.to_string()))?;
            let bytes = ctx
                .state_seq_save_file(&temporary, seq_id, tokens)
                .map_err(|e| ("llama.cpp", e.to_string()))?;
            let checksum =
                file_checksum(&temporary).map_err(|e| ("a sequence file", e.to_string()))?;
            std::fs::rename(&temporary, &path).map_err(|e| ("a sequence file", e.to_string()))?;
            Ok(Entry {
                tokens: tokens.iter().map(|t| t.0).collect(),
                bytes: bytes as u64,
                checksum,
            })
        }
    }

    /// Forget what sequence `seq` holds, in the context and the bookkeeping.
    pub(super) fn clear(ctx: &mut LlamaContext<'_>, slots: &mut Slots<LlamaToken>, seq: usize) {
        if slots.tokens(seq).is_empty() {
            return;
        }
        let cleared = u32::try_from(seq)
            .ok()
            .and_then(|s| ctx.clear_kv_cache_seq(Some(s), None, None).ok());
        if cleared != Some(true) {
            ctx.clear_kv_cache();
            slots.clear_all();
        }
        slots.clear(seq);
    }
}

/// Create `dir` (and its parents) when missing, the folder itself private (0700); a
/// folder there already that others may enter is made private.
fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.is_dir() && meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

mod prefix;
pub(crate) use prefix::PREFIX_MIN_TOKENS;
pub use prefix::{prefix_states, remove_prefix_states, PrefixStates};

#[cfg(test)]
mod tests;
