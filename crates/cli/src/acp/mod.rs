//! `aintern acp`: AIntern as an Agent Client Protocol agent (protocol version 1) over
//! stdin and stdout, for editors (Zed, JetBrains IDEs, Neovim) and headless clients.
//!
//! Each ACP session is an AIntern session built like `aintern run`'s (the facade, the
//! same flags, configuration, sandbox and permissions), in the client's `cwd`, saved
//! under its own id: `aintern chat --resume ID` continues it, and `session/load` replays
//! it. Approvals go to the client as `session/request_permission` unless `--approve` or
//! the session's mode answers them. Stdout carries protocol messages only; notes and
//! logs go to stderr.
//!
//! This file is the only one that wires handlers to the protocol crate's connection;
//! `convert.rs` maps events to updates, `turn.rs` runs a prompt, `modes.rs` holds the
//! session modes.

mod commands;
mod convert;
mod files;
mod modes;
mod turn;
mod wire;

use crate::session::{Session, SessionArgs};
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    CurrentModeUpdate, Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, SessionNotification, SessionUpdate,
    SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{
    on_receive_notification, on_receive_request, Agent as AgentRole, Client, Error as AcpError,
    ErrorCode,
};
use core_models::{AgentService as _, McpServerConfig};
use modes::Mode;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The connection to the client.
type Conn = ConnectionTo<Client>;

/// `aintern acp` options: those of `aintern run` (the workspace is each session's `cwd`).
#[derive(Debug, clap::Args)]
pub(crate) struct AcpArgs {
    #[command(flatten)]
    session: SessionArgs,
}

/// One ACP session.
pub(crate) struct AcpSession {
    /// The AIntern session; a prompt holds it while it runs.
    session: tokio::sync::Mutex<Session>,
    /// The engine, to cancel a running prompt without waiting for the session.
    engine: services_ai::AgentEngine,
    mode: Mutex<Mode>,
    /// `session/cancel` came for the running prompt.
    cancelled: AtomicBool,
    /// Files are written through the client (its buffers, not the disk).
    client_writes: bool,
    /// The client asked for `_aintern/prompt_progress` notifications.
    progress_notices: bool,
}

impl AcpSession {
    fn mode(&self) -> Mode {
        *self
            .mode
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What every handler shares.
struct Server {
    args: SessionArgs,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    /// What the client said it does with files: (reads, writes).
    fs: Mutex<(bool, bool)>,
    /// The client asked for `_aintern/prompt_progress` notifications (see
    /// [`wants_progress`]).
    progress: AtomicBool,
}

impl Server {
    fn session(&self, id: &str) -> Result<Arc<AcpSession>, AcpError> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| invalid(format!("there is no session '{id}' in this connection")))
    }

    /// Start an AIntern session in `cwd` with the client's MCP servers, continuing the
    /// saved session `resume` when given.
    async fn open(
        &self,
        cx: Conn,
        cwd: PathBuf,
        servers: Vec<McpServer>,
        resume: Option<String>,
    ) -> Result<Arc<AcpSession>, AcpError> {
        if !cwd.is_absolute() {
            return Err(invalid(format!(
                "cwd must be an absolute path: {}",
                cwd.display()
            )));
        }
        if !cwd.is_dir() {
            return Err(invalid(format!("cwd is not a folder: {}", cwd.display())));
        }
        let mcp = mcp_servers(servers)?;
        let (reads, writes) = *self
            .fs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let files = (reads || writes).then(|| Arc::new(files::ClientFiles::new(cx, reads, writes)));
        let editor = files.clone().map(|f| f as Arc<dyn tools::EditorFiles>);
        let args = self.args.clone().for_front_end(cwd, mcp, resume, editor);
        let mut terminal = crate::terminal::Terminal::new(true);
        let mut interrupts = crate::signals::Interrupts::listen().map_err(internal)?;
        let session = Session::start(args, &mut terminal, &mut interrupts)
            .await
            .map_err(internal)?;
        let acp = Arc::new(AcpSession {
            engine: session.agent.engine().clone(),
            session: tokio::sync::Mutex::new(session),
            mode: Mutex::new(Mode::default()),
            cancelled: AtomicBool::new(false),
            client_writes: writes,
            progress_notices: self.progress.load(Ordering::SeqCst),
        });
        let id = acp.session.lock().await.id().to_string();
        if let Some(files) = files {
            files.opened(id.clone());
        }
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, Arc::clone(&acp));
        Ok(acp)
    }
}

/// Send `update`, with the defaults the schema allows to omit written out: a new tool
/// call's `status` ("pending") and a diff's `oldText` (null for a new file), so that a
/// client reading the fields sees them whatever its SDK fills in.
fn notify(cx: &Conn, update: SessionNotification) -> Result<(), AcpError> {
    let mut params = serde_json::to_value(update).map_err(|e| internal(e.to_string()))?;
    if let Some(update) = params
        .get_mut("update")
        .and_then(serde_json::Value::as_object_mut)
    {
        if update
            .get("sessionUpdate")
            .and_then(serde_json::Value::as_str)
            == Some("tool_call")
        {
            update.entry("status").or_insert_with(|| "pending".into());
        }
    }
    explicit_diffs(&mut params);
    cx.send_notification(agent_client_protocol::UntypedMessage::new(
        "session/update",
        params,
    )?)
}

/// Send an extension notification (its method starts with `_aintern/`: a client that does
/// not know it ignores it, as the protocol asks).
fn notify_ext(cx: &Conn, method: &str, params: serde_json::Value) -> Result<(), AcpError> {
    cx.send_notification(agent_client_protocol::UntypedMessage::new(method, params)?)
}

/// Whether the client's capabilities ask for `_aintern/prompt_progress` notifications:
/// `"_meta": {"aintern": {"promptProgress": true}}`. Only a client that asks gets them
/// (a client that does not know a notification may report it as an error); every client
/// is told in words when a long prompt is being read.
fn wants_progress(meta: Option<&serde_json::Map<String, serde_json::Value>>) -> bool {
    meta.and_then(|m| m.get("aintern"))
        .and_then(|a| a.get("promptProgress"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// Every diff in `value` with its `oldText` written out (null for a new file).
fn explicit_diffs(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if map.get("type").and_then(serde_json::Value::as_str) == Some("diff") {
                map.entry("oldText").or_insert(serde_json::Value::Null);
            }
            map.values_mut().for_each(explicit_diffs);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(explicit_diffs),
        _ => {}
    }
}

/// Ask the client `request` (its diffs written out as in [`notify`]).
async fn ask_permission(
    cx: &Conn,
    request: agent_client_protocol::v1::schema::RequestPermissionRequest,
) -> Result<agent_client_protocol::v1::schema::RequestPermissionResponse, AcpError> {
    let mut params = serde_json::to_value(request).map_err(|e| internal(e.to_string()))?;
    explicit_diffs(&mut params);
    let message = agent_client_protocol::UntypedMessage::new("session/request_permission", params)?;
    let answer = cx.send_request(message).block_task().await?;
    serde_json::from_value(answer).map_err(|e| invalid(format!("the permission answer: {e}")))
}

fn invalid(message: impl Into<String>) -> AcpError {
    AcpError::new(ErrorCode::INVALID_PARAMS, message.into())
}

fn internal(message: impl Into<String>) -> AcpError {
    AcpError::new(ErrorCode::INTERNAL_ERROR, message.into())
}

/// The client's MCP servers as configured ones (started in the commands' sandbox, under
/// the same rules and approvals).
fn mcp_servers(servers: Vec<McpServer>) -> Result<Vec<(String, McpServerConfig)>, AcpError> {
    let mut out = BTreeMap::new();
    for server in servers {
        let (name, config) = match server {
            McpServer::Stdio(s) => (
                s.name,
                McpServerConfig::default()
                    .with_command(Some(s.command.to_string_lossy().into_owned()))
                    .with_args(s.args)
                    .with_env(s.env.into_iter().map(|v| (v.name, v.value)).collect()),
            ),
            McpServer::Http(h) => (
                h.name,
                McpServerConfig::default()
                    .with_url(Some(h.url))
                    .with_headers(h.headers.into_iter().map(|v| (v.name, v.value)).collect()),
            ),
            _ => return Err(invalid("only stdio and HTTP MCP servers are supported")),
        };
        if out.insert(name.clone(), config).is_some() {
            return Err(invalid(format!("two MCP servers are called '{name}'")));
        }
    }
    let errors = core_models::mcp_validation_errors(&out);
    if let Some(e) = errors.first() {
        return Err(invalid(format!("MCP server: {e}")));
    }
    Ok(out.into_iter().collect())
}

/// Serve the protocol on stdin and stdout until the client closes stdin.
pub(crate) async fn run(args: AcpArgs) -> Result<(), String> {
    let server = Arc::new(Server {
        args: args.session,
        sessions: Mutex::new(HashMap::new()),
        fs: Mutex::new((false, false)),
        progress: AtomicBool::new(false),
    });
    let (init, new, load, prompt, mode, cancel) = (
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
        Arc::clone(&server),
    );
    AgentRole
        .v1()
        .name("aintern")
        .on_receive_request(
            async move |req: InitializeRequest, r: Responder<InitializeResponse>, _: Conn| {
                let fs = &req.client_capabilities.fs;
                *init
                    .fs
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) =
                    (fs.read_text_file, fs.write_text_file);
                init.progress.store(
                    wants_progress(req.client_capabilities.meta.as_ref()),
                    Ordering::SeqCst,
                );
                r.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(
                            AgentCapabilities::new()
                                .load_session(true)
                                .prompt_capabilities(
                                    PromptCapabilities::new().embedded_context(true),
                                )
                                .mcp_capabilities(McpCapabilities::new().http(true)),
                        )
                        .agent_info(Implementation::new("aintern", env!("CARGO_PKG_VERSION"))),
                )
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |_: AuthenticateRequest, r: Responder<AuthenticateResponse>, _: Conn| {
                r.respond(AuthenticateResponse::new())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest, r: Responder<NewSessionResponse>, cx: Conn| {
                let server = Arc::clone(&new);
                tokio::spawn(async move {
                    let result = server
                        .open(cx.clone(), req.cwd, req.mcp_servers, None)
                        .await;
                    let (result, id) = match result {
                        Ok(acp) => {
                            let id = acp.session.lock().await.id().to_string();
                            (
                                Ok(NewSessionResponse::new(id.clone())
                                    .modes(Mode::state(acp.mode()))),
                                Some(id),
                            )
                        }
                        Err(e) => (Err(e), None),
                    };
                    let _ = r.respond_with_result(result);
                    // The commands once the client knows the session.
                    if let Some(id) = id {
                        let _ = notify(&cx, SessionNotification::new(id, commands::available()));
                    }
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest, r: Responder<LoadSessionResponse>, cx: Conn| {
                let server = Arc::clone(&load);
                tokio::spawn(async move {
                    let id = req.session_id.to_string();
                    let result = match server
                        .open(cx.clone(), req.cwd, req.mcp_servers, Some(id.clone()))
                        .await
                    {
                        Ok(acp) => {
                            let session = acp.session.lock().await;
                            let sid = session.id().to_string();
                            for update in convert::replay(
                                &session.history(),
                                session.workspace(),
                                &session.catalog(),
                            ) {
                                let _ = notify(&cx, SessionNotification::new(sid.clone(), update));
                            }
                            Ok(LoadSessionResponse::new().modes(Mode::state(acp.mode())))
                        }
                        Err(e) => Err(e),
                    };
                    let loaded = result.is_ok();
                    let _ = r.respond_with_result(result);
                    if loaded {
                        let _ = notify(&cx, SessionNotification::new(id, commands::available()));
                    }
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, r: Responder<PromptResponse>, cx: Conn| {
                let acp = match prompt.session(&req.session_id.to_string()) {
                    Ok(acp) => acp,
                    Err(e) => return r.respond_with_error(e),
                };
                let text = convert::prompt_text(&req.prompt);
                tokio::spawn(async move {
                    let result = match commands::run(&cx, &acp, &text).await {
                        Some(done) => done,
                        None => turn::run(cx, acp, text).await,
                    }
                    .map(PromptResponse::new)
                    .map_err(internal);
                    let _ = r.respond_with_result(result);
                });
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest,
                        r: Responder<SetSessionModeResponse>,
                        cx: Conn| {
                let acp = match mode.session(&req.session_id.to_string()) {
                    Ok(acp) => acp,
                    Err(e) => return r.respond_with_error(e),
                };
                let Some(chosen) = Mode::from_id(&req.mode_id.to_string()) else {
                    return r.respond_with_error(invalid(format!(
                        "there is no mode '{}': ask, safe or read-only",
                        req.mode_id
                    )));
                };
                *acp.mode
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = chosen;
                r.respond(SetSessionModeResponse::new())?;
                let _ = cx.send_notification(SessionNotification::new(
                    req.session_id,
                    SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(chosen.id())),
                ));
                Ok(())
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _: Conn| {
                if let Ok(acp) = cancel.session(&n.session_id.to_string()) {
                    acp.cancelled.store(true, Ordering::SeqCst);
                    acp.engine.cancel();
                }
                Ok(())
            },
            on_receive_notification!(),
        )
        .connect_to(wire::stdio())
        .await
        .map_err(|e| format!("the ACP connection failed: {e}"))
}
