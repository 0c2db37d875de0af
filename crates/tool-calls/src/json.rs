//! An incremental JSON syntax scanner: fed one character at a time, it says whether the
//! text so far can still be the start of a JSON object or array, and when the value ends.
//! Strings, escapes and nesting are tracked, so braces, quotes or markers inside strings
//! never confuse it. Constant work per character.

/// serde_json's default nesting limit; deeper values could not be parsed anyway.
const MAX_DEPTH: usize = 128;

/// What the last character did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// Still a valid prefix.
    More,
    /// The value is complete; the character was its last.
    Done,
    /// The text cannot be JSON; the character is not part of it.
    Invalid,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the top-level value.
    Start,
    /// A value is expected.
    Value,
    /// After `[`: a value or `]`.
    ArrayValueOrEnd,
    /// After `{`: a key or `}`.
    KeyOrEnd,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value inside a container: `,` or the closing bracket.
    CommaOrEnd,
    /// Inside a string.
    Str { key: bool },
    /// After a backslash in a string.
    Escape { key: bool },
    /// Inside `\uXXXX`, with this many hex digits left.
    Unicode { key: bool, left: u8 },
    /// Inside a number.
    Number,
    /// Inside `true`, `false` or `null`, with these bytes left.
    Literal { rest: &'static [u8] },
    /// The top-level value ended.
    Done,
    /// Not JSON.
    Invalid,
}

/// See the module docs.
#[derive(Debug, Clone)]
pub(crate) struct JsonScanner {
    stack: Vec<u8>,
    state: State,
}

impl JsonScanner {
    /// A scanner expecting an object or an array.
    pub(crate) fn new() -> Self {
        JsonScanner {
            stack: Vec::new(),
            state: State::Start,
        }
    }

    /// The open brackets, outermost first (`b'{'` or `b'['` each).
    pub(crate) fn open_brackets(&self) -> &[u8] {
        &self.stack
    }

    /// Whether an object key just ended and its `:` is awaited.
    pub(crate) fn after_key(&self) -> bool {
        matches!(self.state, State::Colon)
    }

    /// Whether the scanner is inside a string (where any character is accepted).
    pub(crate) fn in_string(&self) -> bool {
        matches!(self.state, State::Str { .. })
    }

    fn after_value(&mut self) -> Scan {
        if self.stack.is_empty() {
            self.state = State::Done;
            Scan::Done
        } else {
            self.state = State::CommaOrEnd;
            Scan::More
        }
    }

    fn open(&mut self, bracket: u8) -> Scan {
        if self.stack.len() >= MAX_DEPTH {
            return self.invalid();
        }
        self.stack.push(bracket);
        self.state = if bracket == b'{' {
            State::KeyOrEnd
        } else {
            State::ArrayValueOrEnd
        };
        Scan::More
    }

    fn close(&mut self, bracket: u8) -> Scan {
        if self.stack.pop() == Some(bracket) {
            self.after_value()
        } else {
            self.invalid()
        }
    }

    fn invalid(&mut self) -> Scan {
        self.state = State::Invalid;
        Scan::Invalid
    }

    fn value_start(&mut self, c: char) -> Scan {
        match c {
            '{' => self.open(b'{'),
            '[' => self.open(b'['),
            '"' => {
                self.state = State::Str { key: false };
                Scan::More
            }
            '-' | '0'..='9' => {
                self.state = State::Number;
                Scan::More
            }
            't' => self.literal(b"rue"),
            'f' => self.literal(b"alse"),
            'n' => self.literal(b"ull"),
            _ => self.invalid(),
        }
    }

    fn literal(&mut self, rest: &'static [u8]) -> Scan {
        self.state = State::Literal { rest };
        Scan::More
    }

    /// Feed one character.
    pub(crate) fn push(&mut self, c: char) -> Scan {
        let ws = matches!(c, ' ' | '\t' | '\n' | '\r');
        match self.state {
            State::Done | State::Invalid => self.invalid(),
            State::Start => match c {
                '{' => self.open(b'{'),
                '[' => self.open(b'['),
                _ => self.invalid(),
            },
            State::Value => {
                if ws {
                    Scan::More
                } else {
                    self.value_start(c)
                }
            }
            State::ArrayValueOrEnd => match c {
                _ if ws => Scan::More,
                ']' => self.close(b'['),
                _ => self.value_start(c),
            },
            State::KeyOrEnd => match c {
                _ if ws => Scan::More,
                '}' => self.close(b'{'),
                '"' => {
                    self.state = State::Str { key: true };
                    Scan::More
                }
                _ => self.invalid(),
            },
            State::Key => match c {
                _ if ws => Scan::More,
                '"' => {
                    self.state = State::Str { key: true };
                    Scan::More
                }
                _ => self.invalid(),
            },
            State::Colon => match c {
                _ if ws => Scan::More,
                ':' => {
                    self.state = State::Value;
                    Scan::More
                }
                _ => self.invalid(),
            },
            State::CommaOrEnd => match c {
                _ if ws => Scan::More,
                ',' => {
                    self.state = if self.stack.last() == Some(&b'{') {
                        State::Key
                    } else {
                        State::Value
                    };
                    Scan::More
                }
                '}' => self.close(b'{'),
                ']' => self.close(b'['),
                _ => self.invalid(),
            },
            State::Str { key } => {
                match c {
                    '"' => {
                        if key {
                            self.state = State::Colon;
                            return Scan::More;
                        }
                        return self.after_value();
                    }
                    '\\' => self.state = State::Escape { key },
                    // Raw control characters are not JSON, but models write raw newlines
                    // in strings often enough that they are accepted here and escaped
                    // before parsing (see `repair`).
                    _ => {}
                }
                Scan::More
            }
            State::Escape { key } => match c {
                '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' => {
                    self.state = State::Str { key };
                    Scan::More
                }
                'u' => {
                    self.state = State::Unicode { key, left: 4 };
                    Scan::More
                }
                _ => self.invalid(),
            },
            State::Unicode { key, left } => {
                if !c.is_ascii_hexdigit() {
                    return self.invalid();
                }
                self.state = if left == 1 {
                    State::Str { key }
                } else {
                    State::Unicode {
                        key,
                        left: left - 1,
                    }
                };
                Scan::More
            }
            State::Number => {
                if matches!(c, '0'..='9' | '.' | 'e' | 'E' | '+' | '-') {
                    Scan::More
                } else {
                    // The number ended; the character belongs to what follows it.
                    match self.after_value() {
                        Scan::Done => self.invalid(), // unreachable: numbers are never top level
                        _ => self.push(c),
                    }
                }
            }
            State::Literal { rest } => match rest.split_first() {
                Some((&b, tail)) if c == char::from(b) => {
                    if tail.is_empty() {
                        self.after_value()
                    } else {
                        self.literal(tail)
                    }
                }
                _ => self.invalid(),
            },
        }
    }
}

/// Escape raw control characters inside JSON strings, so that text a model wrote with
/// literal newlines in string values parses. Linear; returns `None` when nothing changed.
pub(crate) fn repair(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    let mut changed = false;
    for c in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            } else if c.is_control() && (c as u32) < 0x20 {
                changed = true;
                match c {
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    other => out.push_str(&format!("\\u{:04x}", other as u32)),
                }
                continue;
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    changed.then_some(out)
}

/// Parse JSON text, repairing raw control characters in strings if needed. Valid text is
/// read with each string allocated once ([`super::value`]); serde_json gives the error
/// and the repaired reading of the rest.
pub(crate) fn parse(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    if let Some(value) = super::value::from_str(text) {
        return Ok(value);
    }
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) => match repair(text) {
            Some(fixed) => serde_json::from_str(&fixed).map_err(|_| e),
            None => Err(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> (Scan, usize) {
        let mut s = JsonScanner::new();
        for (i, c) in text.chars().enumerate() {
            match s.push(c) {
                Scan::More => {}
                other => return (other, i),
            }
        }
        (Scan::More, text.chars().count())
    }

    #[test]
    fn scanner_finds_the_end_and_rejects_early() {
        let cases = [
            (r#"{"a": 1}"#, Scan::Done, 7),
            (
                r#"{"a": "}{\"", "b": [1, 2.5e-3, true, null, {}]} tail"#,
                Scan::Done,
                46,
            ),
            (r#"[{"x": false}]"#, Scan::Done, 13),
            ("{}", Scan::Done, 1),
            (r#"{"a": -1}"#, Scan::Done, 8),
            ("{ foo", Scan::Invalid, 2),
            ("{\"a\" 1}", Scan::Invalid, 5),
            ("{\"a\": tru}", Scan::Invalid, 9),
            ("{\"a\": \"\\x\"}", Scan::Invalid, 8),
            ("{\"a\": \"\\u12g4\"}", Scan::Invalid, 11),
            ("{\"a\": 1]", Scan::Invalid, 7),
            ("x", Scan::Invalid, 0),
            ("{\"a\": \"line\nbreak\"}", Scan::Done, 18),
            ("{\"a\": {\"b\": ", Scan::More, 12),
        ];
        for (text, want, at) in cases {
            assert_eq!(scan(text), (want, at), "{text:?}");
        }
    }

    #[test]
    fn scanner_limits_depth() {
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert_eq!(scan(&deep), (Scan::Invalid, MAX_DEPTH));
    }

    #[test]
    fn repair_escapes_control_characters_in_strings_only() {
        assert_eq!(
            repair("{\"a\": \"x\ny\t\"}\n").as_deref(),
            Some("{\"a\": \"x\\ny\\t\"}\n")
        );
        assert_eq!(
            repair("{\"a\": \"x\\\"\n\"}").as_deref(),
            Some("{\"a\": \"x\\\"\\n\"}")
        );
        assert_eq!(repair("{\n\"a\": 1\n}"), None);
        assert_eq!(parse("{\"a\": \"x\ny\"}").unwrap()["a"], "x\ny");
    }
}
