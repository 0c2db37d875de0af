//! `aintern` — AIntern's terminal agent.
//!
//! Commands: `run` and `exec` (one request to the agent), `chat` (a conversation), `acp`
//! (an Agent Client Protocol agent for editors),
//! `permissions` (the saved "always" decisions), `config` (the effective configuration),
//! `init` (a commented starting configuration),
//! `sessions` (the saved conversations), `undo` (the workspace as before a request), `models` (what a backend offers), `parse` (the tool-call parser over stdin),
//! `template` (chat templates) and `bench llm` (the inference layer's speed).

mod acp;
mod approve;
mod backend;
mod bench;
mod bench_checkpoint;
mod bench_openai;
mod bench_resume;
mod bench_speculative;
mod chat;
mod console;
mod context_cmd;
mod eval;
mod flags;
mod init;
mod input;
mod mcp_cmd;
mod models;
mod parse;
mod permissions;
mod render;
mod rules_cmd;
mod run;
mod session;
mod sessions;
mod sessions_cmd;
mod settings;
mod signals;
mod state_view;
mod template;
mod terminal;
mod undo;

use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// A local-LLM agent that uses tools safely.
#[derive(Debug, Parser)]
#[command(name = "aintern", version, about)]
struct Cli {
    /// More log messages on stderr: -v for aintern's debug messages, -vv for everything,
    /// llama.cpp's included. RUST_LOG, when set, decides instead.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Write log messages to this file instead of stderr.
    #[arg(long, global = true, value_name = "FILE")]
    log_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Send one request to the agent and show what happens.
    Run(run::RunArgs),
    /// `run --json`: one request, every event as a JSON line, commands read from stdin.
    Exec(run::RunArgs),
    /// A conversation with the agent: each line typed is a request that continues it.
    Chat(chat::ChatArgs),
    /// Serve the Agent Client Protocol on stdin and stdout, for editors (Zed, JetBrains
    /// IDEs, Neovim): each session works in the client's folder, asks the client for
    /// approvals (unless --approve) and is saved like any other.
    Acp(acp::AcpArgs),
    /// Where a request's prompt tokens go (system prompt, tools, history, request) against
    /// the model's context window.
    Context(context_cmd::ContextArgs),
    /// Measure how well a model works through AIntern: run a suite of tasks (JSON lines),
    /// each in a fresh temporary workspace, and report success, tool-call accuracy,
    /// iterations, tokens and time.
    Eval(eval::EvalArgs),
    /// The models AIntern knows by name (the catalog, with what is fetched: --model NAME picks one), or what a backend offers (--backend openai:URL: the server's list)
    Models(models::ModelsArgs),
    /// Tool servers speaking the Model Context Protocol: list them with their tools, add or
    /// remove one.
    Mcp {
        #[command(subcommand)]
        action: mcp_cmd::McpAction,
    },
    /// Undo what the agent changed: restore the workspace to how it was before a request
    /// (the last one by default; --list shows them), from the checkpoints recorded before
    /// each request's first change.
    Undo(undo::UndoArgs),
    /// Policy as code: check the rule files (yours and the workspace's), or explain how a
    /// command line is decided (the commands seen, the judge's rating, the deciding rule).
    Rules {
        #[command(subcommand)]
        action: rules_cmd::RulesAction,
    },
    /// Write a commented starting configuration (your aintern.toml, every setting at its
    /// default), never replacing one that exists.
    Init(init::InitArgs),
    /// The saved sessions: list, show or delete them (resume one with --resume).
    Sessions {
        #[command(subcommand)]
        action: sessions_cmd::SessionsAction,
    },
    /// Manage the saved permissions ("always allow" / "always deny" per tool).
    Permissions {
        #[command(subcommand)]
        action: permissions::PermissionsAction,
    },
    /// Parse one model output from stdin and print its text, thinking, tool calls and
    /// diagnostics as one JSON object. Exits 0 for any input.
    Parse {
        /// A JSON array of tools: AIntern definitions (id, name, description, risk_level,
        /// schema) or OpenAI function tools; used to type parameters and fill in names.
        #[arg(long, value_name = "FILE")]
        tools: Option<PathBuf>,
        /// The model's call format (`auto` recognizes every unambiguous one); see
        /// --list-formats.
        #[arg(long, value_name = "NAME", default_value = "auto")]
        format: String,
        /// Derive the format and whether the reply starts in reasoning from this chat
        /// template (Jinja).
        #[arg(long, value_name = "FILE", conflicts_with = "format")]
        template: Option<PathBuf>,
        /// The prompt opened a reasoning block: the output starts as reasoning.
        #[arg(long)]
        starts_in_thinking: bool,
        /// Print the formats (name, models, what they look like) and exit.
        #[arg(long)]
        list_formats: bool,
        /// Feed the streaming parser instead of the batch parser.
        #[arg(long)]
        stream: bool,
        /// With --stream: piece size in bytes (extended to whole characters).
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        chunk: u64,
    },
    /// Measure speed.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Inspect the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Chat templates: render a conversation as the model's prompt.
    Template {
        #[command(subcommand)]
        action: template::TemplateAction,
    },
}

#[derive(Debug, Subcommand)]
enum BenchWhat {
    /// The inference layer: prompt processing and generation throughput (comparable with
    /// raw llama.cpp's pp and tg) and the KV-cache reuse of a growing conversation.
    Llm(bench::BenchLlmArgs),
    /// What a checkpoint costs a request: a generated workspace (10,000 files by default,
    /// --git for a repository), the first checkpoint, one per request, a restore's plan.
    Checkpoint(bench_checkpoint::BenchCheckpointArgs),
}

#[derive(Debug, Subcommand)]
enum ConfigAction {
    /// Print the effective configuration: the defaults, aintern.toml in the user's config
    /// folder, aintern.toml in the workspace, AINTERN_* variables.
    Show {
        #[command(flatten)]
        source: ConfigSource,
        /// Print JSON instead of TOML.
        #[arg(long)]
        json: bool,
    },
    /// Check the configuration; exit non-zero listing every problem.
    Check {
        #[command(flatten)]
        source: ConfigSource,
    },
}

/// Where the configuration is read from.
#[derive(Debug, clap::Args)]
struct ConfigSource {
    /// The workspace whose aintern.toml is read (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    #[command(flatten)]
    config: flags::ConfigArgs,
}

impl ConfigSource {
    fn load(self) -> Result<services_ai::AgentConfig, String> {
        let workspace = session::workspace(self.workspace)?;
        let (config, notes) =
            settings::load_config(&workspace, self.config.config.as_deref(), &[], |_| {})?;
        for note in notes {
            eprintln!("aintern: {note}");
        }
        Ok(config)
    }
}

fn runtime(workers: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

fn run(cli: Cli) -> Result<(), String> {
    settings::init_logging(cli.verbose, cli.log_file.as_deref())?;
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Run(args) => {
            drop(out);
            request(args, false)
        }
        Command::Exec(args) => {
            drop(out);
            request(args, true)
        }
        Command::Chat(args) => {
            drop(out);
            let runtime = runtime(2)?;
            let result = runtime.block_on(chat::chat(args));
            runtime.shutdown_background();
            result
        }
        Command::Acp(args) => {
            drop(out);
            let runtime = runtime(2)?;
            let result = runtime.block_on(acp::run(args));
            runtime.shutdown_background();
            result
        }
        Command::Permissions { action } => {
            drop(out);
            runtime(1)?.block_on(permissions::run(action))
        }
        Command::Sessions { action } => {
            drop(out);
            sessions_cmd::run(action)
        }
        Command::Undo(args) => {
            drop(out);
            undo::run(args)
        }
        Command::Init(args) => init::run(args, &mut out),
        Command::Rules { action } => {
            drop(out);
            rules_cmd::run(action)
        }
        Command::Mcp { action } => {
            drop(out);
            let runtime = runtime(2)?;
            let result = runtime.block_on(mcp_cmd::run(action));
            runtime.shutdown_background();
            result
        }
        Command::Context(args) => {
            drop(out);
            let runtime = runtime(2)?;
            let result = runtime.block_on(context_cmd::run(args));
            runtime.shutdown_background();
            result
        }
        Command::Eval(args) => {
            drop(out);
            let runtime = runtime(2)?;
            let result = runtime.block_on(eval::run(args));
            runtime.shutdown_background();
            result
        }
        Command::Models(args) => {
            drop(out);
            runtime(1)?.block_on(models::run(args))
        }
        Command::Bench {
            what: BenchWhat::Llm(args),
        } => {
            drop(out);
            runtime(1)?.block_on(bench::run(args))
        }
        Command::Bench {
            what: BenchWhat::Checkpoint(args),
        } => {
            drop(out);
            bench_checkpoint::run(args)
        }
        Command::Parse {
            tools,
            format,
            template,
            starts_in_thinking,
            list_formats,
            stream,
            chunk,
        } => {
            if list_formats {
                return writeln!(out, "{}", parse::list_formats()).map_err(|e| e.to_string());
            }
            let catalog = match tools {
                Some(path) => parse::load_tools(&path)?,
                None => services_ai::ToolCatalog::Empty,
            };
            let options = parse::options(&format, template.as_deref(), starts_in_thinking)?;
            let parser = services_ai::FunctionCallParser::new(catalog).with_options(options);
            let (input, diagnostics) = parse::read_stdin()?;
            let size = usize::try_from(chunk).unwrap_or(usize::MAX);
            let parsed = parse::run(&parser, &input, stream.then_some(size));
            let json = parse::to_json(parsed, diagnostics);
            writeln!(out, "{json}").map_err(|e| e.to_string())
        }
        Command::Config { action } => match action {
            ConfigAction::Show { source, json } => {
                let mut config = source.load()?;
                // Header values may carry credentials: never printed.
                for value in config.backend.headers.values_mut() {
                    *value = "<hidden>".into();
                }
                for server in config.mcp_servers.values_mut() {
                    for value in server.headers.values_mut().chain(server.env.values_mut()) {
                        *value = "<hidden>".into();
                    }
                }
                let text = if json {
                    serde_json::to_string_pretty(&config).map_err(|e| e.to_string())?
                } else {
                    toml::to_string_pretty(&config).map_err(|e| e.to_string())?
                };
                writeln!(out, "{}", text.trim_end()).map_err(|e| e.to_string())
            }
            ConfigAction::Check { source } => {
                source.load()?;
                writeln!(out, "configuration is valid").map_err(|e| e.to_string())
            }
        },
        Command::Template { action } => template::run(action, &mut out),
    }
}

/// `run` or `exec` (`json`): one request.
fn request(args: run::RunArgs, json: bool) -> Result<(), String> {
    let runtime = runtime(2)?;
    let result = runtime.block_on(run::run(args, json));
    // The stdin reader is a blocking read that may never end: do not wait for it.
    runtime.shutdown_background();
    if result? {
        Ok(())
    } else {
        Err("the request failed (see the error above)".into())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The commands it starts must not read its environment or memory through /proc.
    sandbox::hide_this_process();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "aintern: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every command's flags are well formed (unique names, valid groups): clap checks
    /// them only when a command is used.
    #[test]
    fn every_command_s_flags_are_well_formed() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }
}
