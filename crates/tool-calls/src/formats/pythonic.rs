//! Pythonic calls (Llama 3.2 / Llama 4, LFM2): `[get_weather(city="Paris"), now()]`,
//! keyword arguments holding Python literals. Also Llama 3.1's built-in
//! `brave_search.call(query="…")`.

use crate::calls::ToolCatalog;
use crate::values::{property_type, typed_value, Untyped};
use core_models::ToolCallRequest;
use serde_json::{Map, Number, Value};

/// Deepest nesting of literals accepted.
const MAX_DEPTH: usize = 64;

struct Cursor<'a> {
    s: &'a str,
    i: usize,
    depth: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }

    fn ws(&mut self) {
        while let Some(c) = self.peek() {
            if !c.is_whitespace() {
                break;
            }
            self.i += c.len_utf8();
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected '{c}' at offset {}", self.i))
        }
    }

    fn ident(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        while let Some(c) = self.peek() {
            let ok = c.is_alphanumeric() || c == '_' || (self.i > start && matches!(c, '.' | '-'));
            if !ok {
                break;
            }
            self.i += c.len_utf8();
        }
        (self.i > start).then(|| &self.s[start..self.i])
    }

    fn literal(&mut self) -> Result<Value, String> {
        self.ws();
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("the arguments are nested too deeply".into());
        }
        let value = match self.peek() {
            Some(q @ ('"' | '\'')) => self.string(q).map(Value::String),
            Some('[') | Some('(') => {
                let close = if self.peek() == Some('[') { ']' } else { ')' };
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    if self.eat(close) {
                        break;
                    }
                    items.push(self.literal()?);
                    if !self.eat(',') {
                        self.expect(close)?;
                        break;
                    }
                }
                Ok(Value::Array(items))
            }
            Some('{') => {
                self.i += 1;
                let mut map = Map::new();
                loop {
                    if self.eat('}') {
                        break;
                    }
                    let key = match self.literal()? {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    self.expect(':')?;
                    map.insert(key, self.literal()?);
                    if !self.eat(',') {
                        self.expect('}')?;
                        break;
                    }
                }
                Ok(Value::Object(map))
            }
            Some(c) if c == '-' || c == '+' || c == '.' || c.is_ascii_digit() => self.number(),
            _ => match self.ident() {
                Some("True") | Some("true") => Ok(Value::Bool(true)),
                Some("False") | Some("false") => Ok(Value::Bool(false)),
                Some("None") | Some("null") => Ok(Value::Null),
                Some(other) => Err(format!("unexpected name {other} in the arguments")),
                None => Err(format!("expected a value at offset {}", self.i)),
            },
        };
        self.depth -= 1;
        value
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.i;
        while let Some(c) = self.peek() {
            if !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E' | '_')) {
                break;
            }
            self.i += 1;
        }
        let text: String = self.s[start..self.i]
            .chars()
            .filter(|c| *c != '_')
            .collect();
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Value::from(i));
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("{text} is not a number"))
    }

    fn string(&mut self, quote: char) -> Result<String, String> {
        let triple: String = std::iter::repeat_n(quote, 3).collect();
        let long = self.s[self.i..].starts_with(&triple);
        self.i += if long { 3 } else { 1 };
        let mut out = String::new();
        loop {
            if long && self.s[self.i..].starts_with(&triple) {
                self.i += 3;
                return Ok(out);
            }
            let c = self.peek().ok_or("unterminated string in the arguments")?;
            self.i += c.len_utf8();
            match c {
                '\\' => {
                    let e = self.peek().ok_or("unterminated string in the arguments")?;
                    self.i += e.len_utf8();
                    match e {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        '0' => out.push('\0'),
                        'u' | 'x' => {
                            let n = if e == 'u' { 4 } else { 2 };
                            let hex = self.s.get(self.i..self.i + n).ok_or("bad escape")?;
                            let code = u32::from_str_radix(hex, 16).map_err(|_| "bad escape")?;
                            out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                            self.i += n;
                        }
                        '\n' => {}
                        other => out.push(other),
                    }
                }
                c if c == quote && !long => return Ok(out),
                c => out.push(c),
            }
        }
    }

    /// `name(k=v, …)`: the name and the keyword arguments.
    fn call(&mut self) -> Result<(String, Map<String, Value>), String> {
        let name = self.ident().ok_or("expected a function name")?.to_string();
        self.expect('(')?;
        let mut args = Map::new();
        loop {
            if self.eat(')') {
                break;
            }
            let key = self
                .ident()
                .ok_or_else(|| format!("{name}: expected a keyword argument"))?
                .to_string();
            self.expect('=')?;
            args.insert(key, self.literal()?);
            if !self.eat(',') {
                self.expect(')')?;
                break;
            }
        }
        Ok((name, args))
    }
}

/// A Python literal (string, number, list, tuple, dict, True/False/None) as JSON.
pub(crate) fn literal(text: &str) -> Option<Value> {
    let mut cursor = Cursor {
        s: text,
        i: 0,
        depth: 0,
    };
    let value = cursor.literal().ok()?;
    cursor.ws();
    (cursor.i == text.len()).then_some(value)
}

/// String arguments re-typed by the schema (a model may quote a number).
fn retype(name: &str, args: Map<String, Value>, catalog: &ToolCatalog) -> Value {
    let schema = catalog.schema(name);
    let args = args
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => match property_type(schema.as_ref(), &k) {
                    Some("string") | None => Value::String(s),
                    ty => typed_value(&s, ty, Untyped::Text),
                },
                other => other,
            };
            (k, v)
        })
        .collect();
    Value::Object(args)
}

/// `[f(a=1), g()]` (brackets optional): the calls, or why not.
pub(crate) fn calls(text: &str, catalog: &ToolCatalog) -> Result<Vec<ToolCallRequest>, String> {
    let trimmed = text.trim();
    let mut cursor = Cursor {
        s: trimmed,
        i: 0,
        depth: 0,
    };
    let bracketed = cursor.eat('[');
    let mut out = Vec::new();
    loop {
        let start = cursor.i;
        let (name, args) = cursor.call()?;
        let raw = trimmed[start..cursor.i].trim();
        out.push(catalog.request(&name, retype(&name, args, catalog), raw));
        if !cursor.eat(',') {
            break;
        }
    }
    if bracketed {
        cursor.expect(']')?;
    }
    cursor.ws();
    if cursor.i != trimmed.len() {
        return Err("unexpected text after the pythonic calls".into());
    }
    Ok(out)
}

/// Llama 3.1's built-in tool call `NAME.call(k=v, …)`.
pub(crate) fn builtin_call(text: &str, catalog: &ToolCatalog) -> Option<ToolCallRequest> {
    let trimmed = text.trim();
    let (name, rest) = trimmed.split_once(".call(")?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return None;
    }
    let mut cursor = Cursor {
        s: rest,
        i: 0,
        depth: 0,
    };
    let mut args = Map::new();
    loop {
        if cursor.eat(')') {
            break;
        }
        let key = cursor.ident()?.to_string();
        if !cursor.eat('=') {
            return None;
        }
        args.insert(key, cursor.literal().ok()?);
        if !cursor.eat(',') {
            if !cursor.eat(')') {
                return None;
            }
            break;
        }
    }
    Some(catalog.request(name, retype(name, args, catalog), trimmed))
}

/// Incremental check of a bare pythonic reply: fed one character at a time, it says
/// whether the text can still be `[name(…), …]` and when the list closes.
#[derive(Debug, Clone, Default)]
pub(crate) struct PythonicScanner {
    depth: usize,
    quote: Option<char>,
    escaped: bool,
    /// In the list but outside a call: 0 expecting a name, 1 in a name, 2 after a call.
    outer: u8,
}

/// What [`PythonicScanner::push`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PyScan {
    More,
    Done,
    Invalid,
}

impl PythonicScanner {
    /// Feed a character after the opening `[`.
    pub(crate) fn push(&mut self, c: char) -> PyScan {
        if let Some(q) = self.quote {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == q {
                self.quote = None;
            }
            return PyScan::More;
        }
        if self.depth > 0 {
            match c {
                '"' | '\'' => self.quote = Some(c),
                '(' | '[' | '{' => self.depth += 1,
                ')' | ']' | '}' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.outer = 2;
                    }
                }
                _ => {}
            }
            return if self.depth > MAX_DEPTH {
                PyScan::Invalid
            } else {
                PyScan::More
            };
        }
        match (self.outer, c) {
            (0, c) if c.is_whitespace() => PyScan::More,
            (0, c) if c.is_alphabetic() || c == '_' => {
                self.outer = 1;
                PyScan::More
            }
            (1, c) if c.is_alphanumeric() || matches!(c, '_' | '.' | '-') => PyScan::More,
            (1, '(') => {
                self.depth = 1;
                PyScan::More
            }
            (2, c) if c.is_whitespace() => PyScan::More,
            (2, ',') => {
                self.outer = 0;
                PyScan::More
            }
            (2, ']') => PyScan::Done,
            _ => PyScan::Invalid,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(text: &str, expected: Value) {
        let got: Vec<Value> = calls(text, &ToolCatalog::Empty)
            .unwrap()
            .into_iter()
            .map(|c| json!({"tool": c.tool_id, "parameters": c.parameters}))
            .collect();
        assert_eq!(Value::Array(got), expected, "{text}");
    }

    #[test]
    fn pythonic_calls_and_literals() {
        check(
            r#"[get_weather(city="Paris", days=3), now()]"#,
            json!([{"tool": "get_weather", "parameters": {"city": "Paris", "days": 3}},
                   {"tool": "now", "parameters": {}}]),
        );
        check(
            r#"[f(a='it\'s', b=[1, 2.5, None], c={'k': True}, d=(1,), e="""x
y""")]"#,
            json!([{"tool": "f", "parameters": {"a": "it's", "b": [1, 2.5, null], "c": {"k": true}, "d": [1], "e": "x\ny"}}]),
        );
        assert!(calls("[f(a=1) junk]", &ToolCatalog::Empty).is_err());
        assert!(calls("[f(a=undefined_name)]", &ToolCatalog::Empty).is_err());
        let b = builtin_call(r#"brave_search.call(query="rust")"#, &ToolCatalog::Empty).unwrap();
        assert_eq!(b.tool_id, "brave_search");
        assert_eq!(*b.parameters, json!({"query": "rust"}));
    }

    #[test]
    fn scanner_rejects_prose_early_and_finds_the_end() {
        let run = |s: &str| {
            let mut sc = PythonicScanner::default();
            s.chars().map(|c| sc.push(c)).collect::<Vec<_>>()
        };
        assert_eq!(run("1, 2]")[0], PyScan::Invalid);
        assert_eq!(run("Note] x")[4], PyScan::Invalid);
        let r = run("f(a=']'), g()]");
        assert_eq!(r.last(), Some(&PyScan::Done));
        assert!(r[..r.len() - 1].iter().all(|s| *s == PyScan::More));
    }
}
