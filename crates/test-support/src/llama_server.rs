//! A real llama-server (llama.cpp's), started on a free loopback port for a test and killed
//! when dropped.
//!
//! The binary comes from `$AINTERN_LLAMA_SERVER` (`scripts/build-llama-server` builds it
//! into the cache) and the model from `$AINTERN_TEST_MODEL` (else the embedded default
//! model's place). When either is missing the test is skipped with a notice — unless
//! `$AINTERN_REQUIRE_LLAMA_SERVER` is set (as `scripts/test` sets it), when it fails.

use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to start the server.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// A Jinja chat template instead of the model's own (`--chat-template-file`).
    pub chat_template: Option<PathBuf>,
    /// Threads (`-t`); 2 when not set.
    pub threads: Option<u32>,
    /// The context (`-c`); 4096 when not set.
    pub context: Option<u32>,
    /// More arguments.
    pub extra: Vec<String>,
}

/// A running llama-server.
pub struct LlamaServer {
    child: Child,
    port: u16,
    log: PathBuf,
    model: PathBuf,
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The model file the tests use.
pub fn test_model() -> PathBuf {
    std::env::var_os("AINTERN_TEST_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var_os("AINTERN_CACHE_DIR")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("XDG_CACHE_HOME").map(|c| PathBuf::from(c).join("aintern"))
                })
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/aintern"))
                })
                .unwrap_or_default();
            cache.join("models/SmolLM2-135M-Instruct.Q4_1.gguf")
        })
}

impl LlamaServer {
    /// Start a server with the test model, `--jinja` and `options`, and wait until it is
    /// ready. `None` (with a notice) when the binary or the model is missing and the
    /// environment does not require them.
    pub fn start(options: ServerOptions) -> Option<LlamaServer> {
        let required = std::env::var_os("AINTERN_REQUIRE_LLAMA_SERVER").is_some();
        let binary = std::env::var_os("AINTERN_LLAMA_SERVER").map(PathBuf::from);
        let model = test_model();
        let missing = match &binary {
            None => Some(
                "AINTERN_LLAMA_SERVER is not set (scripts/build-llama-server prints the path)"
                    .to_string(),
            ),
            Some(b) if !b.is_file() => Some(format!("{} does not exist", b.display())),
            _ if !model.is_file() => Some(format!(
                "{} does not exist (scripts/fetch-model)",
                model.display()
            )),
            _ => None,
        };
        if let Some(why) = missing {
            assert!(!required, "llama-server is required here: {why}");
            eprintln!("NOTICE: skipped: {why}");
            return None;
        }
        let binary = binary.unwrap_or_default();
        // A free port can be taken by someone else between finding it and the server's
        // bind: try a few.
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port();
            let log = std::env::temp_dir().join(format!(
                "aintern-llama-server-{port}-{}.log",
                std::process::id()
            ));
            let Ok(log_file) = std::fs::File::create(&log) else {
                continue;
            };
            let mut command = Command::new(&binary);
            command
                .arg("-m")
                .arg(&model)
                .args([
                    "--jinja",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    &port.to_string(),
                ])
                .args(["-t", &options.threads.unwrap_or(2).to_string()])
                .args(["-c", &options.context.unwrap_or(4096).to_string()])
                .args(["-np", "1", "--no-webui"])
                .args(&options.extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(
                    log_file
                        .try_clone()
                        .map(Stdio::from)
                        .unwrap_or_else(|_| Stdio::null()),
                );
            if let Some(template) = &options.chat_template {
                command.arg("--chat-template-file").arg(template);
            }
            let child = command.spawn().expect("start llama-server");
            let mut server = LlamaServer {
                child,
                port,
                log,
                model: model.clone(),
            };
            match server.wait_ready(Duration::from_secs(120)) {
                Ok(()) => return Some(server),
                Err(e) => last = format!("{e}\n{}", server.log_text()),
            }
        }
        panic!("llama-server did not start: {last}");
    }

    /// The base URL of its OpenAI-compatible API (`http://127.0.0.1:PORT/v1`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The server's root (`http://127.0.0.1:PORT`), for its own endpoints (`/slots`).
    pub fn root(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The model file it serves.
    pub fn model(&self) -> &Path {
        &self.model
    }

    /// What it logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `GET path` on the server's root: the status and the body.
    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        http_get(self.port, path)
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), String> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("llama-server exited: {status}"));
            }
            if matches!(http_get(self.port, "/health"), Some((200, _))) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err("llama-server was not ready in time".into())
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A plain HTTP/1.1 GET on loopback (no client library needed).
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::Write;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}
