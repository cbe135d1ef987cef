//! What `file_write`, `file_edit` and `apply_patch` share: every call is planned first —
//! paths resolved, files read, new contents computed, nothing written — and then carried out
//! all at once, so that a call changes every file it names or none.
//!
//! Carrying out a plan: the directories of new files are made (beneath the root, see
//! [`ProjectRoot::open_parent`]); every file is checked to be still what the plan read; every
//! new content is written to a temporary file beside its target and flushed
//! ([`toolmux_files::stage_in`], the one atomic writer, through the directory
//! descriptor [`ProjectRoot::open_parent`] gave); only then are the temporary files renamed over their targets (and
//! deleted files unlinked), one after the other. A failure before the renames leaves every
//! file as it was; a failure among them (which takes an I/O error on a rename in a directory
//! just written to) puts back the files already changed from the contents the plan holds.
//! Directories made for new files are left, empty, when a later step fails.
//!
//! Text only: a file that is not UTF-8 is refused, and a file keeps its line endings (a CRLF
//! file is edited as if it had LF endings and written back with CRLF).

use std::collections::HashSet;
use std::fs::{File, Metadata};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use similar::{Algorithm, DiffTag, TextDiff};
use toolmux_core::{ToolErrorKind, ToolResult, human_bytes};
use toolmux_files::{Commit, stage_in};

use crate::Workspace;
use crate::output::Budget;
use crate::reads::{Stamp, hash};
use crate::root::{self, PathError, WriteTarget};

/// How long producing one diff may take before it settles for a coarser one (similar's
/// deadline): a diff is for reading, and never worth holding a call up.
const DIFF_DEADLINE: Duration = Duration::from_millis(500);

/// Lines of context around each change in a diff.
const DIFF_CONTEXT: usize = 3;

/// A file as the plan found it.
#[derive(Debug)]
pub(crate) struct Existing {
    pub(crate) text: String,
    meta: Metadata,
    pub(crate) stamp: Stamp,
}

/// One file the plan changes.
#[derive(Debug)]
pub(crate) struct Change {
    user_path: String,
    target: WriteTarget,
    /// The file's directory, opened beneath the root; `None` while it is still to be made.
    dir: Option<Arc<File>>,
    /// What is there now; `None` for a new file.
    old: Option<Existing>,
    /// What will be there; `None` to delete it.
    new: Option<String>,
}

/// A file resolved for writing and read, if it exists: the start of every plan.
#[derive(Debug)]
pub(crate) struct Opened {
    pub(crate) user_path: String,
    pub(crate) target: WriteTarget,
    dir: Option<Arc<File>>,
    pub(crate) existing: Option<Existing>,
}

impl Opened {
    /// The path to show for it.
    pub(crate) fn shown(&self, ws: &Workspace) -> String {
        ws.root.display(&self.target.path)
    }

    /// The change that gives it `new` content (`None`: deletes it).
    pub(crate) fn change(self, new: Option<String>) -> Change {
        Change {
            user_path: self.user_path,
            target: self.target,
            dir: self.dir,
            old: self.existing,
            new,
        }
    }
}

/// Resolves `user_path` for writing and reads the file there, if any: a regular UTF-8 file of
/// at most `max_edit_bytes`.
pub(crate) fn open(ws: &Workspace, user_path: &str) -> Result<Opened, String> {
    let target = ws
        .root
        .resolve_for_write(user_path)
        .map_err(|e| e.to_string())?;
    let shown = ws.root.display(&target.path);
    let dir = ws
        .root
        .open_parent(&target, user_path, false)
        .map_err(|e| e.to_string())?
        .map(Arc::new);
    let existing = match &dir {
        None => None,
        Some(dir) => read_existing(ws, dir, &target, user_path, &shown)?,
    };
    Ok(Opened {
        user_path: user_path.to_string(),
        target,
        dir,
        existing,
    })
}

fn read_existing(
    ws: &Workspace,
    dir: &File,
    target: &WriteTarget,
    user_path: &str,
    shown: &str,
) -> Result<Option<Existing>, String> {
    let file = match root::open_in(dir, &target.name) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        // A link in the file's place: the walk saw none, so it was put there since.
        Err(e) if rustix::io::Errno::from_io_error(&e) == Some(rustix::io::Errno::LOOP) => {
            return Err(PathError::Changed {
                path: user_path.to_string(),
            }
            .to_string());
        }
        Err(e) => return Err(format!("`{shown}` cannot be read: {e}")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("`{shown}` cannot be read: {e}"))?;
    if meta.is_dir() {
        return Err(PathError::NotAFile {
            path: user_path.to_string(),
        }
        .to_string());
    }
    if !meta.is_file() {
        return Err(format!(
            "`{shown}` is not a regular file (a device, socket or pipe); only text files are written"
        ));
    }
    let cap = ws.limits.max_edit_bytes as u64;
    if meta.len() > cap {
        return Err(format!(
            "`{shown}` is {}, larger than the {} the write tools change",
            human_bytes(meta.len()),
            human_bytes(cap)
        ));
    }
    // It may have grown since it was looked at: the cap holds for what is read, and a file
    // read only in part is never edited (its rest would be lost).
    let Some(bytes) = toolmux_files::read_capped(file, cap)
        .map_err(|e| format!("`{shown}` cannot be read: {e}"))?
    else {
        return Err(format!(
            "`{shown}` is larger than the {} the write tools change",
            human_bytes(cap)
        ));
    };
    let stamp = Stamp::new(&meta, Some(hash(&bytes)));
    let text = String::from_utf8(bytes).map_err(|_| {
        format!("`{shown}` is not UTF-8 text; the write tools change text files only")
    })?;
    Ok(Some(Existing { text, meta, stamp }))
}

/// The refusal of a call whose file changed under it: a conflict (REST 409), to be read again.
pub(crate) fn conflict(message: String) -> ToolResult {
    ToolResult::kind_error(ToolErrorKind::Conflict, message)
}

/// Carries out `changes` all at once (see the module's doc), then records what `session` now
/// knows of each file.
pub(crate) fn commit(
    ws: &Workspace,
    changes: &mut [Change],
    session: Option<&str>,
) -> Result<(), ToolResult> {
    let failed = |e: String| ToolResult::error(e);
    // Every file is still what the plan read (or still absent).
    for change in changes.iter() {
        let Some(dir) = &change.dir else { continue };
        let now = rustix::fs::statat(
            dir.as_ref(),
            change.target.name.as_os_str(),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        );
        let same = match (&change.old, now) {
            (None, Err(rustix::io::Errno::NOENT)) => true,
            (Some(old), Ok(now)) => {
                now.st_ino == old.meta.ino()
                    && now.st_size as u64 == old.meta.len()
                    && now.st_mtime == old.meta.mtime()
                    && now.st_mtime_nsec as i64 == old.meta.mtime_nsec()
            }
            _ => false,
        };
        if !same {
            return Err(conflict(format!(
                "`{}` changed on disk while the call ran; nothing was written. Read it again",
                ws.root.display(&change.target.path)
            )));
        }
    }
    // The directories of new files.
    for change in changes.iter_mut() {
        if change.dir.is_none() {
            let dir = ws
                .root
                .open_parent(&change.target, &change.user_path, true)
                .map_err(|e| failed(e.to_string()))?
                .ok_or_else(|| failed(format!("`{}` cannot be created", change.user_path)))?;
            change.dir = Some(Arc::new(dir));
        }
    }
    // Every new content written and flushed beside its target.
    let mut staged = Vec::with_capacity(changes.len());
    for change in changes.iter() {
        let dir = change
            .dir
            .as_ref()
            .ok_or_else(|| failed("no directory".into()))?;
        let shown = ws.root.display(&change.target.path);
        staged.push(match &change.new {
            None => None,
            Some(text) => {
                let (mode, how) = match &change.old {
                    Some(old) => (Some(old.meta.permissions().mode()), Commit::Replace),
                    None => (None, Commit::New),
                };
                Some(
                    stage_in(dir, &change.target.name, text.as_bytes(), mode, how)
                        .map_err(|e| failed(format!("`{shown}` cannot be written: {e}")))?,
                )
            }
        });
    }
    // The renames and unlinks, undone in reverse if one fails.
    for i in 0..changes.len() {
        let change = &changes[i];
        let dir = change
            .dir
            .as_ref()
            .ok_or_else(|| failed("no directory".into()))?;
        let done = match &mut staged[i] {
            Some(file) => file.commit(),
            None => root::unlink_in(dir, &change.target.name),
        };
        if let Err(e) = done {
            let shown = ws.root.display(&change.target.path);
            // Every change is put back that can be, not only those before the first that cannot.
            let not_restored = changes[..i]
                .iter()
                .rev()
                .filter(|c| undo(c).is_err())
                .count();
            let restored = not_restored == 0;
            return Err(failed(format!(
                "`{shown}` cannot be written: {e}; {}",
                if restored {
                    "the files changed before it were put back, so nothing changed"
                } else {
                    "some files changed before it could not be put back"
                }
            )));
        }
    }
    let mut flushed = HashSet::new();
    for change in changes.iter() {
        if let Some(dir) = &change.dir
            && flushed.insert(Arc::as_ptr(dir))
            && let Err(e) = dir.sync_all()
        {
            tracing::warn!(error = %e, "flushing a directory after a write failed");
        }
    }
    if let Some(session) = session {
        for change in changes.iter() {
            match (&change.new, &change.dir) {
                (Some(text), Some(dir)) => {
                    if let Ok(file) = root::open_in(dir, &change.target.name)
                        && let Ok(meta) = file.metadata()
                    {
                        let stamp = Stamp::new(&meta, Some(hash(text.as_bytes())));
                        ws.reads.record(session, &change.target.path, stamp);
                    }
                }
                _ => ws.reads.forget(session, &change.target.path),
            }
        }
    }
    Ok(())
}

/// Puts back one change already carried out, from the content the plan read.
fn undo(change: &Change) -> std::io::Result<()> {
    let Some(dir) = &change.dir else {
        return Ok(());
    };
    match &change.old {
        None => root::unlink_in(dir, &change.target.name),
        Some(old) => {
            let how = if change.new.is_some() {
                Commit::Replace
            } else {
                Commit::New
            };
            let mode = Some(old.meta.permissions().mode());
            stage_in(dir, &change.target.name, old.text.as_bytes(), mode, how)?.commit()
        }
    }
}

/// A file's line endings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Eol {
    Lf,
    Crlf,
}

impl Eol {
    /// CRLF when every line of `text` ends so (and there is at least one), LF otherwise: a
    /// file with mixed endings is left exactly as it is.
    pub(crate) fn of(text: &str) -> Self {
        let lf = text.matches('\n').count();
        if lf > 0 && text.matches("\r\n").count() == lf {
            Eol::Crlf
        } else {
            Eol::Lf
        }
    }

    /// `text` as it is edited: with LF endings when the file has CRLF ones.
    pub(crate) fn to_lf(self, text: &str) -> String {
        match self {
            Eol::Lf => text.to_string(),
            Eol::Crlf => text.replace("\r\n", "\n"),
        }
    }

    /// `text` (edited with LF endings) as the file keeps it.
    pub(crate) fn restore(self, text: &str) -> String {
        match self {
            Eol::Lf => text.to_string(),
            Eol::Crlf => text.replace("\r\n", "\n").replace('\n', "\r\n"),
        }
    }
}

/// One file's change as the result reports it.
#[derive(Debug)]
pub(crate) struct Report {
    path: String,
    operation: &'static str,
    moved_from: Option<String>,
    added: usize,
    removed: usize,
    diff: String,
}

impl Report {
    /// The unified diff from `old` (`None`: the file is new) at `old_path` to `new` (`None`:
    /// it is deleted) at `new_path`, with its counts.
    pub(crate) fn new(
        operation: &'static str,
        old_path: &str,
        new_path: &str,
        old: Option<&str>,
        new: Option<&str>,
    ) -> Self {
        let before = old.unwrap_or("");
        let after = new.unwrap_or("");
        let diff = TextDiff::configure()
            .algorithm(Algorithm::Myers)
            .timeout(DIFF_DEADLINE)
            .diff_lines(before, after);
        let (mut added, mut removed) = (0, 0);
        for op in diff.ops() {
            let (tag, old_range, new_range) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => {}
                DiffTag::Delete => removed += old_range.len(),
                DiffTag::Insert => added += new_range.len(),
                DiffTag::Replace => {
                    removed += old_range.len();
                    added += new_range.len();
                }
            }
        }
        let from = if old.is_some() {
            format!("a/{old_path}")
        } else {
            "/dev/null".to_string()
        };
        let to = if new.is_some() {
            format!("b/{new_path}")
        } else {
            "/dev/null".to_string()
        };
        let text = diff
            .unified_diff()
            .context_radius(DIFF_CONTEXT)
            .header(&from, &to)
            .to_string();
        let shown = if new.is_some() { new_path } else { old_path };
        Self {
            path: shown.to_string(),
            operation,
            moved_from: (old_path != new_path).then(|| old_path.to_string()),
            added,
            removed,
            diff: text,
        }
    }
}

/// The result of a call that changed `reports`' files: a line per file and the diffs for a
/// model, and the same as structured content; the diffs are cut to fit the output cap.
pub(crate) fn result(
    ws: &Workspace,
    reports: Vec<Report>,
    extra: Option<(&str, Value)>,
) -> ToolResult {
    // The diff appears twice (text and structured content); each copy gets half the budget.
    let mut budget = Budget::new(ws.limits.max_output_bytes / 2);
    let mut truncated = false;
    let mut text = String::new();
    let mut files = Vec::with_capacity(reports.len());
    let (mut added, mut removed) = (0, 0);
    for report in reports {
        added += report.added;
        removed += report.removed;
        let mut diff = report.diff;
        if !budget.spend(diff.len() + report.path.len() + 64) {
            let keep = budget.left().saturating_sub(report.path.len() + 64);
            let mut cut = keep.min(diff.len());
            while !diff.is_char_boundary(cut) {
                cut -= 1;
            }
            // End on a line, so that what is shown is still a diff as far as it goes.
            cut = diff[..cut].rfind('\n').map_or(0, |i| i + 1);
            diff.truncate(cut);
            budget.spend(diff.len());
            truncated = true;
        }
        match &report.moved_from {
            Some(from) => text.push_str(&format!(
                "{} `{from}` -> `{}` (+{} -{})\n",
                report.operation, report.path, report.added, report.removed
            )),
            None => text.push_str(&format!(
                "{} `{}` (+{} -{})\n",
                report.operation, report.path, report.added, report.removed
            )),
        }
        text.push_str(&diff);
        if !diff.is_empty() && !diff.ends_with('\n') {
            text.push('\n');
        }
        let mut file = json!({
            "path": report.path,
            "operation": report.operation,
            "added": report.added,
            "removed": report.removed,
            "diff": diff,
        });
        if let Some(from) = report.moved_from {
            file["movedFrom"] = json!(from);
        }
        files.push(file);
    }
    if truncated {
        text.push_str(&format!(
            "[diff cut to fit the {} output cap]\n",
            human_bytes(ws.limits.max_output_bytes as u64)
        ));
    }
    let mut structured = json!({
        "files": files,
        "added": added,
        "removed": removed,
        "diffTruncated": truncated,
    });
    if let Some((key, value)) = extra {
        structured[key] = value;
    }
    ToolResult::structured_with_text(structured, text)
}

/// The output schema every write tool shares, with `extra` properties.
pub(crate) fn output_schema(extra: Option<(&str, Value)>) -> Value {
    let mut schema = json!({
        "type": "object",
        "properties": {
            "files": {
                "type": "array",
                "description": "Each file the call changed, in the order it changed them.",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "The file, relative to the project root (its new path for a move)."},
                        "operation": {"type": "string", "enum": ["create", "update", "delete", "move"]},
                        "movedFrom": {"type": "string", "description": "For a move: the path it had."},
                        "added": {"type": "integer", "minimum": 0, "description": "Lines added."},
                        "removed": {"type": "integer", "minimum": 0, "description": "Lines removed."},
                        "diff": {"type": "string", "description": "The change as a unified diff (`--- a/path`, `+++ b/path`; `/dev/null` for a created or deleted file)."}
                    },
                    "required": ["path", "operation", "added", "removed", "diff"],
                    "additionalProperties": false
                }
            },
            "added": {"type": "integer", "minimum": 0, "description": "Lines added in all files."},
            "removed": {"type": "integer", "minimum": 0, "description": "Lines removed in all files."},
            "diffTruncated": {"type": "boolean", "description": "True when a diff was cut to fit the output cap (the files were written whole)."}
        },
        "required": ["files", "added", "removed", "diffTruncated"],
        "additionalProperties": false
    });
    if let Some((key, value)) = extra {
        schema["properties"][key] = value;
        if let Some(required) = schema["required"].as_array_mut() {
            required.push(json!(key));
        }
    }
    schema
}

/// The diffs of a plan, for a person deciding whether to let it run: cut at `cap` bytes.
pub(crate) fn preview(reports: &[Report], cap: usize) -> String {
    let mut out = String::new();
    for report in reports {
        out.push_str(&report.diff);
    }
    if out.len() > cap {
        let mut cut = cap;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        cut = out[..cut].rfind('\n').map_or(0, |i| i + 1);
        out.truncate(cut);
        out.push_str(&format!("[diff cut at {}]\n", human_bytes(cap as u64)));
    }
    out
}

/// The absolute paths a plan touches, to refuse naming one file twice.
pub(crate) fn same_file_twice(changes: &[Change]) -> Option<PathBuf> {
    let mut seen = HashSet::new();
    changes
        .iter()
        .find(|c| !seen.insert(c.target.path.clone()))
        .map(|c| c.target.path.clone())
}

/// A call planned: the changes to carry out and what to report of them.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) changes: Vec<Change>,
    pub(crate) reports: Vec<Report>,
    /// A property the tool adds to its result (`file_edit`'s `replacements`).
    pub(crate) extra: Option<(&'static str, Value)>,
}

impl Plan {
    /// Every file the plan changes, with what it was when planned (`None`: a new file).
    pub(crate) fn stamps(&self) -> Vec<(String, Option<Stamp>)> {
        self.changes
            .iter()
            .map(|c| (c.user_path.clone(), c.old.as_ref().map(|o| o.stamp.clone())))
            .collect()
    }

    /// Carries the plan out and reports it.
    pub(crate) fn carry_out(mut self, ws: &Workspace, session: Option<&str>) -> ToolResult {
        if let Some(twice) = same_file_twice(&self.changes) {
            return ToolResult::error(format!(
                "`{}` is changed twice in one call; change each file once",
                ws.root.display(&twice)
            ));
        }
        match commit(ws, &mut self.changes, session) {
            Ok(()) => result(ws, self.reports, self.extra),
            Err(refused) => refused,
        }
    }
}
