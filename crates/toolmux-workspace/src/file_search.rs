//! `file_search`: files whose root-relative path matches a glob.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};
use toolmux_core::{ToolDescriptor, ToolResult};

use crate::args::Args;
use crate::output::Budget;
use crate::walk::{PathGlob, walker};
use crate::{Access, Workspace, WorkspaceLimits, descriptor};

pub(crate) const NAME: &str = "file_search";

const DEFAULT_LIMIT: usize = 200;

pub(crate) fn descriptor_for(limits: &WorkspaceLimits) -> ToolDescriptor {
    let max = limits.max_results;
    let default = DEFAULT_LIMIT.min(max);
    descriptor(
        Access::Read,
        NAME,
        "Find files",
        "Find files in the project by glob, e.g. `**/*.rs`, `src/*.toml` or `Cargo.toml`. A \
         glob with a `/` matches the path from the project root; one without matches the file \
         name at any depth. Files ignored by .gitignore are skipped, hidden files are included, \
         symbolic links are not followed. Results are sorted by path.",
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The glob. `*` matches within one directory, `**` across directories, `?` one character, `[abc]` and `{a,b}` alternatives."
                },
                "path": {
                    "type": "string",
                    "default": ".",
                    "description": "The directory to search in, relative to the project root. Default `.` (the whole project)."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": max,
                    "default": default,
                    "description": format!("How many paths to return at most. Default {default}, at most {max}.")
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
        json!({
            "type": "object",
            "properties": {
                "files": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Matching files, relative to the project root, sorted."
                },
                "truncated": {"type": "boolean", "description": "True when more files match than were returned (the limit or the output cap was reached)."}
            },
            "required": ["files", "truncated"],
            "additionalProperties": false
        }),
    )
}

pub(crate) fn run(
    ws: &Workspace,
    arguments: &Map<String, Value>,
    abandoned: &AtomicBool,
) -> Result<ToolResult, String> {
    let args = Args::new(arguments, &["pattern", "path", "limit"])?;
    let pattern = args.required_string("pattern")?;
    let path = args.string("path", ".")?;
    let max = ws.limits.max_results;
    let limit = args.integer("limit", DEFAULT_LIMIT.min(max), 1, max)?;
    let glob = PathGlob::new(pattern)?;
    let start = ws.root.resolve(path).map_err(|e| e.to_string())?;

    let mut budget = Budget::new(ws.limits.max_output_bytes);
    let mut files = Vec::new();
    let mut more = None;
    // Sorted by name within each directory, the walk yields paths in component order: the
    // first `limit` matches are the first `limit` of the sorted list.
    let walk = walker(&ws.root, &start, false)?
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    for entry in walk {
        if abandoned.load(Ordering::Relaxed) {
            return Err(crate::ABANDONED.to_string());
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                tracing::debug!(error = %e, "file_search skipped an entry");
                continue;
            }
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let rel = ws.root.display(entry.path());
        if !glob.is_match(&rel) {
            continue;
        }
        // The name came from a directory read by name, which could have been swapped for a
        // link to elsewhere since it was checked: report only a file that is there beneath
        // the root, with no link on the way.
        if !ws
            .root
            .metadata_beneath(entry.path())
            .is_some_and(|m| m.is_file())
        {
            continue;
        }
        if files.len() == limit {
            more = Some(Cap::Limit);
            break;
        }
        // The path appears once in the text and once, quoted, in the structured content.
        if !budget.spend(rel.len() * 2 + 4) {
            more = Some(Cap::Output);
            break;
        }
        files.push(rel);
    }

    let mut text = String::new();
    for file in &files {
        text.push_str(file);
        text.push('\n');
    }
    match more {
        None if files.is_empty() => {
            text.push_str(&format!("no files match `{pattern}` under `{path}`\n"));
        }
        None => {}
        Some(Cap::Limit) => text.push_str(&format!(
            "[showing the first {limit} matching files; there are more: narrow the pattern{}]\n",
            if limit < max {
                format!(" or raise limit (at most {max})")
            } else {
                String::new()
            }
        )),
        Some(Cap::Output) => text.push_str(&format!(
            "[output capped at {}: showing the first {} matching files; narrow the pattern]\n",
            toolmux_core::human_bytes(ws.limits.max_output_bytes as u64),
            files.len()
        )),
    }
    let structured = json!({"files": files, "truncated": more.is_some()});
    Ok(ToolResult::structured_with_text(structured, text))
}

enum Cap {
    Limit,
    Output,
}
