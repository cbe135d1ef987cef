//! `toolmux specs list | view | search | create | update | validate | board | stats | tokens |
//! deps | link | unlink`: LeanSpec's command line over the `specs` source.
//!
//! A thin channel: each subcommand builds one tool's arguments and calls it through the hub on
//! the CLI channel, as `toolmux tools call` does, so policies (writes ask by default), the
//! terminal approver, input and output validation and the execution log apply unchanged. What
//! is left here is turning flags into arguments and the tool's structured result into text
//! (or printing it as it is with `--json`).

use std::io::Read;
use std::path::Path;

use comfy_table::{ContentArrangement, Table, presets};
use serde_json::{Map, Value, json};
use toolmux_workspace::ProjectRoot;

use crate::assembly::Assembly;
use crate::cli::{SpecCreateArgs, SpecLinkArgs, SpecUpdateArgs, SpecsArgs, SpecsCommand};
use crate::cli_call;
use crate::exit::{Failure, OK, TOOL_FAILED};
use crate::output::{emit, pretty};

/// The source id of the spec pack.
const SOURCE: &str = "specs";

pub async fn run(project: Option<&Path>, args: SpecsArgs) -> Result<u8, Failure> {
    let assembly = Assembly::open(project)?;
    require_specs(&assembly)?;
    let specs = Specs {
        assembly: &assembly,
        json: args.json,
    };
    match args.command {
        SpecsCommand::List(filter) => {
            let result = specs.call("spec_list", arguments_of(&filter)?).await?;
            specs.show(&result, list_text)
        }
        SpecsCommand::View { spec } => {
            let result = specs.call("spec_view", json!({ "spec": spec })).await?;
            specs.show(&result, view_text)
        }
        SpecsCommand::Search { query, limit } => {
            let arguments = json!({ "query": query.join(" "), "limit": limit });
            let result = specs.call("spec_search", arguments).await?;
            specs.show(&result, search_text)
        }
        SpecsCommand::Create(create) => {
            let result = specs.call("spec_create", create_arguments(create)?).await?;
            specs.show(&result, create_text)
        }
        SpecsCommand::Update(update) => {
            let result = specs.call("spec_update", update_arguments(update)).await?;
            specs.show(&result, update_text)
        }
        SpecsCommand::Validate { spec, strict } => {
            let mut arguments = Map::new();
            insert_some(&mut arguments, "spec", spec);
            let result = specs.call("spec_validate", arguments.into()).await?;
            specs.show(&result, validate_text)?;
            // Like a linter: findings are a result, not a failure of the command, but a
            // script must be able to tell a clean run from one with errors.
            let count = |key: &str| result.get(key).and_then(Value::as_u64).unwrap_or(0);
            let failing = count("errors") > 0 || (strict && count("warnings") > 0);
            Ok(if failing { TOOL_FAILED } else { OK })
        }
        SpecsCommand::Board(board) => {
            let result = specs.call("spec_board", arguments_of(&board)?).await?;
            specs.show(&result, board_text)
        }
        SpecsCommand::Stats => {
            let result = specs.call("spec_stats", json!({})).await?;
            specs.show(&result, stats_text)
        }
        SpecsCommand::Tokens { spec, file } => {
            let mut arguments = Map::new();
            insert_some(&mut arguments, "spec", spec);
            insert_some(&mut arguments, "file", file);
            let result = specs.call("spec_tokens", arguments.into()).await?;
            specs.show(&result, tokens_text)
        }
        SpecsCommand::Deps { spec } => {
            // From `spec_view`, not `spec_relationships`: that tool also writes links, so its
            // one policy asks, and looking should not need an approval.
            let view = specs.call("spec_view", json!({ "spec": spec })).await?;
            let relations: Map<String, Value> =
                ["id", "parent", "children", "dependsOn", "requiredBy"]
                    .into_iter()
                    .filter_map(|key| Some((key.to_string(), view.get(key)?.clone())))
                    .collect();
            specs.show(&relations.into(), deps_text)
        }
        SpecsCommand::Link(link) => {
            let result = specs
                .call("spec_relationships", link_arguments(link, "add"))
                .await?;
            specs.show(&result, |v| link_text(v, "linked"))
        }
        SpecsCommand::Unlink(link) => {
            let result = specs
                .call("spec_relationships", link_arguments(link, "remove"))
                .await?;
            specs.show(&result, |v| link_text(v, "unlinked"))
        }
    }
}

/// The pack is there only when the project keeps specs; without it every subcommand would
/// answer "unknown tool `spec_list`", so say instead where toolmux looked, or why the
/// directory it found cannot be used.
fn require_specs(assembly: &Assembly) -> Result<(), Failure> {
    if assembly
        .hub
        .catalog()
        .sources()
        .iter()
        .any(|s| s.id == SOURCE)
    {
        return Ok(());
    }
    // The assembly left the pack out with a warning; open it again, as the assembly does, to
    // tell "no specs directory" from "a specs directory that cannot be used".
    let root = &assembly.loaded.root;
    let state = toolmux_config::state_dir(&assembly.loaded.project_dir);
    let opened = ProjectRoot::with_state_dir(root, state)
        .map_err(|e| Failure::Runtime(anyhow::anyhow!("{}: {e}", root.display())))
        .and_then(|project| {
            toolmux_specs::SpecsSource::open(&project)
                .map_err(|e| Failure::Config(format!("the spec tools are not available: {e}")))
        })?;
    match opened {
        // Found now but not at start: it was made in between. Let the call go ahead and
        // report what it reports.
        Some(_) => Ok(()),
        None => Err(Failure::Refused(format!(
            "no specs directory in {}: toolmux looks for `specs`, `.lean-spec/specs`, \
             `doc/specs` or `docs/specs` there, or the `specsDir` of `.lean-spec/config.json` \
             (or ${}); create one, e.g. `mkdir specs`",
            root.display(),
            toolmux_specs::SPECS_DIR_ENV
        ))),
    }
}

/// One command's calls and how it prints their results.
struct Specs<'a> {
    assembly: &'a Assembly,
    json: bool,
}

impl Specs<'_> {
    /// Calls `tool` through the pipeline, as `toolmux tools call` does, and returns its
    /// structured result; a refusal or a failed call is the command's failure.
    async fn call(&self, tool: &str, arguments: Value) -> Result<Value, Failure> {
        cli_call::call_structured(self.assembly, tool, arguments).await
    }

    /// Prints a result: as JSON with `--json`, else as `text` renders it.
    fn show(&self, result: &Value, text: impl Fn(&Value) -> String) -> Result<u8, Failure> {
        if self.json {
            emit(&pretty(result)?)?;
        } else {
            emit(&text(result))?;
        }
        Ok(OK)
    }
}

fn insert_some(arguments: &mut Map<String, Value>, key: &str, value: Option<String>) {
    if let Some(value) = value {
        arguments.insert(key.to_string(), Value::from(value));
    }
}

fn insert_list(arguments: &mut Map<String, Value>, key: &str, values: Vec<String>) {
    if !values.is_empty() {
        arguments.insert(key.to_string(), Value::from(values));
    }
}

/// A tool's input struct, parsed from the flags clap derives from it, as its arguments.
fn arguments_of(input: &impl serde::Serialize) -> Result<Value, Failure> {
    toolmux_core::arguments_of(input)
        .map(Value::Object)
        .map_err(|e| Failure::Runtime(anyhow::anyhow!("the flags cannot be passed on: {e}")))
}

fn create_arguments(create: SpecCreateArgs) -> Result<Value, Failure> {
    let mut arguments = Map::new();
    arguments.insert("name".into(), Value::from(create.name));
    insert_some(&mut arguments, "title", create.title);
    insert_some(&mut arguments, "status", create.status);
    insert_some(&mut arguments, "priority", create.priority);
    insert_some(&mut arguments, "template", create.template);
    insert_list(&mut arguments, "tags", create.tags);
    insert_some(&mut arguments, "parent", create.parent);
    insert_list(&mut arguments, "dependsOn", create.depends_on);
    insert_some(&mut arguments, "assignee", create.assignee);
    let content = match create.file {
        Some(path) => Some(read_body(&path)?),
        None => create.content,
    };
    insert_some(&mut arguments, "content", content);
    Ok(arguments.into())
}

/// A body given as a file, or on stdin as `-`.
fn read_body(path: &Path) -> Result<String, Failure> {
    let read = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map(|_| text)
    } else {
        std::fs::read_to_string(path)
    };
    read.map_err(|e| Failure::Usage(format!("--file {}: cannot read it: {e}", path.display())))
}

fn update_arguments(update: SpecUpdateArgs) -> Value {
    let mut arguments = Map::new();
    arguments.insert("spec".into(), Value::from(update.spec));
    insert_some(&mut arguments, "status", update.status);
    insert_some(&mut arguments, "priority", update.priority);
    insert_some(&mut arguments, "assignee", update.assignee);
    insert_list(&mut arguments, "addTags", update.add_tag);
    insert_list(&mut arguments, "removeTags", update.remove_tag);
    let mode = if update.match_all {
        "all"
    } else if update.match_first {
        "first"
    } else {
        "unique"
    };
    // clap gives `--replace OLD NEW` as a flat list of pairs.
    let replacements: Vec<Value> = update
        .replace
        .chunks_exact(2)
        .map(|pair| json!({"oldString": pair[0], "newString": pair[1], "matchMode": mode}))
        .collect();
    if !replacements.is_empty() {
        arguments.insert("replacements".into(), replacements.into());
    }
    let edit = [
        (update.section_content, "replace"),
        (update.append, "append"),
        (update.prepend, "prepend"),
    ]
    .into_iter()
    .find_map(|(content, mode)| content.map(|c| (c, mode)));
    if let (Some(section), Some((content, mode))) = (update.section, edit) {
        arguments.insert(
            "sectionUpdates".into(),
            json!([{"section": section, "content": content, "mode": mode}]),
        );
    }
    let toggles: Vec<Value> = (update.check.into_iter().map(|t| (t, true)))
        .chain(update.uncheck.into_iter().map(|t| (t, false)))
        .map(|(text, checked)| json!({"itemText": text, "checked": checked}))
        .collect();
    if !toggles.is_empty() {
        arguments.insert("checklistToggles".into(), toggles.into());
    }
    insert_some(&mut arguments, "content", update.content);
    insert_some(&mut arguments, "expectedContentHash", update.expected_hash);
    if update.force {
        arguments.insert("force".into(), Value::Bool(true));
    }
    arguments.into()
}

fn link_arguments(link: SpecLinkArgs, action: &str) -> Value {
    // clap's group makes exactly one of the three present.
    let (kind, target) = match (link.parent, link.child, link.depends_on) {
        (Some(t), _, _) => ("parent", t),
        (_, Some(t), _) => ("child", t),
        (_, _, Some(t)) => ("depends_on", t),
        (None, None, None) => ("depends_on", String::new()),
    };
    json!({"spec": link.spec, "action": action, "type": kind, "target": target})
}

// ---- rendering: the structured results as people read them ----

fn str_of<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A nullable string field, `-` when absent.
fn or_dash(value: &Value, key: &str) -> String {
    match value.get(key).and_then(Value::as_str) {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => "-".to_string(),
    }
}

/// A number as people write it: `16`, not JSON's `16.0`.
fn number(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_f64)
        .map(|n| n.to_string())
        .unwrap_or_default()
}

fn joined(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn items<'v>(value: &'v Value, key: &str) -> &'v [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header.iter().copied());
    table
}

/// A table as plain aligned columns: flush left, two spaces between columns, no trailing
/// blanks (so `cut`, `awk` and a diff read it as easily as a person).
fn aligned(mut table: Table) -> String {
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    table
        .to_string()
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Specs whose frontmatter cannot be read are left out of lists and counted in stats; say so
/// on stderr, where it does not disturb a table read by a script.
fn warn_unreadable(result: &Value) {
    for broken in items(result, "errors") {
        eprintln!(
            "toolmux: warning: {}:{}: {} (left out)",
            str_of(broken, "file"),
            broken.get("line").and_then(Value::as_u64).unwrap_or(0),
            str_of(broken, "message")
        );
    }
}

fn list_text(result: &Value) -> String {
    warn_unreadable(result);
    let specs = items(result, "specs");
    if specs.is_empty() {
        return "no specs".to_string();
    }
    let mut table = table(&["ID", "STATUS", "PRIORITY", "TITLE", "TAGS"]);
    for spec in specs {
        table.add_row([
            str_of(spec, "id").to_string(),
            str_of(spec, "status").to_string(),
            or_dash(spec, "priority"),
            str_of(spec, "title").to_string(),
            joined(spec, "tags"),
        ]);
    }
    aligned(table)
}

fn view_text(spec: &Value) -> String {
    let mut lines = vec![format!(
        "{} — {}",
        str_of(spec, "id"),
        str_of(spec, "title")
    )];
    lines.push(format!(
        "status: {}  priority: {}  created: {}",
        str_of(spec, "status"),
        or_dash(spec, "priority"),
        str_of(spec, "created")
    ));
    for (label, value) in [
        ("tags", joined(spec, "tags")),
        ("assignee", str_of(spec, "assignee").to_string()),
        ("parent", str_of(spec, "parent").to_string()),
        ("children", joined(spec, "children")),
        ("depends on", joined(spec, "dependsOn")),
        ("required by", joined(spec, "requiredBy")),
    ] {
        if !value.is_empty() {
            lines.push(format!("{label}: {value}"));
        }
    }
    let subs: Vec<&str> = items(spec, "subSpecs")
        .iter()
        .map(|s| str_of(s, "name"))
        .collect();
    if !subs.is_empty() {
        lines.push(format!("sub-specs: {}", subs.join(", ")));
    }
    lines.push(format!("file: {}", str_of(spec, "file")));
    lines.push(format!("contentHash: {}", str_of(spec, "contentHash")));
    lines.push(String::new());
    lines.push(str_of(spec, "content").trim_end().to_string());
    lines.join("\n")
}

fn search_text(result: &Value) -> String {
    let results = items(result, "results");
    if results.is_empty() {
        return format!("no specs match {:?}", str_of(result, "query"));
    }
    let mut table = table(&["SCORE", "ID", "STATUS", "TITLE"]);
    for hit in results {
        table.add_row([
            number(hit, "score"),
            str_of(hit, "id").to_string(),
            str_of(hit, "status").to_string(),
            str_of(hit, "title").to_string(),
        ]);
    }
    aligned(table)
}

fn create_text(created: &Value) -> String {
    format!(
        "created {} ({}, {}, {})",
        str_of(created, "file"),
        str_of(created, "id"),
        str_of(created, "status"),
        str_of(created, "priority")
    )
}

fn update_text(updated: &Value) -> String {
    let changed = joined(updated, "changed");
    format!(
        "updated {}: {}; contentHash {}",
        str_of(updated, "id"),
        if changed.is_empty() {
            "nothing changed".to_string()
        } else {
            changed
        },
        str_of(updated, "contentHash")
    )
}

fn validate_text(result: &Value) -> String {
    let mut lines = Vec::new();
    let specs = items(result, "specs");
    for spec in specs {
        for issue in items(spec, "issues") {
            lines.push(format!(
                "{}:{}: {}: {} [{}]",
                str_of(spec, "file"),
                issue.get("line").and_then(Value::as_u64).unwrap_or(0),
                str_of(issue, "severity"),
                str_of(issue, "message"),
                str_of(issue, "rule")
            ));
        }
    }
    let count = |key: &str| result.get(key).and_then(Value::as_u64).unwrap_or(0);
    lines.push(format!(
        "{} {} checked: {} errors, {} warnings",
        specs.len(),
        if specs.len() == 1 { "spec" } else { "specs" },
        count("errors"),
        count("warnings")
    ));
    lines.join("\n")
}

fn board_text(result: &Value) -> String {
    let groups = items(result, "groups");
    if groups.is_empty() {
        return "no specs".to_string();
    }
    let mut table = table(&["GROUP", "ID", "STATUS", "PRIORITY", "TITLE"]);
    for group in groups {
        let heading = format!(
            "{} ({})",
            str_of(group, "name"),
            group.get("count").and_then(Value::as_u64).unwrap_or(0)
        );
        // The group's name on its first row only, so each group reads as a block.
        for (i, spec) in items(group, "specs").iter().enumerate() {
            table.add_row([
                if i == 0 {
                    heading.clone()
                } else {
                    String::new()
                },
                str_of(spec, "id").to_string(),
                str_of(spec, "status").to_string(),
                or_dash(spec, "priority"),
                str_of(spec, "title").to_string(),
            ]);
        }
    }
    aligned(table)
}

/// `{"planned": 3, "complete": 2}` as `planned 3, complete 2`, in the tool's order.
fn counts(value: &Value, key: &str) -> String {
    let Some(map) = value.get(key).and_then(Value::as_object) else {
        return String::new();
    };
    map.iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn stats_text(stats: &Value) -> String {
    let n = |key: &str| stats.get(key).and_then(Value::as_u64).unwrap_or(0);
    let top_tags = items(stats, "topTags")
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                str_of(t, "tag"),
                t.get("count").and_then(Value::as_u64).unwrap_or(0)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut by_priority = counts(stats, "byPriority");
    if n("noPriority") > 0 {
        if !by_priority.is_empty() {
            by_priority.push_str(", ");
        }
        by_priority.push_str(&format!("none {}", n("noPriority")));
    }
    let mut total = format!("{} specs", n("total"));
    if n("unreadable") > 0 {
        total.push_str(&format!(" ({} unreadable, not counted)", n("unreadable")));
    }
    let rows = [
        ("total", total),
        (
            "complete",
            format!("{}%", number(stats, "completionPercentage")),
        ),
        (
            "active",
            format!("{} (planned or in progress)", n("activeCount")),
        ),
        ("by status", counts(stats, "byStatus")),
        ("by priority", by_priority),
        ("top tags", top_tags),
        (
            "dependencies",
            format!(
                "{} specs depend on others ({} links)",
                n("withDependencies"),
                n("totalDependencies")
            ),
        ),
        ("with a parent", n("withParent").to_string()),
        ("sub-spec files", n("subSpecs").to_string()),
    ];
    let mut table = Table::new();
    table.load_preset(presets::NOTHING);
    for (label, value) in rows {
        table.add_row([label.to_string(), value]);
    }
    aligned(table)
}

fn tokens_text(result: &Value) -> String {
    let mut table = table(&["TOKENS", "FILE", "RATING"]);
    for item in items(result, "items") {
        table.add_row([
            item.get("tokens").map(Value::to_string).unwrap_or_default(),
            str_of(item, "file").to_string(),
            str_of(item, "rating").to_string(),
        ]);
    }
    format!(
        "{}\n{} tokens in all ({})",
        aligned(table),
        result.get("total").and_then(Value::as_u64).unwrap_or(0),
        str_of(result, "encoding")
    )
}

fn deps_text(relations: &Value) -> String {
    let none = |s: String| if s.is_empty() { "-".to_string() } else { s };
    let mut table = Table::new();
    table.load_preset(presets::NOTHING);
    for (label, value) in [
        ("parent", or_dash(relations, "parent")),
        ("children", none(joined(relations, "children"))),
        ("depends on", none(joined(relations, "dependsOn"))),
        ("required by", none(joined(relations, "requiredBy"))),
    ] {
        table.add_row([label.to_string(), value]);
    }
    format!("{}\n{}", str_of(relations, "id"), aligned(table))
}

fn link_text(result: &Value, verb: &str) -> String {
    format!(
        "{verb} {} {} {}",
        str_of(result, "id"),
        str_of(result, "type"),
        str_of(result, "target")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_flags_become_the_tool_arguments() {
        let update = SpecUpdateArgs {
            spec: "42".into(),
            status: Some("in-progress".into()),
            priority: None,
            assignee: None,
            add_tag: vec!["api".into()],
            remove_tag: vec![],
            check: vec!["write tests".into()],
            uncheck: vec!["ship".into()],
            replace: vec!["old".into(), "new".into(), "a".into(), "b".into()],
            match_all: true,
            match_first: false,
            section: Some("Plan".into()),
            section_content: None,
            append: Some("- more".into()),
            prepend: None,
            content: None,
            expected_hash: Some("abc".into()),
            force: false,
        };
        assert_eq!(
            update_arguments(update),
            json!({
                "spec": "42",
                "status": "in-progress",
                "addTags": ["api"],
                "replacements": [
                    {"oldString": "old", "newString": "new", "matchMode": "all"},
                    {"oldString": "a", "newString": "b", "matchMode": "all"},
                ],
                "sectionUpdates": [{"section": "Plan", "content": "- more", "mode": "append"}],
                "checklistToggles": [
                    {"itemText": "write tests", "checked": true},
                    {"itemText": "ship", "checked": false},
                ],
                "expectedContentHash": "abc",
            })
        );
    }
}
