//! A JSON-schema-to-GBNF converter for the part of JSON Schema tools use, written in Rust
//! for where llama.cpp's own converter is not linked (a backend that sends grammars to a
//! server). It writes the rules the way llama.cpp's converter does — the same primitive
//! rules, whitespace and property order — so that a model is held to the same JSON in
//! either place. What it does not know (`$ref`, `pattern`, numeric bounds, formats)
//! it constrains less, never more: a value it cannot describe may be any JSON value.

use crate::gbnf::literal;
use crate::SchemaConverter;
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// The common subset of JSON Schema: types (and lists of types), `properties` with
/// `required` and `additionalProperties`, `items` and `prefixItems` with `minItems` /
/// `maxItems`, `minLength` / `maxLength`, `enum`, `const`, `anyOf`, `oneOf`, single-element
/// `allOf`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SubsetConverter;

impl SchemaConverter for SubsetConverter {
    fn convert(&self, schema: &Value) -> Result<String, String> {
        let mut w = Writer::default();
        let root = w.visit(schema, "", 0)?;
        if root != "root" {
            w.rule("root", &root);
        }
        Ok(w.finish())
    }
}

/// llama.cpp's primitive rules and what each needs.
const PRIMITIVES: &[(&str, &str, &[&str])] = &[
    ("boolean", r#"("true" | "false")"#, &[]),
    ("decimal-part", "[0-9]{1,16}", &[]),
    ("integral-part", "[0] | [1-9] [0-9]{0,15}", &[]),
    (
        "number",
        r#"("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)?"#,
        &["integral-part", "decimal-part"],
    ),
    ("integer", r#"("-"? integral-part)"#, &["integral-part"]),
    (
        "value",
        "object | array | string | number | boolean | null",
        &["object", "array", "string", "number", "boolean", "null"],
    ),
    (
        "object",
        r#""{" space ( string ":" space value ("," space string ":" space value)* )? space "}""#,
        &["string", "value"],
    ),
    (
        "array",
        r#""[" space ( value ("," space value)* )? space "]""#,
        &["value"],
    ),
    (
        "char",
        r#"[^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})"#,
        &[],
    ),
    ("string", r#""\"" char* "\"""#, &["char"]),
    ("null", r#""null""#, &[]),
];

/// Deepest nesting followed.
const MAX_DEPTH: usize = 32;

#[derive(Default)]
struct Writer {
    rules: Vec<(String, String)>,
}

impl Writer {
    fn rule(&mut self, name: &str, body: &str) -> String {
        if let Some((_, existing)) = self.rules.iter().find(|(n, _)| n == name) {
            if existing == body {
                return name.to_string();
            }
            // Another body under this name: a fresh name.
            let fresh = (2..)
                .map(|i| format!("{name}{i}"))
                .find(|n| !self.rules.iter().any(|(m, _)| m == n))
                .unwrap_or_else(|| name.to_string());
            return self.rule(&fresh, body);
        }
        self.rules.push((name.to_string(), body.to_string()));
        name.to_string()
    }

    fn primitive(&mut self, name: &str) -> String {
        if let Some((_, body, deps)) = PRIMITIVES.iter().find(|(n, ..)| *n == name) {
            if !self.rules.iter().any(|(n, _)| n == name) {
                self.rules.push((name.to_string(), (*body).to_string()));
                for dep in *deps {
                    self.primitive(dep);
                }
            }
        }
        name.to_string()
    }

    fn finish(mut self) -> String {
        self.rules
            .push(("space".into(), r#"| " " | "\n"{1,2} [ \t]{0,20}"#.into()));
        let mut out = String::new();
        for (name, body) in &self.rules {
            let _ = writeln!(out, "{name} ::= {body}");
        }
        out
    }

    /// The rule for `schema`, named after `name` (`root` at the top).
    fn visit(&mut self, schema: &Value, name: &str, depth: usize) -> Result<String, String> {
        if depth > MAX_DEPTH {
            return Err(format!("the schema nests deeper than {MAX_DEPTH} levels"));
        }
        // A property named like a primitive (or `root`, `space`) must not take its name.
        let rule_name = if name.is_empty() {
            "root".to_string()
        } else if is_reserved(name) {
            format!("{name}-")
        } else {
            name.to_string()
        };
        let object = match schema {
            Value::Bool(true) => return Ok(self.named_primitive(&rule_name, "value")),
            Value::Object(o) => o,
            _ => return Err(format!("not a schema: {schema}")),
        };
        if let Some(value) = object.get("const") {
            return Ok(self.rule(&rule_name, &literal(&value.to_string())));
        }
        if let Some(Value::Array(values)) = object.get("enum") {
            let alternatives: Vec<String> =
                values.iter().map(|v| literal(&v.to_string())).collect();
            return Ok(self.rule(&rule_name, &format!("({})", alternatives.join(" | "))));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(children)) = object.get(key) {
                return self.union(&rule_name, name, children, depth);
            }
        }
        if let Some(Value::Array(children)) = object.get("allOf") {
            if let [only] = children.as_slice() {
                return self.visit(only, name, depth + 1);
            }
        }
        match object.get("type") {
            Some(Value::Array(types)) => {
                let children: Vec<Value> = types
                    .iter()
                    .map(|t| {
                        let mut child = object.clone();
                        child.insert("type".into(), t.clone());
                        Value::Object(child)
                    })
                    .collect();
                self.union(&rule_name, name, &children, depth)
            }
            Some(Value::String(t)) => self.typed(t, object, &rule_name, name, depth),
            _ => {
                let has_properties = object.contains_key("properties")
                    || object
                        .get("additionalProperties")
                        .is_some_and(|a| a != &Value::Bool(true));
                if has_properties {
                    self.typed("object", object, &rule_name, name, depth)
                } else if object.contains_key("items") || object.contains_key("prefixItems") {
                    self.typed("array", object, &rule_name, name, depth)
                } else if object.contains_key("minLength") || object.contains_key("maxLength") {
                    self.typed("string", object, &rule_name, name, depth)
                } else {
                    Ok(self.named_primitive(&rule_name, "value"))
                }
            }
        }
    }

    fn named_primitive(&mut self, rule_name: &str, primitive: &str) -> String {
        let p = self.primitive(primitive);
        if rule_name == "root" {
            self.rule("root", &p)
        } else {
            p
        }
    }

    fn union(
        &mut self,
        rule_name: &str,
        name: &str,
        children: &[Value],
        depth: usize,
    ) -> Result<String, String> {
        let mut alternatives = Vec::new();
        for (i, child) in children.iter().enumerate() {
            let child_name = format!("{}{i}", sub(name));
            alternatives.push(self.visit(child, &child_name, depth + 1)?);
        }
        Ok(self.rule(rule_name, &alternatives.join(" | ")))
    }

    fn typed(
        &mut self,
        kind: &str,
        schema: &Map<String, Value>,
        rule_name: &str,
        name: &str,
        depth: usize,
    ) -> Result<String, String> {
        let count = |key: &str| schema.get(key).and_then(Value::as_u64);
        match kind {
            "object" => self.object(schema, rule_name, name, depth),
            "array" => {
                if let Some(Value::Array(items)) = schema.get("prefixItems").or(schema.get("items"))
                {
                    let mut parts = Vec::new();
                    for (i, item) in items.iter().enumerate() {
                        parts.push(self.visit(
                            item,
                            &format!("{}tuple-{i}", sub(name)),
                            depth + 1,
                        )?);
                    }
                    let body = format!(r#""[" space {} space "]""#, parts.join(r#" "," space "#));
                    return Ok(self.rule(rule_name, &body));
                }
                let items = schema.get("items").cloned().unwrap_or(Value::Bool(true));
                let (min, max) = (count("minItems").unwrap_or(0), count("maxItems"));
                if items == Value::Bool(true) && min == 0 && max.is_none() {
                    return Ok(self.named_primitive(rule_name, "array"));
                }
                let item = self.visit(&items, &format!("{}item", sub(name)), depth + 1)?;
                let body = format!(
                    r#""[" space {} space "]""#,
                    repetition(&item, min, max, r#""," space"#)
                );
                Ok(self.rule(rule_name, &body))
            }
            "string" => {
                let (min, max) = (count("minLength").unwrap_or(0), count("maxLength"));
                if min == 0 && max.is_none() {
                    return Ok(self.named_primitive(rule_name, "string"));
                }
                let ch = self.primitive("char");
                let body = format!(r#""\"" {} "\"""#, repetition(&ch, min, max, ""));
                Ok(self.rule(rule_name, &body))
            }
            "integer" | "number" | "boolean" | "null" => Ok(self.named_primitive(rule_name, kind)),
            other => Err(format!("unknown type {other}")),
        }
    }

    fn object(
        &mut self,
        schema: &Map<String, Value>,
        rule_name: &str,
        name: &str,
        depth: usize,
    ) -> Result<String, String> {
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = match schema.get("additionalProperties") {
            None if properties.is_none() => Some(Value::Bool(true)),
            None | Some(Value::Bool(false)) => None,
            Some(a) => Some(a.clone()),
        };
        if properties.is_none_or(Map::is_empty) && additional == Some(Value::Bool(true)) {
            return Ok(self.named_primitive(rule_name, "object"));
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let (mut required_kv, mut optional_kv) = (Vec::new(), Vec::new());
        let mut names = Vec::new();
        for (prop, prop_schema) in properties.into_iter().flatten() {
            let prop_name = format!("{}{}", sub(name), rule_safe(prop));
            let value = self.visit(prop_schema, &prop_name, depth + 1)?;
            let kv = self.rule(
                &format!("{prop_name}-kv"),
                &format!(
                    r#"{} space ":" space {value}"#,
                    literal(&Value::String(prop.clone()).to_string())
                ),
            );
            if required.contains(&prop.as_str()) {
                required_kv.push(kv);
            } else {
                optional_kv.push((prop.clone(), kv));
            }
            names.push(prop.clone());
        }
        if let Some(additional) = additional {
            // Any other key (the known ones are left to their own rules, less strictly than
            // llama.cpp's key exclusion: looser, never stricter).
            let value = match additional {
                Value::Bool(true) => self.primitive("value"),
                other => {
                    self.visit(&other, &format!("{}additional-value", sub(name)), depth + 1)?
                }
            };
            let key = self.primitive("string");
            let kv = self.rule(
                &format!("{}additional-kv", sub(name)),
                &format!(r#"{key} ":" space {value}"#),
            );
            optional_kv.push(("*".into(), kv));
        }
        if required_kv.is_empty() && optional_kv.is_empty() {
            return Ok(self.rule(rule_name, r#""{" space "}""#));
        }
        let mut body = String::from(r#""{" space "#);
        body.push_str(&required_kv.join(r#" "," space "#));
        if !optional_kv.is_empty() {
            body.push_str(" (");
            if !required_kv.is_empty() {
                body.push_str(r#" "," space ( "#);
            }
            let mut alternatives = Vec::new();
            for i in 0..optional_kv.len() {
                alternatives.push(self.optional_chain(&optional_kv[i..], name, false));
            }
            body.push_str(&alternatives.join(" | "));
            if !required_kv.is_empty() {
                body.push_str(" )");
            }
            body.push_str(" )?");
        }
        body.push_str(r#" space "}""#);
        Ok(self.rule(rule_name, &body))
    }

    /// The optional properties `kvs`, in order, any of them left out: llama.cpp's chain of
    /// `-rest` rules.
    fn optional_chain(
        &mut self,
        kvs: &[(String, String)],
        name: &str,
        first_is_optional: bool,
    ) -> String {
        let Some(((key, kv), rest)) = kvs.split_first() else {
            return String::new();
        };
        let comma = format!(r#"( "," space {kv} )"#);
        let mut out = if first_is_optional {
            format!("{comma}{}", if key == "*" { "*" } else { "?" })
        } else if key == "*" {
            format!("{kv} {comma}*")
        } else {
            kv.clone()
        };
        if !rest.is_empty() {
            let body = self.optional_chain(rest, name, true);
            let rule = self.rule(&format!("{}{}-rest", sub(name), rule_safe(key)), &body);
            out.push(' ');
            out.push_str(&rule);
        }
        out
    }
}

/// Whether `name` is a rule the converter writes itself.
fn is_reserved(name: &str) -> bool {
    name == "root" || name == "space" || PRIMITIVES.iter().any(|(n, ..)| *n == name)
}

/// `name-` (or nothing at the top), the prefix of a child's rule name.
fn sub(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!("{name}-")
    }
}

/// A property name usable in a rule name: letters, digits and `-`.
fn rule_safe(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if safe.is_empty() {
        "p".into()
    } else {
        safe
    }
}

/// `item` between `min` and `max` times, separated by `separator` (llama.cpp's
/// `build_repetition`).
fn repetition(item: &str, min: u64, max: Option<u64>, separator: &str) -> String {
    // A minimum above the maximum (a broken schema) is held to the maximum.
    let min = max.map_or(min, |max| min.min(max));
    if max == Some(0) {
        return String::new();
    }
    if min == 0 && max == Some(1) {
        return format!("{item}?");
    }
    if separator.is_empty() {
        return match (min, max) {
            (1, None) => format!("{item}+"),
            (0, None) => format!("{item}*"),
            (min, Some(max)) => format!("{item}{{{min},{max}}}"),
            (min, None) => format!("{item}{{{min},}}"),
        };
    }
    let result = format!(
        "{item} {}",
        repetition(
            &format!("({separator} {item})"),
            min.saturating_sub(1),
            max.map(|m| m - 1),
            ""
        )
    );
    if min == 0 {
        format!("({result})?")
    } else {
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::Grammar;
    use serde_json::json;

    /// Texts a schema's grammar accepts and refuses.
    fn check(schema: Value, accepted: &[&str], refused: &[&str]) {
        let text = SubsetConverter
            .convert(&schema)
            .unwrap_or_else(|e| panic!("{e}"));
        let g = Grammar::parse(&text);
        for t in accepted {
            assert!(g.accepts(t), "{schema} should accept {t}:\n{text}");
        }
        for t in refused {
            assert!(!g.accepts(t), "{schema} should refuse {t}:\n{text}");
        }
    }

    #[test]
    fn objects_with_required_and_optional_properties() {
        check(
            json!({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}, "all": {"type": "boolean"}}, "required": ["path"]}),
            &[
                r#"{"path": "a.txt"}"#,
                r#"{"path":"a.txt","limit":5}"#,
                r#"{"path": "a", "all": true}"#,
                r#"{"path": "a", "limit": -3, "all": false}"#,
                "{\n  \"path\": \"a\"\n}",
            ],
            &[
                r#"{}"#,
                r#"{"limit": 5}"#,
                r#"{"path": 5}"#,
                r#"{"path": "a", "limit": "5"}"#,
                r#"{"path": "a", "other": 1}"#,
                r#"{"path": "a", "all": true, "limit": 5}"#,
            ],
        );
    }

    #[test]
    fn any_object_any_value_and_extra_properties() {
        check(
            json!({"type": "object"}),
            &[r#"{}"#, r#"{"a": [1, {"b": null}]}"#],
            &["[]", "1"],
        );
        check(json!({}), &["1", r#""x""#, "[true]", "null"], &["nul"]);
        check(
            json!({"type": "object", "properties": {"a": {"type": "number"}}, "additionalProperties": {"type": "string"}}),
            &[r#"{"a": 1.5}"#, r#"{"a": 1e3, "b": "x"}"#, r#"{}"#],
            &[r#"{"b": 1}"#],
        );
        check(
            json!({"type": "object", "properties": {}}),
            &[r#"{}"#],
            &[r#"{"a": 1}"#],
        );
    }

    #[test]
    fn arrays_enums_unions_and_lengths() {
        check(
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}),
            &["[1]", "[1, 2]"],
            &["[]", "[1, 2, 3]", r#"["a"]"#],
        );
        check(json!({"type": "array"}), &["[]", r#"[1, "a"]"#], &["{}"]);
        check(
            json!({"enum": ["a", 1, null]}),
            &[r#""a""#, "1", "null"],
            &[r#""b""#],
        );
        check(json!({"const": "x"}), &[r#""x""#], &[r#""y""#]);
        check(
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            &[r#""s""#, "null"],
            &["1"],
        );
        check(
            json!({"type": ["integer", "boolean"]}),
            &["7", "true"],
            &[r#""7""#],
        );
        check(
            json!({"type": "string", "minLength": 2, "maxLength": 3}),
            &[r#""ab""#, r#""abc""#],
            &[r#""a""#, r#""abcd""#],
        );
        check(
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}),
            &[r#"["a", 1]"#],
            &[r#"["a"]"#, r#"[1, "a"]"#],
        );
    }

    #[test]
    fn what_it_cannot_describe_it_constrains_less() {
        check(json!({"$ref": "#/defs/x"}), &["1", r#"{"a": 2}"#], &[]);
        check(
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            &[r#""ABC""#],
            &["1"],
        );
        check(json!({"type": "integer", "minimum": 0}), &["-4"], &["1.5"]);
        assert!(SubsetConverter.convert(&json!(false)).is_err());
        assert!(SubsetConverter.convert(&json!({"type": "thing"})).is_err());
        let mut deep = json!({"type": "string"});
        for _ in 0..40 {
            deep = json!({"type": "array", "items": deep});
        }
        assert!(SubsetConverter.convert(&deep).is_err());
    }

    #[test]
    fn property_names_of_rules_the_converter_writes_keep_their_meaning() {
        check(
            json!({"type": "object", "properties": {"root": {"type": "integer"}, "string": {"type": "boolean"}, "space": {"type": "null"}, "value": {"type": "integer"}}, "required": ["root", "string", "space", "value"]}),
            &[r#"{"root": 1, "string": true, "space": null, "value": 2}"#],
            &[
                "1",
                r#"{"root": "a", "string": true, "space": null, "value": 2}"#,
            ],
        );
        check(
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 1}),
            &["[1]"],
            &["[1, 2]"],
        );
    }

    #[test]
    fn property_names_of_any_spelling_make_valid_rules() {
        check(
            json!({"type": "object", "properties": {"a b\"c": {"type": "string"}, "ü": {"type": "integer"}}, "required": ["a b\"c", "ü"]}),
            &[r#"{"a b\"c": "x", "ü": 1}"#],
            &[r#"{"ü": 1}"#],
        );
    }
}
