//! The crate's one error type: a file that cannot be used, with where and why, worded for the
//! person who has to fix it.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_path_to_error::Segment;

use crate::env::{push_index, push_key};

/// A configuration file that cannot be used. Displayed as
/// `{file}:{line}:{column}: at `{field}`: {message}`, leaving out what is unknown.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// The file at fault.
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The field path (`policies.tools.grep`, `filters.include[0]`); empty for the whole file.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        f.write_str(": ")?;
        if !self.field.is_empty() {
            write!(f, "at `{}`: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

impl ConfigError {
    /// An error with no position.
    pub(crate) fn new(file: &Path, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            line: None,
            column: None,
            field: field.into(),
            message: message.into(),
        }
    }

    /// An error from reading a file's text with `serde_json`, at `path` when known. Syntax
    /// errors get no field: the path of a half-read value would mislead.
    pub(crate) fn from_json(
        file: &Path,
        path: Option<&serde_path_to_error::Path>,
        err: &serde_json::Error,
    ) -> Self {
        let text = err.to_string();
        let (line, column, message) = if err.line() == 0 {
            (None, None, text.as_str())
        } else {
            let suffix = format!(" at line {} column {}", err.line(), err.column());
            let message = text.strip_suffix(&suffix).unwrap_or(&text);
            let column = (err.column() > 0).then_some(err.column());
            (Some(err.line()), column, message)
        };
        let mut segments: Vec<&Segment> = match path {
            Some(path) if err.is_data() => path.iter().collect(),
            _ => Vec::new(),
        };
        // An unknown key is a mistake in the object that holds it: name that object.
        if message.starts_with("unknown field `") {
            segments.pop();
        }
        Self {
            file: file.to_path_buf(),
            line,
            column,
            field: field_path(segments),
            message: explain(message),
        }
    }
}

/// Formats a serde path the way the rest of toolmux writes field paths: `a.b[0].c`, and the
/// empty string for the top level.
pub(crate) fn field_path<'p>(segments: impl IntoIterator<Item = &'p Segment>) -> String {
    let mut out = String::new();
    for segment in segments {
        match segment {
            Segment::Seq { index } => push_index(&mut out, *index),
            Segment::Map { key } | Segment::Enum { variant: key } => push_key(&mut out, key),
            Segment::Unknown => push_key(&mut out, "?"),
        }
    }
    out
}

/// Rewrites serde's wording where a person needs more: an unknown key or value gets the closest
/// valid one ("did you mean"), or the list of valid ones when none is close.
fn explain(message: &str) -> String {
    if let Some((field, valid)) = parse_unknown(message, "unknown field `", "fields") {
        return match closest(field, &valid) {
            Some(best) => format!("unknown field `{field}`; did you mean `{best}`?"),
            None if valid.is_empty() => {
                format!("unknown field `{field}`; this object has no fields")
            }
            None => format!(
                "unknown field `{field}`; valid fields are {}",
                listed(&valid)
            ),
        };
    }
    if let Some((value, valid)) = parse_unknown(message, "unknown variant `", "variants") {
        return match closest(value, &valid) {
            Some(best) => format!("invalid value `{value}`; did you mean `{best}`?"),
            None => format!(
                "invalid value `{value}`; expected one of {}",
                listed(&valid)
            ),
        };
    }
    // serde names Rust integer types; a person wants to know what number to write.
    for (rust, plain) in [
        (
            "expected a nonzero u64",
            "expected a whole number greater than 0",
        ),
        (
            "expected a nonzero u32",
            "expected a whole number greater than 0",
        ),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected u32", "expected a whole number, 0 or more"),
        ("expected usize", "expected a whole number, 0 or more"),
    ] {
        if let Some(start) = message.strip_suffix(rust) {
            return format!("{start}{plain}");
        }
    }
    message.to_string()
}

/// Reads serde's "unknown field `x`, expected one of `a`, `b`" (or "expected `a` or `b`", or
/// "there are no fields") into the name and the valid names.
fn parse_unknown<'m>(
    message: &'m str,
    prefix: &str,
    kind: &str,
) -> Option<(&'m str, Vec<&'m str>)> {
    let rest = message.strip_prefix(prefix)?;
    if let Some(name) = rest.strip_suffix(&format!("`, there are no {kind}")) {
        return Some((name, Vec::new()));
    }
    let split = rest.rfind("`, expected ")?;
    let name = &rest[..split];
    let expected = &rest[split + "`, expected ".len()..];
    let valid = expected.split('`').skip(1).step_by(2).collect();
    Some((name, valid))
}

/// The valid name closest to `word`, when one is close enough to be what was meant.
fn closest<'a>(word: &str, valid: &[&'a str]) -> Option<&'a str> {
    let word = word.to_lowercase();
    valid
        .iter()
        .map(|v| (strsim::jaro_winkler(&word, &v.to_lowercase()), *v))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, v)| v)
}

fn listed(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_leaves_out_what_is_unknown() {
        let mut e = ConfigError::new(Path::new("c.json"), "", "bad");
        assert_eq!(e.to_string(), "c.json: bad");
        e.line = Some(3);
        assert_eq!(e.to_string(), "c.json:3: bad");
        e.column = Some(7);
        e.field = "defaults.timeoutMs".into();
        assert_eq!(e.to_string(), "c.json:3:7: at `defaults.timeoutMs`: bad");
    }

    #[test]
    fn unknown_names_get_a_suggestion_or_the_list() {
        assert_eq!(
            explain("unknown field `tiemoutMs`, expected `timeoutMs` or `approvalTimeoutMs`"),
            "unknown field `tiemoutMs`; did you mean `timeoutMs`?"
        );
        assert_eq!(
            explain("unknown field `zzz`, expected one of `a`, `b`, `c`"),
            "unknown field `zzz`; valid fields are `a`, `b`, `c`"
        );
        assert_eq!(
            explain("unknown field `zzz`, there are no fields"),
            "unknown field `zzz`; this object has no fields"
        );
        assert_eq!(
            explain("unknown variant `alow`, expected one of `allow`, `ask`, `deny`"),
            "invalid value `alow`; did you mean `allow`?"
        );
        assert_eq!(
            explain("invalid type: string \"fast\", expected a nonzero u64"),
            "invalid type: string \"fast\", expected a whole number greater than 0"
        );
        assert_eq!(explain("something else"), "something else");
    }
}
