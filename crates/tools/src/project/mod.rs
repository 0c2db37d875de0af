//! What a project tells the model: its AGENTS.md instructions and its Agent Skills.
//!
//! Both are text for the model. They change no setting: approvals, the sandbox, the
//! backend and MCP servers come from the user's configuration and flags only, whatever an
//! AGENTS.md or a SKILL.md says.
//!
//! Files are read beneath the folder they were found in ([`cap_std`] refuses a path or a
//! link that leads out), only when they are regular files, and with caps, so a hostile
//! repository can neither point the prompt at a file elsewhere nor block the start.

mod instructions;
mod skills;

pub use instructions::{Instructions, INSTRUCTIONS_CAP, INSTRUCTIONS_FILE};
pub use skills::{Skill, SkillSource, Skills, SKILL_BODY_CAP, SKILL_FILE};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The project context of a workspace: instructions and skills.
#[derive(Debug, Clone, Default)]
pub struct ProjectContext {
    /// The AGENTS.md instructions.
    pub instructions: Instructions,
    /// The skills found.
    pub skills: Skills,
}

impl ProjectContext {
    /// Discover the instructions and skills of `workspace`, with the user's own from
    /// `user_dir` (aintern's configuration folder, `$XDG_CONFIG_HOME/aintern`) when given.
    pub fn discover(workspace: &Path, user_dir: Option<&Path>) -> Self {
        ProjectContext {
            instructions: Instructions::discover(workspace, user_dir),
            skills: Skills::discover(workspace, user_dir),
        }
    }

    /// What goes into the system prompt: the instructions, then the skills' names and
    /// descriptions; `None` when there is neither.
    pub fn prompt(&self) -> Option<String> {
        let parts: Vec<String> = [self.instructions.prompt(), self.skills.prompt()]
            .into_iter()
            .flatten()
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    /// Notes for the user (a cut, a file or skill left out), each once.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = self.instructions.notes.clone();
        notes.extend(self.skills.notes.iter().cloned());
        notes
    }
}

/// The text of the regular file `relative` beneath `dir`, at most `cap` bytes (and whether
/// it was longer), as UTF-8 with invalid bytes replaced; `Ok(None)` when there is no
/// such file.
fn read_beneath(dir: &Path, relative: &Path, cap: usize) -> Result<Option<(String, bool)>, String> {
    let root = match Dir::open_ambient_dir(dir, ambient_authority()) {
        Ok(root) => root,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open {}: {e}", dir.display())),
    };
    let shown = || dir.join(relative).display().to_string();
    // Resolved beneath `dir`: a link leading out is an error, never followed.
    match root.metadata(relative) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Err(format!("{} is not a regular file", shown())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} was not read: {e}", shown())),
    }
    let file = root
        .open(relative)
        .map_err(|e| format!("{} was not read: {e}", shown()))?;
    if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Err(format!("{} is not a regular file", shown()));
    }
    let mut bytes = Vec::new();
    file.into_std()
        .take(cap as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{} was not read: {e}", shown()))?;
    let cut = bytes.len() > cap;
    bytes.truncate(cap);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if cut {
        // A cut may split a character: drop its replacement.
        while text.ends_with('\u{FFFD}') {
            text.pop();
        }
    }
    Ok(Some((text, cut)))
}

/// `path` with `base` removed when it lies beneath it, for showing.
fn shown_path(path: &Path, base: &Path) -> PathBuf {
    path.strip_prefix(base)
        .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}
