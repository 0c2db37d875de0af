//! `aintern models`: the models of the catalog, with what is fetched (`--model NAME`
//! picks one); or what a backend offers: a server's model list, or a GGUF file.

use crate::backend::{self, Choice};
use crate::session::workspace;
use crate::settings;
use std::io::Write;
use std::path::PathBuf;

/// `aintern models` options.
#[derive(Debug, clap::Args)]
pub(crate) struct ModelsArgs {
    #[command(flatten)]
    backend: crate::flags::BackendArgs,
    #[command(flatten)]
    config: crate::flags::ConfigArgs,
    /// Print JSON (one object per model) instead of a table.
    #[arg(long)]
    json: bool,
}

/// List the models and print them.
pub(crate) async fn run(args: ModelsArgs) -> Result<(), String> {
    let workspace = workspace(None)?;
    let (config, notes) =
        settings::load_config(&workspace, args.config.config.as_deref(), &[], |_| {})?;
    for note in notes {
        eprintln!("aintern: {note}");
    }
    let mut out = std::io::stdout().lock();
    let rows: Vec<serde_json::Value> = match backend::choose(&args.backend, &config.backend)? {
        Choice::OpenAi(config) => {
            let models = llm_openai::OpenAiLlm::list_models(&config)
                .await
                .map_err(|e| e.to_string())?;
            if models.is_empty() {
                return Err(format!("the server at {} lists no models", config.base_url));
            }
            models
                .iter()
                .map(|m| serde_json::to_value(m).unwrap_or_default())
                .collect()
        }
        Choice::Embedded => catalog(),
        Choice::Llama(path) => vec![local(path)],
        Choice::Script(path) => vec![serde_json::json!({"id": "scripted", "file": path})],
    };
    let text = if args.json {
        rows.iter()
            .map(serde_json::Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        table(&rows)
    };
    writeln!(out, "{text}").map_err(|e| e.to_string())
}

/// The models of the catalog, each with whether it is fetched (see
/// `llm_llama::catalog`): what `--model NAME` picks.
fn catalog() -> Vec<serde_json::Value> {
    let Some(catalog) = llm_llama::catalog::catalog() else {
        return Vec::new();
    };
    catalog
        .models
        .iter()
        .map(|m| {
            serde_json::json!({
                "name": m.name,
                "title": format!("{} {}", m.title, m.quantization),
                "size": format!("{:.0} MB", m.size as f64 / 1e6),
                "fetched": m.is_fetched(),
                "default": m.name == catalog.default,
                "file": m.path(),
                "fetch": (!m.is_fetched()).then(|| m.fetch_command()),
                "about": m.about,
                "license": m.license,
            })
        })
        .collect()
}

/// A GGUF file as a row.
fn local(path: PathBuf) -> serde_json::Value {
    let id = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    serde_json::json!({
        "id": id,
        "file": path,
        "present": path.is_file(),
    })
}

/// Rows as an aligned table: id, parameters, context, owner (or file).
fn table(rows: &[serde_json::Value]) -> String {
    // What a server says is shown with control characters escaped.
    let cell = |row: &serde_json::Value, key: &str| match row.get(key) {
        Some(serde_json::Value::String(s)) => crate::terminal::shown(s, false).into_owned(),
        Some(serde_json::Value::Number(n)) if key == "parameters" => {
            let n = n.as_f64().unwrap_or_default();
            if n >= 1e9 {
                format!("{:.1}B", n / 1e9)
            } else {
                format!("{:.0}M", n / 1e6)
            }
        }
        Some(serde_json::Value::Null) | None if key == "state" => match row.get("fetched") {
            Some(serde_json::Value::Bool(true)) if row["default"] == true => {
                "fetched (default)".into()
            }
            Some(serde_json::Value::Bool(true)) => "fetched".into(),
            Some(serde_json::Value::Bool(false)) => match row.get("fetch") {
                Some(serde_json::Value::String(command)) => format!("not fetched: {command}"),
                _ => "not fetched".into(),
            },
            _ => String::new(),
        },
        Some(serde_json::Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let columns = [
        "name",
        "id",
        "title",
        "size",
        "parameters",
        "context_length",
        "owned_by",
        "state",
        "file",
    ];
    let used: Vec<&str> = columns
        .into_iter()
        .filter(|c| rows.iter().any(|r| !cell(r, c).is_empty()))
        .collect();
    let width: Vec<usize> = used
        .iter()
        .map(|c| {
            rows.iter()
                .map(|r| cell(r, c).chars().count())
                .max()
                .unwrap_or(0)
                .max(c.len())
        })
        .collect();
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .zip(&width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = vec![line(
        used.iter()
            .map(|c| c.replace("_length", "").to_string())
            .collect(),
    )];
    for row in rows {
        out.push(line(used.iter().map(|c| cell(row, c)).collect()));
    }
    out.join("\n")
}
