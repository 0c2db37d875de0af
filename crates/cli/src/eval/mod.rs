//! `aintern eval`: how well a model works through AIntern, measured on a suite of small
//! tasks. Each task runs in a fresh temporary workspace through the real agent loop
//! (every call approved, commands in the sandbox); its checks decide pass or fail, and
//! the report gives per task and in total the success rate, the failing check, tool-call
//! accuracy, iterations, tokens and time.
//!
//! `suite.rs` reads the suite, `check.rs` judges a run, `runner.rs` makes one,
//! `report.rs` sums them up.

mod check;
mod report;
mod runner;
mod suite;

use crate::backend;
use crate::signals::Interrupts;
use crate::terminal::Terminal;
use futures::StreamExt;
use report::{Report, TaskReport};
use runner::{Bench, RunRecord};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;
use suite::Suite;

/// The `eval` command's options.
#[derive(Debug, clap::Args)]
pub(crate) struct EvalArgs {
    /// The suite: a JSON-lines file, one task a line (see the README's "Evaluating a
    /// model").
    suite: PathBuf,
    #[command(flatten)]
    backend: crate::flags::BackendArgs,
    #[command(flatten)]
    load: crate::flags::LoadArgs,
    #[command(flatten)]
    config: crate::flags::ConfigArgs,
    /// How each request runs. `--tool-choice` replaces every task's own; a task's own
    /// `timeout_secs` and `max_iterations` win over `--timeout` and `--max-iterations`.
    #[command(flatten)]
    policy: crate::flags::PolicyArgs,
    /// Tasks run at once (a server backend; an in-process model runs one at a time).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    concurrency: u16,
    /// Runs per task: the report gives each task's success rate.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// Run only the tasks whose id matches this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    only: Vec<String>,
    /// Print the report as JSON on stdout instead of the summary.
    #[arg(long)]
    json: bool,
    /// Write report.json, report.md and every run's events (runs/ID-N.jsonl) here.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Exit non-zero when fewer than this percentage of runs pass.
    #[arg(long, value_name = "PERCENT", value_parser = clap::value_parser!(u8).range(0..=100))]
    fail_under: Option<u8>,
}

/// `aintern eval`.
pub(crate) async fn run(args: EvalArgs) -> Result<(), String> {
    let text = std::fs::read_to_string(&args.suite)
        .map_err(|e| format!("cannot read the suite {}: {e}", args.suite.display()))?;
    let mut suite =
        Suite::parse(&text).map_err(|e| format!("the suite {}: {e}", args.suite.display()))?;
    select(&mut suite, &args.only)?;
    let mut interrupts = Interrupts::listen()?;
    let mut terminal = Terminal::new(true);
    let here = crate::session::workspace(None)?;
    let (config, notes) =
        crate::settings::load_config(&here, args.config.config.as_deref(), &[], |_| {})?;
    for note in notes {
        terminal.note(&note);
    }
    let choice = backend::choose(&args.backend, &config.backend)?;
    let backend_name = choice.name();
    let mut concurrency = usize::from(args.concurrency);
    if concurrency > 1 && !matches!(choice, backend::Choice::OpenAi(_)) {
        terminal.note("an in-process model runs one task at a time: --concurrency 1");
        concurrency = 1;
    }
    let opened = tokio::select! {
        opened = backend::open(choice, &args.load, backend::Keeping::new(&config.backend, None, crate::sessions::Store::user().ok().map(|s| s.dir().to_path_buf())), &mut terminal) => opened?,
        () = interrupts.next() => return Err("interrupted".into()),
    };
    let bench = Bench {
        model: opened.llm.model_name(),
        llm: opened.llm,
        small: opened.small,
        config_file: args.config.config.clone(),
        policy: args.policy.clone(),
        api_key_env: args.backend.api_key_env.clone(),
        keep_events: args.out.is_some(),
    };
    let started = Instant::now();
    let tasks = tokio::select! {
        tasks = run_all(&bench, &suite, args.repeat, concurrency, !args.json) => tasks,
        () = interrupts.next() => return Err("interrupted: no report was written".into()),
    };
    let total_wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let report = Report {
        suite: args.suite.display().to_string(),
        backend: backend_name,
        model: bench.model.clone(),
        tool_choice: args.policy.tool_choice.as_ref().map(ToString::to_string),
        steering: args.policy.steering.map(|s| s.to_string()),
        repeat: args.repeat,
        concurrency,
        summary: report::summarize(&tasks, total_wall_ms),
        tasks,
    };
    if let Some(dir) = &args.out {
        write_out(dir, &report)?;
    }
    let mut out = std::io::stdout().lock();
    let printed = if args.json {
        serde_json::to_string_pretty(&report)
            .map_err(|e| e.to_string())
            .and_then(|json| writeln!(out, "{json}").map_err(|e| e.to_string()))
    } else {
        writeln!(out, "{}", report::summary_text(&report)).map_err(|e| e.to_string())
    };
    printed.map_err(|e| format!("cannot print the report: {e}"))?;
    match args.fail_under {
        Some(least) if report.summary.success_rate * 100.0 < f64::from(least) => Err(format!(
            "{:.0}% of runs passed, under --fail-under {least}%",
            report.summary.success_rate * 100.0
        )),
        _ => Ok(()),
    }
}

/// Keep the tasks whose id matches one of `globs` (all when there are none).
fn select(suite: &mut Suite, globs: &[String]) -> Result<(), String> {
    if globs.is_empty() {
        return Ok(());
    }
    let mut set = globset::GlobSetBuilder::new();
    for glob in globs {
        set.add(globset::Glob::new(glob).map_err(|e| format!("--only {glob}: {e}"))?);
    }
    let set = set.build().map_err(|e| format!("--only: {e}"))?;
    suite.tasks.retain(|t| set.is_match(&t.id));
    if suite.tasks.is_empty() {
        return Err(format!("no task's id matches --only {}", globs.join(", ")));
    }
    Ok(())
}

/// Every task `repeat` times, `concurrency` at once (round after round, so a partial
/// result covers every task); the runs gathered per task, in suite order.
async fn run_all(
    bench: &Bench,
    suite: &Suite,
    repeat: u32,
    concurrency: usize,
    lines: bool,
) -> Vec<TaskReport> {
    let jobs: Vec<(usize, u32)> = (1..=repeat)
        .flat_map(|round| (0..suite.tasks.len()).map(move |t| (t, round)))
        .collect();
    let progress = indicatif::ProgressBar::new(jobs.len() as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} tasks · {elapsed} · {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut runs: Vec<Vec<(u32, RunRecord)>> = vec![Vec::new(); suite.tasks.len()];
    let mut passed = 0usize;
    let mut done = 0usize;
    let mut results = futures::stream::iter(jobs)
        .map(|(t, round)| async move { (t, round, runner::run_task(bench, &suite.tasks[t]).await) })
        .buffer_unordered(concurrency);
    while let Some((t, round, record)) = results.next().await {
        done += 1;
        passed += usize::from(record.passed);
        let which = (repeat > 1).then_some((round, repeat));
        let line = report::run_line(&suite.tasks[t].id, which, &record);
        if lines {
            progress.suspend(|| {
                let mut out = std::io::stdout().lock();
                // A closed stdout (a pipe to `head`) ends no eval.
                let _ = writeln!(out, "{line}");
            });
        }
        progress.set_message(format!("{passed} of {done} passed"));
        progress.inc(1);
        runs[t].push((round, record));
    }
    progress.finish_and_clear();
    suite
        .tasks
        .iter()
        .zip(runs)
        .map(|(task, mut runs)| {
            runs.sort_by_key(|(round, _)| *round);
            TaskReport::new(task, runs.into_iter().map(|(_, r)| r).collect())
        })
        .collect()
}

/// `report.json`, `report.md` and `runs/ID-N.jsonl` in `dir`.
fn write_out(dir: &Path, report: &Report) -> Result<(), String> {
    let runs_dir = dir.join("runs");
    std::fs::create_dir_all(&runs_dir)
        .map_err(|e| format!("cannot create {}: {e}", runs_dir.display()))?;
    let write = |path: PathBuf, text: String| {
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    write(dir.join("report.json"), json + "\n")?;
    write(dir.join("report.md"), report::markdown(report))?;
    for task in &report.tasks {
        for (n, run) in task.runs.iter().enumerate() {
            let name = format!("{}-{}.jsonl", file_safe(&task.id), n + 1);
            let mut text = run.events.join("\n");
            text.push('\n');
            write(runs_dir.join(name), text)?;
        }
    }
    Ok(())
}

/// A task id as a file name: anything but letters, digits, `-`, `_` and `.` becomes `_`.
fn file_safe(id: &str) -> String {
    let name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.starts_with('.') {
        format!("_{name}")
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_stay_in_their_folder() {
        assert_eq!(file_safe("read-1.a"), "read-1.a");
        assert_eq!(file_safe("../x/y"), "_.._x_y");
        assert_eq!(file_safe("a b/é"), "a_b__");
    }

    #[test]
    fn only_selects_by_glob() {
        let text =
            "{\"id\": \"read-a\", \"request\": \"r\"}\n{\"id\": \"write-a\", \"request\": \"r\"}";
        let parse = || Suite::parse(text).map_err(|e| e.to_string());
        let mut suite = parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(select(&mut suite, &["read-*".into()]).is_ok());
        assert_eq!(suite.tasks.len(), 1);
        let mut suite = parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(select(&mut suite, &["nothing*".into()]).is_err());
    }
}
