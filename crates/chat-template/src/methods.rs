//! Python's methods on strings, lists and dicts, which templates call as in Python
//! (`message.content.strip()`, `tools.items()`): minijinja-contrib's set, and the string
//! and list methods it lacks.

use minijinja::value::{Value, ValueKind};
use minijinja::{Error, ErrorKind, State};

/// The callback for methods minijinja does not know.
pub(crate) fn call_method(
    state: &State<'_, '_>,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    if let Some(s) = value.as_str() {
        if let Some(result) = string_method(s, method, args)? {
            return Ok(result);
        }
    } else if value.kind() == ValueKind::Seq && method == "index" {
        let [needle] = args else {
            return Err(arity(method));
        };
        return match value.try_iter()?.position(|item| &item == needle) {
            Some(i) => Ok(Value::from(i)),
            None => Err(invalid(format!("{needle} is not in list"))),
        };
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

fn arity(method: &str) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("wrong number of arguments to {method}()"),
    )
}

fn text_arg<'a>(args: &'a [Value], i: usize, method: &str) -> Result<&'a str, Error> {
    args.get(i)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("{method}() needs a string argument")))
}

fn width_arg(args: &[Value], method: &str) -> Result<usize, Error> {
    args.first()
        .and_then(|v| i64::try_from(v.clone()).ok())
        .map(|n| usize::try_from(n).unwrap_or(0))
        .ok_or_else(|| invalid(format!("{method}() needs an integer width")))
}

/// Python's padding: `fill` repeated `n` times.
fn pad(n: usize, fill: &str) -> String {
    fill.repeat(n)
}

/// The string methods minijinja-contrib lacks; `None` for the others.
fn string_method(s: &str, method: &str, args: &[Value]) -> Result<Option<Value>, Error> {
    let value = match method {
        "rsplit" => {
            let sep = args.first().and_then(Value::as_str);
            let max = args
                .get(1)
                .and_then(|v| i64::try_from(v.clone()).ok())
                .unwrap_or(-1);
            let mut parts: Vec<String> = match (sep, usize::try_from(max)) {
                (Some(sep), Ok(max)) => s.rsplitn(max + 1, sep).map(str::to_string).collect(),
                (Some(sep), Err(_)) => s.rsplit(sep).map(str::to_string).collect(),
                (None, Ok(max)) => {
                    let mut parts = Vec::new();
                    let mut rest = s.trim_end();
                    while parts.len() < max {
                        match rest.rfind(char::is_whitespace) {
                            Some(at) => {
                                let word_start =
                                    at + rest[at..].chars().next().map_or(1, char::len_utf8);
                                parts.push(rest[word_start..].to_string());
                                rest = rest[..at].trim_end();
                            }
                            None => break,
                        }
                    }
                    if !rest.is_empty() {
                        parts.push(rest.to_string());
                    }
                    parts
                }
                (None, Err(_)) => s.split_whitespace().rev().map(str::to_string).collect(),
            };
            parts.reverse();
            Value::from(parts)
        }
        "partition" | "rpartition" => {
            let sep = text_arg(args, 0, method)?;
            let found = if method == "partition" {
                s.find(sep)
            } else {
                s.rfind(sep)
            };
            let parts: Vec<&str> = match found {
                Some(at) => vec![&s[..at], sep, &s[at + sep.len()..]],
                None if method == "partition" => vec![s, "", ""],
                None => vec!["", "", s],
            };
            Value::from(parts.into_iter().map(str::to_string).collect::<Vec<_>>())
        }
        "index" | "rindex" => {
            let needle = text_arg(args, 0, method)?;
            let found = if method == "index" {
                s.find(needle)
            } else {
                s.rfind(needle)
            };
            match found {
                Some(at) => Value::from(s[..at].chars().count()),
                None => return Err(invalid("substring not found")),
            }
        }
        "removeprefix" => {
            let prefix = text_arg(args, 0, method)?;
            Value::from(s.strip_prefix(prefix).unwrap_or(s))
        }
        "removesuffix" => {
            let suffix = text_arg(args, 0, method)?;
            Value::from(s.strip_suffix(suffix).unwrap_or(s))
        }
        "ljust" | "rjust" | "center" => {
            let width = width_arg(args, method)?;
            let fill = args.get(1).and_then(Value::as_str).unwrap_or(" ");
            let len = s.chars().count();
            let missing = width.saturating_sub(len);
            let (left, right) = match method {
                "ljust" => (0, missing),
                "rjust" => (missing, 0),
                // Python puts the odd extra character on the left when the width is odd.
                _ => {
                    let left = missing / 2 + (missing & width & 1);
                    (left, missing - left)
                }
            };
            Value::from(format!("{}{s}{}", pad(left, fill), pad(right, fill)))
        }
        "zfill" => {
            let width = width_arg(args, method)?;
            let missing = width.saturating_sub(s.chars().count());
            let (sign, digits) = match s.chars().next() {
                Some(c @ ('+' | '-')) => (c.to_string(), &s[1..]),
                _ => (String::new(), s),
            };
            Value::from(format!("{sign}{}{digits}", "0".repeat(missing)))
        }
        "swapcase" => Value::from(
            s.chars()
                .flat_map(|c| {
                    if c.is_uppercase() {
                        c.to_lowercase().collect::<Vec<_>>()
                    } else {
                        c.to_uppercase().collect::<Vec<_>>()
                    }
                })
                .collect::<String>(),
        ),
        _ => return Ok(None),
    };
    Ok(Some(value))
}
