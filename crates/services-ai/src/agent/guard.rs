//! A tool that panics must not take the request down with it: every call into a tool's
//! code (validation, assessment, summary, execution) is guarded, and a panic becomes a
//! failed result.

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
