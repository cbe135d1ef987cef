//! The tools: descriptors (input and output schemas, annotations) and the dispatch from a
//! call's arguments to the operations.
//!
//! Reads are annotated read-only, so the policy layer (`PolicyRules::resolve`) allows them by
//! default; writes are annotated destructive, so it asks by default. `spec_relationships`
//! both reads (`view`) and writes (`add`, `remove`); one tool has one policy, so it is
//! annotated as a write and asks.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use toolmux_core::{ToolAnnotations, ToolDescriptor, input_schema, parse_arguments};

use crate::Inner;
use crate::error::SpecsError;
use crate::input::{
    LinkAction, NoArgs, RelationshipArgs, SearchArgs, SpecBoard, SpecFilter, TokensArgs,
    ValidateArgs, ViewArgs,
};
use crate::read;
use crate::store::Snapshot;
use crate::update::{self, CreateArgs, UpdateArgs};

pub(crate) const SOURCE_ID: &str = "specs";

/// Every tool name, in listing order.
pub const TOOL_NAMES: [&str; 10] = [
    "spec_list",
    "spec_view",
    "spec_search",
    "spec_create",
    "spec_update",
    "spec_validate",
    "spec_tokens",
    "spec_board",
    "spec_stats",
    "spec_relationships",
];

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn nullable_string() -> Value {
    json!({"type": ["string", "null"]})
}

fn summary_schema() -> Value {
    object(
        json!({
            "id": {"type": "string"},
            "number": {"type": ["integer", "null"]},
            "title": {"type": "string"},
            "status": {"type": "string"},
            "priority": nullable_string(),
            "tags": {"type": "array", "items": {"type": "string"}},
            "assignee": nullable_string(),
            "parent": nullable_string(),
            "created": {"type": "string"},
        }),
        &[
            "id", "number", "title", "status", "priority", "tags", "assignee", "parent", "created",
        ],
    )
}

fn descriptor(
    name: &str,
    title: &str,
    description: &str,
    input: Value,
    output: Value,
    writes: bool,
) -> ToolDescriptor {
    let mut d = ToolDescriptor::new(SOURCE_ID, name, description, input);
    d.title = Some(title.to_string());
    d.output_schema = Some(Arc::new(output));
    d.annotations = if writes {
        ToolAnnotations {
            read_only_hint: Some(false),
            destructive_hint: Some(true),
            idempotent_hint: Some(false),
            open_world_hint: Some(false),
        }
    } else {
        ToolAnnotations::read_only()
    };
    // Reads share a snapshot and may run side by side; writes serialise on their spec's lock.
    d.parallel = !writes;
    d
}

/// The pack's descriptors.
pub(crate) fn descriptors() -> Vec<ToolDescriptor> {
    let errors_schema = json!({"type": "array", "items": object(json!({
        "id": {"type": "string"}, "file": {"type": "string"}, "line": {"type": "integer"}, "message": {"type": "string"},
    }), &["id", "file", "line", "message"])});
    let issue = object(
        json!({
            "severity": {"type": "string", "enum": ["error", "warning"]},
            "rule": {"type": "string"},
            "line": {"type": "integer"},
            "message": {"type": "string"},
        }),
        &["severity", "rule", "line", "message"],
    );
    vec![
        descriptor(
            "spec_list",
            "List specs",
            "List the project's specs (LeanSpec format) in number order, with status, priority, tags, assignee and parent. Specs whose frontmatter cannot be read are reported under `errors`.",
            input_schema::<SpecFilter>(),
            object(
                json!({"count": {"type": "integer"}, "specs": {"type": "array", "items": summary_schema()}, "errors": errors_schema}),
                &["count", "specs", "errors"],
            ),
            false,
        ),
        descriptor(
            "spec_view",
            "View a spec",
            "Read one spec: frontmatter, body, sub-spec files, parent, children, dependencies and dependents, and its `contentHash` (pass it to spec_update as `expectedContentHash`).",
            input_schema::<ViewArgs>(),
            object(
                json!({
                    "id": {"type": "string"}, "number": {"type": ["integer", "null"]}, "title": {"type": "string"},
                    "status": {"type": "string"}, "created": {"type": "string"}, "priority": nullable_string(),
                    "tags": {"type": "array", "items": {"type": "string"}}, "assignee": nullable_string(),
                    "parent": nullable_string(),
                    "children": {"type": "array", "items": {"type": "string"}},
                    "dependsOn": {"type": "array", "items": {"type": "string"}},
                    "requiredBy": {"type": "array", "items": {"type": "string"}},
                    "subSpecs": {"type": "array", "items": object(json!({"name": {"type": "string"}, "size": {"type": "integer"}}), &["name", "size"])},
                    "frontmatter": {"type": "object"},
                    "file": {"type": "string"}, "contentHash": {"type": "string"}, "content": {"type": "string"},
                }),
                &[
                    "id",
                    "number",
                    "title",
                    "status",
                    "created",
                    "priority",
                    "tags",
                    "assignee",
                    "parent",
                    "children",
                    "dependsOn",
                    "requiredBy",
                    "subSpecs",
                    "frontmatter",
                    "file",
                    "contentHash",
                    "content",
                ],
            ),
            false,
        ),
        descriptor(
            "spec_search",
            "Search specs",
            "Search specs with LeanSpec's query syntax and scoring: words (all must match), AND, OR, NOT, \"exact phrases\", status:, tag:, priority:, title:, created:>=2025-01 (also >, <, <=, a year, month or day), fuzzy term~ or term~2. Best matches first.",
            input_schema::<SearchArgs>(),
            object(
                json!({
                    "query": {"type": "string"}, "count": {"type": "integer"},
                    "results": {"type": "array", "items": object(json!({
                        "id": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "string"},
                        "score": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
                    }), &["id", "title", "status", "score", "tags"])},
                }),
                &["query", "count", "results"],
            ),
            false,
        ),
        descriptor(
            "spec_create",
            "Create a spec",
            "Create a spec folder `NNN-name/README.md` with the next number, the template (or your content), and frontmatter.",
            input_schema::<CreateArgs>(),
            object(
                json!({
                    "id": {"type": "string"}, "number": {"type": "integer"}, "title": {"type": "string"},
                    "status": {"type": "string"}, "priority": {"type": "string"}, "file": {"type": "string"},
                    "contentHash": {"type": "string"},
                }),
                &[
                    "id",
                    "number",
                    "title",
                    "status",
                    "priority",
                    "file",
                    "contentHash",
                ],
            ),
            true,
        ),
        descriptor(
            "spec_update",
            "Update a spec",
            "Change a spec: status (recorded in `transitions`, with timestamps), priority, assignee, tags, text replacements, section edits, checklist toggles or the whole body. Pass `expectedContentHash` from spec_view so a concurrent change is refused instead of overwritten. Completing a spec with unchecked items or incomplete children, or moving a draft straight to in-progress/complete, needs `force`.",
            input_schema::<UpdateArgs>(),
            object(
                json!({
                    "id": {"type": "string"}, "file": {"type": "string"},
                    "changed": {"type": "array", "items": {"type": "string"}},
                    "replacements": {"type": "array", "items": {"type": "object"}},
                    "checklistToggles": {"type": "array", "items": {"type": "object"}},
                    "previousContentHash": {"type": "string"}, "contentHash": {"type": "string"},
                }),
                &[
                    "id",
                    "file",
                    "changed",
                    "replacements",
                    "checklistToggles",
                    "previousContentHash",
                    "contentHash",
                ],
            ),
            true,
        ),
        descriptor(
            "spec_validate",
            "Validate specs",
            "Check one spec or all against LeanSpec's rules: frontmatter, `created` date, dependencies, title, empty sections, tags, line and token limits. Errors and warnings with line numbers.",
            input_schema::<ValidateArgs>(),
            object(
                json!({
                    "valid": {"type": "boolean"}, "errors": {"type": "integer"}, "warnings": {"type": "integer"},
                    "specs": {"type": "array", "items": object(json!({
                        "id": {"type": "string"}, "file": {"type": "string"}, "valid": {"type": "boolean"},
                        "issues": {"type": "array", "items": issue},
                    }), &["id", "file", "valid", "issues"])},
                }),
                &["valid", "errors", "warnings", "specs"],
            ),
            false,
        ),
        descriptor(
            "spec_tokens",
            "Count spec tokens",
            "Count cl100k_base tokens of a spec (README and sub-specs), of any file in the project, or of every spec, with LeanSpec's ratings (≤2000 optimal, ≤3500 good, ≤5000 warning, above excessive).",
            input_schema::<TokensArgs>(),
            object(
                json!({
                    "encoding": {"type": "string"}, "total": {"type": "integer"},
                    "items": {"type": "array", "items": {"type": "object"}},
                    "thresholds": {"type": "object"},
                }),
                &["encoding", "total", "items", "thresholds"],
            ),
            false,
        ),
        descriptor(
            "spec_board",
            "Spec board",
            "The project board: specs grouped by status, priority, assignee, tag or parent (archived specs left out, as in LeanSpec).",
            input_schema::<SpecBoard>(),
            object(
                json!({
                    "groupBy": {"type": "string"}, "total": {"type": "integer"},
                    "groups": {"type": "array", "items": object(json!({
                        "name": {"type": "string"}, "count": {"type": "integer"},
                        "specs": {"type": "array", "items": summary_schema()},
                    }), &["name", "count", "specs"])},
                }),
                &["groupBy", "total", "groups"],
            ),
            false,
        ),
        descriptor(
            "spec_stats",
            "Spec statistics",
            "Counts over every spec: by status, priority and tag, completion, active specs, dependencies, parents, sub-spec files.",
            input_schema::<NoArgs>(),
            object(
                json!({
                    "total": {"type": "integer"}, "byStatus": {"type": "object"}, "byPriority": {"type": "object"},
                    "noPriority": {"type": "integer"}, "byTag": {"type": "object"},
                    "topTags": {"type": "array", "items": {"type": "object"}},
                    "completionPercentage": {"type": "number"}, "activeCount": {"type": "integer"},
                    "withParent": {"type": "integer"}, "withDependencies": {"type": "integer"},
                    "totalDependencies": {"type": "integer"}, "subSpecs": {"type": "integer"},
                    "unreadable": {"type": "integer"},
                }),
                &[
                    "total",
                    "byStatus",
                    "byPriority",
                    "noPriority",
                    "byTag",
                    "topTags",
                    "completionPercentage",
                    "activeCount",
                    "withParent",
                    "withDependencies",
                    "totalDependencies",
                    "subSpecs",
                    "unreadable",
                ],
            ),
            false,
        ),
        descriptor(
            "spec_relationships",
            "Spec relationships",
            "View a spec's parent, children, dependencies and dependents, or add or remove a parent, child or depends_on link. Links that would make a cycle are refused.",
            input_schema::<RelationshipArgs>(),
            object(
                json!({
                    "id": {"type": "string"}, "action": {"type": "string"},
                    "parent": nullable_string(),
                    "children": {"type": "array", "items": {"type": "string"}},
                    "dependsOn": {"type": "array", "items": {"type": "string"}},
                    "requiredBy": {"type": "array", "items": {"type": "string"}},
                    "type": {"type": "string"}, "target": {"type": "string"}, "edited": {"type": "string"},
                }),
                &["id", "action"],
            ),
            true,
        ),
    ]
}

/// Runs `f` on a fresh snapshot while holding the specs directory's lock (this process's
/// mutex and a `flock` for other toolmux processes), for the writes whose checks span specs:
/// numbering a new one, and links that must not close a cycle. Updates of one spec take only
/// that spec's lock, always after this one, so the two never wait on each other in a circle.
fn with_specs_dir_locked<T>(
    inner: &Inner,
    f: impl FnOnce(&Snapshot) -> Result<T, SpecsError>,
) -> Result<T, SpecsError> {
    inner.locks.with(inner.store.specs_dir(), || {
        let snap = inner.store.snapshot()?;
        f(&snap)
    })
}

/// Runs a tool: `None` when the pack has no such tool.
pub(crate) fn run(
    inner: &Inner,
    tool: &str,
    args: &Map<String, Value>,
) -> Option<Result<(Value, String), SpecsError>> {
    if !TOOL_NAMES.contains(&tool) {
        return None;
    }
    Some(run_known(inner, tool, args))
}

/// A call's arguments as the tool's input struct.
fn parse<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T, SpecsError> {
    parse_arguments(args).map_err(SpecsError::Invalid)
}

fn run_known(
    inner: &Inner,
    tool: &str,
    args: &Map<String, Value>,
) -> Result<(Value, String), SpecsError> {
    // Creates and link edits take their snapshot under the specs directory's lock; every
    // other tool reads the one taken when it starts.
    let snapshot = || inner.store.snapshot();
    match tool {
        "spec_list" => read::list(&*snapshot()?, &parse(args)?),
        "spec_view" => {
            let ViewArgs { spec } = parse(args)?;
            read::view(&*snapshot()?, &spec)
        }
        "spec_search" => {
            let SearchArgs { query, limit } = parse(args)?;
            read::search(
                &*snapshot()?,
                &query,
                usize::try_from(limit).unwrap_or(usize::MAX),
            )
        }
        "spec_board" => {
            let SpecBoard { group_by, filter } = parse(args)?;
            read::board(&*snapshot()?, group_by, &filter)
        }
        "spec_stats" => {
            let NoArgs {} = parse(args)?;
            read::stats(&*snapshot()?)
        }
        "spec_validate" => {
            let ValidateArgs { spec } = parse(args)?;
            read::validate(&*snapshot()?, spec.as_deref(), &inner.config.limits)
        }
        "spec_tokens" => {
            let TokensArgs { spec, file } = parse(args)?;
            read::tokens(
                &*snapshot()?,
                &inner.project,
                spec.as_deref(),
                file.as_deref(),
            )
        }
        "spec_create" => {
            let args: CreateArgs = parse(args)?;
            // The next number is the highest plus one: two creates must not both take it, so
            // they serialise on the specs directory and each numbers from what is on disk then.
            let created = with_specs_dir_locked(inner, |snap| {
                update::create(&inner.store, &inner.project, &inner.config, snap, args)
            })?;
            let text = format!("created {}", created["file"].as_str().unwrap_or_default());
            Ok((created, text))
        }
        "spec_update" => {
            let args: UpdateArgs = parse(args)?;
            let updated = update::update(&inner.store, &inner.locks, &*snapshot()?, args)?;
            let changed: Vec<&str> = updated["changed"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let text = format!(
                "updated {} ({}); contentHash {}",
                updated["id"].as_str().unwrap_or_default(),
                changed.join(", "),
                updated["contentHash"].as_str().unwrap_or_default()
            );
            Ok((updated, text))
        }
        "spec_relationships" => {
            let RelationshipArgs {
                spec: reference,
                action,
                link,
                target,
            } = parse(args)?;
            let add = match action {
                LinkAction::View => {
                    let snap = snapshot()?;
                    let spec = snap.lookup(&reference)?;
                    let ids = |v: Vec<&crate::model::Spec>| {
                        v.into_iter().map(|s| s.id.clone()).collect::<Vec<_>>()
                    };
                    let value = json!({
                        "id": spec.id,
                        "action": "view",
                        "parent": spec.parent,
                        "children": ids(snap.children(&spec.id)),
                        "dependsOn": spec.meta().depends_on,
                        "requiredBy": ids(snap.required_by(&spec.id)),
                    });
                    let text = format!(
                        "{}: parent {}; children {}; depends on {}; required by {}",
                        spec.id,
                        value["parent"],
                        value["children"],
                        value["dependsOn"],
                        value["requiredBy"]
                    );
                    return Ok((value, text));
                }
                LinkAction::Add => true,
                LinkAction::Remove => false,
            };
            let link = link.ok_or_else(|| {
                SpecsError::Invalid(
                    "`type` (parent, child or depends_on) is required to add or remove a link"
                        .into(),
                )
            })?;
            let target =
                target.ok_or_else(|| SpecsError::Invalid("`target` is required".into()))?;
            // A cycle is judged on every spec's links: two link edits checked against the same
            // old snapshot could together close one, so they serialise on the specs directory
            // and each checks what is on disk then.
            let value = with_specs_dir_locked(inner, |snap| {
                update::relate(
                    &inner.store,
                    &inner.locks,
                    snap,
                    &reference,
                    add,
                    link,
                    &target,
                )
            })?;
            let text = format!(
                "{} {} link {} → {}",
                if add { "added" } else { "removed" },
                value["type"].as_str().unwrap_or_default(),
                value["id"].as_str().unwrap_or_default(),
                value["target"].as_str().unwrap_or_default()
            );
            Ok((value, text))
        }
        _ => Err(SpecsError::Invalid(format!("no tool `{tool}`"))),
    }
}
