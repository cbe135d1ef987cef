//! Tool-name patterns (`github__*`, `file_?ead`, `grep`) used by policies and filters.

use globset::{Glob, GlobMatcher};

/// A pattern that matches tool names: a plain name or a glob with `*`, `?` and `[...]`.
#[derive(Clone, Debug)]
pub struct NamePattern {
    text: String,
    matcher: Option<GlobMatcher>,
}

/// A pattern that is not a valid glob.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid tool-name pattern `{pattern}`: {reason}")]
pub struct PatternError {
    /// The rejected pattern.
    pub pattern: String,
    /// Why it was rejected.
    pub reason: String,
}

impl NamePattern {
    /// Parses a pattern; a name without glob characters matches only itself.
    pub fn new(text: &str) -> Result<Self, PatternError> {
        let is_glob = text.contains(['*', '?', '[', '{']);
        let matcher = if is_glob {
            let glob = Glob::new(text).map_err(|e| PatternError {
                pattern: text.to_string(),
                reason: e.kind().to_string(),
            })?;
            Some(glob.compile_matcher())
        } else {
            None
        };
        Ok(Self {
            text: text.to_string(),
            matcher,
        })
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        match &self.matcher {
            Some(m) => m.is_match(name),
            None => self.text == name,
        }
    }

    /// Whether the pattern is a plain name.
    pub fn is_exact(&self) -> bool {
        self.matcher.is_none()
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// How specific the pattern is: the number of literal characters. When several patterns
    /// match one name, the most specific wins, so `github__create_*` beats `github__*`.
    pub fn specificity(&self) -> usize {
        self.text
            .chars()
            .filter(|c| !matches!(c, '*' | '?' | '[' | ']' | '{' | '}'))
            .count()
    }
}

/// Whether an include list (empty: everything) and an exclude list let a name through: the
/// one reading of `--tools` / `--exclude` style filters.
pub fn admitted_by(include: &[NamePattern], exclude: &[NamePattern], name: &str) -> bool {
    !exclude.iter().any(|p| p.matches(name))
        && (include.is_empty() || include.iter().any(|p| p.matches(name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_and_exact_names() {
        let glob = NamePattern::new("github__*").expect("valid");
        assert!(glob.matches("github__create_issue"));
        assert!(!glob.matches("gitlab__create_issue"));
        let exact = NamePattern::new("grep").expect("valid");
        assert!(exact.is_exact());
        assert!(exact.matches("grep"));
        assert!(!exact.matches("grep2"));
    }

    #[test]
    fn invalid_glob_is_reported_with_the_pattern() {
        let err = NamePattern::new("a[").expect_err("unclosed class");
        assert_eq!(err.pattern, "a[");
        assert!(
            err.to_string()
                .starts_with("invalid tool-name pattern `a[`")
        );
    }
}
