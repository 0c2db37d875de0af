//! A tool that panics must not take the request down with it: every call the engine makes
//! into a tool's code is guarded.
//!
//! - Hooks about one call — `validate`, `effective_risk_level`, `assess`,
//!   `execution_summary` (at screening, for edited parameters and at the re-check before a
//!   later call of a reply), `preview_change` (the approval prompt's diff), `definition`
//!   when a call is looked at, and `execute` — fail that call: its result is "the tool
//!   failed unexpectedly: …", with a non-fatal `agent_error`; the reply's other calls go
//!   on.
//! - Hooks about the tool rather than a call — `definition` and `is_available` when the
//!   request's tools are chosen — leave the tool out of the request, with an error in the
//!   log; a call the model makes of it anyway is refused like any call of a tool the
//!   request does not offer.
//! - `argument_choices` only holds a model's path arguments to what exists: a panic there
//!   holds nothing (logged), and the tool's calls are still validated, assessed and
//!   approved as any.
//! - Where a definition is needed after the call was screened (whether a call could change
//!   what later calls touch, which files formatters run on), a panic takes the cautious
//!   answer: the call could change something; its files are not formatted.

use core_models::{Tool, ToolDefinition};
use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a panic said, in words.
pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Run `f`, turning a panic into its message.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| panic_message(panic.as_ref()))
}

/// The tool's definition, or what its panic said.
pub(crate) fn definition(tool: &dyn Tool) -> Result<&ToolDefinition, String> {
    guarded(|| tool.definition())
}

/// The text of a failed result for a tool that panicked.
pub(crate) fn failed_unexpectedly(message: &str) -> String {
    format!("the tool failed unexpectedly: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_their_message() {
        assert_eq!(guarded(|| 7), Ok(7));
        assert_eq!(
            guarded(|| -> u8 { panic!("boom") }),
            Err("boom".to_string())
        );
        let n = 3;
        assert_eq!(
            guarded(|| -> u8 { panic!("boom {n}") }),
            Err("boom 3".to_string())
        );
        assert_eq!(
            guarded(|| std::panic::panic_any(5_u8)),
            Err("a panic without a message".to_string())
        );
    }
}
