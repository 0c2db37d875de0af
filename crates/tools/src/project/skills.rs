//! Agent Skills: folders `NAME/SKILL.md` with YAML front matter (`name`, `description`)
//! and instructions below it, loaded on demand.
//!
//! Found in the workspace's `.agents/skills/` and in the user's `skills/` (aintern's
//! configuration folder); a workspace skill wins over the user's of the same name. Only
//! names and descriptions go into the prompt; the `load_skill` tool returns a body. A
//! skill whose folder or `SKILL.md` resolves outside its skills folder (a link leading
//! out) is not loaded, neither at discovery nor when loaded later.

use super::read_beneath;
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::path::{Path, PathBuf};

/// The file in a skill's folder.
pub const SKILL_FILE: &str = "SKILL.md";
/// Most bytes of a `SKILL.md` read; a longer body is cut, with a note in what
/// [`Skills::load`] returns.
pub const SKILL_BODY_CAP: usize = 64 * 1024;
/// Most skills listed (by name) in the prompt.
const MAX_SKILLS: usize = 64;
/// Longest description, as the Agent Skills format allows.
const MAX_DESCRIPTION: usize = 1024;
/// Longest name.
const MAX_NAME: usize = 64;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillSource {
    /// The workspace's `.agents/skills/`.
    Workspace,
    /// The user's `skills/` folder.
    User,
}

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (also its folder's name).
    pub name: String,
    /// What it is for, as its front matter says.
    pub description: String,
    /// Its folder, absolute.
    pub dir: PathBuf,
    /// Where it was found.
    pub source: SkillSource,
    /// The skills folder it is read beneath.
    root: PathBuf,
}

/// The skills found for a workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skills {
    /// By name.
    pub list: Vec<Skill>,
    /// What the user should know (skills left out, and why).
    pub notes: Vec<String>,
}

impl Skills {
    /// The skills of `workspace`, then of the user's folder `user_dir`.
    pub fn discover(workspace: &Path, user_dir: Option<&Path>) -> Self {
        let mut skills = Skills::default();
        skills.scan(
            workspace,
            Path::new(".agents/skills"),
            SkillSource::Workspace,
        );
        if let Some(dir) = user_dir {
            skills.scan(dir, Path::new("skills"), SkillSource::User);
        }
        skills.list.sort_by(|a, b| a.name.cmp(&b.name));
        if skills.list.len() > MAX_SKILLS {
            skills.notes.push(format!(
                "{} skills found; only the first {MAX_SKILLS} by name are offered",
                skills.list.len()
            ));
            skills.list.truncate(MAX_SKILLS);
        }
        skills
    }

    /// Read the skills in `base/folder`, which must resolve beneath `base`.
    fn scan(&mut self, base: &Path, folder: &Path, source: SkillSource) {
        let Ok(base_dir) = Dir::open_ambient_dir(base, ambient_authority()) else {
            return;
        };
        let root = base.join(folder);
        let skills_dir = match base_dir.open_dir(folder) {
            Ok(dir) => dir,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                self.notes
                    .push(format!("skills in {} not loaded: {e}", root.display()));
                return;
            }
        };
        let Ok(entries) = skills_dir.entries() else {
            return;
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        for folder_name in names {
            match read_skill(&root, &folder_name) {
                Ok(Some((name, description))) => {
                    if self.list.iter().any(|s| s.name == name) {
                        self.notes.push(format!(
                            "skill '{name}' in {} is hidden by the workspace's",
                            root.display()
                        ));
                        continue;
                    }
                    self.list.push(Skill {
                        name,
                        description,
                        dir: root.join(&folder_name),
                        source,
                        root: root.clone(),
                    });
                }
                Ok(None) => {}
                Err(e) => self.notes.push(format!(
                    "skill '{}' not loaded: {e}",
                    folder_name.escape_debug()
                )),
            }
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.list.iter().find(|s| s.name == name)
    }

    /// The names and descriptions as the system prompt lists them; `None` when there
    /// are no skills.
    pub fn prompt(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut out = String::from(
            "Skills: instructions for particular tasks. When a task matches a skill's \
             description, call load_skill with its name and follow what it says.",
        );
        for skill in &self.list {
            out.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
        Some(out)
    }

    /// The body of the skill called `name` (its `SKILL.md` after the front matter), read
    /// again now, beneath its skills folder.
    ///
    /// # Errors
    /// No such skill; its file is gone, unreadable, or now resolves outside its folder.
    pub fn load(&self, name: &str) -> Result<String, String> {
        let skill = self
            .get(name)
            .ok_or_else(|| format!("there is no skill called '{name}'"))?;
        let relative = Path::new(&skill.name).join(SKILL_FILE);
        let (text, cut) = read_beneath(&skill.root, &relative, SKILL_BODY_CAP)?
            .ok_or_else(|| format!("the skill '{name}' is gone"))?;
        let body = match front_matter(&text) {
            Some((_, body)) => body,
            None => &text,
        };
        let mut out = body.trim().to_string();
        if cut {
            out.push_str(&format!(
                "\n\n(the skill is longer than {} KiB; only its start is shown)",
                SKILL_BODY_CAP / 1024
            ));
        }
        Ok(out)
    }
}

/// The name and description of the skill in `root/folder`, `Ok(None)` when the folder
/// has no `SKILL.md`.
fn read_skill(root: &Path, folder: &str) -> Result<Option<(String, String)>, String> {
    let relative = Path::new(folder).join(SKILL_FILE);
    let Some((text, _)) = read_beneath(root, &relative, SKILL_BODY_CAP)? else {
        return Ok(None);
    };
    let (fields, _) =
        front_matter(&text).ok_or("its SKILL.md does not start with front matter (---)")?;
    let field = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let name = field("name").ok_or("its front matter has no name")?;
    if !valid_name(&name) {
        return Err(format!(
            "its name '{}' is not lowercase letters, digits and single hyphens (at most {MAX_NAME})",
            name.escape_debug()
        ));
    }
    if name != folder {
        return Err(format!("its name '{name}' is not its folder's name"));
    }
    let description = field("description").ok_or("its front matter has no description")?;
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(format!(
            "its description is longer than {MAX_DESCRIPTION} characters"
        ));
    }
    // One line in the prompt.
    let description = description.split_whitespace().collect::<Vec<_>>().join(" ");
    Ok(Some((name, description)))
}

/// Whether `name` is a skill name: lowercase ASCII letters, digits and hyphens, neither
/// starting nor ending with one, no two in a row.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The front matter's top-level `key: value` fields and the body after it; `None` when
/// `text` does not open with a `---` line that a later `---` line closes.
///
/// A small reader of the YAML that skills use: plain, single- and double-quoted scalars,
/// and `|` / `>` block scalars; nested keys are skipped.
fn front_matter(text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next()?.trim_end() != "---" {
        return None;
    }
    let mut offset = text.find('\n')? + 1;
    let mut block: Vec<&str> = Vec::new();
    let mut closed = false;
    for line in lines {
        offset += line.len();
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        block.push(line.trim_end_matches(['\n', '\r']));
    }
    if !closed {
        return None;
    }
    Some((fields(&block), &text[offset.min(text.len())..]))
}

/// The top-level fields of front-matter lines.
fn fields(lines: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.starts_with([' ', '\t']) || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = if let Some(style) = value.strip_prefix(['|', '>']).map(|_| value.as_bytes()[0])
        {
            let mut parts = Vec::new();
            while i < lines.len()
                && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty())
            {
                parts.push(lines[i].trim());
                i += 1;
            }
            let joiner = if style == b'|' { "\n" } else { " " };
            parts.join(joiner).trim().to_string()
        } else {
            unquote(value)
        };
        out.push((key.trim().to_string(), value));
    }
    out
}

/// A scalar without its quotes (and comment).
fn unquote(value: &str) -> String {
    if let Some(inner) = value.strip_prefix('"').and_then(|v| v.rsplit_once('"')) {
        return inner.0.replace("\\\"", "\"").replace("\\\\", "\\");
    }
    if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.rsplit_once('\'')) {
        return inner.0.replace("''", "'");
    }
    value
        .split_once(" #")
        .map_or(value, |(v, _)| v)
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_fields_are_read_as_yaml_writes_them() {
        let text = "---\nname: pdf-tools\ndescription: >\n  Fill PDF forms\n  and merge files.\nlicense: MIT\nmetadata:\n  name: nested\nquoted: \"a \\\"b\\\" c\"\nsingle: 'it''s'\n---\n# Body\nSteps.\n";
        let (fields, body) = front_matter(text).unwrap_or_else(|| panic!("front matter"));
        let get = |k: &str| {
            fields
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("name"), Some("pdf-tools"));
        assert_eq!(get("description"), Some("Fill PDF forms and merge files."));
        assert_eq!(get("quoted"), Some("a \"b\" c"));
        assert_eq!(get("single"), Some("it's"));
        assert_eq!(fields.iter().filter(|(k, _)| k == "name").count(), 1);
        assert_eq!(body, "# Body\nSteps.\n");
        assert!(front_matter("name: x\n---\n").is_none());
        assert!(front_matter("---\nname: x\n").is_none());
    }

    #[test]
    fn names_follow_the_format() {
        for good in ["a", "pdf-tools", "v2-release-notes"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "a--b",
            "PDF",
            "a_b",
            "a b",
            "../x",
            &"a".repeat(65),
        ] {
            assert!(!valid_name(bad), "{bad}");
        }
    }
}
