//! Permission stores: in memory, and one JSON file that several processes share.

use super::core_err;
use crate::error::Error;
use async_trait::async_trait;
use core_models::{PermissionChange, PermissionMap, PermissionStore};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A [`PermissionStore`] in memory: nothing survives the process.
#[derive(Debug, Default)]
pub struct MemoryPermissionStore {
    settings: Mutex<PermissionMap>,
}

impl MemoryPermissionStore {
    fn settings(&self) -> std::sync::MutexGuard<'_, PermissionMap> {
        self.settings.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl PermissionStore for MemoryPermissionStore {
    async fn load(&self) -> Result<PermissionMap, core_models::Error> {
        Ok(self.settings().clone())
    }

    async fn save(&self, settings: &PermissionMap) -> Result<(), core_models::Error> {
        settings.clone_into(&mut self.settings());
        Ok(())
    }

    /// One step under the store's lock: concurrent changes are never lost, and a failed
    /// change keeps the settings as they were.
    async fn update(&self, change: PermissionChange) -> Result<PermissionMap, core_models::Error> {
        let mut guard = self.settings();
        let mut next = guard.clone();
        change(&mut next)?;
        *guard = next.clone();
        Ok(next)
    }
}

/// The on-disk form of the permission file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PermissionFile {
    version: u32,
    tools: PermissionMap,
}

const FILE_VERSION: u32 = 1;

/// A [`PermissionStore`] in one JSON file that several processes may share.
///
/// Every change is one step under an exclusive advisory lock on a lock file beside it
/// (`permissions.json.lock` for `permissions.json`; the JSON file itself cannot carry the
/// lock, as each write replaces it): the file is read again, changed, and replaced
/// atomically (a temporary file in the same folder, synced, renamed over the old one, and
/// the folder synced), so neither a crash nor a concurrent writer in this or another
/// process loses a rule or leaves half a file. Reading needs no lock: a reader sees the old
/// file or the new one. A missing file is an empty store; an unreadable or corrupt one is
/// an error (never "allow") and is never overwritten by a change.
#[derive(Debug, Clone)]
pub struct FilePermissionStore {
    path: PathBuf,
}

impl FilePermissionStore {
    /// A store in the file at `path` (created on first change, with its folders).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FilePermissionStore { path: path.into() }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock file beside it.
    pub fn lock_path(&self) -> PathBuf {
        let mut name = self
            .path
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_else(|| "permissions".into());
        name.push(".lock");
        self.folder().join(name)
    }

    fn folder(&self) -> PathBuf {
        match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }

    fn error(
        &self,
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> core_models::Error {
        core_err(Error::PermissionFile {
            path: self.path.clone(),
            message: message.into(),
            source: Some(Box::new(source)),
        })
    }

    fn read(&self) -> Result<PermissionMap, core_models::Error> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(PermissionMap::new()),
            Err(e) => return Err(self.error("cannot be read", e)),
        };
        let file: PermissionFile = serde_json::from_str(&text).map_err(|e| {
            self.error(
                "is corrupt (fix or delete it; nothing is allowed until then)",
                e,
            )
        })?;
        if file.version != FILE_VERSION {
            return Err(core_err(Error::PermissionFile {
                path: self.path.clone(),
                message: format!(
                    "has version {}, but this program reads version {FILE_VERSION}",
                    file.version
                ),
                source: None,
            }));
        }
        Ok(file.tools)
    }

    /// Run `step` holding the exclusive lock (blocking until it is free).
    fn locked<R>(
        &self,
        step: impl FnOnce() -> Result<R, core_models::Error>,
    ) -> Result<R, core_models::Error> {
        let folder = self.folder();
        std::fs::create_dir_all(&folder).map_err(|e| self.error("folder cannot be created", e))?;
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.lock_path())
            .map_err(|e| self.error("lock file cannot be opened", e))?;
        fs4::FileExt::lock(&lock).map_err(|e| self.error("cannot be locked", e))?;
        let result = step();
        // Closing the file releases the lock too; unlocking first is only tidier.
        let _ = fs4::FileExt::unlock(&lock);
        result
    }

    /// Replace the file with `tools`, atomically. The caller holds the lock.
    fn write(&self, tools: &PermissionMap) -> Result<(), core_models::Error> {
        let folder = self.folder();
        let text = serde_json::to_string_pretty(&PermissionFile {
            version: FILE_VERSION,
            tools: tools.clone(),
        })
        .map_err(|e| self.error("cannot be serialized", e))?;
        let mut tmp = tempfile::NamedTempFile::new_in(&folder)
            .map_err(|e| self.error("temporary file cannot be created", e))?;
        tmp.write_all(text.as_bytes())
            .and_then(|()| tmp.write_all(b"\n"))
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(|e| self.error("cannot be written", e))?;
        tmp.persist(&self.path)
            .map_err(|e| self.error("cannot be replaced", e.error))?;
        sync_folder(&folder).map_err(|e| self.error("folder cannot be synced", e))?;
        Ok(())
    }

    fn update_blocking(
        &self,
        change: PermissionChange,
    ) -> Result<PermissionMap, core_models::Error> {
        self.locked(|| {
            let mut settings = self.read()?;
            change(&mut settings)?;
            self.write(&settings)?;
            Ok(settings)
        })
    }
}

/// Make a rename in `folder` durable.
#[cfg(unix)]
fn sync_folder(folder: &Path) -> std::io::Result<()> {
    File::open(folder)?.sync_all()
}

/// Folders cannot be opened for syncing here; the rename is as durable as the system makes
/// it.
#[cfg(not(unix))]
fn sync_folder(_folder: &Path) -> std::io::Result<()> {
    Ok(())
}

/// Run blocking file work off the async runtime.
async fn blocking<R: Send + 'static>(
    what: &'static str,
    work: impl FnOnce() -> Result<R, core_models::Error> + Send + 'static,
) -> Result<R, core_models::Error> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        core_models::Error::permission_store(
            format!("{what} was interrupted"),
            Some(Box::new(e) as _),
        )
    })?
}

#[async_trait]
impl PermissionStore for FilePermissionStore {
    async fn load(&self) -> Result<PermissionMap, core_models::Error> {
        let store = self.clone();
        blocking("loading", move || store.read()).await
    }

    async fn save(&self, settings: &PermissionMap) -> Result<(), core_models::Error> {
        let store = self.clone();
        let settings = settings.clone();
        blocking("saving", move || store.locked(|| store.write(&settings))).await
    }

    async fn update(&self, change: PermissionChange) -> Result<PermissionMap, core_models::Error> {
        let store = self.clone();
        blocking("updating", move || store.update_blocking(change)).await
    }
}
