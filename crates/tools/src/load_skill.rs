//! `load_skill`: the body of one of the project's or the user's skills (see
//! [`crate::project`]). Safe and read-only: it reads the skill's `SKILL.md` and nothing
//! else, beneath its skills folder; the skill's other files are read with the ordinary
//! tools, and its scripts run only through `run_command`, judged and approved like any
//! other command.

use crate::project::Skills;
use async_trait::async_trait;
use core_models::{
    RiskLevel, Tool, ToolCategory, ToolDefinition, ToolExecutionContext, ToolResult,
    ToolValidationResult,
};
use serde_json::{json, Value};
use std::sync::Arc;

/// Loads a skill's instructions by name.
#[derive(Debug)]
pub struct LoadSkill {
    definition: ToolDefinition,
    skills: Arc<Skills>,
}

impl LoadSkill {
    /// `load_skill` over `skills`; its `name` parameter may only be one of their names.
    pub fn new(skills: Arc<Skills>) -> Self {
        let names: Vec<&str> = skills.list.iter().map(|s| s.name.as_str()).collect();
        let definition = ToolDefinition::new(
            "load_skill",
            "Load Skill",
            "Load the instructions of one of the skills listed in the system prompt, by name.",
        )
        .with_category(ToolCategory::FileSystem)
        .with_risk(RiskLevel::Safe)
        .with_schema(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": names, "description": "The skill's name"}
            },
            "required": ["name"]
        }));
        LoadSkill { definition, skills }
    }

    fn name(params: &Value) -> Option<&str> {
        params.get("name").and_then(Value::as_str)
    }
}

#[async_trait]
impl Tool for LoadSkill {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn is_available(&self, _context: &core_models::ToolAvailabilityContext) -> bool {
        !self.skills.is_empty()
    }

    fn validate(&self, params: &Value) -> ToolValidationResult {
        match Self::name(params) {
            None => ToolValidationResult::invalid(["'name' is required (a string)".to_string()]),
            Some(name) if self.skills.get(name).is_none() => {
                let known: Vec<&str> = self.skills.list.iter().map(|s| s.name.as_str()).collect();
                ToolValidationResult::invalid(vec![format!(
                    "there is no skill called '{name}'; the skills are: {}",
                    known.join(", ")
                )])
            }
            Some(_) => ToolValidationResult::valid(),
        }
    }

    fn execution_summary(&self, params: &Value) -> String {
        format!("Load skill {}", Self::name(params).unwrap_or("?"))
    }

    async fn execute(&self, context: ToolExecutionContext) -> ToolResult {
        let Some(name) = Self::name(&context.parameters) else {
            return ToolResult::failed("'name' is required (a string)");
        };
        let Some(skill) = self.skills.get(name) else {
            return ToolResult::failed(format!("there is no skill called '{name}'"));
        };
        match self.skills.load(name) {
            Ok(body) => {
                let folder = context
                    .workspace_path
                    .as_deref()
                    .and_then(|w| skill.dir.strip_prefix(w).ok())
                    .map_or_else(
                        || format!("{} (outside the workspace)", skill.dir.display()),
                        |p| format!("{} (in the workspace)", p.display()),
                    );
                ToolResult::success_with_data(
                    format!("Skill '{name}', folder {folder}:\n\n{body}"),
                    json!({"skill": name}),
                )
            }
            Err(e) => ToolResult::failed(e),
        }
    }
}
