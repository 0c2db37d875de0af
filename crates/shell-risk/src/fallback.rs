//! Lexical judgement, for text the parser cannot take (never safe), and the lexical gate
//! every "safe" verdict must also pass: an independent scan for shell syntax that a plain
//! read-only command line never needs.

use super::severity;
use super::Finding;
use core_models::RiskLevel;

/// Split text at `;`, `&`, `|`, newlines and parentheses outside quotes, each part into
/// words (shell quoting when it can be read, else whitespace).
pub(super) fn split(text: &str) -> Vec<Vec<String>> {
    let mut parts = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), _) => {}
            (_, '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ';' | '&' | '|' | '\n' | '(' | ')' | '`') => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            (None, _) => {}
        }
    }
    parts.push(&text[start..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            shell_words::split(p)
                .unwrap_or_else(|_| p.split_whitespace().map(String::from).collect())
        })
        .filter(|words| !words.is_empty())
        .collect()
}

/// Findings for text judged lexically: the deny-list over its parts, and the constructs
/// that raise the risk.
pub(super) fn text_findings(text: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    for words in split(text) {
        let words: Vec<&str> = words
            .iter()
            .map(String::as_str)
            .skip_while(|w| w.contains('=') && !w.starts_with('='))
            .collect();
        if let Some(f) = severity::assess(&words, false) {
            findings.push(f);
        }
    }
    if text.contains("$(") || text.contains('`') {
        findings.push(Finding::new(
            RiskLevel::Medium,
            "substitutes the output of a command",
        ));
    }
    if text.contains('>') {
        findings.push(Finding::new(
            RiskLevel::Medium,
            "may write to a file (redirection)",
        ));
    }
    let flat = core_models::collapse_whitespace(text);
    if ["rm -rf /", "rm -fr /", "rm -rf ~", "rm -fr ~"]
        .iter()
        .any(|p| flat.contains(p))
    {
        findings.push(Finding::new(
            RiskLevel::Critical,
            "deletes the system or the home folder ('rm -rf /')",
        ));
    }
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains(":(){") || compact.contains(":|:&") {
        findings.push(Finding::new(RiskLevel::Critical, "looks like a fork bomb"));
    }
    findings
}

/// Why `command` needs more than a plain command line, or `None`: an independent scan
/// (POSIX quoting) for anything but words joined by `|`, `&&`, `||`, `;` and newlines.
pub(super) fn gate(command: &str) -> Option<&'static str> {
    let mut chars = command.chars().peekable();
    let mut at_word_start = true;
    // Where a shell could expand `~`: a word's start, after `=` or `:`.
    let mut tilde_position = true;
    while let Some(c) = chars.next() {
        let word_start = at_word_start;
        let tilde_here = tilde_position;
        at_word_start = false;
        tilde_position = false;
        match c {
            '\\' => match chars.next() {
                Some(n) if !n.is_control() || n == '\n' => {}
                _ => return Some("a control character or a dangling backslash"),
            },
            '\'' => loop {
                match chars.next() {
                    Some('\'') => break,
                    Some(q) if q.is_control() && q != '\t' && q != '\n' => {
                        return Some("a control character")
                    }
                    Some(_) => {}
                    None => return Some("an unterminated quote"),
                }
            },
            '"' => loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => {
                        if chars.next().is_none() {
                            return Some("an unterminated quote");
                        }
                    }
                    Some('$' | '`') => return Some("an expansion inside double quotes"),
                    Some(q) if q.is_control() && q != '\t' && q != '\n' => {
                        return Some("a control character")
                    }
                    Some(_) => {}
                    None => return Some("an unterminated quote"),
                }
            },
            '$' | '`' => return Some("an expansion or substitution"),
            '<' | '>' => return Some("a redirection"),
            '(' | ')' | '{' | '}' => return Some("grouping or brace syntax"),
            '*' | '?' | '[' => return Some("a file-name pattern"),
            '~' if tilde_here => return Some("a ~ expansion"),
            '#' if word_start => return Some("a comment"),
            '&' => {
                if chars.peek() == Some(&'&') {
                    chars.next();
                    at_word_start = true;
                    tilde_position = true;
                } else {
                    return Some("a background job (&)");
                }
            }
            ' ' | '\t' | '\n' | ';' | '|' => {
                at_word_start = true;
                tilde_position = true;
            }
            c if c.is_control() => return Some("a control character"),
            '=' | ':' => tilde_position = true,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_follows_quotes() {
        assert_eq!(
            split("a 'b;c' | d && e\nf"),
            [vec!["a", "b;c"], vec!["d"], vec!["e"], vec!["f"]]
        );
    }

    #[test]
    fn the_gate_lets_plain_lines_through_only() {
        for ok in [
            "ls -la",
            "cat 'a b' | grep -n \"x y\" && wc -l; echo done\nls",
            "git log --format='%h %s' -n 5",
            "grep -e 'a(b)*' x",
            "echo \"it's\"",
            "git show HEAD~1",
            "git log --format=#%h",
        ] {
            assert_eq!(gate(ok), None, "{ok}");
        }
        for bad in [
            "ls > x",
            "cat < x",
            "ls &",
            "echo $HOME",
            "echo \"$HOME\"",
            "echo `id`",
            "(ls)",
            "{ ls; }",
            "ls *.rs",
            "cat ~/x",
            "ls # x",
            "echo 'open",
            "echo \u{1b}[2J",
            "a=~/x",
            "ls a:~/x",
        ] {
            assert!(gate(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn lexical_findings_keep_the_old_rules() {
        let risk = |t: &str| {
            text_findings(t)
                .into_iter()
                .map(|f| f.risk)
                .max()
                .unwrap_or(RiskLevel::Safe)
        };
        assert_eq!(risk("rm -rf / 'open"), RiskLevel::Critical);
        assert_eq!(risk(":(){ :|:& };:"), RiskLevel::Critical);
        assert_eq!(risk("curl x | sh 'open"), RiskLevel::High);
        assert_eq!(risk("echo $(id"), RiskLevel::Medium);
    }
}
