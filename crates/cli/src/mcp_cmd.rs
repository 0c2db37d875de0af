//! `aintern mcp`: the Model Context Protocol servers of the configuration — their state
//! and tools (`list`), and adding one to the user's aintern.toml (`add`).

use crate::settings;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// What to do with the MCP servers.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum McpAction {
    /// Start every configured server and show its state and tools.
    List {
        /// The workspace the servers start in (default: the current folder).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Read this TOML file instead of the user's aintern.toml.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Print JSON: `[{"server", "status", "error", "tools": [{"id", "description",
        /// "risk"}]}]`.
        #[arg(long)]
        json: bool,
    },
    /// Add a server to your aintern.toml: a program (`-- COMMAND ARGS…`) or an HTTP
    /// endpoint (`--url`).
    Add(AddArgs),
    /// Remove a server from your aintern.toml.
    Remove {
        /// The server's name.
        name: String,
    },
}

/// `aintern mcp add` options.
#[derive(Debug, clap::Args)]
pub(crate) struct AddArgs {
    /// The server's name (letters, digits, '-', '_'): its tools are offered as NAME__tool.
    name: String,
    /// A variable set for the program (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// The streamable-HTTP endpoint, instead of a program.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    url: Option<String>,
    /// The environment variable holding the endpoint's bearer token.
    #[arg(long, value_name = "VAR", requires = "url")]
    bearer_token_env: Option<String>,
    /// The program and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

pub(crate) async fn run(action: McpAction) -> Result<(), String> {
    match action {
        McpAction::List {
            workspace,
            config,
            json,
        } => list(workspace, config, json).await,
        McpAction::Add(args) => add(args),
        McpAction::Remove { name } => remove(&name),
    }
}

async fn list(
    workspace: Option<PathBuf>,
    config: Option<PathBuf>,
    json: bool,
) -> Result<(), String> {
    let workspace = crate::session::workspace(workspace)?;
    let (config, notes) = settings::load_config(&workspace, config.as_deref(), &[], |_| {})?;
    for note in notes {
        eprintln!("aintern: {note}");
    }
    let launcher = Arc::new(sandbox::Launcher::new(settings::sandbox_settings(&config)));
    let servers = mcp::McpServers::start(&config.mcp_servers, launcher, &workspace).await;
    let reports = servers.reports();
    servers.stop().await;
    let text = if json {
        let rows: Vec<serde_json::Value> = reports
            .iter()
            .map(|r| {
                let (status, error) = status(&r.status);
                serde_json::json!({
                    "server": r.name,
                    "status": status,
                    "error": error,
                    "tools": r.tools.iter().map(|(id, description, risk)| serde_json::json!({
                        "id": id, "description": description, "risk": risk,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?
    } else if reports.is_empty() {
        "no MCP servers are configured (add one with: aintern mcp add NAME -- COMMAND ARGS…)".into()
    } else {
        let shown = |t: &str| crate::terminal::shown(t, false).into_owned();
        let mut lines = Vec::new();
        for r in &reports {
            let (status, error) = status(&r.status);
            lines.push(match error {
                Some(e) => format!("{}: {status} — {}", shown(&r.name), shown(&e)),
                None => format!("{}: {status}, {} tools", shown(&r.name), r.tools.len()),
            });
            for (id, description, risk) in &r.tools {
                let first = description.lines().next().unwrap_or_default();
                lines.push(format!(
                    "  {:<32} {:<8} {}",
                    shown(id),
                    risk.to_string(),
                    shown(first)
                ));
            }
        }
        lines.join("\n")
    };
    writeln!(std::io::stdout().lock(), "{text}").map_err(|e| e.to_string())
}

fn status(s: &mcp::ServerStatus) -> (&'static str, Option<String>) {
    match s {
        mcp::ServerStatus::Running => ("running", None),
        mcp::ServerStatus::Failed(why) => ("failed", Some(why.clone())),
        mcp::ServerStatus::Disabled => ("disabled", None),
    }
}

/// The user's aintern.toml, parsed for editing (empty when there is none yet).
fn user_config() -> Result<(PathBuf, toml_edit::DocumentMut), String> {
    let dir = settings::config_dir().ok_or("there is no config folder (HOME is not set)")?;
    let file = dir.join(settings::CONFIG_FILE);
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let doc = text
        .parse::<toml_edit::DocumentMut>()
        .map_err(|e| format!("{} is not valid TOML: {e}", file.display()))?;
    Ok((file, doc))
}

fn save(file: &std::path::Path, doc: &toml_edit::DocumentMut) -> Result<(), String> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    // A new file may soon hold a server's token (in its env): readable by the user alone.
    // An existing file keeps its mode.
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(file)
        .and_then(|mut f| f.write_all(doc.to_string().as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", file.display()))
}

fn add(args: AddArgs) -> Result<(), String> {
    if !services_ai::valid_server_name(&args.name) {
        return Err(format!(
            "'{}' cannot name a server: letters, digits, '-' and '_' only (not '__'), up to 64",
            args.name
        ));
    }
    let mut table = toml_edit::Table::new();
    match (&args.url, args.command.split_first()) {
        (Some(url), _) => {
            table.insert("url", toml_edit::value(url.as_str()));
            if let Some(var) = &args.bearer_token_env {
                table.insert("bearer_token_env", toml_edit::value(var.as_str()));
            }
        }
        (None, Some((program, rest))) => {
            table.insert("command", toml_edit::value(program.as_str()));
            let mut list = toml_edit::Array::new();
            for a in rest {
                list.push(a.as_str());
            }
            table.insert("args", toml_edit::value(list));
        }
        (None, None) => return Err(
            "give the server's program after `--` (aintern mcp add NAME -- COMMAND ARGS…) or --url"
                .into(),
        ),
    }
    if !args.env.is_empty() {
        let mut env = toml_edit::InlineTable::new();
        for pair in &args.env {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("--env {pair}: expected KEY=VALUE"))?;
            env.insert(key, value.into());
        }
        table.insert("env", toml_edit::value(env));
    }
    let (file, mut doc) = user_config()?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_mut()
        .ok_or("mcp_servers in your aintern.toml is not a table")?;
    let replaced = servers.contains_key(&args.name);
    servers.insert(&args.name, toml_edit::Item::Table(table));
    save(&file, &doc)?;
    writeln!(
        std::io::stdout().lock(),
        "{} the MCP server '{}' in {} (check it with: aintern mcp list)",
        if replaced { "replaced" } else { "added" },
        args.name,
        file.display()
    )
    .map_err(|e| e.to_string())
}

fn remove(name: &str) -> Result<(), String> {
    let (file, mut doc) = user_config()?;
    let removed = doc
        .get_mut("mcp_servers")
        .and_then(toml_edit::Item::as_table_mut)
        .and_then(|t| t.remove(name))
        .is_some();
    if !removed {
        return Err(format!(
            "there is no MCP server '{name}' in {}",
            file.display()
        ));
    }
    save(&file, &doc)?;
    writeln!(
        std::io::stdout().lock(),
        "removed the MCP server '{name}' from {}",
        file.display()
    )
    .map_err(|e| e.to_string())
}
