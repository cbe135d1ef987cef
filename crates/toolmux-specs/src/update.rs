//! The writing operations: update, create, relationships.
//!
//! Every write reads the file again under the spec's lock (never the cache), checks
//! `expectedContentHash` against that, edits the frontmatter surgically and the body by
//! LeanSpec's rules, and writes the result atomically. A file whose frontmatter does not
//! parse is refused, never "fixed".

use std::fs;
use std::path::Path;

use chrono::{SecondsFormat, Utc};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolmux_workspace::ProjectRoot;

use crate::body::{self, MatchMode, SectionMode};
use crate::error::SpecsError;
use crate::frontmatter::{self, Editor};
use crate::model::{Priority, Spec, Status};
use crate::store::{Snapshot, Store, hash_body, number_of};
use crate::write::{Locks, write_atomic};

/// A change of one frontmatter key.
#[derive(Clone, Debug)]
pub(crate) enum FmOp {
    Str(&'static str, String),
    List(&'static str, Vec<String>),
    Remove(&'static str),
}

/// What an edit of a spec decides, given the file as it is now.
#[derive(Debug, Default)]
pub(crate) struct Change {
    /// The new body, when it changes.
    pub body: Option<String>,
    /// Frontmatter changes.
    pub ops: Vec<FmOp>,
    /// The new status, when it changes (adds a transition and timestamps).
    pub status: Option<Status>,
}

/// The file as read under the lock.
pub(crate) struct Current<'a> {
    pub body: &'a str,
    pub eol: &'static str,
    pub meta: crate::model::Meta,
}

/// The result of a write.
#[derive(Debug)]
pub(crate) struct Written {
    pub previous_hash: String,
    pub content_hash: String,
}

/// Edits one spec file under its lock. `decide` sees the current file and returns the change.
pub(crate) fn edit_spec(
    store: &Store,
    locks: &Locks,
    spec: &Spec,
    expected_hash: Option<&str>,
    decide: impl FnOnce(&Current<'_>) -> Result<Change, SpecsError>,
) -> Result<Written, SpecsError> {
    let folder = spec
        .file
        .parent()
        .ok_or_else(|| SpecsError::Invalid(format!("{} has no folder", spec.file.display())))?;
    let rel = Path::new(store.specs_dir().file_name().unwrap_or_default()).join(&spec.rel_file);
    let frontmatter_error = |(line, message): (usize, String)| SpecsError::Frontmatter {
        path: rel.clone(),
        line,
        message,
    };
    let written = locks.with(folder, || {
        let raw = crate::file::read_spec_text(store.project(), &spec.file)?;
        let split = frontmatter::split(&raw).map_err(frontmatter_error)?;
        let meta = frontmatter::parse_meta(&split).map_err(frontmatter_error)?;
        let previous_hash = hash_body(split.body);
        if let Some(expected) = expected_hash
            && expected != previous_hash
        {
            return Err(SpecsError::Conflict {
                spec: spec.id.clone(),
                expected: expected.to_string(),
                current: previous_hash,
            });
        }
        let eol = body::eol_of(&raw);
        let current = Current {
            body: split.body,
            eol,
            meta,
        };
        let change = decide(&current)?;
        let mut editor = Editor::new(&split, eol).map_err(frontmatter_error)?;
        for op in &change.ops {
            match op {
                FmOp::Str(key, value) => editor.set_str(key, value),
                FmOp::List(key, items) => editor.set_list(key, items),
                FmOp::Remove(key) => editor.remove(key),
            }
        }
        let now = Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true);
        if editor.current("created_at").is_none() {
            editor.set_str("created_at", &now);
        }
        editor.set_str("updated_at", &now);
        if let Some(status) = change.status {
            editor
                .push_transition(status, &now)
                .map_err(SpecsError::Invalid)?;
            if status == Status::Complete && current.meta.completed_at.is_none() {
                editor.set_str("completed_at", &now);
            }
        }
        let yaml = editor.render().map_err(SpecsError::Internal)?;
        let new_body = change.body.as_deref().unwrap_or(split.body);
        let yaml_end = split.yaml_start + split.yaml.len();
        let text = format!(
            "{}{}{}{}",
            &raw[..split.yaml_start],
            yaml,
            &raw[yaml_end..split.body_start],
            new_body
        );
        write_atomic(&spec.file, &text, false)?;
        Ok(Written {
            previous_hash,
            content_hash: hash_body(new_body),
        })
    });
    store.forget(&spec.file);
    written
}

/// The arguments of `spec_update`: its input schema is derived from this struct.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct UpdateArgs {
    /// The spec: its number (`42` or `042`), folder name, or a fragment of the name only one spec has.
    pub spec: String,
    /// New status.
    #[schemars(extend("enum" = crate::input::written_statuses()))]
    pub status: Option<String>,
    /// New priority.
    #[schemars(extend("enum" = crate::input::written_priorities()))]
    pub priority: Option<String>,
    /// New assignee; an empty string removes it.
    pub assignee: Option<String>,
    /// Tags to add.
    #[serde(default)]
    pub add_tags: Vec<String>,
    /// Tags to remove.
    #[serde(default)]
    pub remove_tags: Vec<String>,
    /// Text replacements in the body, applied in order.
    #[serde(default)]
    pub replacements: Vec<Replacement>,
    /// Edits of `## ` sections, by heading.
    #[serde(default, rename = "sectionUpdates")]
    pub sections: Vec<SectionUpdate>,
    /// Check or uncheck `- [ ]` items found by their text.
    #[serde(default, rename = "checklistToggles")]
    pub checklist: Vec<ChecklistToggle>,
    /// A whole new body (the title heading is kept). Other body edits are then ignored.
    pub content: Option<String>,
    /// The `contentHash` you read; the update is refused if the body changed since.
    #[serde(rename = "expectedContentHash")]
    pub expected_hash: Option<String>,
    /// Skip the completion and draft-stage checks. Default false.
    #[serde(default)]
    pub force: bool,
}

/// One text replacement of `spec_update`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Replacement {
    /// The exact text to find.
    pub old_string: String,
    /// Its replacement.
    pub new_string: String,
    /// `unique` (default): exactly one occurrence must exist; `all`; `first`.
    #[serde(default)]
    pub match_mode: MatchMode,
}

/// One section edit of `spec_update`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SectionUpdate {
    /// The heading text (case-insensitive).
    pub section: String,
    /// The new content.
    pub content: String,
    /// Default `replace`.
    #[serde(default)]
    pub mode: SectionMode,
}

/// One checklist toggle of `spec_update`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ChecklistToggle {
    /// Text the item contains (case-insensitive).
    pub item_text: String,
    /// Checked or not.
    pub checked: bool,
}

/// `spec_update`.
pub(crate) fn update(
    store: &Store,
    locks: &Locks,
    snap: &Snapshot,
    args: UpdateArgs,
) -> Result<Value, SpecsError> {
    let spec = snap.lookup(&args.spec)?;
    let status = args
        .status
        .as_deref()
        .map(|s| Status::parse(s).ok_or_else(|| SpecsError::Invalid(Status::invalid(s))))
        .transpose()?;
    let priority = args
        .priority
        .as_deref()
        .map(|p| Priority::parse(p).ok_or_else(|| SpecsError::Invalid(Priority::invalid(p))))
        .transpose()?;
    let nothing = status.is_none()
        && priority.is_none()
        && args.assignee.is_none()
        && args.add_tags.is_empty()
        && args.remove_tags.is_empty()
        && args.replacements.is_empty()
        && args.sections.is_empty()
        && args.checklist.is_empty()
        && args.content.is_none();
    if nothing {
        return Err(SpecsError::Invalid("no updates specified".into()));
    }
    let incomplete_children: Vec<String> = snap
        .children(&spec.id)
        .into_iter()
        .filter(|c| !matches!(c.status(), Status::Complete | Status::Archived))
        .map(|c| format!("{} ({})", c.id, c.status()))
        .collect();
    let mut changed: Vec<String> = Vec::new();
    let mut replaced: Vec<Value> = Vec::new();
    let mut toggled: Vec<Value> = Vec::new();
    let written = edit_spec(store, locks, spec, args.expected_hash.as_deref(), |cur| {
        let mut change = Change::default();
        let mut new_body = cur.body.to_string();
        if let Some(content) = &args.content {
            new_body = body::replace_keeping_title(cur.body, content, cur.eol);
            changed.push("content".into());
        } else {
            for r in &args.replacements {
                let new = body::to_eol(&r.new_string, cur.eol);
                let (next, lines) = body::replace(&new_body, &r.old_string, &new, r.match_mode)
                    .map_err(SpecsError::Invalid)?;
                new_body = next;
                replaced.push(json!({"oldString": r.old_string, "lines": lines}));
            }
            for s in &args.sections {
                new_body = body::update_section(&new_body, &s.section, &s.content, s.mode, cur.eol)
                    .map_err(SpecsError::Invalid)?;
                changed.push(format!("section {}", s.section));
            }
            for c in &args.checklist {
                let (next, line) =
                    body::toggle_checklist(&new_body, &c.item_text, c.checked, cur.eol)
                        .map_err(SpecsError::Invalid)?;
                new_body = next;
                toggled.push(json!({"itemText": c.item_text, "checked": c.checked, "line": line}));
            }
        }
        if !replaced.is_empty() {
            changed.push(format!("replacements: {}", replaced.len()));
        }
        if !toggled.is_empty() {
            changed.push(format!("checklist toggles: {}", toggled.len()));
        }
        let before = cur.meta.status();
        if let Some(status) = status
            && status != before
        {
            if before == Status::Draft
                && matches!(status, Status::InProgress | Status::Complete)
                && !args.force
            {
                return Err(SpecsError::Invalid(format!(
                    "cannot skip the `planned` stage from draft for {}; set force to override",
                    spec.id
                )));
            }
            if status == Status::Complete && !args.force {
                let open = body::open_items(&new_body);
                if !open.is_empty() {
                    let items: Vec<String> = open
                        .iter()
                        .map(|i| format!("line {}: {}", i.line, i.text))
                        .collect();
                    return Err(SpecsError::Invalid(format!(
                        "{} has {} unchecked checklist item(s): {}; check them or set force",
                        spec.id,
                        open.len(),
                        items.join("; ")
                    )));
                }
                if !incomplete_children.is_empty() {
                    return Err(SpecsError::Invalid(format!(
                        "{} has incomplete child spec(s): {}; complete them or set force",
                        spec.id,
                        incomplete_children.join(", ")
                    )));
                }
            }
            change.ops.push(FmOp::Str("status", status.as_str().into()));
            change.status = Some(status);
            changed.push(format!("status: {before} → {status}"));
        }
        if let Some(priority) = priority {
            change
                .ops
                .push(FmOp::Str("priority", priority.as_str().into()));
            changed.push(format!("priority: {priority}"));
        }
        if let Some(assignee) = &args.assignee {
            if assignee.is_empty() {
                change.ops.push(FmOp::Remove("assignee"));
                changed.push("assignee removed".into());
            } else {
                change.ops.push(FmOp::Str("assignee", assignee.clone()));
                changed.push(format!("assignee: {assignee}"));
            }
        }
        if !args.add_tags.is_empty() || !args.remove_tags.is_empty() {
            let mut tags = cur.meta.tags.clone();
            for tag in &args.add_tags {
                if !tags.contains(tag) {
                    tags.push(tag.clone());
                    changed.push(format!("+tag: {tag}"));
                }
            }
            for tag in &args.remove_tags {
                if let Some(i) = tags.iter().position(|t| t == tag) {
                    tags.remove(i);
                    changed.push(format!("-tag: {tag}"));
                }
            }
            if tags != cur.meta.tags {
                change.ops.push(FmOp::List("tags", tags));
            }
        }
        if new_body != cur.body {
            change.body = Some(new_body);
        }
        if change.body.is_none() && change.ops.is_empty() {
            return Err(SpecsError::Invalid(format!(
                "nothing to change in {}: it already is as asked",
                spec.id
            )));
        }
        Ok(change)
    })?;
    Ok(json!({
        "id": spec.id,
        "file": spec.rel_file,
        "changed": changed,
        "replacements": replaced,
        "checklistToggles": toggled,
        "previousContentHash": written.previous_hash,
        "contentHash": written.content_hash,
    }))
}

/// The arguments of `spec_create`: its input schema is derived from this struct.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CreateArgs {
    /// Kebab-case name (`search-index`); a leading `NNN-` is dropped.
    pub name: String,
    /// The title (the `# ` heading). Default: the name in title case.
    pub title: Option<String>,
    /// Initial status. Default `planned` (`draft` when the config enables draft status).
    #[schemars(extend("enum" = crate::input::statuses()))]
    pub status: Option<String>,
    /// Priority. Default `medium`.
    #[schemars(extend("enum" = crate::input::priorities()))]
    pub priority: Option<String>,
    /// A template file in `.lean-spec/templates/`. Default: the config's, else the built-in one.
    pub template: Option<String>,
    /// The body in markdown instead of the template.
    pub content: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The parent (umbrella) spec.
    pub parent: Option<String>,
    /// Specs this one depends on.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Who owns it.
    pub assignee: Option<String>,
}

/// The built-in template (LeanSpec's sections).
const TEMPLATE: &str = "# {title}\n\n## Overview\n\n<!-- What and why -->\n\n## Design\n\n<!-- How -->\n\n## Plan\n\n- [ ] First step\n\n## Test\n\n- [ ] How it is checked\n\n## Notes\n\n<!-- Anything else -->\n";

/// The largest template a new spec is made from.
const TEMPLATE_MAX_BYTES: u64 = 1024 * 1024;

/// `spec_create`.
pub(crate) fn create(
    store: &Store,
    project: &ProjectRoot,
    config: &crate::discovery::Config,
    snap: &Snapshot,
    args: CreateArgs,
) -> Result<Value, SpecsError> {
    let name = strip_number(args.name.trim());
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        || name.starts_with('-')
    {
        return Err(SpecsError::Invalid(format!(
            "invalid spec name `{}`: use kebab-case (lowercase letters, digits and `-`)",
            args.name
        )));
    }
    let status = match args.status.as_deref() {
        Some(s) => Status::parse(s).ok_or_else(|| SpecsError::Invalid(Status::invalid(s)))?,
        None if config.draft_status => Status::Draft,
        None => Status::Planned,
    };
    let priority = match args.priority.as_deref() {
        Some(p) => Priority::parse(p).ok_or_else(|| SpecsError::Invalid(Priority::invalid(p)))?,
        None => Priority::Medium,
    };
    let parent = args
        .parent
        .as_deref()
        .map(|p| snap.lookup(p).map(|s| s.id.clone()))
        .transpose()?;
    let depends_on = args
        .depends_on
        .iter()
        .map(|d| snap.lookup(d).map(|s| s.id.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let next = snap
        .specs
        .iter()
        .map(|s| s.id.as_str())
        .chain(snap.broken.iter().map(|b| b.id.as_str()))
        .filter_map(number_of)
        .max()
        .unwrap_or(0)
        + 1;
    let id = format!("{next:03}-{name}");
    let title = args.title.clone().unwrap_or_else(|| title_case(name));
    let today = Utc::now().format("%Y-%m-%d").to_string();
    let body = match &args.content {
        Some(content) if content.lines().any(|l| l.starts_with("# ")) => content.clone(),
        Some(content) => format!("# {title}\n\n{}", content.trim_start()),
        None => {
            let template = match args
                .template
                .as_deref()
                .or(config.default_template.as_deref())
            {
                Some(file) => {
                    if file.contains("..") || file.starts_with('/') {
                        return Err(SpecsError::Invalid(format!("invalid template `{file}`")));
                    }
                    // Read beneath the project root like every path a caller names: a link in
                    // `.lean-spec/templates/` leads nowhere outside it.
                    let path = format!(".lean-spec/templates/{file}");
                    project
                        .read_text(&path, TEMPLATE_MAX_BYTES)
                        .map_err(|e| SpecsError::Invalid(format!("template `{file}`: {e}")))?
                }
                None => TEMPLATE.to_string(),
            };
            fill(&template, name, &title, status, priority, &today)
        }
    };
    // A template may carry its own frontmatter: keep its body only.
    let body = match frontmatter::split(&body) {
        Ok(split) if body.trim_start().starts_with("---") => split.body.to_string(),
        _ => body,
    };
    let mut fm = format!(
        "---\nstatus: {}\ncreated: '{today}'\npriority: {}\n",
        status.as_str(),
        priority.as_str()
    );
    if !args.tags.is_empty() {
        let tags: Vec<String> = args
            .tags
            .iter()
            .map(|t| frontmatter::scalar(t, true))
            .collect();
        fm.push_str(&format!("tags: [{}]\n", tags.join(", ")));
    }
    if let Some(parent) = &parent {
        fm.push_str(&format!("parent: {}\n", frontmatter::scalar(parent, false)));
    }
    if !depends_on.is_empty() {
        fm.push_str("depends_on:\n");
        for dep in &depends_on {
            fm.push_str(&format!("  - {}\n", frontmatter::scalar(dep, false)));
        }
    }
    if let Some(assignee) = &args.assignee {
        fm.push_str(&format!(
            "assignee: {}\n",
            frontmatter::scalar(assignee, false)
        ));
    }
    fm.push_str(&format!(
        "created_at: {}\n---\n\n",
        Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
    ));
    let text = fm + &body;
    crate::write::check_size(&text)?;
    // Check what we are about to write reads back as the spec we mean.
    crate::store::parse_doc(text.clone(), &id).map_err(|(line, message)| {
        SpecsError::Invalid(format!(
            "the new spec would not parse (line {line}: {message})"
        ))
    })?;
    let folder = store.specs_dir().join(&id);
    fs::create_dir(&folder).map_err(|e| SpecsError::io(&folder, e))?;
    let file = folder.join("README.md");
    let written = write_atomic(&file, &text, true);
    // The new folder must be seen on the next call even when the specs directory's time
    // does not move (a change within the same clock tick as the last listing).
    store.forget(&file);
    written?;
    Ok(json!({
        "id": id,
        "number": next,
        "title": title,
        "status": status.as_str(),
        "priority": priority.as_str(),
        "file": format!("{id}/README.md"),
        "contentHash": hash_body(&body),
    }))
}

fn strip_number(name: &str) -> &str {
    let digits = name.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && name[digits..].starts_with('-') {
        &name[digits + 1..]
    } else {
        name
    }
}

fn title_case(name: &str) -> String {
    name.split('-')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Fills LeanSpec's placeholders, `{x}` and `{{x}}` alike.
fn fill(
    template: &str,
    name: &str,
    title: &str,
    status: Status,
    priority: Priority,
    date: &str,
) -> String {
    let mut out = template.to_string();
    for (key, value) in [
        ("name", name),
        ("title", title),
        ("status", status.as_str()),
        ("priority", priority.as_str()),
        ("date", date),
        ("created", date),
    ] {
        out = out
            .replace(&format!("{{{{{key}}}}}"), value)
            .replace(&format!("{{{key}}}"), value);
    }
    out
}

/// The kinds of link `spec_relationships` manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LinkType {
    Parent,
    Child,
    DependsOn,
}

/// `spec_relationships` add/remove.
pub(crate) fn relate(
    store: &Store,
    locks: &Locks,
    snap: &Snapshot,
    reference: &str,
    add: bool,
    link: LinkType,
    target: &str,
) -> Result<Value, SpecsError> {
    let spec = snap.lookup(reference)?;
    let target = snap.lookup(target)?;
    if spec.id == target.id {
        return Err(SpecsError::Invalid(format!(
            "a spec cannot be linked to itself ({})",
            spec.id
        )));
    }
    // For parent/child the edited file is the child's.
    let (edited, other) = match link {
        LinkType::Parent | LinkType::DependsOn => (spec, target),
        LinkType::Child => (target, spec),
    };
    if add {
        match link {
            LinkType::Parent | LinkType::Child => {
                // `other` becomes `edited`'s parent: refused if `edited` is among `other`'s
                // ancestors (or is `other`).
                let mut cursor = Some(other.id.clone());
                let mut seen = Vec::new();
                while let Some(id) = cursor {
                    if id == edited.id {
                        return Err(SpecsError::Invalid(format!(
                            "making {} the parent of {} would create a cycle: {} → {}",
                            other.id,
                            edited.id,
                            seen.join(" → "),
                            edited.id
                        )));
                    }
                    if seen.contains(&id) {
                        break;
                    }
                    seen.push(id.clone());
                    cursor = snap.get(&id).and_then(|s| s.parent.clone());
                }
            }
            LinkType::DependsOn => {
                if let Some(path) = dependency_path(snap, &other.id, &edited.id) {
                    return Err(SpecsError::Invalid(format!(
                        "{} depending on {} would create a cycle: {} → {}",
                        edited.id,
                        other.id,
                        edited.id,
                        path.join(" → ")
                    )));
                }
            }
        }
    }
    let edited_id = edited.id.clone();
    let other_id = other.id.clone();
    edit_spec(store, locks, edited, None, |cur| {
        let mut change = Change::default();
        match link {
            LinkType::Parent | LinkType::Child => {
                let current = cur.meta.parent.clone();
                if add {
                    if current.as_deref() == Some(other_id.as_str()) {
                        return Err(SpecsError::Invalid(format!(
                            "{other_id} already is the parent of {edited_id}"
                        )));
                    }
                    change.ops.push(FmOp::Str("parent", other_id.clone()));
                } else {
                    let resolved = snap.get(&edited_id).and_then(|s| s.parent.clone());
                    if resolved.as_deref() != Some(other_id.as_str()) {
                        return Err(SpecsError::Invalid(format!(
                            "{other_id} is not the parent of {edited_id}"
                        )));
                    }
                    change.ops.push(FmOp::Remove("parent"));
                }
            }
            LinkType::DependsOn => {
                let mut deps = cur.meta.depends_on.clone();
                if add {
                    if deps.contains(&other_id) {
                        return Err(SpecsError::Invalid(format!(
                            "{edited_id} already depends on {other_id}"
                        )));
                    }
                    deps.push(other_id.clone());
                    change.ops.push(FmOp::List("depends_on", deps));
                } else {
                    let before = deps.len();
                    deps.retain(|d| d != &other_id);
                    if deps.len() == before {
                        return Err(SpecsError::Invalid(format!(
                            "{edited_id} does not depend on {other_id}"
                        )));
                    }
                    if deps.is_empty() {
                        change.ops.push(FmOp::Remove("depends_on"));
                    } else {
                        change.ops.push(FmOp::List("depends_on", deps));
                    }
                }
            }
        }
        Ok(change)
    })?;
    Ok(json!({
        "id": spec.id,
        "action": if add { "add" } else { "remove" },
        "type": match link { LinkType::Parent => "parent", LinkType::Child => "child", LinkType::DependsOn => "depends_on" },
        "target": target.id,
        "edited": edited_id,
    }))
}

/// A chain of `depends_on` links from `from` to `to`, if there is one.
fn dependency_path(snap: &Snapshot, from: &str, to: &str) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_string()]];
    let mut seen = std::collections::HashSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last()?.clone();
        if last == to {
            return Some(path);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        if let Some(spec) = snap.get(&last) {
            for dep in &spec.meta().depends_on {
                let mut next = path.clone();
                next.push(dep.clone());
                stack.push(next);
            }
        }
    }
    None
}
