//! Gemma 4: `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:5,on:true,list:[1,2]}<tool_call|>`.
//! Strings are quoted with `<|"|>`; keys are bare; other values are JSON-like words.

use super::Found;
use crate::calls::ToolCatalog;
use serde_json::{Map, Value};

const QUOTE: &str = "<|\"|>";
const MAX_DEPTH: usize = 64;

struct Reader<'a> {
    s: &'a str,
    i: usize,
}

impl Reader<'_> {
    fn rest(&self) -> &str {
        &self.s[self.i..]
    }

    fn ws(&mut self) {
        let trimmed = self.rest().trim_start();
        self.i = self.s.len() - trimmed.len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.ws();
        if self.rest().starts_with(c) {
            self.i += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn quoted(&mut self) -> Result<String, String> {
        self.i += QUOTE.len();
        let end = self
            .rest()
            .find(QUOTE)
            .ok_or("unterminated <|\"|> string")?;
        let text = self.rest()[..end].to_string();
        self.i += end + QUOTE.len();
        Ok(text)
    }

    fn key(&mut self) -> Result<String, String> {
        self.ws();
        if self.rest().starts_with(QUOTE) {
            return self.quoted();
        }
        let end = self
            .rest()
            .find([':', '}', ','])
            .ok_or("unterminated argument name")?;
        let key = self.rest()[..end].trim().to_string();
        self.i += end;
        if key.is_empty() {
            return Err("an argument has no name".into());
        }
        Ok(key)
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("the arguments are nested too deeply".into());
        }
        self.ws();
        if self.rest().starts_with(QUOTE) {
            return self.quoted().map(Value::String);
        }
        if self.eat('{') {
            let mut map = Map::new();
            if self.eat('}') {
                return Ok(Value::Object(map));
            }
            loop {
                let key = self.key()?;
                if !self.eat(':') {
                    return Err(format!("argument {key} has no value"));
                }
                map.insert(key, self.value(depth + 1)?);
                if self.eat('}') {
                    return Ok(Value::Object(map));
                }
                if !self.eat(',') {
                    return Err("expected , or } in the arguments".into());
                }
            }
        }
        if self.eat('[') {
            let mut items = Vec::new();
            if self.eat(']') {
                return Ok(Value::Array(items));
            }
            loop {
                items.push(self.value(depth + 1)?);
                if self.eat(']') {
                    return Ok(Value::Array(items));
                }
                if !self.eat(',') {
                    return Err("expected , or ] in a list".into());
                }
            }
        }
        let end = self
            .rest()
            .find([',', '}', ']'])
            .unwrap_or(self.rest().len());
        let word = self.rest()[..end].trim().to_string();
        self.i += end;
        Ok(serde_json::from_str(&word).unwrap_or(Value::String(word)))
    }
}

/// One or more `call:NAME{…}` (the body of a `<|tool_call>` section).
pub(crate) fn calls(body: &str, catalog: &ToolCatalog) -> Result<Found, String> {
    let mut found = Found::default();
    let mut reader = Reader { s: body, i: 0 };
    loop {
        reader.ws();
        if reader.rest().is_empty() {
            break;
        }
        let start = reader.i;
        let rest = reader
            .rest()
            .strip_prefix("call:")
            .ok_or("expected call:NAME{…} in the Gemma tool call")?;
        let brace = rest
            .find('{')
            .ok_or("the Gemma tool call has no arguments")?;
        let name = rest[..brace].trim().to_string();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("{name:?} is not a tool name"));
        }
        reader.i += "call:".len() + brace;
        let args = reader.value(0)?;
        let raw = body[start..reader.i].trim();
        found.calls.push(catalog.request(&name, args, raw));
        reader.eat(',');
    }
    if found.calls.is_empty() {
        return Err("the Gemma tool call is empty".into());
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gemma_calls_become_json() {
        let found = calls(
            "call:get_weather{city:<|\"|>Paris, \"FR\"<|\"|>,days:3,metric:true,opts:{a:[1,<|\"|>x<|\"|>]},none:null}",
            &ToolCatalog::Empty,
        )
        .unwrap();
        assert_eq!(found.calls[0].tool_id, "get_weather");
        assert_eq!(
            *found.calls[0].parameters,
            json!({"city": "Paris, \"FR\"", "days": 3, "metric": true, "opts": {"a": [1, "x"]}, "none": null})
        );
        assert!(calls("call:f{a:<|\"|>open", &ToolCatalog::Empty).is_err());
        assert!(calls("nonsense", &ToolCatalog::Empty).is_err());
    }
}
