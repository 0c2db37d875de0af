//! `aintern` — AIntern's terminal agent.
//!
//! Commands so far: `run` (one request to the agent), `parse` (the tool-call parser over
//! stdin), `bench llm` (the inference layer's speed) and `config`. `chat` and `permissions` arrive with a later issue.

mod bench;
mod parse;
mod run;

use clap::{Parser, Subcommand};
use services_ai::{ConfigLoader, Error};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// A local-LLM agent that uses tools safely.
#[derive(Debug, Parser)]
#[command(name = "aintern", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Send one request to the agent and show what happens.
    Run(run::RunArgs),
    /// Parse one model output from stdin and print its text, thinking, tool calls and
    /// diagnostics as one JSON object. Exits 0 for any input.
    Parse {
        /// A JSON array of tool definitions (id, name, description, risk_level, schema),
        /// used to type XML parameters and to fill in names and risk.
        #[arg(long, value_name = "FILE")]
        tools: Option<PathBuf>,
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
}

#[derive(Debug, Subcommand)]
enum BenchWhat {
    /// The inference layer: prompt processing and generation throughput (comparable with
    /// raw llama.cpp's pp and tg) and the KV-cache reuse of a growing conversation.
    Llm(bench::BenchLlmArgs),
}

#[derive(Debug, Subcommand)]
enum ConfigAction {
    /// Print the effective configuration (defaults, aintern.toml, AINTERN_* variables).
    Show {
        /// Read this TOML file instead of ./aintern.toml.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Print JSON instead of TOML.
        #[arg(long)]
        json: bool,
    },
    /// Check the configuration; exit non-zero listing every problem.
    Check {
        /// Read this TOML file instead of ./aintern.toml.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

fn loader(config: Option<PathBuf>) -> ConfigLoader {
    match config {
        Some(path) => ConfigLoader::new().file(path),
        None => ConfigLoader::new().optional_file("aintern.toml"),
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
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Run(args) => {
            drop(out);
            let runtime = runtime(2)?;
            let result = runtime.block_on(run::run(args));
            // The stdin reader is a blocking read that may never end: do not wait for it.
            runtime.shutdown_background();
            if result? {
                Ok(())
            } else {
                Err("the request failed (see the error above)".into())
            }
        }
        Command::Bench {
            what: BenchWhat::Llm(args),
        } => {
            drop(out);
            runtime(1)?.block_on(bench::run(args))
        }
        Command::Parse {
            tools,
            stream,
            chunk,
        } => {
            let catalog = match tools {
                Some(path) => parse::load_tools(&path)?,
                None => services_ai::ToolCatalog::Empty,
            };
            let parser = services_ai::FunctionCallParser::new(catalog);
            let (input, diagnostics) = parse::read_stdin()?;
            let size = usize::try_from(chunk).unwrap_or(usize::MAX);
            let parsed = parse::run(&parser, &input, stream.then_some(size));
            let json = parse::to_json(parsed, diagnostics);
            writeln!(out, "{json}").map_err(|e| e.to_string())
        }
        Command::Config { action } => match action {
            ConfigAction::Show { config, json } => {
                let config = loader(config).load().map_err(describe)?;
                let text = if json {
                    serde_json::to_string_pretty(&config).map_err(|e| e.to_string())?
                } else {
                    toml::to_string_pretty(&config).map_err(|e| e.to_string())?
                };
                writeln!(out, "{}", text.trim_end()).map_err(|e| e.to_string())
            }
            ConfigAction::Check { config } => {
                loader(config).load().map_err(describe)?;
                writeln!(out, "configuration is valid").map_err(|e| e.to_string())
            }
        },
    }
}

fn describe(e: Error) -> String {
    match e {
        Error::ConfigLoad(e) => format!("cannot read the configuration: {e}"),
        other => other.to_string(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "aintern: {message}");
            ExitCode::FAILURE
        }
    }
}
