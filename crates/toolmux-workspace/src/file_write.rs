//! `file_write`: creates a file or replaces one the caller has read.

use serde_json::{Map, Value, json};
use toolmux_core::{ToolDescriptor, ToolResult};

use crate::args::Args;
use crate::write::{self, Eol, Plan, Report, conflict};
use crate::{Access, Workspace, WorkspaceLimits, descriptor};

pub(crate) const NAME: &str = "file_write";

pub(crate) fn descriptor_for(_limits: &WorkspaceLimits) -> ToolDescriptor {
    descriptor(
        Access::Write,
        NAME,
        "Write file",
        "Create a text file in the project, or replace one. Missing directories are made. \
         Replacing an existing file is refused unless it was read with file_read in this \
         session and has not changed since, or `overwrite` is true. A file with CRLF line \
         endings keeps them. Returns the change as a unified diff. Prefer file_edit to change \
         part of a file.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the project root, with `/` separators."},
                "content": {"type": "string", "description": "The whole new content of the file."},
                "overwrite": {"type": "boolean", "default": false, "description": "Replace the file even if it was not read in this session, or changed since. Default false."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }),
        write::output_schema(None),
    )
}

pub(crate) fn plan(
    ws: &Workspace,
    arguments: &Map<String, Value>,
    session: Option<&str>,
) -> Result<Plan, ToolResult> {
    let args =
        Args::new(arguments, &["path", "content", "overwrite"]).map_err(ToolResult::error)?;
    let path = args.required_string("path").map_err(ToolResult::error)?;
    let content = args.required_string("content").map_err(ToolResult::error)?;
    let overwrite = args
        .boolean("overwrite", false)
        .map_err(ToolResult::error)?;
    let opened = write::open(ws, path).map_err(ToolResult::error)?;
    let shown = opened.shown(ws);
    let Some(old) = &opened.existing else {
        let report = Report::new("create", &shown, &shown, None, Some(content));
        return Ok(Plan {
            changes: vec![opened.change(Some(content.to_string()))],
            reports: vec![report],
            extra: None,
        });
    };
    if !overwrite {
        let seen = session.and_then(|s| ws.reads.seen(s, &opened.target.path));
        match (session, seen) {
            (None, _) => {
                return Err(conflict(format!(
                    "`{shown}` exists, and this caller has no session in which it could have read \
                     it; pass `overwrite: true` to replace it"
                )));
            }
            (Some(_), None) => {
                return Err(conflict(format!(
                    "`{shown}` exists and was not read in this session; read it with file_read \
                     first, or pass `overwrite: true` to replace it"
                )));
            }
            (Some(_), Some(stamp)) if !stamp.still_matches(&old.stamp) => {
                return Err(conflict(format!(
                    "`{shown}` changed on disk since it was read in this session; read it again, \
                     or pass `overwrite: true` to replace it"
                )));
            }
            _ => {}
        }
    }
    // A CRLF file stays CRLF when the new content comes with LF endings.
    let eol = Eol::of(&old.text);
    let content = if eol == Eol::Crlf && !content.contains("\r\n") {
        eol.restore(content)
    } else {
        content.to_string()
    };
    let report = Report::new("update", &shown, &shown, Some(&old.text), Some(&content));
    Ok(Plan {
        changes: vec![opened.change(Some(content))],
        reports: vec![report],
        extra: None,
    })
}
