//! The results: per task and in total, as JSON (`--json`, `report.json`), as Markdown
//! (`report.md`) and as the summary printed at the end.

use super::runner::RunRecord;
use super::suite::Task;
use serde::Serialize;

/// The whole report.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    /// The suite file as given.
    pub(crate) suite: String,
    /// The backend (`embedded`, `llama:FILE`, `openai:URL`, `script:FILE`).
    pub(crate) backend: String,
    /// The model's name.
    pub(crate) model: String,
    /// The tool choice forced on every task (`None`: each task's own, else auto).
    pub(crate) tool_choice: Option<String>,
    /// `--steering`, when given (`None`: the configuration's, by default `auto`).
    pub(crate) steering: Option<String>,
    /// Runs per task.
    pub(crate) repeat: u32,
    /// Tasks run at once.
    pub(crate) concurrency: usize,
    /// Totals.
    pub(crate) summary: Summary,
    /// Every task, in suite order.
    pub(crate) tasks: Vec<TaskReport>,
}

/// Totals over every run.
#[derive(Debug, Serialize)]
pub(crate) struct Summary {
    /// Tasks in the suite.
    pub(crate) tasks: usize,
    /// Runs made (tasks × repeat).
    pub(crate) runs: usize,
    /// Runs whose every check passed.
    pub(crate) passed_runs: usize,
    /// `passed_runs / runs`.
    pub(crate) success_rate: f64,
    /// Tasks that passed in every run.
    pub(crate) tasks_always_passed: usize,
    /// The mean tool-call accuracy over the runs of tasks that check calls (`None`: none
    /// does).
    pub(crate) tool_call_accuracy: Option<f64>,
    /// The median of the runs' wall times, in milliseconds.
    pub(crate) median_wall_ms: u64,
    /// From the first run's start to the last one's end, in milliseconds.
    pub(crate) total_wall_ms: u64,
    /// Mean iterations per run.
    pub(crate) mean_iterations: f64,
    /// Prompt tokens over every run.
    pub(crate) prompt_tokens: u64,
    /// Generated tokens over every run.
    pub(crate) completion_tokens: u64,
    /// How many runs failed each check first: `[check, count]`, most first.
    pub(crate) failed_checks: Vec<(String, usize)>,
    /// The figures per category, in the order categories first appear (empty when no task
    /// names one).
    pub(crate) categories: Vec<CategorySummary>,
}

/// The runs of the tasks of one category.
#[derive(Debug, Serialize)]
pub(crate) struct CategorySummary {
    /// The category's name.
    pub(crate) category: String,
    /// Its tasks.
    pub(crate) tasks: usize,
    /// Its runs that passed.
    pub(crate) passed_runs: usize,
    /// Its runs.
    pub(crate) runs: usize,
    /// The median of its runs' wall times, in milliseconds.
    pub(crate) median_wall_ms: u64,
}

/// One task's runs.
#[derive(Debug, Serialize)]
pub(crate) struct TaskReport {
    /// The task's id.
    pub(crate) id: String,
    /// Its category, if it has one.
    pub(crate) category: Option<String>,
    /// Its request.
    pub(crate) request: String,
    /// Runs that passed.
    pub(crate) passed: usize,
    /// `passed / runs`.
    pub(crate) success_rate: f64,
    /// Every run, in the order they were made.
    pub(crate) runs: Vec<RunRecord>,
}

impl TaskReport {
    pub(crate) fn new(task: &Task, runs: Vec<RunRecord>) -> TaskReport {
        let passed = runs.iter().filter(|r| r.passed).count();
        TaskReport {
            id: task.id.clone(),
            category: task.category.clone(),
            request: task.request.clone(),
            passed,
            success_rate: ratio(passed, runs.len()),
            runs,
        }
    }
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The totals over `tasks`; `total_wall_ms` is the eval's own time.
pub(crate) fn summarize(tasks: &[TaskReport], total_wall_ms: u64) -> Summary {
    let runs: Vec<&RunRecord> = tasks.iter().flat_map(|t| &t.runs).collect();
    let passed_runs = runs.iter().filter(|r| r.passed).count();
    let accuracies: Vec<f64> = runs.iter().filter_map(|r| r.tool_call_accuracy).collect();
    let mut walls: Vec<u64> = runs.iter().map(|r| r.wall_ms).collect();
    walls.sort_unstable();
    let mut failed: Vec<(String, usize)> = Vec::new();
    for check in runs.iter().filter_map(|r| r.failed_check) {
        match failed.iter_mut().find(|(c, _)| c == check) {
            Some((_, n)) => *n += 1,
            None => failed.push((check.to_string(), 1)),
        }
    }
    failed.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Summary {
        tasks: tasks.len(),
        runs: runs.len(),
        passed_runs,
        success_rate: ratio(passed_runs, runs.len()),
        tasks_always_passed: tasks
            .iter()
            .filter(|t| !t.runs.is_empty() && t.passed == t.runs.len())
            .count(),
        tool_call_accuracy: (!accuracies.is_empty())
            .then(|| accuracies.iter().sum::<f64>() / accuracies.len() as f64),
        median_wall_ms: median(&walls),
        total_wall_ms,
        mean_iterations: ratio(runs.iter().map(|r| r.iterations as usize).sum(), runs.len()),
        prompt_tokens: runs.iter().map(|r| r.prompt_tokens).sum(),
        completion_tokens: runs.iter().map(|r| r.completion_tokens).sum(),
        failed_checks: failed,
        categories: categories(tasks),
    }
}

/// The figures per category.
fn categories(tasks: &[TaskReport]) -> Vec<CategorySummary> {
    let mut names: Vec<&str> = Vec::new();
    for name in tasks.iter().filter_map(|t| t.category.as_deref()) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let of: Vec<&TaskReport> = tasks
                .iter()
                .filter(|t| t.category.as_deref() == Some(name))
                .collect();
            let mut walls: Vec<u64> = of.iter().flat_map(|t| &t.runs).map(|r| r.wall_ms).collect();
            walls.sort_unstable();
            CategorySummary {
                category: name.to_string(),
                tasks: of.len(),
                passed_runs: of.iter().map(|t| t.passed).sum(),
                runs: walls.len(),
                median_wall_ms: median(&walls),
            }
        })
        .collect()
}

/// The median of sorted values (the mean of the middle two for an even count).
fn median(sorted: &[u64]) -> u64 {
    match sorted.len() {
        0 => 0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

fn percent(rate: f64) -> String {
    format!("{:.0}%", rate * 100.0)
}

fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// A one-line verdict on a run, for the terminal.
pub(crate) fn run_line(id: &str, repeat: Option<(u32, u32)>, run: &RunRecord) -> String {
    let which = repeat.map_or_else(String::new, |(n, of)| format!(" [{n}/{of}]"));
    let shown = crate::terminal::shown(id, false);
    match run.failures.first() {
        None => format!("pass {shown}{which} ({})", seconds(run.wall_ms)),
        Some(f) => format!(
            "FAIL {shown}{which} ({}): {}: {}",
            seconds(run.wall_ms),
            f.check,
            crate::terminal::shown(&f.message, false)
        ),
    }
}

/// The totals in a few lines, for the terminal.
pub(crate) fn summary_text(report: &Report) -> String {
    let s = &report.summary;
    let mut out = format!(
        "{} of {} runs passed ({}) · {} of {} tasks passed every run",
        s.passed_runs,
        s.runs,
        percent(s.success_rate),
        s.tasks_always_passed,
        s.tasks
    );
    if let Some(accuracy) = s.tool_call_accuracy {
        out.push_str(&format!(" · tool-call accuracy {}", percent(accuracy)));
    }
    out.push_str(&format!(
        "\nmedian {} a task · {} in all · {:.1} iterations a run · {} prompt + {} generated tokens",
        seconds(s.median_wall_ms),
        seconds(s.total_wall_ms),
        s.mean_iterations,
        s.prompt_tokens,
        s.completion_tokens
    ));
    if !s.categories.is_empty() {
        let per: Vec<String> = s
            .categories
            .iter()
            .map(|c| {
                format!(
                    "{} {}/{} ({})",
                    c.category,
                    c.passed_runs,
                    c.runs,
                    seconds(c.median_wall_ms)
                )
            })
            .collect();
        out.push_str(&format!("\nper category: {}", per.join(" · ")));
    }
    if !s.failed_checks.is_empty() {
        let checks: Vec<String> = s
            .failed_checks
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        out.push_str(&format!("\nfirst failing check: {}", checks.join(", ")));
    }
    out
}

/// The report as Markdown.
pub(crate) fn markdown(report: &Report) -> String {
    let s = &report.summary;
    let mut out = format!(
        "# Eval: {}\n\n| | |\n|---|---|\n| backend | {} |\n| model | {} |\n| tool choice | {} |\n| steering | {} |\n| runs per task | {} |\n| concurrency | {} |\n| success | {} of {} runs ({}) |\n| tasks passed every run | {} of {} |\n| tool-call accuracy | {} |\n| median time a task | {} |\n| total time | {} |\n| mean iterations | {:.2} |\n| tokens | {} prompt, {} generated |\n\n",
        cell(&report.suite),
        cell(&report.backend),
        cell(&report.model),
        report.tool_choice.as_deref().map_or("each task's own".into(), cell),
        report.steering.as_deref().map_or("the configuration's".into(), cell),
        report.repeat,
        report.concurrency,
        s.passed_runs,
        s.runs,
        percent(s.success_rate),
        s.tasks_always_passed,
        s.tasks,
        s.tool_call_accuracy.map_or("-".into(), percent),
        seconds(s.median_wall_ms),
        seconds(s.total_wall_ms),
        s.mean_iterations,
        s.prompt_tokens,
        s.completion_tokens,
    );
    if !s.categories.is_empty() {
        out.push_str("| category | tasks | success | median time |\n|---|---|---|---|\n");
        for c in &s.categories {
            out.push_str(&format!(
                "| {} | {} | {}/{} | {} |\n",
                cell(&c.category),
                c.tasks,
                c.passed_runs,
                c.runs,
                seconds(c.median_wall_ms)
            ));
        }
        out.push('\n');
    }
    out.push_str("| task | success | calls | iterations | median time | first failure |\n|---|---|---|---|---|---|\n");
    for task in &report.tasks {
        let mut walls: Vec<u64> = task.runs.iter().map(|r| r.wall_ms).collect();
        walls.sort_unstable();
        let calls: Vec<String> = task
            .runs
            .first()
            .map(|r| r.tool_calls.iter().map(|c| c.tool.clone()).collect())
            .unwrap_or_default();
        let failure = task
            .runs
            .iter()
            .find_map(|r| r.failures.first())
            .map_or(String::new(), |f| format!("{}: {}", f.check, f.message));
        out.push_str(&format!(
            "| {} | {}/{} | {} | {} | {} | {} |\n",
            cell(&task.id),
            task.passed,
            task.runs.len(),
            cell(&calls.join(", ")),
            task.runs.first().map_or(0, |r| r.iterations),
            seconds(median(&walls)),
            cell(&failure),
        ));
    }
    out
}

/// Text safe inside a Markdown table cell: one line, pipes escaped, bounded.
fn cell(text: &str) -> String {
    let mut one: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    if one.len() < text.len() {
        one.push('…');
    }
    one.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::check::Failure;

    fn run(passed: bool, wall_ms: u64, accuracy: Option<f64>) -> RunRecord {
        let failures = if passed {
            Vec::new()
        } else {
            vec![Failure {
                check: "answer",
                message: "the answer does not contain \"x\": \"a|b\"".into(),
            }]
        };
        RunRecord {
            passed,
            failed_check: failures.first().map(|f| f.check),
            failures,
            tool_calls: Vec::new(),
            tool_call_accuracy: accuracy,
            iterations: 2,
            prompt_tokens: 100,
            completion_tokens: 10,
            wall_ms,
            answer: String::new(),
            error: None,
            events: Vec::new(),
        }
    }

    #[test]
    fn totals() {
        let tasks = vec![
            TaskReport {
                id: "a".into(),
                category: Some("read".into()),
                request: "r".into(),
                passed: 2,
                success_rate: 1.0,
                runs: vec![run(true, 100, Some(1.0)), run(true, 300, Some(1.0))],
            },
            TaskReport {
                id: "b".into(),
                category: Some("edit".into()),
                request: "r".into(),
                passed: 1,
                success_rate: 0.5,
                runs: vec![run(false, 200, Some(0.0)), run(true, 400, None)],
            },
        ];
        let s = summarize(&tasks, 1000);
        assert_eq!(
            (s.tasks, s.runs, s.passed_runs, s.tasks_always_passed),
            (2, 4, 3, 1)
        );
        assert!((s.success_rate - 0.75).abs() < 1e-9);
        assert_eq!(s.tool_call_accuracy.map(|a| (a * 3.0).round()), Some(2.0));
        assert_eq!(s.median_wall_ms, 250);
        assert_eq!((s.prompt_tokens, s.completion_tokens), (400, 40));
        assert_eq!(s.failed_checks, vec![("answer".to_string(), 1)]);
        let per: Vec<(&str, usize, usize, u64)> = s
            .categories
            .iter()
            .map(|c| (c.category.as_str(), c.passed_runs, c.runs, c.median_wall_ms))
            .collect();
        assert_eq!(per, [("read", 2, 2, 200), ("edit", 1, 2, 300)]);
        let report = Report {
            suite: "s.jsonl".into(),
            backend: "script:x".into(),
            model: "m".into(),
            tool_choice: None,
            steering: None,
            repeat: 2,
            concurrency: 1,
            summary: s,
            tasks,
        };
        let md = markdown(&report);
        assert!(md.contains("| success | 3 of 4 runs (75%) |"), "{md}");
        assert!(md.contains("| b | 1/2 |"), "{md}");
        assert!(md.contains("a\\|b"), "pipes are escaped: {md}");
        let text = summary_text(&report);
        assert!(
            text.starts_with(
                "3 of 4 runs passed (75%) · 1 of 2 tasks passed every run · tool-call accuracy 67%"
            ),
            "{text}"
        );
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), 0);
        assert_eq!(median(&[5]), 5);
        assert_eq!(median(&[1, 2, 9]), 2);
        assert_eq!(median(&[1, 3]), 2);
    }
}
