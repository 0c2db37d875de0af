//! The files sessions' slots are saved in on llama-server, and which state each holds.
//!
//! llama-server writes a saved slot to a file under its `--slot-save-path` and has no
//! action that removes one. A file per session and shape of prompt would fill the
//! server's disk as sessions come and go (a 7–8B model's state takes about 128 KiB a
//! token: a conversation of 6k tokens, about 0.75 GiB). The files are therefore a pool:
//! at most [`crate::OpenAiConfig::slot_files`] per user, machine, server and model, named
//! `aintern-<owner>-<pool>-<n>.bin`, where `owner` is a hash of the machine's name and the
//! user's id (so clients of other users or machines use other names), `pool` a hash of the
//! server's address and of the model it serves (see [`crate::ServerInfo`]'s model
//! identity), and `n` is below the pool's size. Nothing of a session's key reaches the
//! server's disk.
//!
//! A state is valid only for the model that computed it, and llama-server checks little
//! of that when it restores a file (the layers' count and the cache's types and sizes,
//! which another file of the same architecture passes): so a server restarted with
//! another model, or another server writing to the same `--slot-save-path`, gets a pool
//! of its own, and a state one computed is never asked for from the other.
//!
//! Which state each file holds is recorded in the claims folder (see [`super::claim`]):
//! one record per pool and file, holding the state's name (its session's key and its
//! shape), its time the last time the file was saved or restored. A state is saved in the
//! file that holds it already, else in one no record names, else in the least recently
//! used, whose state is forgotten; it is restored only from the file a record names it
//! in. Records change under a lock (a file of the same folder), so two processes never
//! take the same file for two states.
//!
//! A state never saved is thus never asked for: a restore that finds no file empties the
//! slot it was for (llama-server clears it first), and a request pinned to an empty slot
//! is evaluated from nothing, the server's own prompt cache passed by. A record is a hint,
//! never trusted for content: a file the server no longer has (a server restarted with
//! another `--slot-save-path`) costs one failed restore, after which the record is gone;
//! a file another client of the same user, machine, server and model overwrote costs a
//! restore whose tokens the server does not reuse (it reuses a restored state only as far
//! as its tokens match the prompt, and the same model computed them).
//!
//! Without the folder, a state's file is the one its name hashes to: the pool is bounded
//! all the same, and two states that share a file cost time, never a wrong reply.

use super::claim::{user, Claims};
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Most bytes of a record read (a state's name is a key of at most 64 characters, a dash
/// and 16 hexadecimal digits).
const RECORD_CAP: u64 = 256;

/// The pool of one client's slot files on one server and model.
#[derive(Debug)]
pub(crate) struct SlotFiles {
    /// The folder of the records, when it can be used (the claims folder).
    dir: Option<PathBuf>,
    /// The pool's identity (the server's and its model's) in the names of the records and
    /// the files.
    pool: u64,
    /// This user's and machine's part of the files' names.
    owner: u32,
    /// How many files the pool has (at least 1).
    size: u32,
}

/// One record: file `n` holds `state`, last used at `used`.
#[derive(Debug)]
struct Record {
    n: u32,
    state: String,
    used: SystemTime,
}

impl SlotFiles {
    /// The pool of `size` files (at least 1) on the server `claims` are for, serving the
    /// model `model` identifies ([`crate::ServerInfo::model_identity`]), recorded in the
    /// claims' folder when they have one.
    pub(crate) fn new(claims: &Claims, model: &str, size: u32) -> Self {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let who = format!("{}\u{0}{}", host.trim(), user().unwrap_or(u32::MAX));
        SlotFiles {
            dir: claims.folder().map(Path::to_path_buf),
            pool: super::fnv1a(format!("{:016x}\u{0}{model}", claims.server()).as_bytes()),
            // The low half of the hash: enough to keep users and machines apart.
            owner: (super::fnv1a(who.as_bytes()) & u64::from(u32::MAX)) as u32,
            size: size.max(1),
        }
    }

    /// The file `state` was saved in, as far as this machine's records tell (its record's
    /// time is now); `None` when no record names it. Without records, the file `state`'s
    /// name hashes to.
    pub(crate) fn find(&self, state: &str) -> Option<String> {
        let Some(dir) = &self.dir else {
            return Some(self.name(self.hashed(state)));
        };
        let _lock = self.lock(dir);
        let n = self.records(dir).into_iter().find(|r| r.state == state)?.n;
        touch(&self.record(dir, n));
        Some(self.name(n))
    }

    /// The file to save `state` in, recorded as holding it from now on: the one that holds
    /// it already, else one no record names, else the least recently used (its state
    /// forgotten). Without records, the file `state`'s name hashes to. `None` when the
    /// record cannot be written: the state is then not to be saved (no one could find it,
    /// and a file reused for it would no longer hold what its old record says).
    pub(crate) fn place(&self, state: &str) -> Option<String> {
        let Some(dir) = &self.dir else {
            return Some(self.name(self.hashed(state)));
        };
        let lock = self.lock(dir);
        if lock.is_some() {
            self.sweep(dir);
        }
        let records = self.records(dir);
        let taken: std::collections::HashSet<u32> = records.iter().map(|r| r.n).collect();
        let n = records
            .iter()
            .find(|r| r.state == state)
            .map(|r| r.n)
            .or_else(|| (0..self.size).find(|n| !taken.contains(n)))
            .or_else(|| records.iter().min_by_key(|r| (r.used, r.n)).map(|r| r.n))
            .unwrap_or_else(|| self.hashed(state));
        match self.write(dir, n, state) {
            Ok(()) => Some(self.name(n)),
            Err(e) => {
                tracing::warn!(error = %e, n, "the record of a slot file cannot be written: the slot is not saved");
                None
            }
        }
    }

    /// `state` is in no file: a restore found none, or a save moved nothing or failed.
    /// Its record is removed (a record another state took meanwhile stays).
    pub(crate) fn forget(&self, state: &str) {
        self.forget_where(|s| s == state);
    }

    /// Remove the records of the states `which` picks; how many were removed.
    fn forget_where(&self, which: impl Fn(&str) -> bool) -> usize {
        let Some(dir) = &self.dir else {
            return 0;
        };
        let _lock = self.lock(dir);
        let mut removed = 0;
        for record in self.records(dir).into_iter().filter(|r| which(&r.state)) {
            match std::fs::remove_file(self.record(dir, record.n)) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::debug!(error = %e, n = record.n, "the record of a slot file was not removed");
                }
            }
        }
        removed
    }

    /// The name of file `n` on the server: letters, digits, `-` and `.`, which
    /// llama-server's file-name check accepts.
    fn name(&self, n: u32) -> String {
        format!(
            "aintern-{:08x}-{:08x}-{n}.bin",
            self.owner,
            // The low half: enough to keep servers and models apart on one disk.
            self.pool & u64::from(u32::MAX)
        )
    }

    /// The file `state`'s name hashes to.
    fn hashed(&self, state: &str) -> u32 {
        // Below `size`, which is a u32.
        u32::try_from(super::fnv1a(state.as_bytes()) % u64::from(self.size)).unwrap_or(0)
    }

    /// The record of file `n`.
    fn record(&self, dir: &Path, n: u32) -> PathBuf {
        dir.join(format!("{:016x}-{n}.holds", self.pool))
    }

    /// This pool's records of its files (a record of a file past its size, left
    /// by a larger pool, is not one).
    fn records(&self, dir: &Path) -> Vec<Record> {
        let prefix = format!("{:016x}-", self.pool);
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name();
                let n: u32 = name
                    .to_str()?
                    .strip_prefix(&prefix)?
                    .strip_suffix(".holds")?
                    .parse()
                    .ok()
                    .filter(|n| *n < self.size)?;
                let meta = entry.metadata().ok().filter(|m| m.is_file())?;
                let mut state = String::new();
                File::open(entry.path())
                    .ok()?
                    .take(RECORD_CAP)
                    .read_to_string(&mut state)
                    .ok()?;
                Some(Record {
                    n,
                    state,
                    used: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                })
            })
            .collect()
    }

    /// Record that file `n` holds `state`, whole or not at all (written beside, then
    /// renamed), private to the user.
    fn write(&self, dir: &Path, n: u32, state: &str) -> std::io::Result<()> {
        let path = self.record(dir, n);
        let beside = dir.join(format!(
            "{:016x}-{n}.holds.{}",
            self.pool,
            std::process::id()
        ));
        let written = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o600)
            .open(&beside)
            .and_then(|mut file| {
                file.write_all(state.as_bytes())?;
                file.set_modified(SystemTime::now())
            })
            .and_then(|()| std::fs::rename(&beside, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&beside);
        }
        written
    }

    /// Remove this pool's records a process left half written (it died between writing
    /// and renaming). Called holding the lock, under which every record is written, so
    /// none is being written now.
    fn sweep(&self, dir: &Path) {
        let prefix = format!("{:016x}-", self.pool);
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let left = name
                .to_str()
                .and_then(|name| name.strip_prefix(&prefix))
                .and_then(|rest| rest.split_once(".holds."))
                .is_some_and(|(n, pid)| {
                    !n.is_empty()
                        && n.bytes().all(|b| b.is_ascii_digit())
                        && !pid.is_empty()
                        && pid.bytes().all(|b| b.is_ascii_digit())
                });
            if left && entry.file_type().is_ok_and(|t| t.is_file()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// The lock under which this pool's records change, when it can be taken (else
    /// they change without it: a race costs a restore, never a wrong reply).
    fn lock(&self, dir: &Path) -> Option<File> {
        let path = dir.join(format!("{:016x}-files.lock", self.pool));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(path)
            .and_then(|file| file.lock().map(|()| file));
        match file {
            Ok(file) => Some(file),
            Err(e) => {
                tracing::debug!(error = %e, "the slot files' records are changed unlocked");
                None
            }
        }
    }
}

/// Forget every state of the session `key` recorded in `dir`, on every server: their files
/// are the first reused by the next states saved (llama-server cannot remove them). How
/// many records were removed.
pub(crate) fn forget_session(dir: &Path, key: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    // The pools this folder holds records of, by the hash their records' names start with.
    let pools: std::collections::BTreeSet<u64> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name();
            let (pool, _) = name.to_str()?.strip_suffix(".holds")?.split_once('-')?;
            u64::from_str_radix(pool, 16).ok()
        })
        .collect();
    let of_key = |state: &str| {
        state
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|shape| shape.len() == 16 && shape.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    pools
        .into_iter()
        .map(|pool| {
            let files = SlotFiles {
                dir: Some(dir.to_path_buf()),
                pool,
                owner: 0,
                size: u32::MAX,
            };
            files.forget_where(of_key)
        })
        .sum()
}

/// Mark the record at `path` used now (its time orders the files for reuse).
fn touch(path: &Path) {
    let touched = OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|file| file.set_modified(SystemTime::now()));
    if let Err(e) = touched {
        tracing::debug!(error = %e, "the record of a slot file was not marked used");
    }
}

#[cfg(test)]
mod tests {
    use super::super::claim::private_dir;
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn pool(dir: &Path, url: &str, size: u32) -> SlotFiles {
        SlotFiles::new(&Claims::new(url, Some(dir)), "a model", size)
    }

    /// The file `state` is placed in.
    fn placed(files: &SlotFiles, state: &str) -> String {
        files
            .place(state)
            .unwrap_or_else(|| panic!("{state} was not placed"))
    }

    /// The pool's number in a file's name.
    fn number(file: &str) -> u32 {
        file.rsplit_once('-')
            .and_then(|(_, n)| n.strip_suffix(".bin"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("not a slot file: {file}"))
    }

    #[test]
    fn files_are_named_by_owner_and_number_only() {
        let dir = private_dir("files-names");
        let files = pool(&dir, "http://127.0.0.1:8080/v1", 64);
        let state = "0b0f4d6c-52a2-4d1e-9a43-0f0c8c1d2e3f-00000000000000ab";
        let name = placed(&files, state);
        assert!(!name.contains("0b0f4d6c"), "no key on the server: {name}");
        let owner = name
            .strip_prefix("aintern-")
            .and_then(|rest| rest.split_once('-'))
            .map(|(owner, _)| owner)
            .unwrap_or_default();
        assert!(owner.len() == 8 && owner.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(number(&name) < 64);
        assert!(name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'));
        // The same user on the same machine names the same files.
        assert_eq!(
            pool(&dir, "http://127.0.0.1:8080/v1/", 64).find(state),
            Some(name)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn another_model_or_server_has_a_pool_of_its_own() {
        let dir = private_dir("files-models");
        let claims = Claims::new("http://127.0.0.1:8080/v1", Some(&dir));
        let one = SlotFiles::new(&claims, "model one", 4);
        let name = placed(&one, "s-0000000000000001");
        // The same server restarted with another model: the state is not asked for, and
        // a state saved now goes to a file of another name, which the first never restores.
        let two = SlotFiles::new(&claims, "model two", 4);
        assert_eq!(two.find("s-0000000000000001"), None);
        let other = placed(&two, "s-0000000000000001");
        assert_ne!(other, name);
        assert_eq!(one.find("s-0000000000000001"), Some(name.clone()));
        // Another server writing to the same folder, with the same model: names of its own.
        let elsewhere = Claims::new("http://127.0.0.1:8081/v1", Some(&dir));
        let three = SlotFiles::new(&elsewhere, "model one", 4);
        let third = placed(&three, "s-0000000000000001");
        assert!(third != name && third != other, "{third}");
        // Each name: the owner, the pool and the number.
        let parts = |n: &str| {
            n.strip_prefix("aintern-")
                .and_then(|rest| rest.strip_suffix(".bin"))
                .map(|rest| rest.split('-').map(String::from).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let (a, b) = (parts(&name), parts(&other));
        assert_eq!((a.len(), b.len()), (3, 3), "{name} {other}");
        assert_eq!(a[0], b[0], "one user and machine");
        assert_ne!(a[1], b[1], "two pools");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_least_recently_used_file_is_reused_and_its_state_forgotten() {
        let dir = private_dir("files-reuse");
        let files = pool(&dir, "http://127.0.0.1:8080/v1", 2);
        assert_eq!(files.find("a"), None, "nothing saved yet");
        let a = placed(&files, "a");
        let b = placed(&files, "b");
        assert_ne!(a, b, "a free file before a used one");
        assert_eq!(placed(&files, "a"), a, "a state's own file");
        // `b` is used after `a`, then `a` again: `b` is the least recently used.
        assert_eq!(files.find("b"), Some(b.clone()));
        assert_eq!(files.find("a"), Some(a.clone()));
        let c = placed(&files, "c");
        assert_eq!(c, b, "the least recently used is reused");
        assert_eq!(files.find("b"), None, "its state is forgotten");
        assert_eq!(files.find("a"), Some(a.clone()));
        assert_eq!(files.find("c"), Some(c.clone()));
        // Never more files than the pool holds.
        for state in ["d", "e", "f", "g"] {
            assert!([&a, &c].contains(&&placed(&files, state)));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_forgotten_state_is_not_found_and_its_file_is_free_again() {
        let dir = private_dir("files-forget");
        let files = pool(&dir, "http://127.0.0.1:8080/v1", 3);
        let a = placed(&files, "a");
        let b = placed(&files, "b");
        files.forget("a");
        files.forget("a");
        assert_eq!(files.find("a"), None);
        assert_eq!(files.find("b"), Some(b.clone()));
        assert_eq!(placed(&files, "c"), a, "the free file, lowest first");
        // Another server's records are its own.
        let other = pool(&dir, "http://127.0.0.1:8081/v1", 3);
        assert_eq!(other.find("b"), None);
        other.forget("b");
        assert_eq!(files.find("b"), Some(b));
        // The records are private to the user, and no partial record is left.
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{e}")) {
            let entry = entry.unwrap_or_else(|e| panic!("{e}"));
            let name = entry.file_name().to_string_lossy().into_owned();
            assert!(
                name.ends_with(".holds") || name.ends_with(".lock"),
                "{name}"
            );
            let mode = entry
                .metadata()
                .unwrap_or_else(|e| panic!("{e}"))
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_record_left_half_written_is_removed_by_the_next_placing() {
        let dir = private_dir("files-left");
        let files = pool(&dir, "http://127.0.0.1:8080/v1", 4);
        let server = files.pool;
        let left = dir.join(format!("{server:016x}-2.holds.4242"));
        let others = [
            // Another server's, a name of another form, and a folder: not this pool's.
            dir.join(format!("{:016x}-2.holds.4242", server ^ 1)),
            dir.join(format!("{server:016x}-2.holds.tmp")),
        ];
        std::fs::write(&left, "half").unwrap_or_else(|e| panic!("{e}"));
        for other in &others {
            std::fs::write(other, "x").unwrap_or_else(|e| panic!("{e}"));
        }
        let folder = dir.join(format!("{server:016x}-3.holds.77"));
        std::fs::create_dir(&folder).unwrap_or_else(|e| panic!("{e}"));
        placed(&files, "a");
        assert!(!left.exists(), "the leftover is removed");
        assert!(others.iter().all(|o| o.exists()) && folder.exists());
        assert_eq!(files.find("a").map(|f| number(&f)), Some(0));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_state_whose_record_cannot_be_written_is_not_placed() {
        let dir = private_dir("files-unwritable");
        let files = pool(&dir, "http://127.0.0.1:8080/v1", 2);
        let (a, b) = (placed(&files, "a"), placed(&files, "b"));
        // The record of the least recently used file (`a`'s) cannot be written: where its
        // new record would be written first is a folder.
        let blocked = dir.join(format!(
            "{:016x}-{}.holds.{}",
            files.pool,
            number(&a),
            std::process::id()
        ));
        std::fs::create_dir(&blocked).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(files.place("c"), None);
        // Nothing changed: `a` is where it was, `c` nowhere.
        assert_eq!(files.find("a"), Some(a.clone()));
        assert_eq!(files.find("b"), Some(b));
        assert_eq!(files.find("c"), None);
        std::fs::remove_dir(&blocked).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(files.place("c"), Some(a));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn clients_placing_at_once_never_share_a_file() {
        let dir = private_dir("files-race");
        let placed: Vec<String> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..8)
                .map(|i| {
                    let dir = &dir;
                    // Each its own client, as each process is.
                    scope.spawn(move || {
                        placed(&pool(dir, "http://127.0.0.1:8080/v1", 8), &format!("s{i}"))
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or_else(|_| panic!("a client failed")))
                .collect()
        });
        let distinct: std::collections::HashSet<&String> = placed.iter().collect();
        assert_eq!(distinct.len(), 8, "{placed:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_removed_session_frees_its_files_on_every_server() {
        let dir = private_dir("files-session");
        let one = pool(&dir, "http://127.0.0.1:8080/v1", 4);
        let two = pool(&dir, "http://127.0.0.1:8081/v1", 4);
        let shape = |n: u32| format!("{n:016x}");
        let (a1, a2) = (format!("k-{}", shape(1)), format!("k-{}", shape(2)));
        // Other sessions, one whose key starts with this one's.
        let (other, longer) = (
            format!("q-{}", shape(1)),
            format!("k-{}-{}", shape(1), shape(3)),
        );
        let first = placed(&one, &a1);
        placed(&one, &a2);
        placed(&one, &other);
        placed(&two, &a1);
        placed(&two, &longer);
        assert_eq!(forget_session(&dir, "k"), 3);
        for files in [&one, &two] {
            assert_eq!(files.find(&a1), None);
            assert_eq!(files.find(&a2), None);
        }
        assert!(one.find(&other).is_some());
        assert!(two.find(&longer).is_some());
        assert_eq!(placed(&one, "new-state"), first, "its files are free again");
        assert_eq!(forget_session(&dir, "k"), 0);
        assert_eq!(forget_session(&dir.join("absent"), "k"), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_smaller_pool_ignores_records_past_its_size() {
        let dir = private_dir("files-smaller");
        let big = pool(&dir, "http://127.0.0.1:8080/v1", 4);
        for state in ["a", "b", "c"] {
            placed(&big, state);
        }
        let small = pool(&dir, "http://127.0.0.1:8080/v1", 2);
        assert_eq!(small.find("c"), None, "file 2 is past the pool");
        assert!(number(&placed(&small, "c")) < 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn without_records_a_state_goes_to_the_file_it_hashes_to() {
        let files = SlotFiles::new(&Claims::none(), "a model", 8);
        let a = placed(&files, "a-0000000000000001");
        assert_eq!(files.find("a-0000000000000001"), Some(a.clone()));
        assert!(number(&a) < 8);
        files.forget("a-0000000000000001");
        assert_eq!(placed(&files, "a-0000000000000001"), a, "nothing recorded");
        let spread: std::collections::HashSet<u32> = (0..64)
            .map(|i| number(&placed(&files, &format!("s{i}-0000000000000001"))))
            .collect();
        assert_eq!(spread.len(), 8, "the states spread over the pool");
    }
}
