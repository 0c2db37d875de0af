//! The counts a schema held by a grammar may set. A grammar writes a bounded repetition
//! out once per count (`item{0,N}` becomes N rules in llama.cpp's parser, which refuses
//! more than 2,000), so an absurd bound — `"minItems": 1000000000` — makes a grammar
//! that cannot be built, or one far too large to use. A maximum that large is no bound a
//! grammar needs to write: without it the grammar holds a plain repetition, and the
//! answer is still validated against the schema, so the answer grammar takes it away
//! ([`lower_maximums`]). A minimum that large, or a `pattern`'s repetition, cannot be
//! held: [`check_counts`] refuses such a schema, in words, before any grammar is written.
//! The answer grammar applies it, and a front-end calls it to refuse an output schema
//! before a model loads.

use crate::Error;
use serde_json::Value;

/// The largest count a schema held by a grammar may set: `minItems`, `minLength`,
/// `minProperties`, `minContains` and a `pattern`'s `{m,n}` repetitions (a larger
/// maximum is taken away). llama.cpp's grammar parser writes out at most this many
/// repetitions.
pub const MAX_COUNT: u64 = 2000;

/// The keywords that set a lower bound (refused above [`MAX_COUNT`]).
const COUNT_KEYWORDS: &[&str] = &["minItems", "minLength", "minProperties", "minContains"];

/// The keywords that set an upper bound (taken away from [`MAX_COUNT`] up).
pub(crate) const MAXIMUM_KEYWORDS: &[&str] =
    &["maxItems", "maxLength", "maxProperties", "maxContains"];

/// Take away every maximum of `object` (one schema, not its subschemas) of [`MAX_COUNT`]
/// or more: a grammar holds no such repetition, and without the bound it holds a plain
/// one (an array then gets the answer grammar's default bound of items, as one that sets
/// none).
pub(crate) fn lower_maximums(object: &mut serde_json::Map<String, Value>) {
    for key in MAXIMUM_KEYWORDS {
        if object
            .get(*key)
            .and_then(Value::as_f64)
            .is_some_and(|n| n >= MAX_COUNT as f64)
        {
            object.remove(*key);
        }
    }
}

/// Keywords whose values are data, not schemas: a count-like key inside them is no count.
const DATA_KEYWORDS: &[&str] = &["const", "enum", "default", "examples"];

/// Keywords whose values map names to schemas: a name is no keyword.
const MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Deepest nesting followed (serde_json reads no deeper than 128 levels).
const MAX_DEPTH: usize = 256;

/// Check that no count in `schema` (at any depth: `properties`, `items`, `$defs`, …) is
/// above [`MAX_COUNT`].
///
/// # Errors
/// [`Error::Schema`] naming the keyword, where it is (a JSON pointer) and its value.
pub fn check_counts(schema: &Value) -> Result<(), Error> {
    let mut at = Vec::new();
    walk(schema, &mut at).map_err(Error::Schema)
}

fn walk(schema: &Value, at: &mut Vec<String>) -> Result<(), String> {
    if at.len() > MAX_DEPTH {
        return Ok(());
    }
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                if COUNT_KEYWORDS.contains(&key.as_str()) {
                    check_number(key, value, at)?;
                } else if key == "pattern" {
                    if let Some(pattern) = value.as_str() {
                        check_pattern(pattern, at)?;
                    }
                }
                if DATA_KEYWORDS.contains(&key.as_str()) {
                    continue;
                }
                at.push(key.clone());
                let checked = match value {
                    Value::Object(map) if MAP_KEYWORDS.contains(&key.as_str()) => {
                        map.iter().try_for_each(|(name, sub)| {
                            at.push(name.clone());
                            let checked = walk(sub, at);
                            at.pop();
                            checked
                        })
                    }
                    _ => walk(value, at),
                };
                at.pop();
                checked?;
            }
            Ok(())
        }
        Value::Array(list) => {
            for (i, value) in list.iter().enumerate() {
                at.push(i.to_string());
                let checked = walk(value, at);
                at.pop();
                checked?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Where `at` is: `at the top`, else `at` a JSON pointer.
fn place(at: &[String]) -> String {
    if at.is_empty() {
        return "at the top".to_string();
    }
    let pointer: String = at
        .iter()
        .map(|part| format!("/{}", part.replace('~', "~0").replace('/', "~1")))
        .collect();
    format!("at {pointer}")
}

fn too_large(what: &str, value: &str, at: &[String]) -> String {
    format!(
        "{what} is {value} {}: a grammar holds counts of at most {MAX_COUNT}",
        place(at)
    )
}

fn check_number(key: &str, value: &Value, at: &[String]) -> Result<(), String> {
    // A count written as a float (`1e9`) is as large as the integer.
    let limit = MAX_COUNT as f64;
    match value.as_f64() {
        Some(n) if n > limit => Err(too_large(key, &value.to_string(), at)),
        _ => Ok(()),
    }
}

/// Refuse a repetition `{m}`, `{m,}` or `{m,n}` in `pattern` whose count is above
/// [`MAX_COUNT`]; braces escaped or in a character class are literal.
fn check_pattern(pattern: &str, at: &[String]) -> Result<(), String> {
    let bytes = pattern.as_bytes();
    let (mut i, mut in_class) = (0, false);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'[' => in_class = true,
            b']' => in_class = false,
            b'{' if !in_class => {
                if let Some((counts, end)) = repetition(&bytes[i + 1..]) {
                    if let Some(count) = counts.into_iter().flatten().find(|&c| c > MAX_COUNT) {
                        let written = &pattern[i..=i + end];
                        let what = format!("the pattern's repetition {written}");
                        return Err(too_large(&what, &count.to_string(), at));
                    }
                    i += end;
                }
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The counts of a repetition whose text (after `{`) starts `rest`, and the offset of its
/// `}` from the `{`; `None` when `rest` is no repetition (a literal brace). A count too
/// large for a `u64` is `u64::MAX`.
fn repetition(rest: &[u8]) -> Option<([Option<u64>; 2], usize)> {
    let digits = |from: usize| {
        rest[from.min(rest.len())..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let number = |from: usize, len: usize| {
        (len > 0).then(|| {
            std::str::from_utf8(&rest[from..from + len])
                .ok()
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(u64::MAX)
        })
    };
    let first = digits(0);
    let min = number(0, first)?;
    match rest.get(first) {
        Some(b'}') => Some(([Some(min), None], first + 1)),
        Some(b',') => {
            let second = digits(first + 1);
            let max = number(first + 1, second);
            (rest.get(first + 1 + second) == Some(&b'}'))
                .then_some(([Some(min), max], first + second + 2))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(schema: &Value) -> String {
        match check_counts(schema) {
            Err(Error::Schema(why)) => why,
            other => panic!("{schema} was not refused: {other:?}"),
        }
    }

    #[test]
    fn an_absurd_count_is_refused_where_it_is() {
        let why = refused(&json!({
            "type": "object",
            "properties": {"tags": {"type": "array", "minItems": 1_000_000_000_u64}}
        }));
        assert_eq!(
            why,
            "minItems is 1000000000 at /properties/tags: a grammar holds counts of at most 2000"
        );
        for key in COUNT_KEYWORDS {
            let why = refused(&json!({"$defs": {"a/b": {key.to_string(): 2001}}}));
            assert!(
                why.starts_with(&format!("{key} is 2001 at /$defs/a~1b")),
                "{why}"
            );
        }
        assert!(refused(&json!({"items": [{"minLength": 1e9}]})).contains("at /items/0"));
        assert!(refused(&json!({"minItems": u64::MAX})).contains("at the top:"));
        // A property named like a data keyword is a schema all the same.
        let named = json!({"properties": {"enum": {"minLength": 5000}}});
        assert!(refused(&named).contains("at /properties/enum"));
    }

    #[test]
    fn a_large_maximum_is_lowered_not_refused() {
        let schema = json!({"maxItems": 1e9, "maxLength": 5000, "maxProperties": 3, "maxContains": u64::MAX});
        assert_eq!(check_counts(&schema), Ok(()));
        let mut object = schema.as_object().unwrap().clone();
        lower_maximums(&mut object);
        assert_eq!(Value::Object(object), json!({"maxProperties": 3}));
    }

    #[test]
    fn a_pattern_s_large_repetition_is_refused() {
        for pattern in ["^a{3000}$", "x{1,99999999999999999999999}", "(ab){2001,}"] {
            let why = refused(&json!({"type": "string", "pattern": pattern}));
            assert!(
                why.contains("the pattern's repetition {"),
                "{pattern}: {why}"
            );
        }
    }

    #[test]
    fn ordinary_counts_and_literal_braces_pass() {
        for schema in [
            json!({"type": "array", "minItems": 2000, "maxItems": 2000}),
            json!({"type": "string", "maxLength": 16, "pattern": "^[a-z]{2,8}$"}),
            json!({"type": "string", "pattern": "\\{5000\\}|[{9999}]|{x}|a{,3000"}),
            json!({"enum": [{"minItems": 5000}], "default": {"maxLength": 9999}}),
            json!({"properties": {"minItems": {"type": "integer"}, "enum": {"maxLength": 9}}}),
            json!({"minItems": "many", "maxItems": -1}),
        ] {
            assert_eq!(check_counts(&schema), Ok(()), "{schema}");
        }
    }
}
