//! The one composition root: what the built-in tools and the engine's command ports run
//! through, and the tools of other registries offered beside the agent's own. The CLI
//! and every application build their agent through [`crate::AgentBuilder`], which uses
//! this; nothing else wires the engine.

use core_models::{LlmService, PermissionManager, Tool, ToolRegistry};
use services_ai::{AgentConfig, AgentEngine, AgentEngineBuilder, InMemoryToolRegistry};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The sandbox settings of the configuration's `[sandbox]` section (feature `tools`); the
/// backend's API key variable, whatever it is called, is kept from every command. An
/// application adds what the configuration does not say (folders of its own to keep
/// unreadable, the home folder) and gives the launcher to [`crate::AgentBuilder::launcher`].
#[cfg(feature = "tools")]
pub fn sandbox_settings(config: &AgentConfig) -> sandbox::SandboxSettings {
    let s = &config.sandbox;
    sandbox::SandboxSettings {
        mode: s.mode,
        network: s.network,
        writable: s.writable_paths.iter().map(Into::into).collect(),
        deny_read: s.deny_read.iter().map(Into::into).collect(),
        pass_env: s.pass_env.clone(),
        secret_env: secret_variables(config),
        fallback: s.fallback,
        home: None,
        limits: sandbox::ProcessLimits {
            processes: (s.max_processes > 0).then_some(s.max_processes),
            file_bytes: (s.max_file_size_mb > 0)
                .then(|| s.max_file_size_mb.saturating_mul(1024 * 1024)),
        },
    }
}

/// Every environment variable the configuration names as a secret: the model server's
/// API key (`backend.api_key_env`) and each MCP server's bearer token
/// (`mcp_servers.NAME.bearer_token_env`, enabled or not). They are for aintern's own
/// requests: no command, formatter or MCP server process gets them, whatever their
/// names or `sandbox.pass_env` say.
#[cfg(feature = "tools")]
fn secret_variables(config: &AgentConfig) -> Vec<String> {
    let mut names: Vec<String> = config.backend.api_key_env.iter().cloned().collect();
    names.extend(
        config
            .mcp_servers
            .values()
            .filter_map(|server| server.bearer_token_env.clone()),
    );
    names.sort();
    names.dedup();
    names
}

/// The tools a project's context adds: `load_skill` when it has skills.
#[cfg(feature = "tools")]
pub(crate) fn project_tools(project: Option<&tools::ProjectContext>) -> Vec<Arc<dyn Tool>> {
    match project {
        Some(p) if !p.skills.is_empty() => {
            vec![Arc::new(tools::LoadSkill::new(Arc::new(p.skills.clone())))]
        }
        _ => Vec::new(),
    }
}

/// The sandbox launcher (feature `tools`) and the formatters of the configuration.
/// The rules and hooks the engine applies.
pub(crate) struct Policy {
    pub(crate) rules: Option<Arc<dyn core_models::CallRules>>,
    pub(crate) hooks: Vec<Arc<dyn core_models::Hook>>,
}

pub(crate) struct Wiring {
    #[cfg(feature = "tools")]
    launcher: Arc<sandbox::Launcher>,
    #[cfg(feature = "tools")]
    formatters: Vec<(String, services_ai::FormatterConfig)>,
    /// The editor the file tools read and write through, when there is one.
    #[cfg(feature = "tools")]
    editor: Option<Arc<dyn tools::EditorFiles>>,
    /// Where checkpoints are recorded, when they are.
    #[cfg(feature = "tools")]
    checkpoints: Option<(std::path::PathBuf, tools::checkpoint::Limits)>,
}

impl Wiring {
    /// Through `launcher`, or one made from the configuration's `[sandbox]`.
    #[cfg(feature = "tools")]
    pub(crate) fn new(
        config: &AgentConfig,
        launcher: Option<Arc<sandbox::Launcher>>,
        editor: Option<Arc<dyn tools::EditorFiles>>,
    ) -> Self {
        let launcher =
            launcher.unwrap_or_else(|| Arc::new(sandbox::Launcher::new(sandbox_settings(config))));
        Wiring {
            launcher,
            formatters: config
                .formatters
                .iter()
                .map(|(n, f)| (n.clone(), f.clone()))
                .collect(),
            editor,
            checkpoints: None,
        }
    }

    /// Record checkpoints under this data folder, with these limits.
    #[cfg(feature = "tools")]
    pub(crate) fn with_checkpoints(
        mut self,
        checkpoints: Option<(std::path::PathBuf, tools::checkpoint::Limits)>,
    ) -> Self {
        self.checkpoints = checkpoints;
        self
    }

    #[cfg(not(feature = "tools"))]
    pub(crate) fn new(_config: &AgentConfig) -> Self {
        Wiring {}
    }

    /// The built-in tools, their commands under the sandbox.
    pub(crate) fn builtin_tools(&mut self) -> Vec<Arc<dyn Tool>> {
        #[cfg(feature = "tools")]
        return tools::builtin_tools_through(Arc::clone(&self.launcher), self.editor.clone());
        #[cfg(not(feature = "tools"))]
        return Vec::new();
    }

    /// The engine over `model` and `tools`, with its git inspector and formatters (their
    /// commands under the sandbox).
    /// The configuration's `[hooks]` as programs run in `workspace` under the commands'
    /// sandbox.
    #[cfg(feature = "tools")]
    pub(crate) fn program_hooks(
        &self,
        hooks: &core_models::HooksConfig,
        workspace: &std::path::Path,
    ) -> Result<Vec<Arc<dyn core_models::Hook>>, policy::Error> {
        policy::programs(hooks, Arc::clone(&self.launcher), workspace.to_path_buf())
    }

    pub(crate) fn engine(
        self,
        model: Arc<dyn LlmService>,
        tools: Arc<dyn ToolRegistry>,
        permissions: Arc<dyn PermissionManager>,
        config: AgentConfig,
        policy: Policy,
    ) -> AgentEngine {
        let mut builder = AgentEngine::builder(model, tools).permissions(permissions);
        if let Some(rules) = policy.rules {
            builder = builder.rules(rules);
        }
        for hook in policy.hooks {
            builder = builder.hook(hook);
        }
        self.ports(builder).config(config).build()
    }

    /// The engine's git inspector and formatters, their commands under the sandbox.
    fn ports(self, builder: AgentEngineBuilder) -> AgentEngineBuilder {
        #[cfg(feature = "tools")]
        {
            let mut builder = builder.git_inspector(Arc::new(tools::GitCommandInspector::new(
                Arc::clone(&self.launcher),
            )));
            if let Some((dir, limits)) = self.checkpoints {
                builder = builder.checkpointer(Arc::new(
                    tools::checkpoint::StoreCheckpointer::new(dir, limits),
                ));
            }
            for (name, f) in self.formatters {
                builder = builder.formatter(Arc::new(
                    tools::CommandFormatter::new(name, f.extensions, f.command)
                        .with_launcher(Arc::clone(&self.launcher)),
                ));
            }
            builder
        }
        #[cfg(not(feature = "tools"))]
        builder
    }
}

/// The agent's own tools, then those of other registries (asked at each look), sorted
/// by id within each; an id of the agent's own wins.
pub(crate) struct Layered {
    own: Arc<InMemoryToolRegistry>,
    others: Vec<Arc<dyn ToolRegistry>>,
}

impl Layered {
    pub(crate) fn new(own: Arc<InMemoryToolRegistry>, others: Vec<Arc<dyn ToolRegistry>>) -> Self {
        Layered { own, others }
    }
}

impl ToolRegistry for Layered {
    fn get_tool(&self, id: &str) -> Option<Arc<dyn Tool>> {
        self.own
            .get_tool(id)
            .or_else(|| self.others.iter().find_map(|r| r.get_tool(id)))
    }

    fn all_tools(&self) -> Vec<Arc<dyn Tool>> {
        // The agent's own first (the registry keeps them by id), so that the tools part of
        // the prompt starts the same whatever the others offer: a model's cache keeps it.
        let mut tools = self.own.all_tools();
        let mut seen: BTreeSet<String> = tools.iter().map(|t| t.definition().id.clone()).collect();
        for other in &self.others {
            let mut theirs: Vec<(String, Arc<dyn Tool>)> = other
                .all_tools()
                .into_iter()
                .map(|t| (t.definition().id.clone(), t))
                .collect();
            theirs.sort_by(|a, b| a.0.cmp(&b.0));
            for (id, tool) in theirs {
                if seen.insert(id) {
                    tools.push(tool);
                }
            }
        }
        tools
    }
}
