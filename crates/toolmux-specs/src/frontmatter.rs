//! Frontmatter: finding it the way LeanSpec does, reading its fields the way LeanSpec reads
//! them, and editing it surgically.
//!
//! Edits never re-serialise the YAML. The frontmatter is kept as its lines; a change replaces
//! only the lines of the one top-level key it changes (or appends a key at the end), in the
//! file's own line endings, so comments, unknown keys, key order, quoting and CRLF survive
//! byte for byte. After an edit the new YAML is parsed again and every key is compared with
//! what was intended — the edited ones with their new values, all others with their old
//! ones — so an edit that would change anything else is refused instead of written.

use serde_yaml_ng::{Mapping, Value as Yaml};
use toolmux_core::{MAX_YAML_BYTES, check_yaml_bounds, human_bytes};

use crate::model::{Meta, Priority, Status, Transition};

/// Where the frontmatter and the body are in a file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Split<'a> {
    /// The YAML text between the opening `---` and the `\n` before the closing `---`
    /// (it starts with the rest of the opening line, usually empty).
    pub yaml: &'a str,
    /// Byte offset of `yaml` in the file.
    pub yaml_start: usize,
    /// The body (LeanSpec's definition: after the closing `---`, leading `\n`s removed).
    pub body: &'a str,
    /// Byte offset of the body in the file.
    pub body_start: usize,
    /// The 1-based file line of the opening `---` (YAML line 1 is this line).
    pub open_line: usize,
}

/// A problem with a file's frontmatter: the 1-based file line and a message.
pub(crate) type Problem = (usize, String);

/// What closes a frontmatter: a line starting with `---`.
const CLOSE: &[u8] = b"\n---";

/// Splits a file as LeanSpec's parser does: leading whitespace skipped, `---` opens, the
/// first `\n---` closes.
pub(crate) fn split(text: &str) -> Result<Split<'_>, Problem> {
    let trimmed = text.trim_start();
    let lead = text.len() - trimmed.len();
    let open_line = text[..lead].matches('\n').count() + 1;
    if !trimmed.starts_with("---") {
        return Err((
            open_line,
            "no frontmatter found (the file must start with `---`)".into(),
        ));
    }
    let after = &trimmed[3..];
    // The closing line is looked for in a bounded prefix only: a frontmatter is at most
    // `MAX_YAML_BYTES`, however long the body.
    let window = &after.as_bytes()[..after.len().min(MAX_YAML_BYTES + CLOSE.len())];
    let Some(close) = window.windows(CLOSE.len()).position(|w| w == CLOSE) else {
        let message = if window.len() < after.len() {
            format!(
                "the frontmatter is longer than {} (no closing `---` line within it)",
                human_bytes(MAX_YAML_BYTES as u64)
            )
        } else {
            "unclosed frontmatter block (no closing `---` line)".into()
        };
        return Err((open_line, message));
    };
    let yaml_start = lead + 3;
    let yaml = &text[yaml_start..yaml_start + close];
    let after_close = yaml_start + close + 4;
    let rest = &text[after_close..];
    let body = rest.trim_start_matches('\n');
    let body_start = after_close + (rest.len() - body.len());
    Ok(Split {
        yaml,
        yaml_start,
        body,
        body_start,
        open_line,
    })
}

/// The keys LeanSpec reads itself; every other key is kept as data of its own.
const KNOWN: [&str; 12] = [
    "status",
    "created",
    "priority",
    "tags",
    "depends_on",
    "parent",
    "assignee",
    "reviewer",
    "created_at",
    "updated_at",
    "completed_at",
    "transitions",
];

/// Parses the YAML of a split file into LeanSpec's fields. Errors carry file lines.
pub(crate) fn parse_meta(split: &Split<'_>) -> Result<Meta, Problem> {
    let mapping = parse_mapping(split)?;
    let line_of = |key: &str| key_line(split, key);
    let mut meta = Meta::default();
    let status = mapping
        .get("status")
        .and_then(Yaml::as_str)
        .ok_or_else(|| {
            (
                split.open_line,
                "missing required field `status`".to_string(),
            )
        })?;
    meta.status =
        Some(Status::parse(status).ok_or_else(|| (line_of("status"), Status::invalid(status)))?);
    meta.created = mapping
        .get("created")
        .and_then(Yaml::as_str)
        .ok_or_else(|| {
            (
                split.open_line,
                "missing required field `created` (a `YYYY-MM-DD` string)".to_string(),
            )
        })?
        .to_string();
    if let Some(priority) = mapping.get("priority").and_then(Yaml::as_str) {
        meta.priority = Some(
            Priority::parse(priority)
                .ok_or_else(|| (line_of("priority"), Priority::invalid(priority)))?,
        );
    }
    meta.tags = string_array(mapping.get("tags"));
    meta.depends_on = string_array(mapping.get("depends_on"));
    let text = |key: &str| mapping.get(key).and_then(Yaml::as_str).map(str::to_string);
    meta.parent = text("parent");
    meta.assignee = text("assignee");
    meta.reviewer = text("reviewer");
    let timestamp =
        |key: &str| text(key).filter(|t| chrono::DateTime::parse_from_rfc3339(t).is_ok());
    meta.created_at = timestamp("created_at");
    meta.updated_at = timestamp("updated_at");
    meta.completed_at = timestamp("completed_at");
    if let Some(Yaml::Sequence(items)) = mapping.get("transitions") {
        meta.transitions = items
            .iter()
            .filter_map(|item| {
                let status = Status::parse(item.get("status")?.as_str()?)?;
                let at = item.get("at")?.as_str()?;
                chrono::DateTime::parse_from_rfc3339(at).ok()?;
                Some(Transition {
                    status,
                    at: at.to_string(),
                })
            })
            .collect();
    }
    for (key, value) in &mapping {
        let Some(key) = key.as_str() else { continue };
        meta.keys.push(key.to_string());
        meta.fields.insert(key.to_string(), yaml_to_json(value));
        if !KNOWN.contains(&key) {
            meta.other.insert(key.to_string(), yaml_to_json(value));
        }
    }
    Ok(meta)
}

/// The YAML as a mapping, or the parser's error at its file line.
pub(crate) fn parse_mapping(split: &Split<'_>) -> Result<Mapping, Problem> {
    // Size and depth first, in one linear pass: the parser takes quadratic time on deep
    // nesting before it refuses it.
    check_yaml_bounds(split.yaml).map_err(|e| {
        (
            split.open_line + e.line() - 1,
            format!("invalid YAML in frontmatter: {e}"),
        )
    })?;
    let value: Yaml = serde_yaml_ng::from_str(split.yaml).map_err(|e| {
        let line = e
            .location()
            .map(|l| split.open_line + l.line().saturating_sub(1))
            .unwrap_or(split.open_line);
        (line, format!("invalid YAML in frontmatter: {e}"))
    })?;
    match value {
        Yaml::Mapping(m) => Ok(m),
        // An empty frontmatter (`---` right after `---`) parses as null.
        Yaml::Null => Ok(Mapping::new()),
        _ => Err((
            split.open_line,
            "frontmatter must be a YAML mapping of keys to values".into(),
        )),
    }
}

/// The file line of a top-level key, or the opening line when it is absent.
pub(crate) fn key_line(split: &Split<'_>, key: &str) -> usize {
    split
        .yaml
        .split('\n')
        .position(|line| line_key(line.trim_end_matches('\r')) == Some(key))
        .map(|i| split.open_line + i)
        .unwrap_or(split.open_line)
}

/// LeanSpec's reading of `tags` and `depends_on`: a list (non-strings dropped), a JSON array
/// string, or a comma-separated string.
fn string_array(value: Option<&Yaml>) -> Vec<String> {
    match value {
        Some(Yaml::Sequence(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Some(Yaml::String(s)) => {
            if s.starts_with('[')
                && s.ends_with(']')
                && let Ok(list) = serde_json::from_str::<Vec<String>>(s)
            {
                return list;
            }
            s.split(',').map(|t| t.trim().to_string()).collect()
        }
        _ => Vec::new(),
    }
}

/// A YAML value as JSON, for display. Keys that are not strings are written as YAML text.
pub(crate) fn yaml_to_json(value: &Yaml) -> serde_json::Value {
    use serde_json::Value as J;
    match value {
        Yaml::Null => J::Null,
        Yaml::Bool(b) => J::Bool(*b),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                J::from(i)
            } else if let Some(u) = n.as_u64() {
                J::from(u)
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or(J::Null, J::Number)
            }
        }
        Yaml::String(s) => J::String(s.clone()),
        Yaml::Sequence(items) => J::Array(items.iter().map(yaml_to_json).collect()),
        Yaml::Mapping(m) => J::Object(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        other => serde_yaml_ng::to_string(other)
                            .map(|s| s.trim_end().to_string())
                            .unwrap_or_default(),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Yaml::Tagged(tagged) => yaml_to_json(&tagged.value),
    }
}

/// The key of a top-level `key: value` line, if the line is one.
fn line_key(line: &str) -> Option<&str> {
    let first = line.chars().next()?;
    if first.is_whitespace() || matches!(first, '#' | '-' | '[' | '{' | '%') {
        return None;
    }
    let colon = line.find(':')?;
    // `key:` must be followed by the end of the line or whitespace to be a mapping key.
    let after = &line[colon + 1..];
    if !(after.is_empty() || after.starts_with([' ', '\t'])) {
        return None;
    }
    let key = line[..colon].trim();
    Some(
        key.strip_prefix('"')
            .and_then(|k| k.strip_suffix('"'))
            .or_else(|| key.strip_prefix('\'').and_then(|k| k.strip_suffix('\'')))
            .unwrap_or(key),
    )
}

/// One line of the frontmatter and the terminator that followed it (`\n`, `\r\n`, or for
/// the last line `\r` or nothing: its `\n` belongs to the closing `\n---`).
#[derive(Clone, Debug)]
struct Line {
    text: String,
    term: String,
}

/// An edit of one file's frontmatter, checked before it is rendered.
#[derive(Debug)]
pub(crate) struct Editor {
    lines: Vec<Line>,
    eol: &'static str,
    before: Mapping,
    /// The values the edited keys must have afterwards (`None`: removed).
    expected: Vec<(String, Option<Yaml>)>,
}

impl Editor {
    /// An editor for the frontmatter of `split`, whose file uses `eol`.
    pub(crate) fn new(split: &Split<'_>, eol: &'static str) -> Result<Self, Problem> {
        let before = parse_mapping(split)?;
        let mut lines = Vec::new();
        let mut rest = split.yaml;
        loop {
            match rest.find('\n') {
                Some(i) => {
                    let (text, term) = match rest[..i].strip_suffix('\r') {
                        Some(t) => (t, "\r\n"),
                        None => (&rest[..i], "\n"),
                    };
                    lines.push(Line {
                        text: text.to_string(),
                        term: term.to_string(),
                    });
                    rest = &rest[i + 1..];
                }
                None => {
                    let (text, term) = match rest.strip_suffix('\r') {
                        Some(t) => (t, "\r"),
                        None => (rest, ""),
                    };
                    lines.push(Line {
                        text: text.to_string(),
                        term: term.to_string(),
                    });
                    break;
                }
            }
        }
        Ok(Self {
            lines,
            eol,
            before,
            expected: Vec::new(),
        })
    }

    /// The value a key has now (before this edit).
    pub(crate) fn current(&self, key: &str) -> Option<&Yaml> {
        self.before.get(key)
    }

    /// The lines `[start, end)` of a top-level key's entry: its line and the indented or
    /// `- ` lines under it, trailing blank lines left out.
    fn entry(&self, key: &str) -> Option<(usize, usize)> {
        let start = self
            .lines
            .iter()
            .position(|l| line_key(&l.text) == Some(key))?;
        let mut end = start + 1;
        while end < self.lines.len() {
            let text = &self.lines[end].text;
            let continues = text.trim().is_empty()
                || text.starts_with([' ', '\t'])
                || (text.starts_with('-') && !text.starts_with("---"));
            if !continues {
                break;
            }
            end += 1;
        }
        while end > start + 1 && self.lines[end - 1].text.trim().is_empty() {
            end -= 1;
        }
        Some((start, end))
    }

    /// Replaces lines `[start, end)` with `new` (terminators handled).
    fn splice(&mut self, start: usize, end: usize, new: Vec<String>) {
        let last_term = self.lines[end - 1].term.clone();
        let count = new.len();
        let replacement: Vec<Line> = new
            .into_iter()
            .enumerate()
            .map(|(i, text)| Line {
                text,
                term: if i + 1 == count {
                    last_term.clone()
                } else {
                    self.eol.to_string()
                },
            })
            .collect();
        if replacement.is_empty() && start > 0 && end == self.lines.len() {
            self.lines[start - 1].term = last_term;
        }
        self.lines.splice(start..end, replacement);
    }

    /// Inserts lines after line `after` (keeping the file's last terminator last).
    fn insert_after(&mut self, after: usize, new: Vec<String>) {
        let term = std::mem::replace(&mut self.lines[after].term, self.eol.to_string());
        let count = new.len();
        let inserted: Vec<Line> = new
            .into_iter()
            .enumerate()
            .map(|(i, text)| Line {
                text,
                term: if i + 1 == count {
                    term.clone()
                } else {
                    self.eol.to_string()
                },
            })
            .collect();
        self.lines.splice(after + 1..after + 1, inserted);
    }

    /// Sets a key's whole entry to `lines`, in place, or at the end when it is new.
    fn set_entry(&mut self, key: &str, lines: Vec<String>, value: Yaml) {
        match self.entry(key) {
            Some((start, end)) => self.splice(start, end, lines),
            None => {
                let last = self
                    .lines
                    .iter()
                    .rposition(|l| !l.text.trim().is_empty())
                    .unwrap_or(0);
                self.insert_after(last, lines);
            }
        }
        self.expected.retain(|(k, _)| k != key);
        self.expected.push((key.to_string(), Some(value)));
    }

    /// Sets a string value.
    pub(crate) fn set_str(&mut self, key: &str, value: &str) {
        let line = format!("{key}: {}", scalar(value, false));
        self.set_entry(key, vec![line], Yaml::String(value.to_string()));
    }

    /// Sets a list of strings, as a block list when the key was one (with its indentation),
    /// else as a flow list.
    pub(crate) fn set_list(&mut self, key: &str, items: &[String]) {
        let value = Yaml::Sequence(items.iter().cloned().map(Yaml::String).collect());
        let block_prefix = self.entry(key).and_then(|(start, end)| {
            let head = &self.lines[start].text;
            let rest = head[head.find(':').map_or(head.len(), |c| c + 1)..].trim();
            if !(rest.is_empty() || rest.starts_with('#')) {
                return None;
            }
            self.lines[start + 1..end].iter().find_map(|l| {
                let t = l.text.trim_start();
                (t.starts_with("- ") || t == "-")
                    .then(|| l.text[..l.text.len() - t.len()].to_string())
            })
        });
        let lines = match block_prefix {
            Some(prefix) if !items.is_empty() => std::iter::once(format!("{key}:"))
                .chain(
                    items
                        .iter()
                        .map(|i| format!("{prefix}- {}", scalar(i, false))),
                )
                .collect(),
            _ => {
                let inner: Vec<String> = items.iter().map(|i| scalar(i, true)).collect();
                vec![format!("{key}: [{}]", inner.join(", "))]
            }
        };
        self.set_entry(key, lines, value);
    }

    /// Removes a key.
    pub(crate) fn remove(&mut self, key: &str) {
        if let Some((start, end)) = self.entry(key) {
            self.splice(start, end, Vec::new());
        }
        self.expected.retain(|(k, _)| k != key);
        self.expected.push((key.to_string(), None));
    }

    /// Appends `{status, at}` to `transitions`, after its last item when it is a block list,
    /// else by writing the list out as a block list.
    pub(crate) fn push_transition(&mut self, status: Status, at: &str) -> Result<(), String> {
        let mut items = match self.before.get("transitions") {
            None | Some(Yaml::Null) => Vec::new(),
            Some(Yaml::Sequence(items)) => items.clone(),
            Some(_) => return Err("`transitions` is not a list; fix it by hand first".into()),
        };
        let mut item = Mapping::new();
        item.insert("status".into(), Yaml::String(status.as_str().into()));
        item.insert("at".into(), Yaml::String(at.to_string()));
        items.push(Yaml::Mapping(item));
        let entry = self.entry("transitions");
        let block = entry.and_then(|(start, end)| {
            let head = &self.lines[start].text;
            let rest = head[head.find(':').map_or(head.len(), |c| c + 1)..].trim();
            if !rest.is_empty() {
                return None;
            }
            let first = self.lines[start + 1..end].iter().find_map(|l| {
                let t = l.text.trim_start();
                t.starts_with("- ")
                    .then(|| l.text[..l.text.len() - t.len()].to_string())
            })?;
            Some((end, first))
        });
        let value = Yaml::Sequence(items.clone());
        match block {
            Some((end, prefix)) => {
                let new = vec![
                    format!("{prefix}- status: {}", status.as_str()),
                    format!("{prefix}  at: {}", scalar(at, false)),
                ];
                self.insert_after(end - 1, new);
                self.expected.retain(|(k, _)| k != "transitions");
                self.expected.push(("transitions".into(), Some(value)));
            }
            None => {
                let mut lines = vec!["transitions:".to_string()];
                for item in &items {
                    let text = serde_yaml_ng::to_string(&vec![item.clone()])
                        .map_err(|e| format!("cannot write a transition: {e}"))?;
                    lines.extend(text.lines().map(str::to_string));
                }
                self.set_entry("transitions", lines, value);
            }
        }
        Ok(())
    }

    /// The new YAML text, after checking that it parses and that exactly the intended keys
    /// changed.
    pub(crate) fn render(&self) -> Result<String, String> {
        let mut out = String::new();
        for line in &self.lines {
            out.push_str(&line.text);
            out.push_str(&line.term);
        }
        check_yaml_bounds(&out).map_err(|e| {
            format!("the edited frontmatter would be refused ({e}); nothing was written")
        })?;
        let after: Yaml = serde_yaml_ng::from_str(&out).map_err(|e| {
            format!("the edited frontmatter would not parse ({e}); nothing was written")
        })?;
        let after = match after {
            Yaml::Mapping(m) => m,
            Yaml::Null => Mapping::new(),
            _ => return Err("the edited frontmatter is not a mapping; nothing was written".into()),
        };
        for (key, value) in &self.before {
            let edited = key
                .as_str()
                .is_some_and(|k| self.expected.iter().any(|(e, _)| e == k));
            if !edited && after.get(key) != Some(value) {
                return Err(format!(
                    "editing the frontmatter would change `{}`; nothing was written",
                    key.as_str().unwrap_or("?")
                ));
            }
        }
        for (key, value) in &self.expected {
            if after.get(key.as_str()) != value.as_ref() {
                return Err(format!(
                    "editing `{key}` did not give the intended value; nothing was written"
                ));
            }
        }
        Ok(out)
    }
}

/// A string as a YAML scalar: plain when that reads back as the same string, else
/// double-quoted (JSON's escaping is valid YAML). In a flow list, `,[]{}` force quotes.
pub(crate) fn scalar(value: &str, flow: bool) -> String {
    let plain_chars = value.chars().all(|c| {
        c.is_alphanumeric()
            || matches!(c, ' ' | '_' | '.' | '/' | '@' | '+' | '-' | '(' | ')' | ':')
    });
    let quoted = value.is_empty()
        || !plain_chars
        || value.starts_with([' ', '-', '@'])
        || value.ends_with(' ')
        || (flow && value.contains([',', '[', ']', '{', '}']));
    // Plain only when YAML reads it back as this very string (not a number, bool or null).
    let plain = !quoted
        && matches!(serde_yaml_ng::from_str::<Yaml>(value), Ok(Yaml::String(s)) if s == value);
    if plain {
        value.to_string()
    } else {
        serde_json::to_string(value).unwrap_or_else(|_| format!("{value:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(text: &str, f: impl FnOnce(&mut Editor)) -> String {
        let split = split(text).unwrap();
        let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let mut editor = Editor::new(&split, eol).unwrap();
        f(&mut editor);
        let yaml = editor.render().unwrap();
        format!(
            "{}{}{}",
            &text[..split.yaml_start],
            yaml,
            &text[split.yaml_start + split.yaml.len()..]
        )
    }

    #[test]
    fn split_follows_leanspec() {
        let s = split("\n\n---\nstatus: planned\n---\n\n\n# T\n").unwrap();
        assert_eq!(s.yaml, "\nstatus: planned");
        assert_eq!(s.body, "# T\n");
        assert_eq!(s.open_line, 3);
        let crlf = split("---\r\nstatus: planned\r\n---\r\n\r\n# T\r\n").unwrap();
        assert_eq!(crlf.yaml, "\r\nstatus: planned\r");
        assert_eq!(crlf.body, "\r\n\r\n# T\r\n");
        assert_eq!(split("# no").unwrap_err().0, 1);
        assert_eq!(
            split("---\nstatus: x\n").unwrap_err().1,
            "unclosed frontmatter block (no closing `---` line)"
        );
    }

    #[test]
    fn yaml_errors_name_the_file_line() {
        let text = "---\nstatus: planned\ncreated: 2025-01-02\ntags: [unclosed\n---\n# B\n";
        let err = parse_meta(&split(text).unwrap()).unwrap_err();
        assert_eq!(err.0, 5, "{}", err.1);
        assert!(
            err.1.starts_with("invalid YAML in frontmatter: "),
            "{}",
            err.1
        );
        let bad = "---\nstatus: planned\ncreated: 2025-01-02\npriority: huge\n---\n";
        assert_eq!(
            parse_meta(&split(bad).unwrap()).unwrap_err(),
            (
                4,
                "invalid priority `huge` (valid: low, medium, high, critical)".to_string()
            )
        );
    }

    #[test]
    fn unquoted_dates_are_strings_and_arrays_take_three_shapes() {
        let text = "---\nstatus: In_Progress\ncreated: 2025-01-02\npriority: urgent\ntags: a, b c\ndepends_on: '[\"001-x\", \"002\"]'\nx: {a: 1}\n---\n";
        let meta = parse_meta(&split(text).unwrap()).unwrap();
        assert_eq!(meta.status, Some(Status::InProgress));
        assert_eq!(meta.created, "2025-01-02");
        assert_eq!(meta.priority, Some(Priority::Critical));
        assert_eq!(meta.tags, ["a", "b c"]);
        assert_eq!(meta.depends_on, ["001-x", "002"]);
        assert_eq!(meta.other["x"], serde_json::json!({"a": 1}));
        assert_eq!(
            meta.keys,
            ["status", "created", "priority", "tags", "depends_on", "x"]
        );
    }

    #[test]
    fn edits_touch_only_their_lines_and_keep_crlf() {
        let text = "---\r\n# keep me\r\nstatus: planned  # trailing\r\nweird: {x: 1}\r\ntags:\r\n  - a\r\n  - b\r\ncreated: 2025-01-01\r\n---\r\n\r\n# T\r\n";
        let out = edit(text, |e| {
            e.set_str("status", "in-progress");
            e.set_list("tags", &["a".into(), "b".into(), "needs space".into()]);
            e.set_str("updated_at", "2026-01-01T00:00:00.000Z");
            e.push_transition(Status::InProgress, "2026-01-01T00:00:00.000Z")
                .unwrap();
        });
        assert_eq!(
            out,
            "---\r\n# keep me\r\nstatus: in-progress\r\nweird: {x: 1}\r\ntags:\r\n  - a\r\n  - b\r\n  - needs space\r\ncreated: 2025-01-01\r\nupdated_at: 2026-01-01T00:00:00.000Z\r\ntransitions:\r\n- status: in-progress\r\n  at: 2026-01-01T00:00:00.000Z\r\n---\r\n\r\n# T\r\n"
        );
    }

    #[test]
    fn transitions_append_to_a_block_list_and_flow_lists_stay_flow() {
        let text = "---\nstatus: planned\ntags: [x]\ntransitions:\n  - status: planned\n    at: 2025-01-01T00:00:00Z\nz: 1\n---\n";
        let out = edit(text, |e| {
            e.push_transition(Status::Complete, "2026-01-01T00:00:00Z")
                .unwrap();
            e.set_list("tags", &["x".into(), "a,b".into(), "true".into()]);
            e.remove("z");
        });
        assert_eq!(
            out,
            "---\nstatus: planned\ntags: [x, \"a,b\", \"true\"]\ntransitions:\n  - status: planned\n    at: 2025-01-01T00:00:00Z\n  - status: complete\n    at: 2026-01-01T00:00:00Z\n---\n"
        );
    }

    #[test]
    fn scalars_are_quoted_only_when_needed() {
        assert_eq!(scalar("alice", false), "alice");
        assert_eq!(scalar("Carol Smith", false), "Carol Smith");
        assert_eq!(scalar("123", false), "\"123\"");
        assert_eq!(scalar("null", false), "\"null\"");
        assert_eq!(scalar("a: b", false), "\"a: b\"");
        assert_eq!(scalar("", false), "\"\"");
        assert_eq!(scalar("2025-01-01", false), "2025-01-01");
    }
}
