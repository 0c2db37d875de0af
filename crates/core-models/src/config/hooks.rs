//! `[hooks]`: programs of the user's own configuration told of each call and of each
//! request's start and end (run by the `policy` crate's `ProgramHook`). A workspace's
//! configuration may not set them: the `aintern` command ignores the section there.

use crate::HookPoint;
use serde::{Deserialize, Serialize};

/// One hook as the user's configuration writes it (`[[hooks.before_tool]]`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// How long it may run, in milliseconds (default 10 000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Its name in decisions (default: the program's file name).
    #[serde(default)]
    pub name: Option<String>,
}

/// The hooks of the user's configuration (`[hooks]`), by moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    /// Before each call is decided.
    #[serde(default)]
    pub before_tool: Vec<HookConfig>,
    /// After each call ran.
    #[serde(default)]
    pub after_tool: Vec<HookConfig>,
    /// When a request is submitted.
    #[serde(default)]
    pub request_submitted: Vec<HookConfig>,
    /// When a request ends.
    #[serde(default)]
    pub request_ended: Vec<HookConfig>,
}

impl HooksConfig {
    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.before_tool.is_empty()
            && self.after_tool.is_empty()
            && self.request_submitted.is_empty()
            && self.request_ended.is_empty()
    }

    /// Every hook with its moment, in order.
    pub fn each(&self) -> impl Iterator<Item = (HookPoint, &HookConfig)> {
        [
            (HookPoint::RequestSubmitted, &self.request_submitted),
            (HookPoint::BeforeTool, &self.before_tool),
            (HookPoint::AfterTool, &self.after_tool),
            (HookPoint::RequestEnded, &self.request_ended),
        ]
        .into_iter()
        .flat_map(|(point, list)| list.iter().map(move |h| (point, h)))
    }
}
