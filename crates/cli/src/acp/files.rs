//! The client's files: when it advertises `fs.readTextFile` / `fs.writeTextFile`, the
//! file tools read and write through it (`fs/read_text_file`, `fs/write_text_file`), so
//! the editor's unsaved buffers are seen and edits land in the editor. The tools check
//! each path first (beneath the workspace, no secret location): a path outside is refused
//! without asking the client.

use super::Conn;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, WriteTextFileRequest};
use std::path::Path;
use std::sync::OnceLock;

/// The client as the file tools' editor.
pub(crate) struct ClientFiles {
    cx: Conn,
    /// The session's id, known once it is open.
    session: OnceLock<String>,
    reads: bool,
    writes: bool,
}

impl std::fmt::Debug for ClientFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFiles")
            .field("session", &self.session.get())
            .field("reads", &self.reads)
            .field("writes", &self.writes)
            .finish_non_exhaustive()
    }
}

impl ClientFiles {
    /// Through `cx`, reading and writing as the client advertised.
    pub(crate) fn new(cx: Conn, reads: bool, writes: bool) -> Self {
        ClientFiles {
            cx,
            session: OnceLock::new(),
            reads,
            writes,
        }
    }

    /// The session is open: its id.
    pub(crate) fn opened(&self, id: String) {
        let _ = self.session.set(id);
    }

    fn session(&self) -> Result<String, String> {
        self.session
            .get()
            .cloned()
            .ok_or_else(|| "the session is not open yet".to_string())
    }
}

#[async_trait::async_trait]
impl tools::EditorFiles for ClientFiles {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    async fn read_text(&self, path: &Path) -> Result<String, String> {
        let request = ReadTextFileRequest::new(self.session()?, path.to_path_buf());
        let response = self
            .cx
            .send_request(request)
            .block_task()
            .await
            .map_err(|e| e.to_string())?;
        Ok(response.content)
    }

    async fn write_text(&self, path: &Path, text: &str) -> Result<(), String> {
        let request = WriteTextFileRequest::new(self.session()?, path.to_path_buf(), text);
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    }
}
