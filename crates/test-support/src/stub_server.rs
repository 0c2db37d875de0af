//! A scripted HTTP server on loopback that plays an OpenAI-compatible server, well or
//! badly: statuses, `Retry-After`, slow headers, streams that go silent, break in the
//! middle, carry malformed or huge events. It records every request and notices when a
//! client goes away.
//!
//! `GET …/models` answers with [`StubServer::models`]'s list; `GET /props` with
//! llama-server's properties when [`StubServer::props`] set them (404 otherwise); `GET
//! /slots` with llama-server's slots when [`StubServer::slots`] set them (501, as
//! llama-server started with `--no-slots`, otherwise); every
//! `POST` takes the next scripted [`StubReply`] (a 500 naming the problem when none is
//! left).

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One piece of a streamed reply.
#[derive(Debug, Clone)]
pub enum StubEvent {
    /// `data: …` and a blank line.
    Data(String),
    /// Bytes written as they are.
    Raw(Vec<u8>),
    /// `len` copies of `byte`, written in 64 KiB pieces (a huge event that the stub
    /// itself never holds whole).
    Filler {
        /// The byte.
        byte: u8,
        /// How many.
        len: usize,
    },
    /// Wait before the next piece.
    Delay(Duration),
    /// Close the connection in the middle of the body.
    Disconnect,
    /// Stop writing but keep the connection open until the client leaves.
    Hang,
}

/// How the server answers one `POST`.
#[derive(Debug, Clone)]
pub enum StubReply {
    /// A status with a body (JSON or text) and extra headers.
    Status {
        /// The HTTP status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// A `text/event-stream` reply, chunked, piece by piece.
    Stream(Vec<StubEvent>),
    /// Wait before sending the headers of the reply.
    Delayed(Duration, Box<StubReply>),
    /// Close the connection without answering (as a server closes a kept-alive
    /// connection it timed out).
    Close,
}

impl StubReply {
    /// A status with a body.
    pub fn status(status: u16, body: impl Into<String>) -> Self {
        StubReply::Status {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// The same reply with a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        if let StubReply::Status { headers, .. } = &mut self {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }

    /// A streamed reply of these text pieces, then a finish reason, usage (12 prompt
    /// tokens, 4 of them cached) and `[DONE]`.
    pub fn text_stream(pieces: &[&str]) -> Self {
        let mut events: Vec<StubEvent> = pieces.iter().map(|p| content_event(p)).collect();
        events.push(StubEvent::Data(
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
        ));
        events.push(StubEvent::Data(
            json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": pieces.len(), "prompt_tokens_details": {"cached_tokens": 4}}})
                .to_string(),
        ));
        events.push(StubEvent::Data("[DONE]".into()));
        StubReply::Stream(events)
    }

    /// The same reply after `delay`.
    pub fn delayed(self, delay: Duration) -> Self {
        StubReply::Delayed(delay, Box::new(self))
    }
}

/// A `data:` event carrying a content delta.
pub fn content_event(text: &str) -> StubEvent {
    StubEvent::Data(json!({"choices": [{"index": 0, "delta": {"content": text}}]}).to_string())
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct StubRequest {
    /// `GET`, `POST`…
    pub method: String,
    /// The path.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body (JSON for chat requests).
    pub body: Value,
}

impl StubRequest {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct State {
    replies: VecDeque<StubReply>,
    requests: Vec<StubRequest>,
    models: Value,
    props: Option<Value>,
    slots: Option<Value>,
    /// Listings of `GET /slots` served once each, in order, before `slots`.
    next_slots: VecDeque<Value>,
    /// How many of the next `GET /slots` are answered by closing the connection.
    close_listings: usize,
    /// When a client left a reply the server was still writing.
    client_gone: Vec<Instant>,
}

/// The server. Dropping it stops accepting connections.
pub struct StubServer {
    url: String,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
    /// A folder only this user can enter, removed with the server (see
    /// [`StubServer::private_dir`]).
    private: tempfile::TempDir,
}

impl Drop for StubServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl StubServer {
    /// A server on a free loopback port, listing one model `stub-model`.
    pub async fn start(replies: impl IntoIterator<Item = StubReply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("address"));
        let state = Arc::new(Mutex::new(State {
            replies: replies.into_iter().collect(),
            models: json!({"object": "list", "data": [{"id": "stub-model", "object": "model", "owned_by": "stub"}]}),
            ..State::default()
        }));
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, Arc::clone(&shared)));
            }
        });
        let private = tempfile::Builder::new()
            .prefix("aintern-stub-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .expect("a private folder");
        StubServer {
            url,
            state,
            task,
            private,
        }
    }

    /// A folder only this user can enter (mode 0700), removed with the server: for what
    /// the server's clients keep on this machine (slot claims, records of saved slots), so
    /// that no test, nor an earlier run on the same port, sees another's.
    pub fn private_dir(&self) -> &std::path::Path {
        self.private.path()
    }

    /// The base URL (`http://127.0.0.1:PORT/v1`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Answer `GET /models` with these model ids.
    pub fn models(&self, ids: &[&str]) {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "object": "model", "owned_by": "stub"}))
            .collect();
        self.lock().models = json!({"object": "list", "data": data});
    }

    /// Answer `GET /props` as llama-server does.
    pub fn props(&self, props: Value) {
        self.lock().props = Some(props);
    }

    /// Answer `GET /slots` as llama-server does (a list of slots: `id`, `is_processing`…).
    pub fn slots(&self, slots: Value) {
        let mut state = self.lock();
        state.next_slots.clear();
        state.slots = Some(slots);
    }

    /// Close the connection of the next `GET /slots` without answering.
    pub fn close_next_listing(&self) {
        self.lock().close_listings += 1;
    }

    /// Answer the next `GET /slots` with each of `listings` in turn, then with the last
    /// of them from then on (as slots change while requests run).
    pub fn slots_in_turn(&self, listings: impl IntoIterator<Item = Value>) {
        let mut state = self.lock();
        state.next_slots = listings.into_iter().collect();
        if let Some(last) = state.next_slots.pop_back() {
            state.slots = Some(last);
        }
    }

    /// Add replies at the end of the queue.
    pub fn push(&self, replies: impl IntoIterator<Item = StubReply>) {
        self.lock().replies.extend(replies);
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<StubRequest> {
        self.lock().requests.clone()
    }

    /// Forget the requests received so far (what [`StubServer::requests`] returns starts
    /// again from the next).
    pub fn forget_requests(&self) {
        self.lock().requests.clear();
    }

    /// The chat requests received (`POST`s), in order.
    pub fn chat_requests(&self) -> Vec<StubRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .collect()
    }

    /// When clients left replies that were still being written.
    pub fn clients_gone(&self) -> Vec<Instant> {
        self.lock().client_gone.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One connection: one request, one reply, then close.
async fn serve(mut socket: TcpStream, state: Arc<Mutex<State>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    let reply = {
        let mut s = lock();
        s.requests.push(request.clone());
        if request.method == "GET" && request.path.ends_with("/models") {
            StubReply::status(200, s.models.to_string())
        } else if request.method == "GET" && request.path.ends_with("/props") {
            match &s.props {
                Some(props) => StubReply::status(200, props.to_string()),
                None => {
                    StubReply::status(404, r#"{"error":{"code":404,"message":"File Not Found"}}"#)
                }
            }
        } else if request.method == "GET"
            && request.path.ends_with("/slots")
            && s.close_listings > 0
        {
            s.close_listings -= 1;
            StubReply::Close
        } else if request.method == "GET" && request.path.ends_with("/slots") {
            match s.next_slots.pop_front().as_ref().or(s.slots.as_ref()) {
                Some(slots) => StubReply::status(200, slots.to_string()),
                None => StubReply::status(
                    501,
                    r#"{"error":{"code":501,"message":"This server does not support slots endpoint. Start it with `--slots`","type":"not_supported_error"}}"#,
                ),
            }
        } else {
            s.replies.pop_front().unwrap_or_else(|| {
                StubReply::status(500, r#"{"error":{"message":"the stub has no reply left"}}"#)
            })
        }
    };
    if !write_reply(&mut socket, reply).await {
        lock().client_gone.push(Instant::now());
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<StubRequest> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[header_end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(StubRequest {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// Write `reply`; `false` when the client went away before it was all written.
async fn write_reply(socket: &mut TcpStream, reply: StubReply) -> bool {
    match reply {
        StubReply::Close => true,
        StubReply::Delayed(delay, reply) => {
            tokio::time::sleep(delay).await;
            Box::pin(write_reply(socket, *reply)).await
        }
        StubReply::Status {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Stub\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            socket.write_all(head.as_bytes()).await.is_ok()
                && socket.write_all(body.as_bytes()).await.is_ok()
        }
        StubReply::Stream(events) => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            for event in events {
                let bytes = match event {
                    StubEvent::Data(data) => format!("data: {data}\n\n").into_bytes(),
                    StubEvent::Raw(bytes) => bytes,
                    StubEvent::Delay(delay) => {
                        // Notice a client that leaves while the server waits.
                        let mut probe = [0u8; 1];
                        tokio::select! {
                            () = tokio::time::sleep(delay) => continue,
                            r = socket.read(&mut probe) => if matches!(r, Ok(0) | Err(_)) { return false },
                        }
                        continue;
                    }
                    StubEvent::Filler { byte, len } => {
                        let piece = vec![byte; 64 * 1024];
                        let mut left = len;
                        while left > 0 {
                            let n = left.min(piece.len());
                            let chunk =
                                [format!("{n:x}\r\n").as_bytes(), &piece[..n], b"\r\n"].concat();
                            if socket.write_all(&chunk).await.is_err() {
                                return false;
                            }
                            left -= n;
                        }
                        continue;
                    }
                    StubEvent::Disconnect => return true,
                    StubEvent::Hang => {
                        let mut probe = [0u8; 1];
                        let _ = socket.read(&mut probe).await;
                        return false;
                    }
                };
                let chunk = [
                    format!("{:x}\r\n", bytes.len()).into_bytes(),
                    bytes,
                    b"\r\n".to_vec(),
                ]
                .concat();
                if socket.write_all(&chunk).await.is_err() {
                    return false;
                }
            }
            socket.write_all(b"0\r\n\r\n").await.is_ok()
        }
    }
}
