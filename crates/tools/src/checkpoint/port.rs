//! [`core_models::Checkpointer`] over the store: one store per workspace, opened on first
//! use, each recording done on a blocking thread (it walks the workspace).

use super::store::{Checkpoints, Limits, Moment};
use crate::workspace::Workspace;
use async_trait::async_trait;
use core_models::{CheckpointMoment, Checkpointer, Error};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Records workspaces in checkpoint stores under one data folder.
#[derive(Debug)]
pub struct StoreCheckpointer {
    data_dir: PathBuf,
    limits: Limits,
    open: Mutex<HashMap<PathBuf, Arc<Checkpoints>>>,
}

impl StoreCheckpointer {
    /// Stores under `data_dir` (AIntern's data folder), with `limits`.
    pub fn new(data_dir: impl Into<PathBuf>, limits: Limits) -> Self {
        StoreCheckpointer {
            data_dir: data_dir.into(),
            limits,
            open: Mutex::new(HashMap::new()),
        }
    }

    fn store(&self, workspace: &Path) -> Result<Arc<Checkpoints>, Error> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = open.get(workspace) {
            return Ok(Arc::clone(found));
        }
        let ws = Workspace::new(workspace).map_err(|e| port_error(e.to_string()))?;
        let store = Checkpoints::open(&self.data_dir, &ws, self.limits.clone())
            .map_err(|e| port_error(e.to_string()))?;
        let store = Arc::new(store);
        open.insert(workspace.to_path_buf(), Arc::clone(&store));
        Ok(store)
    }
}

fn port_error(message: String) -> Error {
    Error::Port {
        message: format!("checkpoint: {message}"),
        source: None,
    }
}

#[async_trait]
impl Checkpointer for StoreCheckpointer {
    async fn record(
        &self,
        workspace: &Path,
        moment: CheckpointMoment,
        conversation: uuid::Uuid,
        label: &str,
    ) -> Result<u64, Error> {
        let store = self.store(workspace)?;
        let moment = match moment {
            CheckpointMoment::BeforeChange => Moment::Before,
            CheckpointMoment::AfterRequest => Moment::After,
        };
        let label = label.to_owned();
        tokio::task::spawn_blocking(move || {
            store
                .record(moment, Some(&conversation.to_string()), &label)
                .map(|p| p.id)
        })
        .await
        .map_err(|e| port_error(e.to_string()))?
        .map_err(|e| port_error(e.to_string()))
    }
}
