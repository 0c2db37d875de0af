//! `aintern undo` and chat's `/undo` and `/rewind`: the workspace restored to how it was
//! before a request, from the checkpoints the agent records (see `tools::checkpoint`).
//! The diff is shown and the person asked first; a path someone changed after the agent
//! is reported and left as it is (unless `--overwrite`); the session is told, so the
//! model hears what was undone with its next request.

use crate::terminal::shown;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use tools::checkpoint::{Checkpoints, Limits, RequestRecord, RestorePlan, Restored};

/// The `undo` command's options.
#[derive(Debug, clap::Args)]
pub(crate) struct UndoArgs {
    /// The workspace (default: the current folder).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Only the requests of this session (its id, or enough of it to name it alone).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Restore to checkpoint N (as `--list` numbers them): before request N, undoing it
    /// and every later one. Default: before the last request.
    #[arg(long, value_name = "N")]
    to: Option<u64>,
    /// List the requests that changed the workspace, with the files each changed.
    #[arg(long)]
    list: bool,
    /// Restore without asking (the diff is still printed).
    #[arg(long, short)]
    yes: bool,
    /// Also restore paths someone changed after the agent (reported and left alone
    /// otherwise).
    #[arg(long)]
    overwrite: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The data folder the checkpoints are kept in (`$XDG_DATA_HOME/aintern`).
pub(crate) fn data_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("aintern"))
}

/// The checkpoint store of `workspace`.
pub(crate) fn open(workspace: &Path) -> Result<Checkpoints, String> {
    let data = data_dir().ok_or("cannot find the user's data folder (is HOME set?)")?;
    let ws = tools::Workspace::new(workspace).map_err(|e| e.to_string())?;
    Checkpoints::open(&data, &ws, Limits::default()).map_err(|e| e.to_string())
}

/// What a restore undoes: the checkpoint restored and the requests after it.
pub(crate) struct Choice {
    pub(crate) to: u64,
    pub(crate) undone: Vec<RequestRecord>,
}

/// The requests of `session` (an id or a prefix of one; every session when `None`).
pub(crate) fn requests(
    store: &Checkpoints,
    session: Option<&str>,
) -> Result<Vec<RequestRecord>, String> {
    let all = store.requests(None).map_err(|e| e.to_string())?;
    let Some(prefix) = session else {
        return Ok(all);
    };
    let named: std::collections::BTreeSet<&str> = all
        .iter()
        .filter_map(|r| r.session.as_deref())
        .filter(|s| s.starts_with(prefix))
        .collect();
    if named.len() > 1 {
        return Err(format!(
            "{} names more than one session here: give more of the id",
            shown(prefix, false)
        ));
    }
    Ok(all
        .iter()
        .filter(|r| r.session.as_deref().is_some_and(|s| s.starts_with(prefix)))
        .cloned()
        .collect())
}

/// The checkpoint to restore: `to`, or before the last of `requests`.
pub(crate) fn choose(
    store: &Checkpoints,
    requests: Vec<RequestRecord>,
    to: Option<u64>,
) -> Result<Choice, String> {
    let to = match to {
        Some(n) => {
            store.load(n).map_err(|e| e.to_string())?;
            n
        }
        None => requests
            .last()
            .map(|r| r.before)
            .ok_or("no request has changed this workspace: there is nothing to undo")?,
    };
    let undone = requests.into_iter().filter(|r| r.before >= to).collect();
    Ok(Choice { to, undone })
}

/// The plan of a restore to `to` (or before the last request of `session`), with the
/// store and what it undoes.
pub(crate) fn prepare(
    store: Checkpoints,
    session: Option<&str>,
    to: Option<u64>,
) -> Result<(Checkpoints, Choice, RestorePlan), String> {
    let requests = requests(&store, session)?;
    let choice = choose(&store, requests, to)?;
    let plan = store.plan(choice.to).map_err(|e| e.to_string())?;
    Ok((store, choice, plan))
}

/// The requests, one line each, with the files each changed.
pub(crate) fn list_text(requests: &[RequestRecord]) -> String {
    if requests.is_empty() {
        return "no request has changed this workspace".into();
    }
    let mut out = String::new();
    for r in requests {
        let when = chrono::DateTime::from_timestamp_millis(r.created_ms as i64)
            .map(|t| {
                t.with_timezone(&chrono::Local)
                    .format("%Y-%m-%d %H:%M")
                    .to_string()
            })
            .unwrap_or_default();
        let session = r.session.as_deref().map_or("", |s| &s[..s.len().min(8)]);
        out.push_str(&format!(
            "{:>4}  {when}  {session:<8}  {}\n",
            r.before,
            shown(&r.label, false)
        ));
        let files: Vec<String> = r
            .changed
            .iter()
            .map(|p| shown(p, false).into_owned())
            .collect();
        let files = match (files.len(), r.after) {
            (0, None) => "(did not end: what it changed is not known)".to_string(),
            (0, Some(_)) => "(changed nothing)".to_string(),
            _ => files.join(", "),
        };
        out.push_str(&format!("      {files}\n"));
    }
    out.push_str(
        "(aintern undo --to N restores checkpoint N: before request N above, or the one a restore named to bring back what it undid)",
    );
    out
}

/// What the plan would do, for a person.
pub(crate) fn plan_text(choice: &Choice, plan: &RestorePlan) -> String {
    let mut out = String::new();
    let labels: Vec<String> = choice
        .undone
        .iter()
        .map(|r| format!("{} ({})", r.before, shown(&r.label, false)))
        .collect();
    if !labels.is_empty() {
        out.push_str(&format!("undoing request {}\n", labels.join(", ")));
    }
    if plan.steps.is_empty() && plan.conflicts.is_empty() {
        out.push_str("the workspace is already as it was at that checkpoint\n");
    }
    for step in &plan.steps {
        out.push_str(&format!(
            "  {:<14} {}\n",
            step.verb(),
            shown(&step.path, false)
        ));
    }
    let diff: String = plan
        .steps
        .iter()
        .filter_map(|s| s.diff.as_deref())
        .collect();
    if !diff.is_empty() {
        out.push_str(&shown(&diff, true));
        if !diff.ends_with('\n') {
            out.push('\n');
        }
    }
    if !plan.conflicts.is_empty() {
        out.push_str("changed by someone else since the agent (left as they are; --overwrite restores them too):\n");
        for c in &plan.conflicts {
            out.push_str(&format!("  {}\n", shown(&c.step.path, false)));
        }
    }
    for (path, why) in &plan.lost {
        out.push_str(&format!(
            "  cannot be restored: {} ({why})\n",
            shown(path, false)
        ));
    }
    out
}

/// What was done, for a person.
pub(crate) fn restored_text(done: &Restored) -> String {
    let mut out = format!(
        "restored {} path{}",
        done.changed.len(),
        if done.changed.len() == 1 { "" } else { "s" }
    );
    if !done.kept.is_empty() {
        out.push_str(&format!(
            "; left {} changed by someone else",
            done.kept.len()
        ));
    }
    out.push_str(&format!(
        " (aintern undo --to {} brings back what was there)",
        done.before_restore
    ));
    for (path, why) in &done.failed {
        out.push_str(&format!("\n  not restored: {} ({why})", shown(path, false)));
    }
    out
}

/// What the model is told: which requests were undone and what changed back.
pub(crate) fn note_for_model(choice: &Choice, done: &Restored) -> String {
    let requests: Vec<String> = choice
        .undone
        .iter()
        .map(|r| format!("\"{}\"", r.label))
        .collect();
    let paths: Vec<String> = done
        .changed
        .iter()
        .map(|(p, how)| format!("{p} ({how})"))
        .collect();
    format!(
        "[The person undid the changes of the earlier request{} {}: the workspace is back as it was before, so those changes are gone. Paths restored: {}.]",
        if requests.len() == 1 { "" } else { "s" },
        requests.join(", "),
        if paths.is_empty() { "none".into() } else { paths.join(", ") }
    )
}

/// Tell the sessions of the undone requests what was undone (their files; a session
/// running in this process is told by its own front end).
fn tell_sessions(choice: &Choice, done: &Restored) -> Vec<String> {
    let note = note_for_model(choice, done);
    let sessions: std::collections::BTreeSet<&str> = choice
        .undone
        .iter()
        .filter_map(|r| r.session.as_deref())
        .collect();
    let mut problems = Vec::new();
    for s in sessions {
        let Ok(id) = uuid::Uuid::parse_str(s) else {
            continue;
        };
        if let Err(e) = crate::sessions::record_undone(id, &note) {
            problems.push(format!(
                "session {} was not told: {e}",
                &s[..8.min(s.len())]
            ));
        }
    }
    problems
}

/// `aintern undo`.
pub(crate) fn run(args: UndoArgs) -> Result<(), String> {
    let workspace = match &args.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir().map_err(|e| e.to_string())?,
    };
    let store = open(&workspace)?;
    let mut out = std::io::stdout().lock();
    let say = |out: &mut std::io::StdoutLock<'_>, text: &str| {
        let _ = writeln!(out, "{text}");
    };
    if args.list {
        let requests = requests(&store, args.session.as_deref())?;
        if args.json {
            say(
                &mut out,
                &serde_json::json!({ "requests": requests }).to_string(),
            );
        } else {
            say(&mut out, &list_text(&requests));
        }
        return Ok(());
    }
    let (store, choice, plan) = prepare(store, args.session.as_deref(), args.to)?;
    if !args.json {
        say(&mut out, plan_text(&choice, &plan).trim_end());
    }
    let nothing = plan.steps.is_empty() && (plan.conflicts.is_empty() || !args.overwrite);
    let go = !nothing && (args.yes || (!args.json && ask("restore?")));
    let done = if go {
        let token = core_models::CancellationToken::new();
        let session = choice.undone.last().and_then(|r| r.session.clone());
        let done = store
            .apply(&plan, args.overwrite, session.as_deref(), &token)
            .map_err(|e| e.to_string())?;
        for problem in tell_sessions(&choice, &done) {
            eprintln!("aintern: {problem}");
        }
        Some(done)
    } else {
        None
    };
    if args.json {
        say(
            &mut out,
            &serde_json::json!({ "to": choice.to, "undone": choice.undone, "plan": plan, "restored": done })
                .to_string(),
        );
    } else if let Some(done) = &done {
        say(&mut out, &restored_text(done));
    }
    drop(out);
    match done {
        Some(d) if !d.failed.is_empty() => Err(format!(
            "{} path{} could not be restored",
            d.failed.len(),
            if d.failed.len() == 1 { "" } else { "s" }
        )),
        None if !nothing => {
            Err("nothing restored: answer yes, or run with --yes to restore without asking".into())
        }
        _ => Ok(()),
    }
}

/// Ask `question` on the terminal; no terminal is a no.
fn ask(question: &str) -> bool {
    if !std::io::stdin().is_terminal() {
        return false;
    }
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
}
