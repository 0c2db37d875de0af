//! Policy as code for AIntern: **rules** that decide calls (allow, ask, forbid) beside the
//! built-in judge, with examples checked when they load, and **hooks** — programs told of
//! each call and of each request's start and end, which may allow, deny or ask before a
//! call and add context after it.
//!
//! Why a crate of its own: the rules are data a team reviews, and the code that reads
//! them, matches them and explains them should be small enough to review too. Nothing
//! here runs a tool or decides on its own: the agent (`services-ai`) applies a
//! [`RuleSet`] through `core_models::CallRules` and the hooks through
//! `core_models::Hook`, and the strictest of the rules, the hooks and the judge's floor
//! wins.
//!
//! What the rules can and cannot do:
//!
//! * a rule never lifts the sandbox, and an allowing rule never approves a call the judge
//!   says a person must see (critical, or asking for more than the sandbox);
//! * command rules see what the judge sees ([`shell_risk::judge`]): the commands behind
//!   quoting, wrappers, `sh -c`, substitutions, env prefixes and absolute paths; what an
//!   interpreter or a Makefile runs is not seen (the sandbox is the boundary there), and a
//!   line with parts that cannot be seen at all cannot be checked against forbidding rules,
//!   so it is refused (see [`set`]);
//! * a workspace's rules (`.aintern/rules/*.toml`) may only ask or forbid: its allowing
//!   rules are reported and never put in force; its rule files must be plain files;
//! * hooks come from the user's own configuration, never a workspace's, and run under the
//!   commands' sandbox with a timeout ([`hooks`]).
//!
//! The rule file format is in [`load`].

pub mod hooks;
pub mod load;
pub mod rule;
pub mod set;

mod error;

pub use error::Error;
pub use hooks::{programs, ProgramHook};
pub use load::{load, load_dir, load_file, parse_rules};
pub use rule::{Origin, Pattern, Rule, Token};
pub use set::{Explanation, RuleSet, COMMAND_TOOL};
