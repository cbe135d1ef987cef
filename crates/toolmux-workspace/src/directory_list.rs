//! `directory_list`: what a directory holds, to a chosen depth, without following links.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};
use toolmux_core::{ToolDescriptor, ToolResult};

use crate::args::Args;
use crate::output::Budget;
use crate::root::Resolved;
use crate::walk::walker;
use crate::{ABANDONED, Access, Workspace, WorkspaceLimits, descriptor};
use toolmux_core::human_bytes;

pub(crate) const NAME: &str = "directory_list";

const MAX_DEPTH: usize = 10;

pub(crate) fn descriptor_for(limits: &WorkspaceLimits) -> ToolDescriptor {
    let max = limits.max_results;
    descriptor(
        Access::Read,
        NAME,
        "List directory",
        format!(
            "List the files and directories under a project directory, sorted by path, with \
             file sizes. Directories end in `/`; symbolic links are shown as links and not \
             followed. Entries ignored by .gitignore are left out unless `includeIgnored` is \
             true; `.git` is never listed. At most {max} entries."
        ),
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "default": ".",
                    "description": "The directory, relative to the project root. Default `.` (the project root)."
                },
                "depth": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_DEPTH,
                    "default": 1,
                    "description": format!("How many levels to descend: 1 lists only the directory's own entries. Default 1, at most {MAX_DEPTH}.")
                },
                "includeIgnored": {
                    "type": "boolean",
                    "default": false,
                    "description": "Also list entries that .gitignore (or .ignore) excludes. Default false."
                }
            },
            "additionalProperties": false
        }),
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The directory listed, relative to the project root."},
                "entries": {
                    "type": "array",
                    "description": "The entries, sorted by path.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "The entry, relative to the project root."},
                            "kind": {"type": "string", "enum": ["file", "dir", "symlink", "other"], "description": "What it is; `symlink` entries are never followed, `other` is a device, pipe or socket."},
                            "size": {"type": "integer", "minimum": 0, "description": "Size in bytes; files only."}
                        },
                        "required": ["path", "kind"],
                        "additionalProperties": false
                    }
                },
                "truncated": {"type": "boolean", "description": "True when there are more entries than were returned (the entry cap or the output cap was reached)."}
            },
            "required": ["path", "entries", "truncated"],
            "additionalProperties": false
        }),
    )
}

pub(crate) fn run(
    ws: &Workspace,
    arguments: &Map<String, Value>,
    abandoned: &AtomicBool,
) -> Result<ToolResult, String> {
    let args = Args::new(arguments, &["path", "depth", "includeIgnored"])?;
    let path = args.string("path", ".")?;
    let depth = args.integer("depth", 1, 1, MAX_DEPTH)?;
    let include_ignored = args.boolean("includeIgnored", false)?;
    let Resolved { path: dir, handle } = ws.root.resolve_open(path).map_err(|e| e.to_string())?;
    let shown_dir = ws.root.display(&dir);
    // What resolution opened, looked at through its handle rather than opened again.
    if !handle.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(format!("`{shown_dir}` is not a directory; use file_read"));
    }

    let max = ws.limits.max_results;
    let mut budget = Budget::new(ws.limits.max_output_bytes);
    let mut entries = Vec::new();
    let mut text = String::new();
    let mut more = None;
    let walk = walker(&ws.root, &dir, include_ignored)?
        .max_depth(Some(depth))
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    for entry in walk {
        if abandoned.load(Ordering::Relaxed) {
            return Err(ABANDONED.to_string());
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                tracing::debug!(error = %e, "directory_list skipped an entry");
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        // The walker read this entry's directory by name, and that directory could have been
        // swapped for a link to elsewhere since it was checked: only an entry that can be
        // reached beneath the root with no link on the way is shown, with what is there now
        // (the entry itself; a link is not followed).
        let Some(meta) = ws.root.metadata_beneath(entry.path()) else {
            continue;
        };
        let rel = ws.root.display(entry.path());
        let file_type = meta.file_type();
        let (kind, size) = if file_type.is_symlink() {
            ("symlink", None)
        } else if file_type.is_dir() {
            ("dir", None)
        } else if file_type.is_file() {
            ("file", Some(meta.len()))
        } else {
            ("other", None)
        };
        if entries.len() == max {
            more = Some(format!(
                "[showing the first {max} entries; there are more: list a subdirectory or use a smaller depth]\n"
            ));
            break;
        }
        let mut value = json!({"path": rel, "kind": kind});
        let line = match (kind, size) {
            ("dir", _) => format!("{rel}/\n"),
            ("file", Some(size)) => {
                value["size"] = json!(size);
                format!("{rel}  {}\n", human_bytes(size))
            }
            (kind, _) => format!("{rel}  [{kind}]\n"),
        };
        if !budget.spend(line.len() + value.to_string().len()) {
            more = Some(format!(
                "[output capped at {} after {} entries; list a subdirectory or use a smaller depth]\n",
                human_bytes(ws.limits.max_output_bytes as u64),
                entries.len()
            ));
            break;
        }
        text.push_str(&line);
        entries.push(value);
    }
    if entries.is_empty() && more.is_none() {
        text.push_str(&format!("`{shown_dir}` has no entries to show\n"));
    }
    let truncated = more.is_some();
    if let Some(note) = more {
        text.push_str(&note);
    }
    let structured = json!({"path": shown_dir, "entries": entries, "truncated": truncated});
    Ok(ToolResult::structured_with_text(structured, text))
}
