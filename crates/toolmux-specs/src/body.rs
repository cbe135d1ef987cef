//! Edits of a spec's body: string replacements, section updates, checklist toggles and
//! whole-body replacement, with LeanSpec's matching rules. Unlike LeanSpec, which rejoins
//! lines with `\n`, the file's own line ending is kept and so is its final newline; new text
//! is written with the file's line ending.

use std::sync::LazyLock;

use regex::Regex;

/// How many occurrences of `oldString` a replacement may and does replace.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Deserialize,
    serde::Serialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum MatchMode {
    /// Exactly one occurrence must exist.
    #[default]
    Unique,
    /// Every occurrence.
    All,
    /// The first occurrence.
    First,
}

/// How a section's content changes.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    serde::Deserialize,
    serde::Serialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SectionMode {
    /// Replace what is under the heading.
    #[default]
    Replace,
    /// Add after it.
    Append,
    /// Add before it.
    Prepend,
}

/// Converts `\n` line endings of new text to the file's.
pub(crate) fn to_eol(text: &str, eol: &str) -> String {
    if eol == "\n" {
        text.replace("\r\n", "\n")
    } else {
        text.replace("\r\n", "\n").replace('\n', eol)
    }
}

/// The file's line ending: CRLF when its first line ends with one.
pub(crate) fn eol_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

fn line_of(text: &str, index: usize) -> usize {
    text[..index].matches('\n').count() + 1
}

/// Applies one replacement; returns the 1-based body lines of the occurrences found.
pub fn replace(
    body: &str,
    old: &str,
    new: &str,
    mode: MatchMode,
) -> Result<(String, Vec<usize>), String> {
    if old.is_empty() {
        return Err("oldString cannot be empty".into());
    }
    let starts: Vec<usize> = body.match_indices(old).map(|(i, _)| i).collect();
    if starts.is_empty() {
        return Err(format!(
            "Found 0 matches for oldString {old:?}. Check for typos or whitespace."
        ));
    }
    let lines: Vec<usize> = starts.iter().map(|&i| line_of(body, i)).collect();
    let replaced = match mode {
        MatchMode::Unique if starts.len() != 1 => {
            let list: Vec<String> = lines.iter().map(usize::to_string).collect();
            return Err(format!(
                "Found {} matches for oldString {old:?} at lines: {}. Add more context to disambiguate, or use matchMode all or first.",
                starts.len(),
                list.join(", ")
            ));
        }
        MatchMode::Unique | MatchMode::First => {
            let at = starts[0];
            format!("{}{}{}", &body[..at], new, &body[at + old.len()..])
        }
        MatchMode::All => body.replace(old, new),
    };
    Ok((replaced, lines))
}

/// Lines with their terminators; the body's missing final newline is remembered.
struct Lines {
    lines: Vec<String>,
    final_newline: bool,
}

impl Lines {
    fn new(body: &str, eol: &'static str) -> Self {
        let final_newline = body.is_empty() || body.ends_with('\n');
        let mut lines: Vec<String> = body.split_inclusive('\n').map(str::to_string).collect();
        if let Some(last) = lines.last_mut()
            && !last.ends_with('\n')
        {
            last.push_str(eol);
        }
        Self {
            lines,
            final_newline,
        }
    }

    fn text(i: &str) -> &str {
        i.trim_end_matches('\n').trim_end_matches('\r')
    }

    fn finish(self) -> String {
        let mut out: String = self.lines.concat();
        if !self.final_newline {
            let cut = out.trim_end_matches('\n').trim_end_matches('\r').len();
            out.truncate(cut);
        }
        out
    }
}

/// Replaces, appends to or prepends to the content under a `## ` heading (matched
/// case-insensitively), as LeanSpec does: the new content is set off by blank lines.
pub fn update_section(
    body: &str,
    section: &str,
    content: &str,
    mode: SectionMode,
    eol: &'static str,
) -> Result<String, String> {
    let mut lines = Lines::new(body, eol);
    let target = section.trim().trim_start_matches('#').trim().to_lowercase();
    let start = lines
        .lines
        .iter()
        .position(|l| {
            Lines::text(l)
                .trim()
                .strip_prefix("## ")
                .is_some_and(|t| t.trim().to_lowercase() == target)
        })
        .map(|i| i + 1)
        .ok_or_else(|| format!("Section not found: {section}"))?;
    let end = lines.lines[start..]
        .iter()
        .position(|l| Lines::text(l).trim().starts_with("## "))
        .map_or(lines.lines.len(), |i| start + i);
    let new: Vec<String> = if content.trim().is_empty() {
        Vec::new()
    } else {
        content
            .trim()
            .lines()
            .map(|l| format!("{l}{eol}"))
            .collect()
    };
    let blank = eol.to_string();
    match mode {
        SectionMode::Append | SectionMode::Prepend if new.is_empty() => {}
        SectionMode::Append => {
            let insert = std::iter::once(blank.clone())
                .chain(new)
                .chain(std::iter::once(blank));
            lines.lines.splice(end..end, insert);
        }
        SectionMode::Prepend => {
            let insert = std::iter::once(blank.clone())
                .chain(new)
                .chain(std::iter::once(blank));
            lines.lines.splice(start..start, insert);
        }
        SectionMode::Replace => {
            let insert = std::iter::once(blank.clone())
                .chain(new)
                .chain(std::iter::once(blank));
            lines.lines.splice(start..end, insert);
        }
    }
    Ok(lines.finish())
}

static INLINE_MARKUP: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"`([^`]*)`|\*\*([^*]*)\*\*|\*([^*]*)\*|_([^_]*)_").ok());

/// Checks or unchecks the first `- [ ]` / `- [x]` item whose text contains `item`
/// (case-insensitive, inline markup ignored). Returns the body and the 1-based body line.
pub fn toggle_checklist(
    body: &str,
    item: &str,
    checked: bool,
    eol: &'static str,
) -> Result<(String, usize), String> {
    let mut lines = Lines::new(body, eol);
    let target = item.trim().to_lowercase();
    let index = lines
        .lines
        .iter()
        .position(|line| {
            let normalized = Lines::text(line).trim().to_lowercase();
            (normalized.starts_with("- [ ]") || normalized.starts_with("- [x]"))
                && (normalized.contains(&target)
                    || INLINE_MARKUP.as_ref().is_some_and(|re| {
                        re.replace_all(&normalized, "$1$2$3$4").contains(&target)
                    }))
        })
        .ok_or_else(|| format!("Checklist item not found: {item}"))?;
    let line = &lines.lines[index];
    let box_at = ["- [ ]", "- [x]", "- [X]"]
        .iter()
        .filter_map(|b| line.find(b))
        .min()
        .ok_or_else(|| format!("Checklist item not found: {item}"))?;
    let mark = if checked { "- [x]" } else { "- [ ]" };
    let updated = format!("{}{}{}", &line[..box_at], mark, &line[box_at + 5..]);
    lines.lines[index] = updated;
    Ok((lines.finish(), index + 1))
}

/// A whole new body keeps the spec's title: when the old body starts with an H1 and the new
/// one starts with a different H1 or none, the old H1 is put first (LeanSpec's rule).
pub fn replace_keeping_title(old_body: &str, new_body: &str, eol: &str) -> String {
    let new_body = to_eol(new_body, eol);
    let first_line = |body: &str| -> Option<String> {
        let line = body.lines().find(|l| !l.trim().is_empty())?;
        line.trim().starts_with("# ").then(|| line.to_string())
    };
    let Some(title) = first_line(old_body) else {
        return new_body;
    };
    if first_line(&new_body).is_some_and(|t| t.trim() == title.trim()) {
        return new_body;
    }
    // Drop the new body's own leading H1 (and one blank line after it).
    let mut rest: Vec<&str> = new_body.split_inclusive('\n').collect();
    if let Some(i) = rest.iter().position(|l| !l.trim().is_empty())
        && rest[i].trim().starts_with("# ")
    {
        rest.remove(i);
        if rest.get(i).is_some_and(|l| l.trim().is_empty()) {
            rest.remove(i);
        }
    }
    let rest = rest.concat();
    let rest = rest.trim_start_matches(['\r', '\n']);
    if rest.is_empty() {
        format!("{}{eol}", title.trim_end())
    } else {
        format!("{}{eol}{eol}{rest}", title.trim_end())
    }
}

/// An unchecked checklist item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenItem {
    /// Its text (after the box).
    pub text: String,
    /// The 1-based body line.
    pub line: usize,
    /// The `## ` section it is under.
    pub section: Option<String>,
}

/// The unchecked `- [ ]` / `* [ ]` items outside code fences.
pub fn open_items(body: &str) -> Vec<OpenItem> {
    let mut out = Vec::new();
    let mut section = None;
    let mut fenced = false;
    for (i, line) in body.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(h) = t.strip_prefix("## ") {
            section = Some(h.trim().to_string());
        }
        if let Some(text) = t.strip_prefix("- [ ]").or_else(|| t.strip_prefix("* [ ]")) {
            out.push(OpenItem {
                text: text.trim().to_string(),
                line: i + 1,
                section: section.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacements_follow_the_match_mode() {
        let body = "a x\nb x\n";
        assert_eq!(
            replace(body, "x", "y", MatchMode::Unique).unwrap_err(),
            "Found 2 matches for oldString \"x\" at lines: 1, 2. Add more context to disambiguate, or use matchMode all or first."
        );
        assert_eq!(
            replace(body, "x", "y", MatchMode::First).unwrap(),
            ("a y\nb x\n".to_string(), vec![1, 2])
        );
        assert_eq!(
            replace(body, "x", "y", MatchMode::All).unwrap().0,
            "a y\nb y\n"
        );
        assert_eq!(
            replace(body, "b x", "c", MatchMode::Unique).unwrap().0,
            "a x\nc\n"
        );
        assert!(replace(body, "zz", "y", MatchMode::All).is_err());
    }

    #[test]
    fn sections_keep_crlf_and_other_sections() {
        let body = "# T\r\n\r\n## Plan\r\n\r\nold\r\n\r\n## Notes\r\n\r\nn\r\n";
        assert_eq!(
            update_section(body, "plan", "new 1\nnew 2", SectionMode::Replace, "\r\n").unwrap(),
            "# T\r\n\r\n## Plan\r\n\r\nnew 1\r\nnew 2\r\n\r\n## Notes\r\n\r\nn\r\n"
        );
        assert_eq!(
            update_section(body, "Notes", "more", SectionMode::Append, "\r\n").unwrap(),
            "# T\r\n\r\n## Plan\r\n\r\nold\r\n\r\n## Notes\r\n\r\nn\r\n\r\nmore\r\n\r\n"
        );
        assert_eq!(
            update_section("## A\nx", "A", "first", SectionMode::Prepend, "\n").unwrap(),
            "## A\n\nfirst\n\nx"
        );
        assert_eq!(
            update_section(body, "Missing", "x", SectionMode::Replace, "\r\n").unwrap_err(),
            "Section not found: Missing"
        );
    }

    #[test]
    fn checklist_items_are_found_by_text_ignoring_markup() {
        let body = "## Plan\n- [ ] write `parser` code\n- [x] Add **tests**\n";
        let (out, line) = toggle_checklist(body, "write parser", true, "\n").unwrap();
        assert_eq!(
            (out.as_str(), line),
            (
                "## Plan\n- [x] write `parser` code\n- [x] Add **tests**\n",
                2
            )
        );
        let (out, line) = toggle_checklist(body, "add tests", false, "\n").unwrap();
        assert_eq!(
            (out.as_str(), line),
            (
                "## Plan\n- [ ] write `parser` code\n- [ ] Add **tests**\n",
                3
            )
        );
        assert_eq!(
            toggle_checklist(body, "deploy", true, "\n").unwrap_err(),
            "Checklist item not found: deploy"
        );
        assert_eq!(
            open_items(body),
            [OpenItem {
                text: "write `parser` code".into(),
                line: 2,
                section: Some("Plan".into())
            }]
        );
    }

    #[test]
    fn a_new_body_keeps_the_title() {
        assert_eq!(
            replace_keeping_title("# Old\n\nx\n", "# New\n\nbody\n", "\n"),
            "# Old\n\nbody\n"
        );
        assert_eq!(
            replace_keeping_title("# Old\n", "body\n", "\n"),
            "# Old\n\nbody\n"
        );
        assert_eq!(
            replace_keeping_title("# Old\r\n", "# Old\nbody\n", "\r\n"),
            "# Old\r\nbody\r\n"
        );
        assert_eq!(
            replace_keeping_title("no title\n", "body\n", "\n"),
            "body\n"
        );
    }
}
