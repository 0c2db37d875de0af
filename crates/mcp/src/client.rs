//! The adapter over rmcp: the only file that names its types, so that a new major version
//! of the SDK changes this file alone. A [`Connection`] is one running server: started
//! (a program in the sandbox, spoken to over its pipes, or an HTTP endpoint), its tools
//! listed, tools called with progress and cancellation, and stopped.

use crate::limit::{size_text, CappedLines, Verdict, MAX_MESSAGE_BYTES};
use crate::Error;
use core_models::McpServerConfig;
use core_models::{ProgressReporter, ToolProgress};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, ProgressNotificationParam, ProtocolVersion, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use sandbox::{Job, Launcher, Variant};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

/// What the rest of the crate knows of a server's tool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolInfo {
    /// The name on the server.
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: String,
    /// The JSON schema of its arguments.
    pub(crate) schema: Value,
    pub(crate) read_only: bool,
    pub(crate) destructive: bool,
}

/// What a call gave.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    /// The text of the result, with a line for each piece that is not text.
    pub(crate) text: String,
    /// The server marked the result as an error (`isError`).
    pub(crate) is_error: bool,
}

/// Why a call gave nothing.
#[derive(Debug)]
pub(crate) enum CallError {
    /// Cancelled (`notifications/cancelled` was sent).
    Cancelled,
    /// The server went away, or the client ended the connection (a message over the
    /// size limit): why. It may be restarted for the next call.
    Gone(String),
    /// The server answered with an error.
    Failed(String),
}

type Locked<T> = Arc<Mutex<T>>;

/// Receives what the server sends on its own: progress, tool-list changes, log lines.
struct Handler {
    server: String,
    /// Reporters of the calls in flight, by progress token.
    progress: Locked<HashMap<String, ProgressReporter>>,
    /// The server's tools, refreshed when it says they changed.
    tools: Arc<RwLock<Vec<ToolInfo>>>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let key = token_key(&params.progress_token);
        let reporter = lock(&self.progress).get(&key).cloned();
        if let Some(reporter) = reporter {
            // Counts from a server are untrusted: anything not a finite, non-negative
            // number is no count.
            let count = |v: f64| (v.is_finite() && v >= 0.0).then_some(v as u64);
            let progress = match (count(params.progress), params.total.and_then(count)) {
                (Some(current), Some(total)) if total > 0 => {
                    ToolProgress::determinate(current.min(total), total, params.message)
                }
                _ => ToolProgress::indeterminate(params.message),
            };
            reporter.report(progress);
        }
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        match context.peer.list_all_tools().await {
            Ok(listed) => {
                let listed = offered(&self.server, &listed);
                tracing::info!(server = %self.server, tools = listed.len(), "MCP tools changed");
                *self.tools.write().unwrap_or_else(|e| e.into_inner()) = listed;
            }
            Err(e) => {
                tracing::warn!(server = %self.server, error = %e, "MCP tools not listed again")
            }
        }
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::info!(server = %self.server, level = ?params.level, data = %params.data, "MCP server log");
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("aintern", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn token_key(token: &rmcp::model::ProgressToken) -> String {
    serde_json::to_string(&token.0).unwrap_or_default()
}

/// Whether a server's tool name can be offered: what the protocol recommends (letters,
/// digits, `_`, `-`, `.`; 1 to 128 characters). Anything else — spaces, control or
/// invisible characters a hostile server could use to confuse a person or a model — is
/// left out, with a note in the log.
fn offerable(tool: &rmcp::model::Tool) -> bool {
    let name = tool.name.as_ref();
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The tools of a listing that can be offered.
fn offered(server: &str, listed: &[rmcp::model::Tool]) -> Vec<ToolInfo> {
    listed
        .iter()
        .filter(|t| {
            let ok = offerable(t);
            if !ok {
                tracing::warn!(server, tool = ?t.name, "an MCP tool with an unusable name was left out");
            }
            ok
        })
        .map(tool_info)
        .collect()
}

fn tool_info(tool: &rmcp::model::Tool) -> ToolInfo {
    let hints = tool.annotations.as_ref();
    ToolInfo {
        name: tool.name.to_string(),
        title: tool
            .title
            .clone()
            .or_else(|| hints.and_then(|h| h.title.clone())),
        description: tool.description.as_deref().unwrap_or_default().to_string(),
        schema: Value::Object((*tool.input_schema).clone()),
        read_only: hints.and_then(|h| h.read_only_hint) == Some(true),
        destructive: hints.and_then(|h| h.destructive_hint) == Some(true),
    }
}

/// A stdio server's process and its process group.
type Process = (tokio::process::Child, Option<Job>);

/// One running server.
pub(crate) struct Connection {
    peer: rmcp::service::Peer<RoleClient>,
    /// Ends the session.
    stop: Mutex<Option<rmcp::service::RunningServiceCancellationToken>>,
    progress: Locked<HashMap<String, ProgressReporter>>,
    /// The tools, as last listed.
    pub(crate) tools: Arc<RwLock<Vec<ToolInfo>>>,
    child: Locked<Option<Process>>,
    /// Why the client ended the connection on its own, once it did.
    verdict: Verdict,
    /// Over HTTP: why the last answer broke off, when the SDK does not say (an SSE event
    /// over the size limit).
    broke: Locked<Option<String>>,
}

impl Connection {
    /// Start `spec` (within its startup timeout) and list its tools.
    pub(crate) async fn start(
        name: &str,
        spec: &McpServerConfig,
        launcher: &Launcher,
        workspace: &Path,
    ) -> Result<Connection, Error> {
        let limit = Duration::from_millis(spec.startup_timeout_ms);
        let mut child = None;
        let verdict = Verdict::default();
        let broke: Locked<Option<String>> = Arc::default();
        // What went wrong while starting: the verdict's reason when the client ended it.
        let failed = |e: &dyn std::fmt::Display| verdict.reason().unwrap_or_else(|| e.to_string());
        let started = tokio::time::timeout(limit, async {
            let progress: Locked<HashMap<String, ProgressReporter>> = Arc::default();
            let tools: Arc<RwLock<Vec<ToolInfo>>> = Arc::default();
            let handler = Arc::new(Handler {
                server: name.to_string(),
                progress: Arc::clone(&progress),
                tools: Arc::clone(&tools),
            });
            let service = match (&spec.command, &spec.url) {
                (Some(program), _) => {
                    let (mut process, job) = spawn(name, program, spec, launcher, workspace)?;
                    let (Some(stdout), Some(stdin)) = (process.stdout.take(), process.stdin.take())
                    else {
                        return Err(start_error(name, "its pipes could not be opened"));
                    };
                    child = Some((process, job));
                    // One message is one line: at most MAX_MESSAGE_BYTES, counted by the
                    // reader, which ends the session past it. The SDK's own cap is set
                    // above it, so it never drops a message silently first.
                    let stdout = CappedLines::new(stdout, MAX_MESSAGE_BYTES, verdict.clone());
                    let transport =
                        rmcp::transport::async_rw::AsyncRwTransport::new_client(stdout, stdin)
                            .with_max_line_length(MAX_MESSAGE_BYTES + 2);
                    handler
                        .serve(transport)
                        .await
                        .map_err(|e| start_error(name, &failed(&e)))?
                }
                (None, Some(url)) => {
                    serve_http(handler, name, url, spec, Arc::clone(&broke)).await?
                }
                (None, None) => return Err(start_error(name, "neither command nor url is set")),
            };
            service
                .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
                .await;
            let listed = service.list_all_tools().await.map_err(|e| {
                start_error(
                    name,
                    &format!("its tools could not be listed: {}", failed(&e)),
                )
            })?;
            *tools.write().unwrap_or_else(|e| e.into_inner()) = offered(name, &listed);
            Ok((service, progress, tools))
        })
        .await;
        match started {
            Ok(Ok((service, progress, tools))) => {
                let peer = service.peer().clone();
                let stop = service.cancellation_token();
                let child = Arc::new(Mutex::new(child));
                tokio::spawn(run_session(
                    service,
                    name.to_string(),
                    verdict.clone(),
                    Arc::clone(&child),
                ));
                Ok(Connection {
                    peer,
                    stop: Mutex::new(Some(stop)),
                    progress,
                    tools,
                    child,
                    verdict,
                    broke,
                })
            }
            Ok(Err(e)) => {
                end_child(child).await;
                Err(e)
            }
            Err(_) => {
                end_child(child).await;
                Err(Error::StartTimeout {
                    server: name.to_string(),
                    secs: limit.as_secs_f64(),
                })
            }
        }
    }

    /// Whether the server is still there.
    pub(crate) fn alive(&self) -> bool {
        if self.peer.is_transport_closed() || self.verdict.reason().is_some() {
            return false;
        }
        match &mut *lock(&self.child) {
            Some((child, _)) => matches!(child.try_wait(), Ok(None)),
            None => true,
        }
    }

    /// Call `tool` with `arguments`; progress goes to `progress`, and `cancel` sends
    /// `notifications/cancelled` and ends the call at once.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
        progress: ProgressReporter,
        cancel: &core_models::CancellationToken,
    ) -> Result<Outcome, CallError> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut handle = self
            .peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| CallError::Gone(self.verdict.reason().unwrap_or_else(|| e.to_string())))?;
        let key = token_key(&handle.progress_token);
        lock(&self.progress).insert(key.clone(), progress);
        // A message over the size limit ends the call at once, whatever the SDK makes of
        // the session meanwhile.
        let answer = tokio::select! {
            answer = &mut handle.rx => Ok(answer),
            () = cancel.cancelled() => Err(None),
            why = self.verdict.ended() => Err(Some(why)),
        };
        lock(&self.progress).remove(&key);
        let answer = match answer {
            Ok(answer) => answer,
            Err(Some(why)) => return Err(CallError::Gone(why)),
            Err(None) => {
                // Sent without waiting for the server to stop.
                tokio::spawn(async move {
                    if let Err(e) = handle.cancel(Some("cancelled by the user".into())).await {
                        tracing::debug!(error = %e, "cancellation not sent");
                    }
                });
                return Err(CallError::Cancelled);
            }
        };
        let result = match answer {
            Ok(Ok(ServerResult::CallToolResult(result))) => result,
            Ok(Ok(ServerResult::EmptyResult(_))) => rmcp::model::CallToolResult::default(),
            Ok(Ok(_)) => return Err(CallError::Failed("an unexpected answer".into())),
            Ok(Err(e)) => return Err(self.ended_by_client().unwrap_or_else(|| call_error(e))),
            Err(_) => {
                return Err(self
                    .ended_by_client()
                    .unwrap_or_else(|| CallError::Gone("the server closed the connection".into())))
            }
        };
        Ok(Outcome {
            text: result_text(&result),
            is_error: result.is_error == Some(true),
        })
    }

    /// The call's error when the client ended the connection on its own, or when an
    /// HTTP answer broke off over the size limit.
    fn ended_by_client(&self) -> Option<CallError> {
        if let Some(why) = lock(&self.broke).take() {
            return Some(CallError::Failed(why));
        }
        self.verdict.reason().map(CallError::Gone)
    }

    /// Stop the server: the session ends, then its process group.
    pub(crate) async fn stop(&self) {
        let stop = lock(&self.stop).take();
        if let Some(stop) = stop {
            stop.cancel();
        }
        let child = lock(&self.child).take();
        end_child(child).await;
    }
}

fn call_error(e: rmcp::ServiceError) -> CallError {
    match e {
        rmcp::ServiceError::McpError(d) => {
            CallError::Failed(format!("{} (code {})", d.message, d.code.0))
        }
        rmcp::ServiceError::Cancelled { .. } => CallError::Cancelled,
        // Over HTTP, an answer over the size limit fails its call alone.
        rmcp::ServiceError::TransportSend(e) => match over_limit(&e) {
            Some(why) => CallError::Failed(why),
            None => CallError::Gone("the server closed the connection".into()),
        },
        rmcp::ServiceError::TransportClosed => {
            CallError::Gone("the server closed the connection".into())
        }
        other => CallError::Failed(other.to_string()),
    }
}

/// The result's text, and a line for each piece that is not text.
fn result_text(result: &rmcp::model::CallToolResult) -> String {
    use rmcp::model::ContentBlock as C;
    let mut parts = Vec::new();
    for block in &result.content {
        match block {
            C::Text(t) => parts.push(t.text.clone()),
            C::Image(i) => parts.push(format!(
                "[an image ({}, {} bytes of base64) was received; it is not shown]",
                i.mime_type,
                i.data.len()
            )),
            C::Audio(a) => parts.push(format!(
                "[audio ({}, {} bytes of base64) was received; it is not shown]",
                a.mime_type,
                a.data.len()
            )),
            C::Resource(r) => {
                let text = r.get_text();
                if text.is_empty() {
                    parts.push("[a binary resource was received; it is not shown]".into());
                } else {
                    parts.push(text);
                }
            }
            C::ResourceLink(l) => parts.push(format!("[a link to the resource {}]", l.uri)),
            _ => parts.push("[content of a kind AIntern does not know was received]".into()),
        }
    }
    if parts.is_empty() {
        if let Some(structured) = &result.structured_content {
            parts.push(structured.to_string());
        }
    }
    parts.join("\n")
}

/// When a transport's error is an answer over the size limit: that, in words.
fn over_limit(e: &rmcp::transport::DynamicTransportError) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&*e.error);
    while let Some(inner) = source {
        let text = inner.to_string();
        if text.contains("maximum size") {
            return Some(format!(
                "it sent an answer longer than {}, the limit for one message ({text})",
                size_text(MAX_MESSAGE_BYTES)
            ));
        }
        source = inner.source();
    }
    None
}

/// The session, run to its end (the server went or was stopped). When the client ended
/// it (a message over the limit), the server's process group is ended at once: the
/// server is restarted, or marked broken, on its next use.
async fn run_session(
    service: RunningService<RoleClient, Arc<Handler>>,
    server: String,
    verdict: Verdict,
    child: Locked<Option<Process>>,
) {
    let why = tokio::select! {
        _ = service.waiting() => verdict.reason(),
        why = verdict.ended() => Some(why),
    };
    if let Some(why) = why {
        tracing::warn!(server = %server, "MCP server stopped: {why}");
        let process = lock(&child).take();
        end_child(process).await;
    }
}

fn start_error(server: &str, message: &str) -> Error {
    Error::Start {
        server: server.to_string(),
        message: message.to_string(),
    }
}

/// Start a stdio server's program in the sandbox its configuration asks for; its stderr
/// goes to the log.
fn spawn(
    name: &str,
    program: &str,
    spec: &McpServerConfig,
    launcher: &Launcher,
    workspace: &Path,
) -> Result<(tokio::process::Child, Option<Job>), Error> {
    let variant = match spec.sandbox {
        core_models::SandboxMode::FullAccess => Variant::FullAccess,
        core_models::SandboxMode::ReadOnly => Variant::ReadOnly,
        core_models::SandboxMode::WorkspaceWrite if spec.network => Variant::Network,
        core_models::SandboxMode::WorkspaceWrite => Variant::Configured,
    };
    let sandbox = launcher
        .sandbox(workspace, variant)
        .map_err(|e| start_error(name, &e.to_string()))?;
    let mut command = tokio::process::Command::new(program);
    command
        .args(&spec.args)
        .current_dir(match &spec.cwd {
            Some(cwd) => workspace.join(cwd),
            None => workspace.to_path_buf(),
        })
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    sandbox.apply(command.as_std_mut());
    // What the user set for this server, on top of what the sandbox passes.
    command.envs(&spec.env);
    let mut child = command
        .spawn()
        .map_err(|e| start_error(name, &format!("cannot start '{program}': {e}")))?;
    let job = child.id().and_then(Job::track);
    if let Some(stderr) = child.stderr.take() {
        let server = name.to_string();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(server = %server, "{line}");
            }
        });
    }
    Ok((child, job))
}

async fn end_child(child: Option<Process>) {
    if let Some((mut child, job)) = child {
        match job {
            Some(job) => job.end(Duration::from_millis(500)).await,
            None => {
                let _ = child.start_kill();
            }
        }
        let _ = child.wait().await;
    }
}

/// A session with the streamable-HTTP endpoint `url`, with the configured headers and
/// bearer token.
async fn serve_http(
    handler: Arc<Handler>,
    name: &str,
    url: &str,
    spec: &McpServerConfig,
    broke: Locked<Option<String>>,
) -> Result<RunningService<RoleClient, Arc<Handler>>, Error> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut headers = HashMap::new();
    for (key, value) in &spec.headers {
        let (Ok(k), Ok(v)) = (
            http::HeaderName::try_from(key.as_str()),
            http::HeaderValue::try_from(value.as_str()),
        ) else {
            return Err(start_error(
                name,
                &format!("the header '{key}' is not a valid header"),
            ));
        };
        headers.insert(k, v);
    }
    // The SDK bounds a JSON body and an SSE event, and fails the call at once past them:
    // the same limit as over stdio.
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .custom_headers(headers)
        .max_sse_event_size(MAX_MESSAGE_BYTES)
        .max_json_response_size(MAX_MESSAGE_BYTES);
    if let Some(var) = &spec.bearer_token_env {
        let token = std::env::var(var).map_err(|_| {
            start_error(
                name,
                &format!("the environment variable {var} (its bearer token) is not set"),
            )
        })?;
        config = config.auth_header(token);
    }
    let client = http_client::Watched::new(broke).map_err(|e| start_error(name, &e))?;
    let transport = rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
    handler
        .serve(transport)
        .await
        .map_err(|e| start_error(name, &e.to_string()))
}

/// The HTTP client under the SDK's streamable-HTTP transport: reqwest, as the SDK sets it
/// up, watched for answers the SDK ends for their size. The SDK ends an SSE event over
/// the limit and fails its call at once, but only says the stream "closed before its
/// final response"; the reason is kept here for the call to give.
mod http_client {
    use super::{size_text, Locked, MAX_MESSAGE_BYTES};
    use futures::StreamExt;
    use http::{HeaderName, HeaderValue};
    use rmcp::model::ClientJsonRpcMessage;
    use rmcp::transport::common::client_side_sse::BoxedSseResponse;
    use rmcp::transport::streamable_http_client::{
        StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
        StreamableHttpResponseLimits,
    };
    use std::collections::HashMap;
    use std::sync::Arc;

    type Outcome<T> = Result<T, StreamableHttpError<reqwest::Error>>;

    /// reqwest's client, with where to say why an answer broke off.
    #[derive(Clone)]
    pub(super) struct Watched {
        inner: reqwest::Client,
        broke: Locked<Option<String>>,
    }

    impl Watched {
        /// A client as the SDK's own (no idle connections kept; only same-origin 307
        /// and 308 redirects followed, ten at most, so that neither the message nor the
        /// headers go elsewhere).
        pub(super) fn new(broke: Locked<Option<String>>) -> Result<Watched, String> {
            let policy = reqwest::redirect::Policy::custom(|attempt| {
                let same_origin = attempt
                    .previous()
                    .first()
                    .is_some_and(|first| first.origin() == attempt.url().origin());
                let kept = matches!(attempt.status().as_u16(), 307 | 308);
                if same_origin && kept && attempt.previous().len() <= 10 {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            });
            // reqwest is built without a TLS provider: ring, unless the application
            // installed one already (an error then, which is as good).
            let _ = rustls::crypto::ring::default_provider().install_default();
            let inner = reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .redirect(policy)
                .build()
                .map_err(|e| format!("its HTTP client could not be set up: {e}"))?;
            Ok(Watched { inner, broke })
        }

        fn note(&self) {
            *super::lock(&self.broke) = Some(format!(
                "it sent an answer longer than {}, the limit for one message (its SSE event was cut off)",
                size_text(MAX_MESSAGE_BYTES)
            ));
        }

        /// `stream`, noting an event over the size limit when it ends on one.
        fn watch(&self, stream: BoxedSseResponse) -> BoxedSseResponse {
            let this = self.clone();
            stream
                .inspect(move |item| {
                    if let Err(e) = item {
                        if e.to_string().contains("maximum size") {
                            this.note();
                        }
                    }
                })
                .boxed()
        }

        fn post(
            &self,
            sent: Outcome<StreamableHttpPostResponse>,
        ) -> Outcome<StreamableHttpPostResponse> {
            match sent {
                Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                    Ok(StreamableHttpPostResponse::Sse(self.watch(stream), session))
                }
                other => other,
            }
        }
    }

    impl StreamableHttpClient for Watched {
        type Error = reqwest::Error;

        async fn post_message(
            &self,
            uri: Arc<str>,
            message: ClientJsonRpcMessage,
            session_id: Option<Arc<str>>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Outcome<StreamableHttpPostResponse> {
            let sent = self
                .inner
                .post_message(uri, message, session_id, auth_header, custom_headers)
                .await;
            self.post(sent)
        }

        async fn post_message_with_max_sse_event_size(
            &self,
            uri: Arc<str>,
            message: ClientJsonRpcMessage,
            session_id: Option<Arc<str>>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
            max_sse_event_size: usize,
        ) -> Outcome<StreamableHttpPostResponse> {
            let sent = self
                .inner
                .post_message_with_max_sse_event_size(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await;
            self.post(sent)
        }

        async fn post_message_with_response_limits(
            &self,
            uri: Arc<str>,
            message: ClientJsonRpcMessage,
            session_id: Option<Arc<str>>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
            limits: StreamableHttpResponseLimits,
        ) -> Outcome<StreamableHttpPostResponse> {
            let sent = self
                .inner
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await;
            self.post(sent)
        }

        async fn delete_session(
            &self,
            uri: Arc<str>,
            session_id: Arc<str>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Outcome<()> {
            self.inner
                .delete_session(uri, session_id, auth_header, custom_headers)
                .await
        }

        async fn get_stream(
            &self,
            uri: Arc<str>,
            session_id: Option<Arc<str>>,
            last_event_id: Option<String>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Outcome<BoxedSseResponse> {
            let stream = self
                .inner
                .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
                .await?;
            Ok(self.watch(stream))
        }

        async fn get_stream_with_max_sse_event_size(
            &self,
            uri: Arc<str>,
            session_id: Option<Arc<str>>,
            last_event_id: Option<String>,
            auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
            max_sse_event_size: usize,
        ) -> Outcome<BoxedSseResponse> {
            let stream = self
                .inner
                .get_stream_with_max_sse_event_size(
                    uri,
                    session_id,
                    last_event_id,
                    auth_header,
                    custom_headers,
                    max_sse_event_size,
                )
                .await?;
            Ok(self.watch(stream))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &str) -> rmcp::model::Tool {
        rmcp::model::Tool::new(name.to_string(), "a tool", Arc::new(serde_json::Map::new()))
    }

    #[test]
    fn only_tools_with_usable_names_are_offered() {
        let tools = [
            listed("echo"),
            listed("get-sum.v2_x"),
            listed("evil\u{1b}]0;title\u{7}"),
            listed("two words"),
            listed("r\u{200b}m"),
            listed(""),
            listed(&"x".repeat(129)),
        ];
        let names: Vec<String> = offered("s", &tools).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["echo", "get-sum.v2_x"]);
    }
}
