//! Python's methods on strings, lists and dicts, which templates call as in Python
//! (`message.content.strip()`, `tools.items()`): minijinja-contrib's set.

use minijinja::value::Value;
use minijinja::{Error, State};

/// The callback for methods minijinja does not know.
pub(crate) fn call_method(
    state: &State<'_, '_>,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}
