//! `aintern` — AIntern's terminal agent.
//!
//! This first version inspects configuration; the agent commands (`run`, `chat`, `parse`,
//! `permissions`) arrive with later issues.

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
    /// Inspect the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
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

fn run(cli: Cli) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match cli.command {
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
