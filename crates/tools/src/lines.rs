//! A line reader whose memory does not grow with the input: a line longer than its cap is
//! kept only up to the cap (its full length is still counted), so one 200 MB line costs
//! no more than the cap.

use std::io::{self, BufRead};

/// Longest part of one line the file tools keep; the rest of a longer line is skipped
/// (and said to be).
pub(crate) const LINE_CAP: usize = 64 * 1024;

/// Reads lines from a [`BufRead`], keeping at most `cap` bytes of each.
#[derive(Debug)]
pub(crate) struct CappedLines<R> {
    reader: R,
    cap: usize,
    kept: Vec<u8>,
    number: u64,
}

/// One line, as [`CappedLines::next_line`] returns it.
#[derive(Debug)]
pub(crate) struct Line<'a> {
    /// 1-based line number.
    pub(crate) number: u64,
    /// The first bytes of the line (at most the cap), without the `\n`.
    pub(crate) kept: &'a [u8],
    /// The length of the whole line in bytes, without the `\n`.
    pub(crate) len: u64,
    /// Whether the line ended with `\n` (the last line of a file may not).
    pub(crate) terminated: bool,
    /// Whether the line holds a NUL byte anywhere (kept or not): a binary file.
    pub(crate) nul: bool,
}

impl Line<'_> {
    /// Whether the line was longer than the cap.
    pub(crate) fn is_cut(&self) -> bool {
        self.len > self.kept.len() as u64
    }

    /// The kept text, with invalid UTF-8 replaced; a character split by the cut is left
    /// out, and a trailing `\r` too when `strip_cr`.
    pub(crate) fn text(&self, strip_cr: bool) -> String {
        let mut bytes = self.kept;
        if self.is_cut() {
            bytes = &bytes[..whole_chars(bytes)];
        } else if strip_cr {
            bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        }
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// How many leading bytes of `bytes` end on a character boundary (a UTF-8 sequence cut at
/// the end is left out).
pub(crate) fn whole_chars(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(4) {
        let b = bytes[len - back];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back
        }
        let width = match b {
            0xF0..=0xFF => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if width > back { len - back } else { len };
    }
    len
}

impl<R: BufRead> CappedLines<R> {
    /// Lines of `reader`, each kept up to `cap` bytes.
    pub(crate) fn new(reader: R, cap: usize) -> Self {
        CappedLines {
            reader,
            cap,
            kept: Vec::new(),
            number: 0,
        }
    }

    /// The next line, or `None` at the end.
    ///
    /// # Errors
    /// A read error of the underlying reader.
    pub(crate) fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.kept.clear();
        let (mut len, mut any, mut terminated, mut nul) = (0u64, false, false, false);
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let (end, used) = match memchr::memchr(b'\n', available) {
                Some(i) => {
                    terminated = true;
                    (i, i + 1)
                }
                None => (available.len(), available.len()),
            };
            let piece = &available[..end];
            nul = nul || memchr::memchr(0, piece).is_some();
            let room = self.cap.saturating_sub(self.kept.len());
            self.kept.extend_from_slice(&piece[..room.min(piece.len())]);
            len += end as u64;
            self.reader.consume(used);
            if terminated {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.number += 1;
        Ok(Some(Line {
            number: self.number,
            kept: &self.kept,
            len,
            terminated,
            nul,
        }))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn all(input: &[u8], cap: usize) -> Vec<(u64, Vec<u8>, u64, bool, bool)> {
        // A tiny buffer so lines span many reads.
        let mut lines = CappedLines::new(io::BufReader::with_capacity(3, input), cap);
        let mut out = Vec::new();
        while let Some(l) = lines.next_line().unwrap() {
            out.push((l.number, l.kept.to_vec(), l.len, l.terminated, l.nul));
        }
        out
    }

    #[test]
    fn lines_are_kept_up_to_the_cap_and_counted_whole() {
        assert_eq!(
            all(b"ab\nlong line\n\nx\0y", 4),
            [
                (1, b"ab".to_vec(), 2, true, false),
                (2, b"long".to_vec(), 9, true, false),
                (3, b"".to_vec(), 0, true, false),
                (4, b"x\0y".to_vec(), 3, false, true),
            ]
        );
        assert!(all(b"", 4).is_empty());
        assert_eq!(all(b"\n", 4), [(1, Vec::new(), 0, true, false)]);
        // A NUL past the cap still marks the line.
        assert!(all(b"abcdefgh\0\n", 4)[0].4);
    }

    #[test]
    fn text_never_ends_in_half_a_character() {
        let line = |kept: &'static [u8], len: u64| Line {
            number: 1,
            kept,
            len,
            terminated: true,
            nul: false,
        };
        assert_eq!(line("aé".as_bytes(), 3).text(false), "aé");
        assert_eq!(line(&"aé".as_bytes()[..2], 3).text(false), "a");
        assert_eq!(line(&"a€".as_bytes()[..3], 9).text(false), "a");
        assert_eq!(line("a€".as_bytes(), 9).text(false), "a€");
        assert_eq!(line(b"ab\r", 3).text(true), "ab");
        assert_eq!(line(b"ab\r", 3).text(false), "ab\r");
    }
}
