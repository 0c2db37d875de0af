//! JSON text into a [`serde_json::Value`], with each string allocated once and no bigger
//! than its text: a tool call carrying a 50 MB file costs the file once more, not three
//! times (serde_json unescapes a string into a scratch buffer, then copies it).
//!
//! The value is the one serde_json would give (the same numbers — parsed by serde_json
//! itself —, the last of duplicate keys, the same nesting limit). Anything serde_json
//! would refuse is refused here too, with no reason: callers ask serde_json again for
//! its error (and its repairs), which costs nothing on the common, valid path.

use serde_json::{Map, Value};
use std::io::BufRead;

/// serde_json's nesting limit (it reads at most one less level).
const MAX_DEPTH: usize = 128;

/// Where the bytes come from.
trait Source {
    /// The next byte, not taken.
    fn peek(&mut self) -> Option<u8>;
    /// Take one byte.
    fn bump(&mut self);
    /// Take the bytes of a string up to (not including) the next `"` or `\`, appending
    /// them to `out`; `None` when the text ends first.
    fn plain_run(&mut self, out: &mut Vec<u8>) -> Option<()>;
    /// A read failed (reader sources only).
    fn failed(&self) -> bool {
        false
    }
}

/// A whole text.
struct Slice<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Source for Slice<'_> {
    fn peek(&mut self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }
    fn bump(&mut self) {
        self.at += 1;
    }
    fn plain_run(&mut self, out: &mut Vec<u8>) -> Option<()> {
        let rest = &self.bytes[self.at..];
        let end = rest.iter().position(|b| matches!(b, b'"' | b'\\'))?;
        out.extend_from_slice(&rest[..end]);
        self.at += end;
        Some(())
    }
}

/// A buffered reader.
struct Reader<R> {
    inner: R,
    error: bool,
}

impl<R: BufRead> Reader<R> {
    fn buffer(&mut self) -> &[u8] {
        match self.inner.fill_buf() {
            Ok(b) => b,
            Err(_) => {
                self.error = true;
                &[]
            }
        }
    }
}

impl<R: BufRead> Source for Reader<R> {
    fn peek(&mut self) -> Option<u8> {
        self.buffer().first().copied()
    }
    fn bump(&mut self) {
        self.inner.consume(1);
    }
    fn plain_run(&mut self, out: &mut Vec<u8>) -> Option<()> {
        loop {
            let buffer = self.buffer();
            if buffer.is_empty() {
                return None;
            }
            match buffer.iter().position(|b| matches!(b, b'"' | b'\\')) {
                Some(end) => {
                    out.extend_from_slice(&buffer[..end]);
                    self.inner.consume(end);
                    return Some(());
                }
                None => {
                    let n = buffer.len();
                    out.extend_from_slice(buffer);
                    self.inner.consume(n);
                }
            }
        }
    }
    fn failed(&self) -> bool {
        self.error
    }
}

/// The value of the JSON text `text`; `None` where serde_json would refuse it.
pub fn from_str(text: &str) -> Option<Value> {
    let mut source = Slice {
        bytes: text.as_bytes(),
        at: 0,
    };
    whole(&mut source)
}

/// The value of the JSON text `reader` gives; `None` where serde_json would refuse it or
/// the reader fails.
pub fn from_reader(reader: impl BufRead) -> Option<Value> {
    let mut source = Reader {
        inner: reader,
        error: false,
    };
    let value = whole(&mut source);
    if source.failed() {
        return None;
    }
    value
}

/// One value and nothing but blanks after it.
fn whole(source: &mut impl Source) -> Option<Value> {
    let value = value(source, 0)?;
    skip_blanks(source);
    match source.peek() {
        None => Some(value),
        Some(_) => None,
    }
}

fn skip_blanks(source: &mut impl Source) {
    while matches!(source.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        source.bump();
    }
}

fn value(source: &mut impl Source, depth: usize) -> Option<Value> {
    skip_blanks(source);
    match source.peek()? {
        b'{' => {
            if depth + 1 >= MAX_DEPTH {
                return None;
            }
            source.bump();
            object(source, depth + 1).map(Value::Object)
        }
        b'[' => {
            if depth + 1 >= MAX_DEPTH {
                return None;
            }
            source.bump();
            array(source, depth + 1).map(Value::Array)
        }
        b'"' => {
            source.bump();
            string(source).map(Value::String)
        }
        b't' => literal(source, b"true", Value::Bool(true)),
        b'f' => literal(source, b"false", Value::Bool(false)),
        b'n' => literal(source, b"null", Value::Null),
        b'-' | b'0'..=b'9' => number(source),
        _ => None,
    }
}

fn literal(source: &mut impl Source, word: &[u8], value: Value) -> Option<Value> {
    for &b in word {
        if source.peek()? != b {
            return None;
        }
        source.bump();
    }
    Some(value)
}

/// A number, read as serde_json reads it.
fn number(source: &mut impl Source) -> Option<Value> {
    let mut text = String::new();
    while let Some(b @ (b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) = source.peek() {
        text.push(char::from(b));
        source.bump();
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(n @ Value::Number(_)) => Some(n),
        _ => None,
    }
}

fn array(source: &mut impl Source, depth: usize) -> Option<Vec<Value>> {
    let mut items = Vec::new();
    skip_blanks(source);
    if source.peek()? == b']' {
        source.bump();
        return Some(items);
    }
    loop {
        items.push(value(source, depth)?);
        skip_blanks(source);
        match source.peek()? {
            b',' => source.bump(),
            b']' => {
                source.bump();
                return Some(items);
            }
            _ => return None,
        }
    }
}

fn object(source: &mut impl Source, depth: usize) -> Option<Map<String, Value>> {
    let mut map = Map::new();
    skip_blanks(source);
    if source.peek()? == b'}' {
        source.bump();
        return Some(map);
    }
    loop {
        skip_blanks(source);
        if source.peek()? != b'"' {
            return None;
        }
        source.bump();
        let key = string(source)?;
        skip_blanks(source);
        if source.peek()? != b':' {
            return None;
        }
        source.bump();
        let item = value(source, depth)?;
        map.insert(key, item);
        skip_blanks(source);
        match source.peek()? {
            b',' => source.bump(),
            b'}' => {
                source.bump();
                return Some(map);
            }
            _ => return None,
        }
    }
}

/// A string after its opening quote, up to and including its closing one.
fn string(source: &mut impl Source) -> Option<String> {
    let mut out = Vec::new();
    loop {
        let from = out.len();
        source.plain_run(&mut out)?;
        // Raw control characters are not JSON (escaped ones are).
        if out[from..].iter().any(|b| *b < 0x20) {
            return None;
        }
        match source.peek()? {
            b'"' => {
                source.bump();
                break;
            }
            _ => {
                source.bump();
                escape(source, &mut out)?;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// One escape after its backslash.
fn escape(source: &mut impl Source, out: &mut Vec<u8>) -> Option<()> {
    let b = source.peek()?;
    source.bump();
    let c = match b {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let first = hex4(source)?;
            let code = match first {
                0xD800..=0xDBFF => {
                    // A surrogate pair: `\uD8xx\uDCxx`.
                    for expected in [b'\\', b'u'] {
                        if source.peek()? != expected {
                            return None;
                        }
                        source.bump();
                    }
                    let second = hex4(source)?;
                    if !(0xDC00..=0xDFFF).contains(&second) {
                        return None;
                    }
                    0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                }
                0xDC00..=0xDFFF => return None,
                code => code,
            };
            char::from_u32(code)?
        }
        _ => return None,
    };
    let mut buffer = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
    Some(())
}

fn hex4(source: &mut impl Source) -> Option<u32> {
    let mut code = 0u32;
    for _ in 0..4 {
        let digit = char::from(source.peek()?).to_digit(16)?;
        source.bump();
        code = code * 16 + digit;
    }
    Some(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn same_as_serde(text: &str) {
        let ours = from_str(text);
        let theirs = serde_json::from_str::<Value>(text).ok();
        assert_eq!(ours, theirs, "{text:?}");
        let read = from_reader(std::io::BufReader::with_capacity(3, text.as_bytes()));
        assert_eq!(read, theirs, "{text:?} (read)");
    }

    #[test]
    fn values_are_serde_json_s() {
        for text in [
            r#"{"name": "write_file", "arguments": {"path": "a", "content": "x\n\"y\"\t\u00fc\ud83d\ude00"}}"#,
            r#"[1, -2, 3.5, 1e400, 18446744073709551615, -9223372036854775808, 0.1e-2]"#,
            r#" {"a": 1, "a": 2} "#,
            r#"{"k": [true, false, null, [], {}]}"#,
            r#""\/\b\f\r""#,
            "\"caf\u{e9}\"",
        ] {
            same_as_serde(text);
        }
    }

    #[test]
    fn what_serde_json_refuses_is_refused() {
        for text in [
            "",
            "{",
            "{\"a\" 1}",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            "-",
            "+1",
            "tru",
            "nul",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "\"\\x\"",
            "\"a\tb\"",
            "[1] x",
            "\"\\u12\"",
            "NaN",
            "{1: 2}",
        ] {
            same_as_serde(text);
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        same_as_serde(&deep);
        let limit = format!("{}{}", "[".repeat(128), "]".repeat(128));
        same_as_serde(&limit);
        let over = format!("{}{}", "[".repeat(129), "]".repeat(129));
        same_as_serde(&over);
    }

    #[test]
    fn a_string_costs_its_length() {
        let content = "line \"q\"\t\n".repeat(10_000);
        let text = serde_json::json!({"content": content}).to_string();
        let value = from_str(&text).unwrap();
        let s = value["content"].as_str().unwrap();
        assert_eq!(s, content);
    }

    const PIECES: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "\"",
        "\\",
        "\\\"",
        "\\n",
        "\\u00e9",
        "\\ud83d\\ude00",
        "\\ud800",
        "a",
        "é",
        "1",
        "-",
        ".",
        "e",
        "true",
        "null",
        " ",
        "\n",
        "\t",
        "\u{1}",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]
        #[test]
        fn any_text_reads_as_serde_json_reads_it(pieces in proptest::collection::vec(0..PIECES.len(), 0..30)) {
            let text: String = pieces.iter().map(|&i| PIECES[i]).collect();
            let ours = from_str(&text);
            let theirs = serde_json::from_str::<Value>(&text).ok();
            prop_assert_eq!(ours, theirs, "{:?}", text);
        }

        #[test]
        fn any_value_reads_back(value in arbitrary_json()) {
            let text = serde_json::to_string_pretty(&value).unwrap();
            let theirs = serde_json::from_str::<Value>(&text).ok();
            prop_assert!(theirs.is_some());
            prop_assert_eq!(from_str(&text), theirs.clone());
            let read = from_reader(std::io::BufReader::with_capacity(7, text.as_bytes()));
            prop_assert_eq!(read, theirs);
        }
    }

    fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            ".*".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::btree_map(".*", inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
