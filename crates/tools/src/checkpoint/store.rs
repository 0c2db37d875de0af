//! The store: objects by hash, checkpoints as manifests, a byte budget.

use super::plan::{self, RestorePlan, Restored, Since};
use super::scan::{scan, Entry, NotKept, Scanned};
use crate::workspace::Workspace;
use core_models::CancellationToken;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What a checkpoint store may not do or hold.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The most bytes all of a workspace's objects may take; the oldest checkpoints go
    /// beyond it.
    pub budget_bytes: u64,
    /// The largest file kept.
    pub max_file_bytes: u64,
    /// The most new bytes one checkpoint puts in the store.
    pub max_new_bytes: u64,
    /// The most paths one checkpoint lists.
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            budget_bytes: 1024 * 1024 * 1024,
            max_file_bytes: 16 * 1024 * 1024,
            max_new_bytes: 512 * 1024 * 1024,
            max_entries: 200_000,
        }
    }
}

/// When a checkpoint was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Moment {
    /// Before a request's first change.
    Before,
    /// After a request that changed something.
    After,
    /// Before a rewind changed the workspace (so it can be undone too).
    BeforeRewind,
}

/// A checkpoint: the workspace's state at one moment.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Its number (increasing in a workspace's store).
    pub id: u64,
    /// When, in milliseconds since the epoch.
    pub created_ms: u64,
    /// When in a request.
    pub moment: Moment,
    /// The session it belongs to, if any.
    pub session: Option<String>,
    /// The request it was taken for (the user's words, shortened).
    pub label: String,
    /// Whether the walk reached every path.
    pub complete: bool,
    /// Files read to take it (the others were known unchanged from the one before).
    #[serde(default)]
    pub files_read: usize,
    /// Bytes it added to the store.
    #[serde(default)]
    pub new_bytes: u64,
    /// Each path and its state.
    pub entries: BTreeMap<String, Entry>,
}

/// A checkpoint in a listing, without its entries.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Its number.
    pub id: u64,
    /// When, in milliseconds since the epoch.
    pub created_ms: u64,
    /// When in a request.
    pub moment: Moment,
    /// Its session.
    pub session: Option<String>,
    /// Its request.
    pub label: String,
}

/// One request that changed the workspace, as its checkpoints tell it.
#[derive(Debug, Clone, Serialize)]
pub struct RequestRecord {
    /// The checkpoint before its first change: restoring it undoes the request (and every
    /// later one).
    pub before: u64,
    /// The checkpoint of what it left, if it ended.
    pub after: Option<u64>,
    /// When it began changing things, in milliseconds since the epoch.
    pub created_ms: u64,
    /// Its session.
    pub session: Option<String>,
    /// Its words.
    pub label: String,
    /// The paths it changed (by the checkpoints before and after it).
    pub changed: Vec<String>,
}

/// What went wrong with a checkpoint store.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The store could not be read or written.
    #[error("the checkpoint store at {path}: {source}")]
    Io {
        /// Where.
        path: PathBuf,
        /// What.
        #[source]
        source: io::Error,
    },
    /// A file of the store is damaged or was not written by AIntern.
    #[error("the checkpoint store is damaged: {0}")]
    Damaged(String),
    /// No such checkpoint.
    #[error("there is no checkpoint {0}")]
    NotFound(u64),
    /// The store belongs to another workspace (a hash collision or a moved store).
    #[error("the checkpoint store at {0} belongs to another workspace")]
    Foreign(PathBuf),
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The most of a manifest that is read.
const MANIFEST_CAP: u64 = 256 * 1024 * 1024;

/// A workspace's checkpoints.
#[derive(Debug)]
pub struct Checkpoints {
    root: PathBuf,
    workspace: Workspace,
    objects: Objects,
    limits: Limits,
}

impl Checkpoints {
    /// The store of `workspace` under `data_dir` (AIntern's data folder), created when
    /// missing.
    ///
    /// # Errors
    /// When the store cannot be created or read, or belongs to another workspace.
    pub fn open(
        data_dir: &Path,
        workspace: &Workspace,
        limits: Limits,
    ) -> Result<Self, CheckpointError> {
        let path = workspace.root().to_string_lossy().into_owned();
        let key = hex(&Sha256::digest(path.as_bytes()))[..16].to_owned();
        let root = data_dir.join("checkpoints").join(key);
        for dir in [root.join("points"), root.join("objects")] {
            private_dir(&dir)?;
        }
        let marker = root.join("workspace");
        match fs::read_to_string(&marker) {
            Ok(found) if found == path => {}
            Ok(_) => return Err(CheckpointError::Foreign(root)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                write_private(&marker, path.as_bytes())?;
            }
            Err(e) => return Err(io_at(&marker)(e)),
        }
        Ok(Checkpoints {
            objects: Objects {
                dir: root.join("objects"),
            },
            root,
            workspace: workspace.clone(),
            limits,
        })
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// Record the workspace as it is now; returns the checkpoint (entries included) and
    /// evicts the oldest checkpoints past the budget.
    ///
    /// # Errors
    /// When the store cannot be written.
    pub fn record(
        &self,
        moment: Moment,
        session: Option<&str>,
        label: &str,
    ) -> Result<Checkpoint, CheckpointError> {
        let previous = self.latest()?;
        let scanned: Scanned = scan(
            &self.workspace,
            previous.as_ref().map(|p| &p.entries),
            &self.objects,
            &self.limits,
        )?;
        tracing::debug!(
            files_read = scanned.files_read,
            new_bytes = scanned.new_bytes,
            entries = scanned.entries.len(),
            "checkpoint recorded"
        );
        let mut point = Checkpoint {
            id: previous.as_ref().map_or(1, |p| p.id + 1),
            created_ms: now_ms(),
            moment,
            session: session.map(str::to_owned),
            label: label.chars().take(200).collect(),
            complete: scanned.complete,
            files_read: scanned.files_read,
            new_bytes: scanned.new_bytes,
            entries: scanned.entries,
        };
        let bytes =
            serde_json::to_vec(&point).map_err(|e| CheckpointError::Damaged(e.to_string()))?;
        // Another process may take the same number: the next free one is used.
        loop {
            let path = self.point_path(point.id);
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(mut file) => {
                    file.write_all(&bytes).map_err(io_at(&path))?;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => point.id += 1,
                Err(e) => return Err(io_at(&path)(e)),
            }
        }
        self.evict(point.id)?;
        Ok(point)
    }

    /// Every checkpoint, oldest first (a damaged manifest is skipped with a note).
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn list(&self) -> Result<Vec<Summary>, CheckpointError> {
        let mut out = Vec::new();
        for id in self.ids()? {
            match self.load(id) {
                Ok(p) => out.push(Summary {
                    id: p.id,
                    created_ms: p.created_ms,
                    moment: p.moment,
                    session: p.session,
                    label: p.label,
                }),
                Err(e) => tracing::warn!(id, error = %e, "a checkpoint was skipped"),
            }
        }
        Ok(out)
    }

    /// The requests that changed the workspace, oldest first: those of `session` (or
    /// every one), each with the paths it changed.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn requests(&self, session: Option<&str>) -> Result<Vec<RequestRecord>, CheckpointError> {
        let points: Vec<Checkpoint> = self
            .ids()?
            .into_iter()
            .filter_map(|id| self.load(id).ok())
            .collect();
        let mut out = Vec::new();
        for (i, p) in points.iter().enumerate() {
            if p.moment != Moment::Before
                || session.is_some_and(|s| p.session.as_deref() != Some(s))
            {
                continue;
            }
            let after = points[i + 1..]
                .iter()
                .find(|q| q.session == p.session && q.moment == Moment::After);
            let changed = match after {
                Some(a) => changed_between(&p.entries, &a.entries),
                None => Vec::new(),
            };
            out.push(RequestRecord {
                before: p.id,
                after: after.map(|a| a.id),
                created_ms: p.created_ms,
                session: p.session.clone(),
                label: p.label.clone(),
                changed,
            });
        }
        Ok(out)
    }

    /// The checkpoint `id`.
    ///
    /// # Errors
    /// When it is missing or damaged.
    pub fn load(&self, id: u64) -> Result<Checkpoint, CheckpointError> {
        let path = self.point_path(id);
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(CheckpointError::NotFound(id))
            }
            Err(e) => return Err(io_at(&path)(e)),
        };
        let mut bytes = Vec::new();
        file.take(MANIFEST_CAP)
            .read_to_end(&mut bytes)
            .map_err(io_at(&path))?;
        let point: Checkpoint = serde_json::from_slice(&bytes)
            .map_err(|e| CheckpointError::Damaged(format!("checkpoint {id}: {e}")))?;
        if point.id != id {
            return Err(CheckpointError::Damaged(format!(
                "checkpoint {id} names itself {}",
                point.id
            )));
        }
        Ok(point)
    }

    /// The newest checkpoint, if any.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn latest(&self) -> Result<Option<Checkpoint>, CheckpointError> {
        for id in self.ids()?.into_iter().rev() {
            match self.load(id) {
                Ok(p) => return Ok(Some(p)),
                Err(e) => tracing::warn!(id, error = %e, "a checkpoint was skipped"),
            }
        }
        Ok(None)
    }

    /// What changed in the workspace since checkpoint `id`, path by path, with a diff
    /// from then to now for text files (a session's `/diff`). The workspace as it is now
    /// is read into the store on the way.
    ///
    /// # Errors
    /// When the checkpoint or the store cannot be read.
    pub fn changes_since(&self, id: u64) -> Result<Vec<Since>, CheckpointError> {
        let target = self.load(id)?;
        let latest = self.latest()?;
        let now = scan(
            &self.workspace,
            latest.as_ref().map(|p| &p.entries),
            &self.objects,
            &self.limits,
        )?;
        Ok(plan::since(&target, &now.entries, &self.objects))
    }

    /// What restoring the workspace to checkpoint `id` would change, against the state
    /// the newest checkpoint taken after a request records (changes made since by anyone
    /// else are conflicts). The workspace as it is now is read into the store on the way.
    ///
    /// # Errors
    /// When a checkpoint or the store cannot be read.
    pub fn plan(&self, id: u64) -> Result<RestorePlan, CheckpointError> {
        let target = self.load(id)?;
        let latest = self.latest()?;
        let left = latest.filter(|p| p.moment != Moment::Before && p.id > id);
        let now = scan(
            &self.workspace,
            left.as_ref().map(|p| &p.entries),
            &self.objects,
            &self.limits,
        )?;
        Ok(plan::plan(
            &target,
            left.as_ref(),
            &now.entries,
            &self.objects,
        ))
    }

    /// Carry out `plan`, after recording the workspace as it is; conflicts are left
    /// alone unless `overwrite_conflicts`.
    ///
    /// # Errors
    /// When the store cannot be read or written (each file's own failure is in the
    /// result instead).
    pub fn apply(
        &self,
        plan: &RestorePlan,
        overwrite_conflicts: bool,
        session: Option<&str>,
        token: &CancellationToken,
    ) -> Result<Restored, CheckpointError> {
        let before = self.record(
            Moment::BeforeRewind,
            session,
            &format!("before restoring checkpoint {}", plan.to),
        )?;
        Ok(plan::apply(
            &self.workspace,
            &self.objects,
            plan,
            overwrite_conflicts,
            before.id,
            token,
        ))
    }

    fn point_path(&self, id: u64) -> PathBuf {
        self.root.join("points").join(format!("{id:010}.json"))
    }

    fn ids(&self) -> Result<Vec<u64>, CheckpointError> {
        let dir = self.root.join("points");
        let mut ids: Vec<u64> = fs::read_dir(&dir)
            .map_err(io_at(&dir))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name();
                name.to_str()?.strip_suffix(".json")?.parse().ok()
            })
            .collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Drop the oldest checkpoints (never `keep`) while the objects exceed the budget,
    /// then remove the objects no checkpoint names.
    fn evict(&self, keep: u64) -> Result<(), CheckpointError> {
        let mut ids = self.ids()?;
        let mut total = self.objects.total_bytes();
        if total <= self.limits.budget_bytes {
            return Ok(());
        }
        while total > self.limits.budget_bytes && ids.first().is_some_and(|&id| id != keep) {
            let id = ids.remove(0);
            let path = self.point_path(id);
            fs::remove_file(&path).map_err(io_at(&path))?;
            let named = self.named(&ids);
            total = self.objects.remove_except(&named);
        }
        Ok(())
    }

    /// Every object the checkpoints `ids` name.
    fn named(&self, ids: &[u64]) -> HashSet<String> {
        let mut out = HashSet::new();
        for &id in ids {
            if let Ok(p) = self.load(id) {
                out.extend(p.entries.into_values().filter_map(|e| match e {
                    Entry::File { hash, .. } => Some(hash),
                    _ => None,
                }));
            }
        }
        out
    }
}

/// The objects: each regular file's bytes once, named by their SHA-256.
#[derive(Debug)]
pub(crate) struct Objects {
    pub(crate) dir: PathBuf,
}

/// What putting a file in the store did.
pub(crate) struct Put {
    pub(crate) hash: String,
    pub(crate) size: u64,
    /// Bytes the store grew by (0 when the object was there).
    pub(crate) new_bytes: u64,
}

impl Objects {
    fn path(&self, hash: &str) -> Option<PathBuf> {
        let valid = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        valid.then(|| self.dir.join(&hash[..2]).join(&hash[2..]))
    }

    /// Whether the object `hash` is there.
    pub(crate) fn has(&self, hash: &str) -> bool {
        self.path(hash).is_some_and(|p| p.is_file())
    }

    /// Copy `file` (read up to `cap` bytes) into the store.
    pub(crate) fn put(&self, mut file: File, cap: u64) -> Result<Put, NotKept> {
        let unreadable = |e: io::Error| NotKept::Unreadable {
            message: e.to_string(),
        };
        let temporary = self.dir.join(format!(".incoming-{:016x}", rand_u64()));
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .map_err(unreadable)?;
        let result = (|| {
            let mut hasher = Sha256::new();
            let mut size = 0u64;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = file.read(&mut buf).map_err(unreadable)?;
                if n == 0 {
                    break;
                }
                size += n as u64;
                if size > cap {
                    return Err(NotKept::TooLarge { size });
                }
                hasher.update(&buf[..n]);
                out.write_all(&buf[..n]).map_err(unreadable)?;
            }
            let hash = hex(&hasher.finalize());
            let Some(path) = self.path(&hash) else {
                return Err(NotKept::Unreadable {
                    message: "bad hash".into(),
                });
            };
            if path.is_file() {
                return Ok(Put {
                    hash,
                    size,
                    new_bytes: 0,
                });
            }
            if let Some(parent) = path.parent() {
                private_dir(parent).map_err(|e| NotKept::Unreadable {
                    message: e.to_string(),
                })?;
            }
            fs::rename(&temporary, &path).map_err(unreadable)?;
            Ok(Put {
                hash,
                size,
                new_bytes: size,
            })
        })();
        let _ = fs::remove_file(&temporary);
        result
    }

    /// The bytes of object `hash`, checked against it, at most `cap` of them.
    pub(crate) fn read(&self, hash: &str, cap: u64) -> Result<Vec<u8>, String> {
        let path = self.path(hash).ok_or("a checkpoint names a bad object")?;
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&path)
            .map_err(|e| format!("the checkpoint's copy is missing: {e}"))?;
        let mut bytes = Vec::new();
        file.take(cap.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| format!("the checkpoint's copy cannot be read: {e}"))?;
        if bytes.len() as u64 > cap || hex(&Sha256::digest(&bytes)) != hash {
            return Err("the checkpoint's copy is damaged".into());
        }
        Ok(bytes)
    }

    fn all(&self) -> Vec<(PathBuf, String, u64)> {
        let mut out = Vec::new();
        let Ok(dirs) = fs::read_dir(&self.dir) else {
            return out;
        };
        for dir in dirs.filter_map(|d| d.ok()) {
            let Ok(files) = fs::read_dir(dir.path()) else {
                continue;
            };
            let prefix = dir.file_name().to_string_lossy().into_owned();
            for f in files.filter_map(|f| f.ok()) {
                let size = f.metadata().map_or(0, |m| m.len());
                let hash = format!("{prefix}{}", f.file_name().to_string_lossy());
                out.push((f.path(), hash, size));
            }
        }
        out
    }

    fn total_bytes(&self) -> u64 {
        self.all().iter().map(|(_, _, s)| s).sum()
    }

    /// Remove every object not in `keep`; the bytes left.
    fn remove_except(&self, keep: &HashSet<String>) -> u64 {
        let mut left = 0;
        for (path, hash, size) in self.all() {
            if keep.contains(&hash) {
                left += size;
            } else if let Err(e) = fs::remove_file(&path) {
                tracing::warn!(error = %e, "a checkpoint object could not be removed");
                left += size;
            }
        }
        left
    }
}

fn private_dir(dir: &Path) -> Result<(), CheckpointError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_at(dir))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io_at(path))?;
    f.write_all(bytes).map_err(io_at(path))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(u128::from(now_ms()) << 32 | u128::from(std::process::id()));
    h.finish()
}

/// The paths whose state differs between two checkpoints' entries.
fn changed_between(a: &BTreeMap<String, Entry>, b: &BTreeMap<String, Entry>) -> Vec<String> {
    let paths: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    paths
        .into_iter()
        .filter(|p| match (a.get(*p), b.get(*p)) {
            (Some(x), Some(y)) => !x.same_state(y),
            _ => true,
        })
        .cloned()
        .collect()
}
