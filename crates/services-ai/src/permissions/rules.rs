//! How permission patterns are matched against a call's [`PermissionSubjects`].
//!
//! A deny pattern refuses a call when it matches any subject or any deny-only form. A deny
//! pattern is also tried in its normalized spellings (runs of whitespace made one space,
//! and as a path: `./secret/*` is `secret/*`), so that a pattern written the way a person
//! types it still refuses the normalized subjects. Allow patterns allow a call only when
//! its subjects are complete, not empty, and every one of them matches some allow pattern.

use crate::error::Error;
use core_models::{collapse_whitespace, normalize_path, PermissionSubjects};
use globset::{Glob, GlobMatcher};

/// Compile one glob; an invalid pattern is an error, never "no match".
pub(crate) fn compile(pattern: &str) -> Result<GlobMatcher, Error> {
    Glob::new(pattern)
        .map(|g| g.compile_matcher())
        .map_err(|source| Error::InvalidPattern {
            pattern: pattern.to_string(),
            source,
        })
}

/// A deny pattern, compiled in every spelling it is tried in.
#[derive(Debug, Clone)]
pub(crate) struct DenyPattern {
    written: String,
    matchers: Vec<GlobMatcher>,
}

impl DenyPattern {
    /// Compile `pattern` as written and in its normalized spellings.
    pub(crate) fn new(pattern: &str) -> Result<Self, Error> {
        let mut forms = vec![pattern.to_string()];
        for form in [collapse_whitespace(pattern), normalize_path(pattern, None)] {
            if !form.is_empty() && form != "." && !forms.contains(&form) {
                forms.push(form);
            }
        }
        let mut matchers = Vec::with_capacity(forms.len());
        for form in &forms {
            // Only the pattern as written must be valid; a normalized spelling that is not
            // a glob simply adds nothing.
            match compile(form) {
                Ok(m) => matchers.push(m),
                Err(e) if form == pattern => return Err(e),
                Err(_) => {}
            }
        }
        Ok(DenyPattern {
            written: pattern.to_string(),
            matchers,
        })
    }

    /// The first subject or deny-only form this pattern matches.
    pub(crate) fn first_match<'a>(&self, subjects: &'a PermissionSubjects) -> Option<&'a str> {
        subjects
            .for_deny()
            .find(|s| self.matchers.iter().any(|m| m.is_match(s)))
    }

    /// The pattern as the person wrote it.
    pub(crate) fn written(&self) -> &str {
        &self.written
    }
}

/// Which deny pattern refuses the call, and the subject it matched: `(pattern, subject)`.
pub(crate) fn denied_by(
    patterns: &[String],
    subjects: &PermissionSubjects,
) -> Result<Option<(String, String)>, Error> {
    for pattern in patterns {
        let deny = DenyPattern::new(pattern)?;
        if let Some(subject) = deny.first_match(subjects) {
            return Ok(Some((deny.written().to_string(), subject.to_string())));
        }
    }
    Ok(None)
}

/// Whether the allow `patterns` cover the call: its subjects are complete and not empty,
/// and every subject matches one of the patterns. Every pattern must be a valid glob.
pub(crate) fn allowed_by(
    patterns: &[String],
    subjects: &PermissionSubjects,
) -> Result<bool, Error> {
    let matchers = patterns
        .iter()
        .map(|p| compile(p))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(allowed_by_matchers(&matchers, subjects))
}

/// [`allowed_by`] over compiled matchers.
pub(crate) fn allowed_by_matchers(matchers: &[GlobMatcher], subjects: &PermissionSubjects) -> bool {
    subjects.complete
        && !subjects.subjects.is_empty()
        && !matchers.is_empty()
        && subjects
            .subjects
            .iter()
            .all(|s| matchers.iter().any(|m| m.is_match(s)))
}

/// Whether deny patterns cannot be checked against the call's subjects fully (they are
/// incomplete or empty): then a tool with deny patterns refuses the call.
pub(crate) fn unverifiable(subjects: &PermissionSubjects) -> bool {
    !subjects.complete || subjects.is_empty()
}

/// Why deny patterns cannot be checked against `subjects`, in words.
pub(crate) fn why_unverifiable(subjects: &PermissionSubjects) -> &'static str {
    if subjects.is_empty() {
        "it names nothing a pattern could be matched against"
    } else {
        "not everything it runs or touches can be seen (for a command: a program whose name is not plain text, a script read from a file or input, options not understood…)"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subjects(list: &[&str]) -> PermissionSubjects {
        PermissionSubjects::of(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn deny_patterns_match_any_subject_in_any_spelling() {
        let s = subjects(&["src/a.rs", "secret/key"]);
        let hit = denied_by(&["secret/*".into()], &s).unwrap();
        assert_eq!(hit, Some(("secret/*".into(), "secret/key".into())));
        for written in ["./secret/*", "secret//*", " secret/* ", "x/../secret/*"] {
            assert!(
                denied_by(&[written.into()], &s).unwrap().is_some(),
                "{written:?}"
            );
        }
        let cmd = PermissionSubjects::default()
            .with_subjects(vec!["ls".into()])
            .with_deny_only(vec!["ls; rm -rf x".into()])
            .with_complete(true);
        assert!(denied_by(&["*rm -rf*".into()], &cmd).unwrap().is_some());
        assert!(denied_by(&["rm  -rf *".into()], &subjects(&["rm -rf x"]))
            .unwrap()
            .is_some());
        assert!(denied_by(&["[bad".into()], &s).is_err());
    }

    #[test]
    fn allow_patterns_need_every_subject_and_complete_subjects() {
        let p = vec!["cargo *".to_string()];
        assert!(allowed_by(&p, &subjects(&["cargo test", "cargo build"])).unwrap());
        assert!(!allowed_by(&p, &subjects(&["cargo test", "rm -rf x"])).unwrap());
        assert!(!allowed_by(&p, &PermissionSubjects::none()).unwrap());
        let incomplete = (subjects(&["cargo test"])).with_complete(false);
        assert!(!allowed_by(&p, &incomplete).unwrap());
        assert!(!allowed_by(&[], &subjects(&["x"])).unwrap());
        assert!(allowed_by(&["[bad".into()], &subjects(&["x"])).is_err());
    }
}
