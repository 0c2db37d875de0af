//! A session started: the saved session it resumes, its workspace and configuration, the
//! model loaded while the MCP servers start, the agent built through the facade, and the
//! session file opened.

use super::checks::{could_exist, sandbox_note, unknown_tool};
use super::{workspace, Session, SessionArgs};
use crate::backend;
use crate::settings;
use crate::signals::Interrupts;
use crate::terminal::Terminal;
use core_models::{ToolChoice, ToolRegistry};
use services_ai::{AgentConfig, DefaultPermissionManager, FilePermissionStore};
use std::path::Path;
use std::sync::Arc;

impl Session {
    /// Load the configuration and the model and build the agent. An interrupt while the
    /// model loads ends the program.
    pub(crate) async fn start(
        args: SessionArgs,
        terminal: &mut Terminal,
        interrupts: &mut Interrupts,
    ) -> Result<Self, String> {
        let resume = crate::sessions::resume_target(args.resume.as_ref(), args.last)?;
        // A resumed session continues in its workspace, with its model, unless told else.
        let args = match &resume {
            Some(saved) => args.resuming(&saved.header),
            None => args,
        };
        let workspace = match (&resume, &args.workspace) {
            (Some(saved), None) => crate::sessions::resumed_workspace(&saved.header)?,
            _ => workspace(args.workspace.clone())?,
        };
        let adjust = |config: &mut AgentConfig| adjust(&args, config);
        let (config, notes) =
            settings::load_config(&workspace, args.config.config.as_deref(), &[], adjust)?;
        for note in notes {
            terminal.note(&note);
        }
        // Chosen first: the variable holding the server's key, however it was named, is
        // kept from every command the tools start.
        let choice = backend::choose(&args.backend, &config.backend)?;
        if let (Some(schema), backend::Choice::Embedded | backend::Choice::Llama(_)) =
            (&args.output_schema, &choice)
        {
            // In-process the answer is held by llama.cpp's grammar: refused before it loads.
            llm_llama::check_answer_schema(schema)
                .map_err(|e| format!("the output schema cannot be used: {e}"))?;
        }
        let backend_name = choice.name();
        if let Some(saved) = &resume {
            // What the session file chose is said: the file could have been edited.
            terminal.note(&crate::sessions::resuming_note(
                &saved.header,
                &workspace,
                &backend_name,
                args.workspace.is_none(),
            ));
        }
        let mut config = config;
        add_client_servers(&mut config, &args.extra_mcp, terminal);
        let mut sandbox_settings = settings::sandbox_settings(&config);
        sandbox_settings
            .secret_env
            .extend(args.backend.api_key_env.clone());
        let launcher = Arc::new(sandbox::Launcher::new(sandbox_settings));
        could_exist(args.policy.tool_choice.as_ref(), &config)?;
        if let Some(note) = sandbox_note(&launcher) {
            terminal.note(&note);
        }
        // A saved session's model state is kept beside it (in the folder once checked: of
        // this user's, private).
        let states = crate::sessions::Store::user()
            .ok()
            .map(|store| store.dir().to_path_buf());
        let state_dir = states.clone().filter(|_| !args.no_save);
        let keeping = backend::Keeping::new(&config.backend, state_dir, states);
        // The model loads while the MCP servers start.
        let servers =
            mcp::McpServers::start(&config.mcp_servers, Arc::clone(&launcher), &workspace);
        let (opened, servers) = tokio::select! {
            both = async {
                tokio::join!(
                    backend::open(choice, &args.load, keeping, terminal),
                    servers,
                )
            } => both,
            () = interrupts.next() => crate::signals::leave(130),
        };
        let opened = opened?;
        let servers = Arc::new(servers);
        for report in servers.reports() {
            if let mcp::ServerStatus::Failed(why) = report.status {
                terminal.note(&format!("{why}; its tools are unavailable"));
            }
        }
        // The preset for the model's size (unless configured otherwise): the compact tool
        // prompt for a small model, the lean one for a model of a few billion.
        let preset = services_ai::defaults_for(&opened.llm.model_details());
        let config = if preset.is_empty() {
            config
        } else {
            settings::load_config(&workspace, args.config.config.as_deref(), preset, adjust)?.0
        };
        let (llm, small) = (opened.llm, opened.small);
        let permissions = permissions(terminal);
        let parts = Parts {
            workspace: &workspace,
            llm: &llm,
            launcher: &launcher,
            servers: &servers,
            permissions: &permissions,
        };
        let agent = build_agent(&args, config, &parts, terminal)?;
        let registry = Arc::clone(agent.tools());
        if let Some(ToolChoice::Tool(id)) = &args.policy.tool_choice {
            if registry.get_tool(id).is_none() {
                return Err(unknown_tool(id, &registry.all_tools()));
            }
        }
        let header = crate::sessions::Header {
            id: resume
                .as_ref()
                .map_or_else(uuid::Uuid::new_v4, |s| s.header.id),
            created: chrono::Utc::now(),
            workspace: workspace.clone(),
            backend: backend_name.clone(),
            model: llm.model_name(),
            version: 1,
        };
        let start = crate::sessions::Start {
            saved: resume,
            header,
            save: !args.no_save,
        };
        let mut notes = Vec::new();
        let known = |id: &str| registry.get_tool(id).is_some();
        let saved =
            crate::sessions::Persisted::start(start, permissions.as_ref(), &known, &mut notes)
                .await;
        for note in notes {
            terminal.note(&note);
        }
        Ok(Session {
            agent,
            llm,
            approve: args.approve,
            args,
            small,
            workspace,
            saved,
            launcher,
            permissions,
            registry,
            backend_name,
            servers,
        })
    }
}

/// What the command line changes in the loaded configuration: the steering, and the
/// request's time limit (which also bounds each tool's).
fn adjust(args: &SessionArgs, config: &mut AgentConfig) {
    if let Some(steering) = args.policy.steering {
        config.steering = steering;
    }
    if let Some(secs) = args.policy.timeout {
        config.agent_request_timeout_ms = secs.saturating_mul(1000);
        config.tool_execution_timeout_ms = config
            .tool_execution_timeout_ms
            .min(config.agent_request_timeout_ms);
    }
}

/// Add the MCP servers a client gave (an ACP client's) to the configured ones; one whose
/// name is configured is left out, and said.
fn add_client_servers(
    config: &mut AgentConfig,
    extra: &[(String, core_models::McpServerConfig)],
    terminal: &mut Terminal,
) {
    for (name, server) in extra {
        if config.mcp_servers.contains_key(name) {
            terminal.note(&format!(
                "the MCP server '{name}' the client gave is left out: one of that name is configured"
            ));
        } else {
            config.mcp_servers.insert(name.clone(), server.clone());
        }
    }
}

/// The permission manager over the saved permissions; in memory only (and said) when
/// their file cannot be found.
fn permissions(terminal: &mut Terminal) -> Arc<dyn core_models::PermissionManager> {
    match settings::permissions_file() {
        Ok(file) => Arc::new(DefaultPermissionManager::new(Arc::new(
            FilePermissionStore::new(file),
        ))),
        Err(e) => {
            terminal.note(&format!("{e}; \"always\" decisions last only this session"));
            Arc::new(DefaultPermissionManager::in_memory())
        }
    }
}

/// What the agent is built from besides its configuration.
struct Parts<'a> {
    workspace: &'a Path,
    llm: &'a Arc<dyn core_models::LlmService>,
    launcher: &'a Arc<sandbox::Launcher>,
    servers: &'a Arc<mcp::McpServers>,
    permissions: &'a Arc<dyn core_models::PermissionManager>,
}

/// The agent, built through the facade, the one composition root: the built-in tools,
/// then the MCP servers' tools; git and the formatters under the same launcher. The
/// project context's notes are said.
fn build_agent(
    args: &SessionArgs,
    config: AgentConfig,
    parts: &Parts<'_>,
    terminal: &mut Terminal,
) -> Result<aintern::Agent, String> {
    let mut builder = aintern::Agent::builder();
    if let Some(editor) = args.editor.clone() {
        builder = builder.editor_files(editor);
    }
    builder = builder.plan_tool(args.policy.plan);
    if let Some(data) = crate::undo::data_dir() {
        builder = builder.checkpoints(data, aintern::tools::checkpoint::Limits::default());
    }
    let agent = builder
        .shared_model(Arc::clone(parts.llm))
        .workspace(parts.workspace)
        .config(config)
        .launcher(Arc::clone(parts.launcher))
        .tools_from(Arc::clone(parts.servers) as Arc<dyn ToolRegistry>)
        .permissions(Arc::clone(parts.permissions))
        .project_context(settings::config_dir())
        .rule_files(settings::rules_dir())
        .build()
        .map_err(|e| e.to_string())?;
    for note in agent.rule_notes() {
        terminal.note(note);
    }
    for note in agent
        .project()
        .map(aintern::tools::ProjectContext::notes)
        .unwrap_or_default()
    {
        terminal.note(&note);
    }
    Ok(agent)
}
