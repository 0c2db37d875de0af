//! The bound on one message from a stdio server: its stdout is read through
//! [`CappedLines`], which counts the bytes since the last newline and, past the cap, ends
//! the stream with an error and records why in a [`Verdict`]. The session then closes,
//! the calls in flight fail at once with that reason, and the server is stopped — instead
//! of a message over the cap being dropped silently and its call waiting for the tool
//! timeout. At most the cap (plus one read) of an oversized message is ever held.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::watch;

/// The most bytes one message from an MCP server may take (one line over stdio, one
/// JSON body or one SSE event over HTTP): 16 MiB, as the SDK's own default.
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// `bytes` in words (`16 MiB`, `512 KiB`, `100 bytes`).
pub(crate) fn size_text(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// Why the client ended a server's connection on its own, once it did: shared by the
/// reader that found out and the connection whose calls wait on it.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    sender: std::sync::Arc<watch::Sender<Option<String>>>,
}

impl Default for Verdict {
    fn default() -> Self {
        Verdict {
            sender: std::sync::Arc::new(watch::Sender::new(None)),
        }
    }
}

impl Verdict {
    /// Record `why` (the first reason given stays).
    pub(crate) fn end(&self, why: String) {
        self.sender.send_if_modified(|now| {
            if now.is_none() {
                *now = Some(why);
                true
            } else {
                false
            }
        });
    }

    /// The reason, once there is one.
    pub(crate) fn reason(&self) -> Option<String> {
        self.sender.borrow().clone()
    }

    /// Wait until there is a reason, and give it.
    pub(crate) async fn ended(&self) -> String {
        let mut receiver = self.sender.subscribe();
        let why = match receiver.wait_for(Option::is_some).await {
            Ok(why) => why.clone(),
            // The sender lives as long as `self`: never reached.
            Err(_) => None,
        };
        match why {
            Some(why) => why,
            None => std::future::pending().await,
        }
    }
}

/// A server's stdout, read with a cap on the bytes between two newlines.
pub(crate) struct CappedLines<R> {
    inner: R,
    cap: usize,
    /// Bytes read since the last newline.
    run: usize,
    verdict: Verdict,
    /// Set once the cap was passed: every later read fails.
    tripped: bool,
}

impl<R> CappedLines<R> {
    /// Read `inner`, allowing at most `cap` bytes in one line; past it, `verdict` says why
    /// the stream ended.
    pub(crate) fn new(inner: R, cap: usize, verdict: Verdict) -> Self {
        CappedLines {
            inner,
            cap,
            run: 0,
            verdict,
            tripped: false,
        }
    }

    fn error(&self) -> io::Error {
        io::Error::other(
            self.verdict
                .reason()
                .unwrap_or_else(|| "a message over the size limit".into()),
        )
    }

    /// Follow the counter over `new` bytes: `None` while every line stays within the cap,
    /// else how many of them end at a newline before the line that passed it.
    fn scan(&mut self, new: &[u8]) -> Option<usize> {
        let mut whole = 0;
        let mut run = self.run;
        for (i, byte) in new.iter().enumerate() {
            if *byte == b'\n' {
                run = 0;
                whole = i + 1;
            } else {
                run += 1;
                if run > self.cap {
                    return Some(whole);
                }
            }
        }
        self.run = run;
        None
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for CappedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.tripped {
            return Poll::Ready(Err(this.error()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {}
            other => return other,
        }
        let Some(keep) = this.scan(&buf.filled()[before..]) else {
            return Poll::Ready(Ok(()));
        };
        this.tripped = true;
        this.verdict.end(format!(
            "it sent a message longer than {}, the limit for one message: AIntern stopped it",
            size_text(this.cap)
        ));
        // The whole lines before the one over the cap are still delivered; the next read
        // fails.
        buf.set_filled(before + keep);
        if keep > 0 {
            Poll::Ready(Ok(()))
        } else {
            Poll::Ready(Err(this.error()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn lines_within_the_cap_pass_and_a_longer_one_ends_the_stream() {
        let data = b"short\nexactly 10\nthis line is far too long\nnever read\n".to_vec();
        let verdict = Verdict::default();
        let mut reader = CappedLines::new(&data[..], 10, verdict.clone());
        let mut read = Vec::new();
        let error = reader.read_to_end(&mut read).await.unwrap_err();
        assert_eq!(read, b"short\nexactly 10\n");
        assert!(
            error.to_string().contains("longer than 10 bytes"),
            "{error}"
        );
        let why = verdict.reason().unwrap();
        assert!(why.contains("the limit for one message"), "{why}");
        assert_eq!(verdict.ended().await, why);
        // Every later read fails too.
        assert!(reader.read(&mut [0u8; 8]).await.is_err());
    }

    #[tokio::test]
    async fn the_count_runs_across_reads_and_restarts_at_each_newline() {
        // One byte a read: the run of a line spans many reads.
        let (mut writer, pipe) = tokio::io::duplex(1);
        let verdict = Verdict::default();
        let feeding = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = writer.write_all(b"12345\n1234\n123456").await;
        });
        let mut reader = CappedLines::new(pipe, 5, verdict.clone());
        let mut read = Vec::new();
        assert!(reader.read_to_end(&mut read).await.is_err());
        assert_eq!(read, b"12345\n1234\n12345");
        assert!(verdict.reason().is_some());
        feeding.abort();
    }

    #[test]
    fn sizes_read_as_words() {
        assert_eq!(size_text(MAX_MESSAGE_BYTES), "16 MiB");
        assert_eq!(size_text(2048), "2 KiB");
        assert_eq!(size_text(10), "10 bytes");
    }
}
