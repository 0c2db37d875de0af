//! Git's configuration syntax, read the way git reads it (its `config.c`), so that every
//! variable git would see in a file is seen here too.
//!
//! A file is a series of section headers (`[section]`, `[section "subsection"]`, or the
//! old `[section.subsection]`), variables (`name = value`, or `name` alone for true),
//! comments (`#` or `;` to the end of the line) and blank space. A value may be quoted
//! in part, hold the escapes `\n`, `\t`, `\b`, `\\` and `\"`, and go on to the next line
//! after a backslash. Section and variable names are case-insensitive (lowercased
//! here); a quoted subsection keeps its case.
//!
//! Where git would refuse the file ("bad config line"), [`variables`] refuses it too, and
//! it is stricter where that is simpler (a NUL byte, a name git would take only with
//! a warning): a caller deciding whether a repository is safe treats a refusal as "not
//! safe", which is the side that never misses a variable.

/// One variable of a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Variable {
    /// The section, lowercased.
    pub section: String,
    /// The subsection, if any (as written in quotes; lowercased in the dotted form).
    pub subsection: Option<String>,
    /// The variable's name, lowercased.
    pub name: String,
    /// Its value; `None` for a name alone (a boolean true).
    pub value: Option<String>,
}

impl Variable {
    /// The variable `key` (`section.name` or `section.subsection.name`, as `git config
    /// --list` writes it) with `value`; `None` when `key` has no section.
    pub fn from_key(key: &str, value: Option<String>) -> Option<Variable> {
        let (section, rest) = key.split_once('.')?;
        let (subsection, name) = match rest.rsplit_once('.') {
            Some((sub, name)) => (Some(sub.to_string()), name),
            None => (None, rest),
        };
        if section.is_empty() || name.is_empty() {
            return None;
        }
        Some(Variable {
            section: section.to_ascii_lowercase(),
            subsection,
            name: name.to_ascii_lowercase(),
            value,
        })
    }

    /// Whether `other` is the same variable (its value aside): section and name in any
    /// case, the subsection exactly.
    pub fn same_key(&self, other: &Variable) -> bool {
        self.section == other.section
            && self.name == other.name
            && self.subsection == other.subsection
    }

    /// `section.subsection.name`, as `git config --list` writes it.
    pub fn key(&self) -> String {
        match &self.subsection {
            Some(sub) => format!("{}.{sub}.{}", self.section, self.name),
            None => format!("{}.{}", self.section, self.name),
        }
    }
}

/// Why a configuration text is refused: the line of the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refused {
    /// The line (1-based) where reading stopped.
    pub line: usize,
}

/// Reads characters as git does: `\r\n` counts as `\n`, and the end of the text as a last
/// `\n`.
struct Reader<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: usize,
    ended: bool,
}

impl Reader<'_> {
    fn next(&mut self) -> char {
        let c = match self.chars.next() {
            None => {
                self.ended = true;
                '\n'
            }
            Some('\r') if self.chars.peek() == Some(&'\n') => {
                self.chars.next();
                '\n'
            }
            Some(c) => c,
        };
        if c == '\n' {
            self.line += 1;
        }
        c
    }

    fn refuse<T>(&self) -> Result<T, Refused> {
        Err(Refused { line: self.line })
    }
}

/// Every variable of the configuration text `text`, in order; refused where git would
/// not read it (see the module documentation).
pub fn variables(text: &str) -> Result<Vec<Variable>, Refused> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut r = Reader {
        chars: text.chars().peekable(),
        line: 1,
        ended: false,
    };
    if text.contains('\0') {
        return r.refuse();
    }
    let mut section: Option<(String, Option<String>)> = None;
    let mut out = Vec::new();
    let mut comment = false;
    loop {
        let c = r.next();
        if r.ended {
            return Ok(out);
        }
        if c == '\n' {
            comment = false;
            continue;
        }
        if comment || c.is_ascii_whitespace() {
            continue;
        }
        if c == '#' || c == ';' {
            comment = true;
            continue;
        }
        if c == '[' {
            section = Some(header(&mut r)?);
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return r.refuse();
        }
        let Some((name, sub)) = &section else {
            // A variable before any section.
            return r.refuse();
        };
        let (variable, value) = variable(&mut r, c)?;
        out.push(Variable {
            section: name.clone(),
            subsection: sub.clone(),
            name: variable,
            value,
        });
    }
}

/// A section header after its `[`: the section (lowercased) and subsection.
fn header(r: &mut Reader<'_>) -> Result<(String, Option<String>), Refused> {
    let mut name = String::new();
    loop {
        let c = r.next();
        if r.ended || c == '\n' {
            return r.refuse();
        }
        if c == ']' {
            break;
        }
        if c == ' ' || c == '\t' {
            let sub = quoted_subsection(r)?;
            if name.is_empty() {
                return r.refuse();
            }
            return Ok((name, Some(sub)));
        }
        if !(c.is_ascii_alphanumeric() || c == '-' || c == '.') {
            return r.refuse();
        }
        name.push(c.to_ascii_lowercase());
    }
    // The old dotted form: `[section.subsection]`, the subsection lowercased.
    match name.split_once('.') {
        Some((section, sub)) if !section.is_empty() && !sub.is_empty() => {
            Ok((section.to_string(), Some(sub.to_string())))
        }
        Some(_) => r.refuse(),
        None if name.is_empty() => r.refuse(),
        None => Ok((name, None)),
    }
}

/// `"subsection"]` after the blanks that follow a section name.
fn quoted_subsection(r: &mut Reader<'_>) -> Result<String, Refused> {
    let mut c = r.next();
    while c == ' ' || c == '\t' {
        c = r.next();
    }
    if c != '"' {
        return r.refuse();
    }
    let mut sub = String::new();
    loop {
        let c = r.next();
        if r.ended || c == '\n' {
            return r.refuse();
        }
        match c {
            '"' => break,
            '\\' => {
                let escaped = r.next();
                if r.ended || escaped == '\n' {
                    return r.refuse();
                }
                sub.push(escaped);
            }
            c => sub.push(c),
        }
    }
    if r.next() != ']' {
        return r.refuse();
    }
    Ok(sub)
}

/// A variable whose name starts with `first`: its name (lowercased) and value.
fn variable(r: &mut Reader<'_>, first: char) -> Result<(String, Option<String>), Refused> {
    let mut name = String::from(first.to_ascii_lowercase());
    let mut c = r.next();
    while c.is_ascii_alphanumeric() || c == '-' {
        name.push(c.to_ascii_lowercase());
        c = r.next();
    }
    while c == ' ' || c == '\t' {
        c = r.next();
    }
    if c == '\n' {
        return Ok((name, None));
    }
    if c != '=' {
        return r.refuse();
    }
    Ok((name, Some(value(r)?)))
}

/// A value after its `=`, up to the end of its (last) line.
fn value(r: &mut Reader<'_>) -> Result<String, Refused> {
    let mut out = String::new();
    let mut quoted = false;
    // Blanks are kept only between other characters (or inside quotes).
    let mut blanks = String::new();
    let mut started = false;
    loop {
        let c = r.next();
        if c == '\n' {
            if quoted {
                return r.refuse();
            }
            return Ok(out);
        }
        if !quoted && (c == '#' || c == ';') {
            skip_line(r);
            return Ok(out);
        }
        if !quoted && c.is_ascii_whitespace() {
            if started {
                blanks.push(c);
            }
            continue;
        }
        out.push_str(&blanks);
        blanks.clear();
        started = true;
        match c {
            '\\' => match r.next() {
                // A line continued.
                '\n' if !r.ended => {}
                't' => out.push('\t'),
                'b' => out.push('\u{8}'),
                'n' => out.push('\n'),
                '\\' => out.push('\\'),
                '"' => out.push('"'),
                _ => return r.refuse(),
            },
            '"' => quoted = !quoted,
            c => out.push(c),
        }
    }
}

fn skip_line(r: &mut Reader<'_>) {
    while r.next() != '\n' {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<(String, Option<String>)> {
        variables(text)
            .unwrap_or_else(|e| panic!("{text:?}: refused at line {}", e.line))
            .into_iter()
            .map(|v| (v.key(), v.value))
            .collect()
    }

    fn one(key: &str, value: Option<&str>) -> Vec<(String, Option<String>)> {
        vec![(key.to_string(), value.map(str::to_string))]
    }

    #[test]
    fn variables_are_found_where_git_finds_them() {
        assert_eq!(
            keys("[core]\n\tfsmonitor = cat x\n"),
            one("core.fsmonitor", Some("cat x"))
        );
        // A variable on the header's line; names in any case.
        assert_eq!(keys("[CORE] FsMonitor=x"), one("core.fsmonitor", Some("x")));
        assert_eq!(
            keys("[diff \"Evil Driver\"]\n textconv = a\\\n b\n"),
            one("diff.Evil Driver.textconv", Some("a b"))
        );
        assert_eq!(keys("[Filter.EVIL]\nclean"), one("filter.evil.clean", None));
        assert_eq!(
            keys("[a \"x\\\"y\\\\z\"]\nk = \"v ; w\" # c\n"),
            one("a.x\"y\\z.k", Some("v ; w"))
        );
        assert_eq!(
            keys("\u{feff}; c\r\n[s]\r\n  k  =  a  b  \r\n"),
            one("s.k", Some("a  b"))
        );
        // A continued line does not start a new variable.
        assert_eq!(
            keys("[s]\nk = a \\\nfsmonitor = x\n"),
            one("s.k", Some("a fsmonitor = x"))
        );
        assert_eq!(keys("[s]\n#k = x\n;k = y\n"), Vec::new());
    }

    #[test]
    fn what_git_would_refuse_is_refused() {
        for text in [
            "k = v",
            "[s\nk = v",
            "[s \"x]\n",
            "[s \"x\" ]\n",
            "[ \"x\"]\n",
            "[s.]\n",
            "[s]\n1k = v\n",
            "[s]\nk v\n",
            "[s]\nk = \"open\n",
            "[s]\nk = \\q\n",
            "[s]\n\0k = v\n",
            "[s!]\n",
        ] {
            assert!(variables(text).is_err(), "{text:?}");
        }
    }
}

/// The reader against git itself, on texts made of the pieces git's syntax is made of:
/// wherever git reads a text, the same variables must be read here (or the text refused,
/// the conservative side), and never a variable git does not see.
#[cfg(test)]
mod against_git {
    use super::variables;
    use proptest::prelude::*;

    const HEADERS: &[&str] = &[
        "[core]",
        "[Core] ",
        "[diff \"a b\"]",
        "[diff \"x\\\"y\"]",
        "[filter.Evil]",
        "[s.]",
        "[s \"q\"x]",
        "[a.b.c]",
        "[t \"\\t\"]",
    ];
    const NAMES: &[&str] = &[
        "fsmonitor",
        "FsMonitor",
        "textconv",
        "clean",
        "k-1",
        "1k",
        "x",
    ];
    const VALUE_PIECES: &[&str] = &[
        "value", " ", "\t", "\"", "\\", "\\\n", "#", ";", "=", "a\\tb", "\\n", "\\q", "é", "\r\n",
    ];
    const SEPARATORS: &[&str] = &[" = ", "=", "", " ", "\t=\t"];
    const ENDS: &[&str] = &["\n", "\r\n", " # c\n", ""];

    /// A line of configuration from the indices drawn.
    fn line(kind: usize, a: usize, b: usize, values: &[usize]) -> String {
        match kind % 4 {
            0 => format!("{}{}", HEADERS[a % HEADERS.len()], ENDS[b % ENDS.len()]),
            1 | 2 => {
                let value: String = values
                    .iter()
                    .map(|&i| VALUE_PIECES[i % VALUE_PIECES.len()])
                    .collect();
                format!(
                    "{}{}{}{}",
                    NAMES[a % NAMES.len()],
                    SEPARATORS[b % SEPARATORS.len()],
                    value,
                    ENDS[(a + b) % ENDS.len()]
                )
            }
            _ => ["; c\n", "\n", "  \t\n", "# [core]\n"][a % 4].to_string(),
        }
    }

    /// What `git config --file` lists for `text`; `None` when git refuses it.
    fn git_lists(text: &str) -> Option<Vec<String>> {
        let dir = tempfile::tempdir().ok()?;
        let file = dir.path().join("config");
        std::fs::write(&file, text).ok()?;
        let out = std::process::Command::new("git")
            .args(["config", "--no-includes", "--file"])
            .arg(&file)
            .args(["-z", "--list"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        let listed = String::from_utf8_lossy(&out.stdout);
        Some(
            listed
                .split('\0')
                .filter(|e| !e.is_empty())
                .map(|e| e.split('\n').next().unwrap_or_default().to_string())
                .collect(),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]
        #[test]
        fn every_variable_git_reads_is_read(
            lines in proptest::collection::vec(
                (0..8usize, 0..64usize, 0..64usize, proptest::collection::vec(0..64usize, 0..5)),
                0..10,
            )
        ) {
            let text: String = lines.iter().map(|(k, a, b, v)| line(*k, *a, *b, v)).collect();
            let Some(listed) = git_lists(&text) else { return Ok(()) };
            if let Ok(found) = variables(&text) {
                let ours: Vec<String> = found.iter().map(|v| v.key()).collect();
                prop_assert_eq!(ours, listed, "{:?}", text);
            }
        }
    }

    #[test]
    fn the_common_forms_are_read_as_git_reads_them() {
        for text in [
            "[core]\n\tfsmonitor = x\n",
            "[diff \"a b\"]\ntextconv = cat # c\n",
            "[filter.Evil]\nclean\n",
            "[s]k=v\n[t \"u\"] k = \"a;b\" ;c\n",
        ] {
            let listed = git_lists(text).expect(text);
            let ours: Vec<String> = variables(text)
                .unwrap_or_else(|e| panic!("{text:?}: line {}", e.line))
                .iter()
                .map(|v| v.key())
                .collect();
            assert_eq!(ours, listed, "{text:?}");
        }
    }
}
