//! Hugging Face chat templates, rendered byte-for-byte as transformers'
//! `apply_chat_template` renders them.
//!
//! A model is trained on the exact text its chat template produces, so a prompt that
//! differs by one space or one key order is a prompt the model never saw. Transformers
//! renders templates with Python's jinja2 (`ImmutableSandboxedEnvironment` with
//! `trim_blocks`, `lstrip_blocks` and loop controls) and adds `raise_exception`,
//! `strftime_now` and a `tojson` filter that is Python's `json.dumps`. This crate renders
//! them with minijinja, adjusted where minijinja and jinja2 differ:
//!
//! - values print as Python prints them (`True`, `None`, `1.0`, `{'a': 1}`);
//! - `tojson` is `json.dumps` (`", "` and `": "` separators, key order kept, non-ASCII
//!   kept, `indent=`);
//! - Python's string, list and dict methods (`.strip()`, `.startswith()`, `.items()`, …);
//! - `{% generation %}` blocks (transformers' assistant tracking) render their body;
//! - `strftime_now` uses `SOURCE_DATE_EPOCH` (seconds since the epoch, UTC) when it is
//!   set, so renders are reproducible;
//! - `raise_exception(message)` ends the render with [`Error::Raised`] carrying the
//!   template's message.
//!
//! The crate is pure: no model, no I/O besides reading `SOURCE_DATE_EPOCH`.

mod methods;
mod python;

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Environment, ErrorKind, State};
use python::JsonStyle;
use std::sync::OnceLock;

/// Why a template could not be compiled or rendered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// The source is not valid Jinja.
    #[error("the chat template is not valid Jinja: {0}")]
    Syntax(String),
    /// The template called `raise_exception(message)`; the message is the template's.
    #[error("{0}")]
    Raised(String),
    /// Rendering failed for another reason (an undefined attribute, a type error, …).
    #[error("the chat template failed: {0}")]
    Render(String),
    /// The context given to [`Template::render`] is not a JSON object.
    #[error("the template context must be a JSON object")]
    Context,
}

/// A compiled chat template.
#[derive(Debug)]
pub struct Template {
    env: Environment<'static>,
}

const NAME: &str = "chat";

/// The message of a `raise_exception` call, carried as the source of minijinja's error.
#[derive(Debug)]
struct Raised(String);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

impl Template {
    /// Compile `source`, a Jinja chat template.
    ///
    /// # Errors
    /// [`Error::Syntax`] when the source is not valid Jinja.
    pub fn new(source: &str) -> Result<Template, Error> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_keep_trailing_newline(false);
        env.set_formatter(|out, _state, value| {
            out.write_str(&python::python_str(value))
                .map_err(|e| minijinja::Error::new(ErrorKind::WriteFailure, e.to_string()))
        });
        env.set_unknown_method_callback(methods::call_method);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_filter("tojson", tojson);
        env.add_filter("string", |value: &Value| python::python_str(value));
        // jinja2's tests follow Python's types: None is not iterable, strings and dicts
        // are sequences, booleans are numbers.
        env.add_test("iterable", |value: &Value| {
            !matches!(
                value.kind(),
                ValueKind::None | ValueKind::Bool | ValueKind::Number
            )
        });
        env.add_test("sequence", |value: &Value| {
            matches!(
                value.kind(),
                ValueKind::String | ValueKind::Seq | ValueKind::Map | ValueKind::Undefined
            )
        });
        env.add_test("number", |value: &Value| {
            matches!(value.kind(), ValueKind::Number | ValueKind::Bool)
        });
        env.add_template_owned(NAME, generation_as_plain_blocks(source))
            .map_err(|e| Error::Syntax(describe(&e)))?;
        Ok(Template { env })
    }

    /// Render with `context`, a JSON object whose keys become the template's variables:
    /// `messages`, `tools` (when there are tools), `add_generation_prompt`, `bos_token`,
    /// `eos_token` and any other keyword the template reads.
    ///
    /// # Errors
    /// [`Error::Raised`] with the template's message when it calls `raise_exception`,
    /// [`Error::Render`] when rendering fails otherwise, [`Error::Context`] when
    /// `context` is not an object.
    pub fn render(&self, context: &serde_json::Value) -> Result<String, Error> {
        if !context.is_object() {
            return Err(Error::Context);
        }
        let template = self
            .env
            .get_template(NAME)
            .map_err(|e| Error::Syntax(describe(&e)))?;
        template
            .render(Value::from_serialize(context))
            .map_err(|e| match raised_message(&e) {
                Some(message) => Error::Raised(message),
                None => Error::Render(describe(&e)),
            })
    }
}

/// minijinja's error with its cause chain on one line.
fn describe(error: &minijinja::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn raised_message(error: &minijinja::Error) -> Option<String> {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(raised) = cause.downcast_ref::<Raised>() {
            return Some(raised.0.clone());
        }
        source = cause.source();
    }
    None
}

/// transformers' `{% generation %}…{% endgeneration %}` marks the assistant's part for
/// its masks; the body renders as it is. The tags become an always-true `if`, which
/// keeps the whitespace control of the original tags.
fn generation_as_plain_blocks(source: &str) -> String {
    static TAG: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let tag = TAG
        .get_or_init(|| regex::Regex::new(r"\{%([-+]?)(\s*)(end)?generation(\s*)([-+]?)%\}").ok());
    match tag {
        Some(tag) => tag
            .replace_all(source, |caps: &regex::Captures<'_>| {
                let word = if caps.get(3).is_some() {
                    "endif"
                } else {
                    "if true"
                };
                format!(
                    "{{%{}{}{}{}{}%}}",
                    &caps[1], &caps[2], word, &caps[4], &caps[5]
                )
            })
            .into_owned(),
        None => source.to_string(),
    }
}

fn raise_exception(message: Value) -> Result<Value, minijinja::Error> {
    let message = python::python_str(&message);
    Err(
        minijinja::Error::new(ErrorKind::InvalidOperation, message.clone())
            .with_source(Raised(message)),
    )
}

/// `strftime_now(format)`: the time of `SOURCE_DATE_EPOCH` (UTC) when it is set, else now.
fn strftime_now(format: &str) -> Result<String, minijinja::Error> {
    use chrono::format::{Item, StrftimeItems};
    let items: Vec<Item<'_>> = StrftimeItems::new(format).collect();
    if items.iter().any(|item| matches!(item, Item::Error)) {
        return Err(minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("invalid strftime format {format:?}"),
        ));
    }
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok());
    let mut out = String::new();
    let written = match epoch {
        Some(seconds) => {
            let time = chrono::DateTime::from_timestamp(seconds, 0).ok_or_else(|| {
                minijinja::Error::new(
                    ErrorKind::InvalidOperation,
                    "SOURCE_DATE_EPOCH out of range",
                )
            })?;
            std::fmt::Write::write_fmt(
                &mut out,
                format_args!("{}", time.format_with_items(items.iter())),
            )
        }
        None => std::fmt::Write::write_fmt(
            &mut out,
            format_args!("{}", chrono::Local::now().format_with_items(items.iter())),
        ),
    };
    written.map_err(|_| {
        minijinja::Error::new(
            ErrorKind::InvalidOperation,
            format!("cannot format the time with {format:?}"),
        )
    })?;
    Ok(out)
}

/// transformers' `tojson(x, ensure_ascii=False, indent=None, separators=None,
/// sort_keys=False)`: Python's `json.dumps`.
fn tojson(
    _state: &State<'_, '_>,
    value: &Value,
    indent: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, minijinja::Error> {
    let indent = match kwargs.get::<Option<Value>>("indent")? {
        Some(value) => Some(value),
        None => indent,
    };
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() || v.is_undefined() => None,
        Some(v) if v.kind() == ValueKind::Number => {
            let n = i64::try_from(v).unwrap_or(0).max(0);
            Some(" ".repeat(usize::try_from(n).unwrap_or(0)))
        }
        Some(v) => Some(python::python_str(&v)),
    };
    let (item_separator, key_separator) = match kwargs.get::<Option<Value>>("separators")? {
        Some(seps) if !seps.is_none() => {
            let parts: Vec<Value> = seps.try_iter()?.collect();
            match parts.as_slice() {
                [item, key] => (python::python_str(item), python::python_str(key)),
                _ => {
                    return Err(minijinja::Error::new(
                        ErrorKind::InvalidOperation,
                        "separators must be a pair",
                    ))
                }
            }
        }
        _ if indent.is_some() => (",".to_string(), ": ".to_string()),
        _ => (", ".to_string(), ": ".to_string()),
    };
    let style = JsonStyle {
        indent,
        item_separator,
        key_separator,
        sort_keys: kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false),
        ensure_ascii: kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false),
    };
    kwargs.assert_all_used()?;
    Ok(Value::from(python::json_dumps(value, &style)?))
}
