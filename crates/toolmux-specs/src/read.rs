//! The reading operations: list, view, search, board, stats, validate, tokens. Each returns
//! the structured result and a short text for a model.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use toolmux_workspace::ProjectRoot;

use crate::discovery::Limits;
use crate::error::SpecsError;
use crate::file::{self, MAX_SPEC_FILE_BYTES};
use crate::input::{GroupBy, SpecFilter, TagMatch};
use crate::model::{Priority, Spec, Status};
use crate::search::{self, Query};
use crate::store::Snapshot;
use crate::{tokens, validate};

/// One spec in a list.
pub(crate) fn summary(spec: &Spec) -> Value {
    let meta = spec.meta();
    json!({
        "id": spec.id,
        "number": spec.number,
        "title": spec.title(),
        "status": spec.status().as_str(),
        "priority": meta.priority.map(Priority::as_str),
        "tags": meta.tags,
        "assignee": meta.assignee,
        "parent": spec.parent,
        "created": meta.created,
    })
}

fn broken_list(snap: &Snapshot) -> Value {
    Value::Array(
        snap.broken
            .iter()
            .map(|b| json!({"id": b.id, "file": b.rel_file, "line": b.line, "message": b.message}))
            .collect(),
    )
}

impl SpecFilter {
    /// LeanSpec 0.3.0 leaves archived specs out of lists and boards, even when asked for
    /// `status: archived`; values are compared exactly (no aliases, case-sensitive).
    fn admits(&self, spec: &Spec, parent: Option<&str>) -> bool {
        let meta = spec.meta();
        spec.status() != Status::Archived
            && self
                .status
                .as_deref()
                .is_none_or(|s| spec.status().as_str() == s)
            && (self.tags.is_empty()
                || if self.tag_match == TagMatch::Any {
                    self.tags.iter().any(|t| meta.tags.contains(t))
                } else {
                    self.tags.iter().all(|t| meta.tags.contains(t))
                })
            && self
                .priority
                .as_deref()
                .is_none_or(|p| meta.priority.map(Priority::as_str) == Some(p))
            && self
                .assignee
                .as_deref()
                .is_none_or(|a| meta.assignee.as_deref() == Some(a))
            && parent.is_none_or(|p| spec.parent.as_deref() == Some(p))
    }

    fn apply<'a>(&self, snap: &'a Snapshot) -> Result<Vec<&'a Spec>, SpecsError> {
        Ok(self
            .apply_indices(snap)?
            .into_iter()
            .map(|i| &snap.specs[i])
            .collect())
    }

    /// The admitted specs' positions in the snapshot.
    fn apply_indices(&self, snap: &Snapshot) -> Result<Vec<usize>, SpecsError> {
        let parent = match &self.parent {
            Some(p) => Some(snap.lookup(p)?.id.clone()),
            None => None,
        };
        Ok(snap
            .specs
            .iter()
            .enumerate()
            .filter(|(_, s)| self.admits(s, parent.as_deref()))
            .map(|(i, _)| i)
            .collect())
    }

    fn is_empty(&self) -> bool {
        self.status.is_none()
            && self.tags.is_empty()
            && self.priority.is_none()
            && self.assignee.is_none()
            && self.parent.is_none()
    }
}

/// `spec_list`. The unfiltered list is made once per snapshot; a filtered one reuses the
/// snapshot's rows.
pub(crate) fn list(snap: &Snapshot, filter: &SpecFilter) -> Result<(Value, String), SpecsError> {
    if filter.is_empty() {
        if let Some(cached) = snap.derived.list.get() {
            return Ok(cached.clone());
        }
        let made = list_uncached(snap, filter)?;
        return Ok(snap.derived.list.get_or_init(|| made).clone());
    }
    list_uncached(snap, filter)
}

fn list_uncached(snap: &Snapshot, filter: &SpecFilter) -> Result<(Value, String), SpecsError> {
    let admitted = filter.apply_indices(snap)?;
    let rows = snap
        .derived
        .rows
        .get_or_init(|| snap.specs.iter().map(summary).collect());
    let mut text = String::new();
    for &i in &admitted {
        let s = &snap.specs[i];
        text.push_str(&format!("{} [{}] {}\n", s.id, s.status(), s.title()));
    }
    text.push_str(&format!("{} specs", admitted.len()));
    for b in &snap.broken {
        text.push_str(&format!(
            "\nunreadable: {}:{}: {}",
            b.rel_file, b.line, b.message
        ));
    }
    Ok((
        json!({
            "count": admitted.len(),
            "specs": admitted.iter().map(|&i| rows[i].clone()).collect::<Vec<_>>(),
            "errors": broken_list(snap),
        }),
        text,
    ))
}

/// `spec_view`.
pub(crate) fn view(snap: &Snapshot, reference: &str) -> Result<(Value, String), SpecsError> {
    let spec = snap.lookup(reference)?;
    let meta = spec.meta();
    let ids = |v: Vec<&Spec>| v.into_iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    let value = json!({
        "id": spec.id,
        "number": spec.number,
        "title": spec.title(),
        "status": spec.status().as_str(),
        "created": meta.created,
        "priority": meta.priority.map(Priority::as_str),
        "tags": meta.tags,
        "assignee": meta.assignee,
        "parent": spec.parent,
        "children": ids(snap.children(&spec.id)),
        "dependsOn": meta.depends_on,
        "requiredBy": ids(snap.required_by(&spec.id)),
        "subSpecs": spec.sub_specs.iter().map(|s| json!({"name": s.name, "size": s.size})).collect::<Vec<_>>(),
        "frontmatter": Value::Object(meta.fields.clone()),
        "file": spec.rel_file,
        "contentHash": spec.doc.content_hash,
        "content": spec.body(),
    });
    let text = format!(
        "{} — {} [{}] (contentHash {})\n\n{}",
        spec.id,
        spec.title(),
        spec.status(),
        spec.doc.content_hash,
        spec.body()
    );
    Ok((value, text))
}

/// `spec_search`.
pub(crate) fn search(
    snap: &Snapshot,
    query: &str,
    limit: usize,
) -> Result<(Value, String), SpecsError> {
    let parsed = Query::parse(query).map_err(SpecsError::Query)?;
    let results = search::search(&snap.specs, &parsed, limit);
    let mut text = String::new();
    for (spec, score) in &results {
        text.push_str(&format!("{score:>5} {} — {}\n", spec.id, spec.title()));
    }
    text.push_str(&format!("{} results for {query:?}", results.len()));
    let value = json!({
        "query": query,
        "count": results.len(),
        "results": results.iter().map(|(s, score)| json!({
            "id": s.id,
            "title": s.title(),
            "status": s.status().as_str(),
            "score": score,
            "tags": s.meta().tags,
        })).collect::<Vec<_>>(),
    });
    Ok((value, text))
}

/// `spec_board`: groups in LeanSpec 0.3.0's order (status and priority in their fixed order,
/// assignees and tags sorted, parents sorted by id, the "none" group last); empty groups are
/// left out.
pub(crate) fn board(
    snap: &Snapshot,
    group_by: GroupBy,
    filter: &SpecFilter,
) -> Result<(Value, String), SpecsError> {
    let specs = filter.apply(snap)?;
    let mut groups: Vec<(String, Vec<&Spec>)> = Vec::new();
    let by = |key: &dyn Fn(&Spec) -> Vec<String>| {
        let mut map: BTreeMap<String, Vec<&Spec>> = BTreeMap::new();
        let mut none = Vec::new();
        for spec in &specs {
            let keys = key(spec);
            if keys.is_empty() {
                none.push(*spec);
            }
            for k in keys {
                let list = map.entry(k).or_default();
                if !list.iter().any(|s| s.id == spec.id) {
                    list.push(spec);
                }
            }
        }
        (map, none)
    };
    let group_by = match group_by {
        GroupBy::Status => {
            for status in Status::ALL {
                let members: Vec<&Spec> = specs
                    .iter()
                    .copied()
                    .filter(|s| s.status() == status)
                    .collect();
                if !members.is_empty() {
                    groups.push((status.as_str().to_string(), members));
                }
            }
            "status"
        }
        GroupBy::Priority => {
            for p in Priority::ALL {
                let members: Vec<&Spec> = specs
                    .iter()
                    .copied()
                    .filter(|s| s.meta().priority == Some(p))
                    .collect();
                if !members.is_empty() {
                    groups.push((p.as_str().to_string(), members));
                }
            }
            let none: Vec<&Spec> = specs
                .iter()
                .copied()
                .filter(|s| s.meta().priority.is_none())
                .collect();
            if !none.is_empty() {
                groups.push(("(none)".into(), none));
            }
            "priority"
        }
        GroupBy::Assignee | GroupBy::Tag => {
            let tags = group_by == GroupBy::Tag;
            let (map, none) = by(&|s: &Spec| {
                if tags {
                    s.meta().tags.clone()
                } else {
                    s.meta().assignee.clone().into_iter().collect()
                }
            });
            groups.extend(map);
            if !none.is_empty() {
                groups.push(("(none)".into(), none));
            }
            if tags { "tags" } else { "assignee" }
        }
        GroupBy::Parent => {
            let (map, none) = by(&|s: &Spec| s.parent.clone().into_iter().collect());
            for (parent, members) in map {
                let name = match snap.get(&parent) {
                    Some(p) => format!("{} - {}", p.id, p.title()),
                    None => parent,
                };
                groups.push((name, members));
            }
            if !none.is_empty() {
                groups.push(("No parent".into(), none));
            }
            "parent"
        }
    };
    let mut text = String::new();
    for (name, members) in &groups {
        text.push_str(&format!("## {name} ({})\n", members.len()));
        for s in members {
            text.push_str(&format!("- {} {}\n", s.id, s.title()));
        }
    }
    let value = json!({
        "groupBy": group_by,
        "total": specs.len(),
        "groups": groups.iter().map(|(name, members)| json!({
            "name": name,
            "count": members.len(),
            "specs": members.iter().map(|s| summary(s)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    Ok((value, text.trim_end().to_string()))
}

/// `spec_stats` over every readable spec, archived ones included (as LeanSpec counts); made
/// once per snapshot.
pub(crate) fn stats(snap: &Snapshot) -> Result<(Value, String), SpecsError> {
    Ok(snap
        .derived
        .stats
        .get_or_init(|| stats_uncached(snap))
        .clone())
}

fn stats_uncached(snap: &Snapshot) -> (Value, String) {
    let mut by_status = Map::new();
    for status in Status::ALL {
        let n = snap.specs.iter().filter(|s| s.status() == status).count();
        if n > 0 {
            by_status.insert(status.as_str().into(), n.into());
        }
    }
    let mut by_priority = Map::new();
    for p in Priority::ALL {
        let n = snap
            .specs
            .iter()
            .filter(|s| s.meta().priority == Some(p))
            .count();
        if n > 0 {
            by_priority.insert(p.as_str().into(), n.into());
        }
    }
    let no_priority = snap
        .specs
        .iter()
        .filter(|s| s.meta().priority.is_none())
        .count();
    let mut tags: BTreeMap<&str, usize> = BTreeMap::new();
    for spec in &snap.specs {
        let mut seen = Vec::new();
        for tag in &spec.meta().tags {
            if !seen.contains(&tag) {
                seen.push(tag);
                *tags.entry(tag.as_str()).or_default() += 1;
            }
        }
    }
    let mut top: Vec<(&str, usize)> = tags.iter().map(|(t, n)| (*t, *n)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    top.truncate(10);
    let total = snap.specs.len();
    let complete = snap
        .specs
        .iter()
        .filter(|s| s.status() == Status::Complete)
        .count();
    let active = snap
        .specs
        .iter()
        .filter(|s| matches!(s.status(), Status::Planned | Status::InProgress))
        .count();
    let with_deps = snap
        .specs
        .iter()
        .filter(|s| !s.meta().depends_on.is_empty())
        .count();
    let total_deps: usize = snap.specs.iter().map(|s| s.meta().depends_on.len()).sum();
    let with_parent = snap.specs.iter().filter(|s| s.parent.is_some()).count();
    let sub_specs: usize = snap.specs.iter().map(|s| s.sub_specs.len()).sum();
    let completion = if total == 0 {
        0.0
    } else {
        (complete as f64 * 1000.0 / total as f64).round() / 10.0
    };
    let value = json!({
        "total": total,
        "byStatus": by_status,
        "byPriority": by_priority,
        "noPriority": no_priority,
        "byTag": tags,
        "topTags": top.iter().map(|(t, n)| json!({"tag": t, "count": n})).collect::<Vec<_>>(),
        "completionPercentage": completion,
        "activeCount": active,
        "withParent": with_parent,
        "withDependencies": with_deps,
        "totalDependencies": total_deps,
        "subSpecs": sub_specs,
        "unreadable": snap.broken.len(),
    });
    let text = format!(
        "{total} specs, {completion}% complete, {active} active; by status {}; {with_deps} with dependencies; {sub_specs} sub-spec files",
        Value::Object(by_status.clone())
    );
    (value, text)
}

/// `spec_validate` for one spec or all.
pub(crate) fn validate(
    snap: &Snapshot,
    reference: Option<&str>,
    limits: &Limits,
) -> Result<(Value, String), SpecsError> {
    let mut reports = Vec::new();
    let mut push = |id: &str, file: &str, findings: Vec<validate::Finding>| {
        reports.push((id.to_string(), file.to_string(), findings));
    };
    match reference {
        Some(r) => {
            // A broken spec is reported as a finding here, not as a failed call.
            let broken = snap.broken.iter().find(|b| b.id == r.trim());
            if let Some(b) = broken {
                push(&b.id, &b.rel_file, validate::broken(b));
            } else {
                match snap.lookup(r) {
                    Ok(spec) => push(
                        &spec.id,
                        &spec.rel_file,
                        validate::validate(spec, limits).map_err(SpecsError::Internal)?,
                    ),
                    Err(SpecsError::Frontmatter { .. }) => {
                        for b in snap.broken.iter().filter(|b| b.id.contains(r.trim())) {
                            push(&b.id, &b.rel_file, validate::broken(b));
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        None => {
            for spec in &snap.specs {
                push(
                    &spec.id,
                    &spec.rel_file,
                    validate::validate(spec, limits).map_err(SpecsError::Internal)?,
                );
            }
            for b in &snap.broken {
                push(&b.id, &b.rel_file, validate::broken(b));
            }
        }
    }
    let mut errors = 0;
    let mut warnings = 0;
    let mut text = String::new();
    let specs: Vec<Value> = reports
        .iter()
        .map(|(id, file, findings)| {
            for f in findings {
                match f.severity {
                    validate::Severity::Error => errors += 1,
                    validate::Severity::Warning => warnings += 1,
                }
                text.push_str(&format!(
                    "{file}:{}: {}: {} [{}]\n",
                    f.line,
                    f.severity.as_str(),
                    f.message,
                    f.rule
                ));
            }
            json!({
                "id": id,
                "file": file,
                "valid": findings.iter().all(|f| f.severity != validate::Severity::Error),
                "issues": findings.iter().map(|f| json!({
                    "severity": f.severity.as_str(),
                    "rule": f.rule,
                    "line": f.line,
                    "message": f.message,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    text.push_str(&format!(
        "{} specs checked: {errors} errors, {warnings} warnings",
        specs.len()
    ));
    Ok((
        json!({"valid": errors == 0, "errors": errors, "warnings": warnings, "specs": specs}),
        text,
    ))
}

/// `spec_tokens` for a spec (README plus sub-specs), any file under the project root, or
/// every spec.
pub(crate) fn tokens(
    snap: &Snapshot,
    project: &ProjectRoot,
    reference: Option<&str>,
    file: Option<&str>,
) -> Result<(Value, String), SpecsError> {
    let count = |text: &str| tokens::count(text).map_err(SpecsError::Internal);
    let entry = |id: Option<&str>, path: &str, n: usize| json!({"id": id, "file": path, "tokens": n, "rating": tokens::rating(n)});
    let mut items = Vec::new();
    if let Some(file) = file {
        let text = project
            .read_text(file, MAX_SPEC_FILE_BYTES)
            .map_err(|e| SpecsError::Invalid(e.to_string()))?;
        items.push(entry(None, file, count(&text)?));
    } else if let Some(reference) = reference {
        let spec = snap.lookup(reference)?;
        let readme = spec.doc.tokens().map_err(SpecsError::Internal)?;
        let mut total = readme;
        let mut subs = Vec::new();
        if let Some(folder) = spec.file.parent() {
            for sub in &spec.sub_specs {
                let path = folder.join(&sub.name);
                let text = file::read_spec_text(project, &path)?;
                let n = count(&text)?;
                total += n;
                subs.push(json!({"name": sub.name, "tokens": n}));
            }
        }
        let mut item = entry(Some(&spec.id), &spec.rel_file, total);
        item["readmeTokens"] = readme.into();
        item["subSpecs"] = Value::Array(subs);
        items.push(item);
    } else {
        for spec in &snap.specs {
            let n = spec.doc.tokens().map_err(SpecsError::Internal)?;
            items.push(entry(Some(&spec.id), &spec.rel_file, n));
        }
    }
    let total: usize = items
        .iter()
        .filter_map(|i| i["tokens"].as_u64())
        .sum::<u64>() as usize;
    let mut text = String::new();
    for i in &items {
        text.push_str(&format!(
            "{:>6} {} ({})\n",
            i["tokens"],
            i["file"].as_str().unwrap_or(""),
            i["rating"].as_str().unwrap_or("")
        ));
    }
    text.push_str(&format!("{total} tokens (cl100k_base)"));
    Ok((
        json!({"encoding": "cl100k_base", "total": total, "items": items,
               "thresholds": {"optimal": 2000, "good": 3500, "warning": 5000}}),
        text,
    ))
}
