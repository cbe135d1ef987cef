//! LeanSpec's validation rules (v0.2.28), each finding with a file line.
//!
//! Errors: frontmatter that does not parse or lacks `status`/`created`; `created` not
//! `YYYY-MM-DD`; an empty or self `depends_on` entry; no H1; a body over `maxLines` lines;
//! a file over `maxTokens` tokens. Warnings: a tag with a space; more than one H1; an empty
//! `##` section; a body over `warnLines`; a file over `warnTokens`; a spec in the legacy
//! `archived/` folder.

use chrono::NaiveDate;

use crate::discovery::Limits;
use crate::frontmatter;
use crate::model::{BrokenSpec, Spec};

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The spec breaks a rule.
    Error,
    /// The spec should be looked at.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// A short rule name (`created-format`, `no-title`, ...).
    pub rule: &'static str,
    /// The 1-based line in the README.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

fn finding(severity: Severity, rule: &'static str, line: usize, message: String) -> Finding {
    Finding {
        severity,
        rule,
        line,
        message,
    }
}

/// The finding for a spec whose frontmatter cannot be read.
pub fn broken(b: &BrokenSpec) -> Vec<Finding> {
    vec![finding(Severity::Error, b.rule, b.line, b.message.clone())]
}

/// Validates one spec.
pub fn validate(spec: &Spec, limits: &Limits) -> Result<Vec<Finding>, String> {
    use Severity::{Error, Warning};
    let mut out = Vec::new();
    let raw = &spec.doc.raw;
    let split = frontmatter::split(raw).map_err(|(_, m)| m)?;
    let meta = spec.meta();
    let key_line = |key: &str| frontmatter::key_line(&split, key);
    if NaiveDate::parse_from_str(&meta.created, "%Y-%m-%d").is_err() || meta.created.len() != 10 {
        out.push(finding(
            Error,
            "created-format",
            key_line("created"),
            format!(
                "`created` must be a YYYY-MM-DD date, not `{}`",
                meta.created
            ),
        ));
    }
    for dep in &meta.depends_on {
        if dep.trim().is_empty() {
            out.push(finding(
                Error,
                "depends-on-empty",
                key_line("depends_on"),
                "`depends_on` has an empty entry".into(),
            ));
        } else if dep == &spec.id {
            out.push(finding(
                Error,
                "depends-on-self",
                key_line("depends_on"),
                format!("`{}` depends on itself", spec.id),
            ));
        }
    }
    for tag in &meta.tags {
        if tag.contains(char::is_whitespace) {
            out.push(finding(
                Warning,
                "tag-spaces",
                key_line("tags"),
                format!("tag `{tag}` contains spaces; use kebab-case"),
            ));
        }
    }
    // Headings outside code fences.
    let body = spec.body();
    let mut h1 = Vec::new();
    let mut sections: Vec<(usize, String, bool)> = Vec::new();
    let mut fenced = false;
    for (i, line) in body.lines().enumerate() {
        let file_line = spec.doc.body_line + i;
        let t = line.trim_end();
        if t.trim_start().starts_with("```") || t.trim_start().starts_with("~~~") {
            fenced = !fenced;
            if let Some(s) = sections.last_mut() {
                s.2 = true;
            }
            continue;
        }
        if fenced {
            continue;
        }
        if t.starts_with("# ") {
            h1.push(file_line);
            continue;
        }
        if let Some(title) = t.strip_prefix("## ") {
            sections.push((file_line, title.trim().to_string(), false));
            continue;
        }
        if !t.trim().is_empty()
            && let Some(s) = sections.last_mut()
        {
            s.2 = true;
        }
    }
    match h1.as_slice() {
        [] => out.push(finding(
            Error,
            "no-title",
            spec.doc.body_line,
            "the spec has no `# ` title heading".into(),
        )),
        [_] => {}
        [_, rest @ ..] => {
            for line in rest {
                out.push(finding(
                    Warning,
                    "multiple-h1",
                    *line,
                    "more than one `# ` heading; the first is the title".into(),
                ));
            }
        }
    }
    for (line, title, filled) in &sections {
        if !filled {
            out.push(finding(
                Warning,
                "empty-section",
                *line,
                format!("section `{title}` is empty"),
            ));
        }
    }
    let lines = body.lines().count();
    if lines > limits.max_lines {
        out.push(finding(
            Error,
            "max-lines",
            spec.doc.body_line,
            format!(
                "the spec has {lines} lines, over the maximum of {}; split it",
                limits.max_lines
            ),
        ));
    } else if lines > limits.warn_lines {
        out.push(finding(
            Warning,
            "warn-lines",
            spec.doc.body_line,
            format!(
                "the spec has {lines} lines, over {} (maximum {}); consider splitting it",
                limits.warn_lines, limits.max_lines
            ),
        ));
    }
    let count = spec.doc.tokens()?;
    if count > limits.max_tokens {
        out.push(finding(
            Error,
            "max-tokens",
            1,
            format!(
                "the spec has {count} tokens, over the maximum of {}; split it",
                limits.max_tokens
            ),
        ));
    } else if count > limits.warn_tokens {
        out.push(finding(
            Warning,
            "warn-tokens",
            1,
            format!(
                "the spec has {count} tokens, over {} (maximum {})",
                limits.warn_tokens, limits.max_tokens
            ),
        ));
    }
    if spec.in_archived_folder {
        out.push(finding(
            Warning,
            "legacy-archived",
            1,
            "the spec is in the legacy `archived/` folder; set `status: archived` instead".into(),
        ));
    }
    out.sort_by_key(|f| f.line);
    Ok(out)
}
