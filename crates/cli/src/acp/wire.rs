//! The connection's stdin and stdout, with every message from the client bounded while
//! it is read: a line longer than [`LINE_MAX_BYTES`] is never held. Its bytes are
//! passed over as they arrive (only the top-level `id` and whether it has a `method` are
//! kept), and then:
//!
//! * a request from the client is answered at once with an invalid-request error that
//!   says why;
//! * an answer to one of aintern's requests (`fs/read_text_file` of a huge file) becomes
//!   an error answer to that request, so that the one call waiting for it fails in words;
//! * anything else (a notification, a line without an id) is dropped, and logged.
//!
//! The SDK's own stdio transport reads each line whole before anything can look at it.

use agent_client_protocol::Lines;
use futures::Stream;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest message read from the client (16 MiB, as the MCP client's bound).
pub(crate) const LINE_MAX_BYTES: usize = 16 * 1024 * 1024;

/// Where lines are written: the SDK's and this reader's answers, one at a time.
type Out = Arc<Mutex<tokio::io::Stdout>>;

/// The bounded transport over this process's stdin and stdout.
pub(crate) fn stdio() -> Lines<
    impl futures::Sink<String, Error = std::io::Error> + Send + 'static,
    impl Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    let out: Out = Arc::new(Mutex::new(tokio::io::stdout()));
    let sink = futures::sink::unfold(Arc::clone(&out), |out, line: String| async move {
        write_line(&out, &line).await?;
        Ok::<_, std::io::Error>(out)
    });
    let incoming = bounded_lines(BufReader::new(tokio::io::stdin()), LINE_MAX_BYTES, out);
    Lines::new(sink, incoming)
}

async fn write_line(out: &Out, line: &str) -> std::io::Result<()> {
    let mut out = out.lock().await;
    out.write_all(line.as_bytes()).await?;
    out.write_all(b"\n").await?;
    out.flush().await
}

/// The lines of `reader`, each at most `cap` bytes, as the module says; answers to
/// requests too long to read go to `out`.
fn bounded_lines<R>(
    reader: R,
    cap: usize,
    out: Out,
) -> impl Stream<Item = std::io::Result<String>> + Send + 'static
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    futures::stream::unfold((reader, out), move |(mut reader, out)| async move {
        loop {
            match read_line(&mut reader, cap).await {
                Err(e) => return Some((Err(e), (reader, out))),
                Ok(Read::End) => return None,
                Ok(Read::Line(bytes)) => {
                    let line = String::from_utf8_lossy(&bytes).into_owned();
                    return Some((Ok(line), (reader, out)));
                }
                Ok(Read::TooLong(seen)) => match too_long(&seen, cap) {
                    TooLong::Answer(line) => {
                        if let Err(e) = write_line(&out, &line).await {
                            return Some((Err(e), (reader, out)));
                        }
                    }
                    TooLong::Deliver(line) => return Some((Ok(line), (reader, out))),
                    TooLong::Drop => {}
                },
            }
        }
    })
}

/// One line read.
enum Read {
    /// The input ended (a last line without a newline is still a line).
    End,
    /// A line within the bound, without its newline.
    Line(Vec<u8>),
    /// A line past the bound: what was seen of it.
    TooLong(Scanner),
}

async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R, cap: usize) -> std::io::Result<Read> {
    let mut line: Vec<u8> = Vec::new();
    let mut scan: Option<Scanner> = None;
    let mut any = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(match scan {
                Some(seen) => Read::TooLong(seen),
                None if any => Read::Line(line),
                None => Read::End,
            });
        }
        any = true;
        let newline = chunk.iter().position(|b| *b == b'\n');
        let part = &chunk[..newline.unwrap_or(chunk.len())];
        match &mut scan {
            Some(seen) => seen.feed(part),
            None if line.len() + part.len() > cap => {
                let mut seen = Scanner::default();
                seen.feed(&line);
                seen.feed(part);
                line = Vec::new();
                scan = Some(seen);
            }
            None => line.extend_from_slice(part),
        }
        let used = newline.map_or(chunk.len(), |at| at + 1);
        reader.consume(used);
        if newline.is_some() {
            return Ok(match scan {
                Some(seen) => Read::TooLong(seen),
                None => Read::Line(line),
            });
        }
    }
}

/// What becomes of a line too long to read.
#[derive(Debug, PartialEq)]
enum TooLong {
    /// Written to the client: the error answer to its request.
    Answer(String),
    /// Handed to the connection: the error answer to aintern's own request.
    Deliver(String),
    /// Nothing to answer.
    Drop,
}

fn too_long(seen: &Scanner, cap: usize) -> TooLong {
    let mib = cap / (1024 * 1024);
    let id = seen
        .id
        .as_deref()
        .and_then(|raw| serde_json::from_slice::<Value>(raw).ok())
        .filter(|id| id.is_string() || id.is_number());
    let error = |id: Value, code: i32, message: String| {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
    };
    match (id, seen.has_method) {
        (Some(id), true) => {
            tracing::warn!(
                bytes = seen.bytes,
                "a request from the client was too long to read"
            );
            TooLong::Answer(error(
                id,
                -32600,
                format!("the request is larger than {mib} MiB and was not read"),
            ))
        }
        (Some(id), false) => {
            tracing::warn!(
                bytes = seen.bytes,
                "an answer from the client was too long to read"
            );
            TooLong::Deliver(error(
                id,
                -32603,
                format!("the client's answer is larger than {mib} MiB and was not read"),
            ))
        }
        (None, _) => {
            tracing::warn!(
                bytes = seen.bytes,
                "a message from the client was too long to read and had no id: dropped"
            );
            TooLong::Drop
        }
    }
}

/// Longest top-level key kept while scanning (the ones looked for are short).
const KEY_CAP: usize = 16;
/// Longest `id` value kept.
const ID_CAP: usize = 256;

/// A streaming look at one JSON object, byte by byte, keeping nothing but its top-level
/// `id` (as raw JSON) and whether it has a `method`.
#[derive(Debug, Default)]
struct Scanner {
    bytes: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// At the top level, a key is expected next.
    expect_key: bool,
    reading_key: bool,
    key: Vec<u8>,
    /// At the top level, inside the value of `key`.
    in_value: bool,
    value: Vec<u8>,
    value_too_long: bool,
    id: Option<Vec<u8>>,
    has_method: bool,
}

impl Scanner {
    fn feed(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len();
        for &b in bytes {
            self.byte(b);
        }
    }

    fn keep(&mut self, b: u8) {
        if self.reading_key {
            if self.key.len() < KEY_CAP {
                self.key.push(b);
            }
        } else if self.in_value && self.depth == 1 {
            if self.value.len() < ID_CAP {
                self.value.push(b);
            } else {
                self.value_too_long = true;
            }
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            if self.escaped {
                self.escaped = false;
                self.keep(b);
            } else if b == b'\\' {
                self.escaped = true;
                self.keep(b);
            } else if b == b'"' {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                } else {
                    self.keep(b);
                }
            } else {
                self.keep(b);
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.reading_key = true;
                    self.key.clear();
                } else {
                    self.keep(b);
                }
            }
            b'{' | b'[' => {
                self.keep(b);
                self.depth += 1;
                if self.depth == 1 && b == b'{' {
                    self.expect_key = true;
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_value();
                }
                self.depth = self.depth.saturating_sub(1);
                self.keep(b);
            }
            b':' if self.depth == 1 && !self.in_value => {
                self.in_value = true;
                self.value.clear();
                self.value_too_long = false;
            }
            b',' if self.depth == 1 => {
                self.end_value();
                self.expect_key = true;
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => self.keep(b),
        }
    }

    fn end_value(&mut self) {
        if !self.in_value {
            return;
        }
        self.in_value = false;
        match self.key.as_slice() {
            b"id" if !self.value_too_long => self.id = Some(std::mem::take(&mut self.value)),
            b"method" => self.has_method = true,
            _ => {}
        }
        self.value.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn scanned(text: &str) -> Scanner {
        let mut seen = Scanner::default();
        // Fed in odd pieces: a key, an escape or the id split anywhere.
        for piece in text.as_bytes().chunks(3) {
            seen.feed(piece);
        }
        seen
    }

    #[test]
    fn the_top_level_id_and_method_are_found_wherever_they_are() {
        let big = "x".repeat(1000);
        let cases = [
            (
                format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":"{big}"}}}}"#),
                Some("7"),
                false,
            ),
            (
                format!(
                    r#"{{"result":{{"content":"{big}","id":99}},"id":"a\"b","jsonrpc":"2.0"}}"#
                ),
                Some(r#""a\"b""#),
                false,
            ),
            (
                format!(
                    r#"{{ "method" : "session/prompt", "params": {{"id": 3, "t": "{big}"}}, "id" : 12 }}"#
                ),
                Some("12"),
                true,
            ),
            (
                format!(r#"{{"method":"session/cancel","params":{{"x":"{big}"}}}}"#),
                None,
                true,
            ),
            (format!(r#"["id", {{"id": 1}}, "{big}"]"#), None, false),
        ];
        for (text, id, method) in cases {
            let seen = scanned(&text);
            assert_eq!(seen.id.as_deref(), id.map(str::as_bytes), "{}", &text[..60]);
            assert_eq!(seen.has_method, method, "{}", &text[..60]);
        }
    }

    #[test]
    fn an_id_too_long_to_keep_is_no_id() {
        let id = "i".repeat(ID_CAP + 10);
        let seen = scanned(&format!(r#"{{"id":"{id}","result":1}}"#));
        assert!(seen.id.is_none());
        assert_eq!(too_long(&seen, LINE_MAX_BYTES), TooLong::Drop);
    }

    async fn lines_of(input: &[u8], cap: usize) -> (Vec<String>, usize) {
        let reader = BufReader::with_capacity(5, std::io::Cursor::new(input.to_vec()));
        let out: Out = Arc::new(Mutex::new(tokio::io::stdout()));
        let lines: Vec<String> = bounded_lines(reader, cap, out)
            .map(|l| l.unwrap())
            .collect()
            .await;
        let count = lines.len();
        (lines, count)
    }

    #[tokio::test]
    async fn lines_within_the_bound_pass_whole_and_a_long_answer_becomes_an_error() {
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":4,"result":{{"content":"{}"}}}}"#,
            "y".repeat(200)
        );
        let input = format!("{{\"a\":1}}\n{long}\n\n{{\"b\":2}}");
        let (lines, _) = lines_of(input.as_bytes(), 100).await;
        assert_eq!(lines[0], r#"{"a":1}"#);
        let error: Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(error["id"], json!(4));
        assert!(error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("answer is larger than"));
        assert_eq!(lines[2], "");
        assert_eq!(lines[3], r#"{"b":2}"#);
        assert_eq!(lines.len(), 4);
    }

    #[tokio::test]
    async fn a_long_notification_is_dropped_and_reading_goes_on() {
        let long = format!(r#"{{"method":"x","params":"{}"}}"#, "z".repeat(500));
        let input = format!("{long}\n{{\"c\":3}}\n");
        let (lines, count) = lines_of(input.as_bytes(), 100).await;
        assert_eq!(count, 1, "{lines:?}");
        assert_eq!(lines[0], r#"{"c":3}"#);
    }
}
