//! `file_edit`: exact-string replacements in one file, all applied or none.

use serde_json::{Map, Value, json};
use toolmux_core::{ToolDescriptor, ToolResult};

use crate::args::Args;
use crate::write::{self, Eol, Plan, Report};
use crate::{Access, Workspace, WorkspaceLimits, descriptor};

pub(crate) const NAME: &str = "file_edit";

/// How many places of a string that is not unique the error names.
const SHOWN_MATCHES: usize = 5;

pub(crate) fn descriptor_for(_limits: &WorkspaceLimits) -> ToolDescriptor {
    let edit = json!({
        "type": "object",
        "properties": {
            "oldString": {"type": "string", "description": "The exact text to replace, as it is in the file (indentation included). It must occur exactly once unless `replaceAll` is true."},
            "newString": {"type": "string", "description": "The text to put in its place."},
            "replaceAll": {"type": "boolean", "default": false, "description": "Replace every occurrence of `oldString`. Default false."}
        },
        "required": ["oldString", "newString"],
        "additionalProperties": false
    });
    descriptor(
        Access::Write,
        NAME,
        "Edit file",
        "Replace exact text in an existing text file of the project. Give `oldString` and \
         `newString` for one edit, or `edits` for several, applied in order, each to the result \
         of the one before: either all of them apply or the file is left unchanged. `oldString` \
         must match the file exactly and occur once (add surrounding lines to make it unique), \
         unless `replaceAll` is true. Line endings are kept (a CRLF file may be edited with LF \
         strings). Returns the change as a unified diff.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the project root, with `/` separators."},
                "oldString": edit["properties"]["oldString"],
                "newString": edit["properties"]["newString"],
                "replaceAll": edit["properties"]["replaceAll"],
                "edits": {"type": "array", "minItems": 1, "items": edit, "description": "Several edits, instead of `oldString` and `newString`."}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
        write::output_schema(Some((
            "replacements",
            json!({"type": "integer", "minimum": 1, "description": "How many occurrences were replaced in all."}),
        ))),
    )
}

/// One edit as given.
struct Edit<'a> {
    old: &'a str,
    new: &'a str,
    all: bool,
}

fn edits<'a>(args: &Args<'a>, arguments: &'a Map<String, Value>) -> Result<Vec<Edit<'a>>, String> {
    let single = ["oldString", "newString", "replaceAll"]
        .iter()
        .any(|k| arguments.get(*k).is_some_and(|v| !v.is_null()));
    match arguments.get("edits") {
        None | Some(Value::Null) => {
            let old = args.optional_string("oldString")?;
            let new = args.optional_string("newString")?;
            match (old, new) {
                (Some(old), Some(new)) => Ok(vec![Edit {
                    old,
                    new,
                    all: args.boolean("replaceAll", false)?,
                }]),
                _ => Err("give `oldString` and `newString`, or `edits`".to_string()),
            }
        }
        Some(_) if single => {
            Err("give either `oldString` and `newString` or `edits`, not both".to_string())
        }
        Some(Value::Array(list)) if !list.is_empty() => list
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let Value::Object(map) = item else {
                    return Err(format!("edit {} must be an object", i + 1));
                };
                let one = Args::new(map, &["oldString", "newString", "replaceAll"])
                    .map_err(|e| format!("edit {}: {e}", i + 1))?;
                let field = |name| {
                    one.required_string(name)
                        .map_err(|e| format!("edit {}: {e}", i + 1))
                };
                Ok(Edit {
                    old: field("oldString")?,
                    new: field("newString")?,
                    all: one
                        .boolean("replaceAll", false)
                        .map_err(|e| format!("edit {}: {e}", i + 1))?,
                })
            })
            .collect(),
        Some(_) => Err("`edits` must be a non-empty array of edits".to_string()),
    }
}

pub(crate) fn plan(ws: &Workspace, arguments: &Map<String, Value>) -> Result<Plan, ToolResult> {
    let args = Args::new(
        arguments,
        &["path", "oldString", "newString", "replaceAll", "edits"],
    )
    .map_err(ToolResult::error)?;
    let path = args.required_string("path").map_err(ToolResult::error)?;
    let edits = edits(&args, arguments).map_err(ToolResult::error)?;
    let opened = write::open(ws, path).map_err(ToolResult::error)?;
    let shown = opened.shown(ws);
    let Some(old) = &opened.existing else {
        return Err(ToolResult::error(format!(
            "`{shown}` does not exist; use file_write to create it"
        )));
    };
    let eol = Eol::of(&old.text);
    let mut text = eol.to_lf(&old.text);
    let total = edits.len();
    let mut replacements = 0usize;
    for (i, edit) in edits.iter().enumerate() {
        let label = if total == 1 {
            String::new()
        } else {
            format!("edit {} of {total}: ", i + 1)
        };
        let refuse = |message: String| {
            ToolResult::error(format!("{label}{message}; the file was not changed"))
        };
        let from = eol.to_lf(edit.old);
        let to = eol.to_lf(edit.new);
        if from.is_empty() {
            return Err(refuse(
                "`oldString` is empty (use file_write to create a file)".into(),
            ));
        }
        if from == to {
            return Err(refuse("`oldString` and `newString` are the same".into()));
        }
        let found: Vec<usize> = text
            .match_indices(from.as_str())
            .map(|(at, _)| at)
            .collect();
        match found.len() {
            0 => {
                return Err(refuse(format!(
                    "`oldString` was not found in `{shown}`{}",
                    if i > 0 {
                        " (after the edits before it)"
                    } else {
                        ""
                    }
                )));
            }
            1 => {}
            n if !edit.all => {
                let lines: Vec<String> = found
                    .iter()
                    .take(SHOWN_MATCHES)
                    .map(|&at| (text[..at].matches('\n').count() + 1).to_string())
                    .collect();
                return Err(refuse(format!(
                    "`oldString` occurs {n} times in `{shown}` (at lines {}{}); add surrounding \
                     lines to make it unique, or set `replaceAll`",
                    lines.join(", "),
                    if n > SHOWN_MATCHES { ", …" } else { "" }
                )));
            }
            _ => {}
        }
        replacements += found.len();
        text = text.replace(from.as_str(), &to);
    }
    let new = eol.restore(&text);
    let report = Report::new("update", &shown, &shown, Some(&old.text), Some(&new));
    Ok(Plan {
        changes: vec![opened.change(Some(new))],
        reports: vec![report],
        extra: Some(("replacements", json!(replacements))),
    })
}
