//! `aintern init`: a commented starting configuration for the user, never overwriting one.

use std::io::Write as _;
use std::path::PathBuf;

/// The file written: every setting commented out at its default (a test checks that
/// uncommenting them changes nothing but the lines marked as examples).
const TEMPLATE: &str = include_str!("init/aintern.toml");

/// The `init` command's options.
#[derive(Debug, clap::Args)]
pub(crate) struct InitArgs {
    /// Write the configuration here instead of your own aintern.toml (in
    /// `$XDG_CONFIG_HOME/aintern`, usually `~/.config/aintern`).
    #[arg(long, value_name = "FILE")]
    path: Option<PathBuf>,
    /// Print the configuration instead of writing it.
    #[arg(long, conflicts_with = "path")]
    print: bool,
}

/// Write the starting configuration where it does not exist yet.
pub(crate) fn run(args: InitArgs, out: &mut dyn std::io::Write) -> Result<(), String> {
    if args.print {
        return out
            .write_all(TEMPLATE.as_bytes())
            .map_err(|e| format!("cannot print the configuration: {e}"));
    }
    let path = match args.path {
        Some(path) => path,
        None => crate::settings::config_dir()
            .ok_or("cannot find your config folder (is HOME set?); give --path FILE")?
            .join(crate::settings::CONFIG_FILE),
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    // `create_new`: a file that exists (even one made a moment ago) is never replaced.
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(format!(
                "{} already exists and is left as it is (`aintern config show` shows what it sets; `aintern init --print` prints the starting one)",
                path.display()
            ))
        }
        Err(e) => return Err(format!("cannot create {}: {e}", path.display())),
    };
    file.write_all(TEMPLATE.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    writeln!(
        out,
        "wrote {}: every setting is commented out at its default; remove a `#` to change one",
        path.display()
    )
    .map_err(|e| format!("cannot print: {e}"))
}
