//! A reply's calls are assessed and put to the permission rules before any of them runs;
//! an earlier call of the same reply can then change the workspace so that a later call's
//! path leads elsewhere (a folder swapped for a symbolic link, a link made to a denied
//! file). So:
//!
//! - only a reply whose calls that will run are all known to be read-only
//!   ([`may_change`] is false for each) runs its calls in parallel; any other reply runs
//!   them in order, one at a time;
//! - a call that follows a call of its reply that ran and could have changed something is
//!   validated, assessed and put to the permission rules again before it runs
//!   ([`Run::recheck`]): deny rules that refuse it now refuse it; a call that was to run
//!   without a person and would now need one (a higher risk, a forced question, no rule
//!   that allows it any more) does not run, and the model is told to call it again (the
//!   next iteration asks as usual); a call a person approved keeps that approval only at
//!   the same risk or lower.

use super::prepare::Route;
use super::run::{Prepared, Run};
use core_models::{RiskLevel, Tool, ToolCallRequest, ToolCategory, ToolResult};

/// Whether running `call` of `tool` could change something a later call of the same
/// reply depends on: unless the tool is known to be read-only (it writes no files, runs
/// no commands, is rated safe by default) and this call is rated safe too. A tool whose
/// definition panics could.
pub(super) fn may_change(call: &ToolCallRequest, tool: &dyn Tool) -> bool {
    let Ok(definition) = super::guard::definition(tool) else {
        return true;
    };
    definition.modifies_files
        || definition.category == ToolCategory::Terminal
        || definition.default_risk_level > RiskLevel::Safe
        || call.risk_level > RiskLevel::Safe
}

/// What a refused call is told when an earlier call of its reply changed what it touches.
fn not_run(why: &str) -> ToolResult {
    ToolResult::failed(format!(
        "Not run: what this call touches changed after an earlier call of this reply ({why}); call it again to have it approved"
    ))
}

impl Run {
    /// `prepared`, about to run after an earlier call of its reply that could have changed
    /// something ran: validated, assessed and checked against the permission rules again
    /// (see the module's documentation). A call that is settled already is returned as it
    /// is.
    pub(super) async fn recheck(&self, prepared: Prepared) -> Prepared {
        let Prepared::Run {
            mut call,
            tool,
            person,
            ..
        } = prepared
        else {
            return prepared;
        };
        let assessment = match self.validate_and_assess(&mut call, tool.as_ref(), "Validation") {
            Ok(assessment) => assessment,
            Err(result) => return Prepared::Settled { call, result },
        };
        let permission = match self.check_permission(&call).await {
            Ok(permission) => permission,
            Err(result) => return Prepared::Settled { call, result },
        };
        let route = match person {
            // A person's approval holds for what the person saw, or anything less risky,
            // and never against the deny rules.
            Some(approved_at) => match self.deny_reason(&call, &permission).await {
                Some(why) => Route::Deny(why),
                None if call.risk_level > approved_at => {
                    let why = format!(
                        "it is now rated {}, and was approved at {approved_at}",
                        call.risk_level
                    );
                    return Prepared::Settled {
                        call,
                        result: not_run(&why),
                    };
                }
                None => Route::Run { approved: true },
            },
            None => self.route(&call, &permission, &assessment).await,
        };
        match route {
            Route::Deny(why) => {
                self.count_denial();
                Prepared::Settled {
                    call,
                    result: ToolResult::denied(format!(
                        "Denied by the permission settings (after an earlier call of this reply): {why}"
                    )),
                }
            }
            Route::Ask => {
                let why = match &assessment.must_ask {
                    Some(must_ask) => format!("a person must be asked now: {must_ask}"),
                    None => format!(
                        "it now needs a person's approval (rated {})",
                        call.risk_level
                    ),
                };
                Prepared::Settled {
                    call,
                    result: not_run(&why),
                }
            }
            Route::Run { approved } => Prepared::Run {
                call,
                tool,
                approved,
                person,
            },
        }
    }
}
