//! `apply_patch`: a patch of several files — a unified diff (`git diff`, `diff -u`) or the
//! `*** Begin Patch` format Codex's models emit — applied to all its files or to none.
//!
//! Unified diffs are parsed and applied by `diffy` (multi-file, `git diff` headers, creates,
//! deletes, renames; hunks must match exactly, as with `git apply`). The Codex format has no
//! maintained Rust parser on crates.io (Codex's own `codex-apply-patch` is a crate of its
//! repository, not published), so it is parsed here, after its grammar: `*** Add File:`,
//! `*** Delete File:`, `*** Update File:` with an optional `*** Move to:`, chunks led by `@@`
//! and an optional context line, ` `/`-`/`+` lines, and `*** End of File`. Its chunks are
//! found as Codex finds them: from where the previous one ended, matching the lines exactly,
//! then ignoring trailing whitespace, then ignoring surrounding whitespace.

use diffy::patch_set::{FileOperation, ParseOptions, PatchKind, PatchSet};
use serde_json::{Map, Value, json};
use toolmux_core::{ToolDescriptor, ToolResult};

use crate::args::Args;
use crate::write::{self, Change, Eol, Plan, Report};
use crate::{Access, Workspace, WorkspaceLimits, descriptor};

pub(crate) const NAME: &str = "apply_patch";

pub(crate) fn descriptor_for(_limits: &WorkspaceLimits) -> ToolDescriptor {
    descriptor(
        Access::Write,
        NAME,
        "Apply patch",
        "Apply a patch to files of the project: either a unified diff (as `git diff` prints it, \
         several files at once, with new, deleted and renamed files), or the format that starts \
         with `*** Begin Patch` (`*** Add File: path` with `+` lines, `*** Delete File: path`, \
         `*** Update File: path` with an optional `*** Move to: path`, then chunks starting \
         with `@@` or `@@ <a line just above the change>`, each a run of ` ` context, `-` removed \
         and `+` added lines; ends with `*** End Patch`). Either every file changes or none \
         does. Line endings are kept. Returns each change as a unified diff.",
        json!({
            "type": "object",
            "properties": {
                "patch": {"type": "string", "description": "The patch text."}
            },
            "required": ["patch"],
            "additionalProperties": false
        }),
        write::output_schema(None),
    )
}

pub(crate) fn plan(ws: &Workspace, arguments: &Map<String, Value>) -> Result<Plan, ToolResult> {
    let args = Args::new(arguments, &["patch"]).map_err(ToolResult::error)?;
    let patch = args.required_string("patch").map_err(ToolResult::error)?;
    let ops = if is_codex(patch) {
        codex_ops(patch)
    } else {
        unified_ops(patch)
    }
    .map_err(ToolResult::error)?;
    if ops.is_empty() {
        return Err(ToolResult::error("the patch changes no file"));
    }
    let mut changes: Vec<Change> = Vec::new();
    let mut reports = Vec::new();
    for op in ops {
        match op {
            Op::Add { path, content } => {
                let opened = write::open(ws, &path).map_err(ToolResult::error)?;
                let shown = opened.shown(ws);
                if opened.existing.is_some() {
                    return Err(ToolResult::error(format!(
                        "`{shown}` already exists; a patch adds only new files (update it instead)"
                    )));
                }
                reports.push(Report::new("create", &shown, &shown, None, Some(&content)));
                changes.push(opened.change(Some(content)));
            }
            Op::Delete { path } => {
                let opened = write::open(ws, &path).map_err(ToolResult::error)?;
                let shown = opened.shown(ws);
                let Some(old) = &opened.existing else {
                    return Err(ToolResult::error(format!(
                        "`{shown}` does not exist, so it cannot be deleted"
                    )));
                };
                reports.push(Report::new("delete", &shown, &shown, Some(&old.text), None));
                changes.push(opened.change(None));
            }
            Op::Update { path, to, edit } => {
                let opened = write::open(ws, &path).map_err(ToolResult::error)?;
                let shown = opened.shown(ws);
                let Some(old) = &opened.existing else {
                    return Err(ToolResult::error(format!(
                        "`{shown}` does not exist, so it cannot be updated"
                    )));
                };
                let new = edit.apply(&old.text, &shown).map_err(ToolResult::error)?;
                match to {
                    None => {
                        reports.push(Report::new(
                            "update",
                            &shown,
                            &shown,
                            Some(&old.text),
                            Some(&new),
                        ));
                        changes.push(opened.change(Some(new)));
                    }
                    Some(to) => {
                        let dest = write::open(ws, &to).map_err(ToolResult::error)?;
                        let dest_shown = dest.shown(ws);
                        if dest.existing.is_some() {
                            return Err(ToolResult::error(format!(
                                "`{dest_shown}` already exists, so `{shown}` cannot be moved there"
                            )));
                        }
                        reports.push(Report::new(
                            "move",
                            &shown,
                            &dest_shown,
                            Some(&old.text),
                            Some(&new),
                        ));
                        changes.push(opened.change(None));
                        changes.push(dest.change(Some(new)));
                    }
                }
            }
        }
    }
    Ok(Plan {
        changes,
        reports,
        extra: None,
    })
}

/// One file's part of a patch.
#[derive(Debug, PartialEq)]
enum Op {
    Add {
        path: String,
        content: String,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        to: Option<String>,
        edit: Edit,
    },
}

/// How an updated file's new content is made from its old one.
#[derive(Debug, PartialEq)]
enum Edit {
    /// Codex chunks.
    Chunks(Vec<Chunk>),
    /// A unified diff of this one file (the patch text of its hunks, with LF endings).
    Unified(String),
}

impl Edit {
    /// The new content of a file whose content is `old`, or why the patch does not apply. A
    /// CRLF file is patched as if it had LF endings and keeps CRLF.
    fn apply(&self, old: &str, shown: &str) -> Result<String, String> {
        let eol = Eol::of(old);
        let text = eol.to_lf(old);
        let new = match self {
            Edit::Chunks(chunks) => apply_chunks(&text, chunks, shown)?,
            Edit::Unified(patch) => {
                let parsed = diffy::Patch::from_str(patch)
                    .map_err(|e| format!("the diff of `{shown}` cannot be read: {e}"))?;
                diffy::apply(&text, &parsed).map_err(|e| {
                    format!("{e} of `{shown}`: its context and removed lines are not in the file as they are now")
                })?
            }
        };
        Ok(eol.restore(&new))
    }
}

// ---- the unified diff ----------------------------------------------------------------------

/// Strips git's `a/` or `b/` from a path of a `---` or `+++` line.
fn strip<'a>(path: &'a str, prefix: &str) -> &'a str {
    path.strip_prefix(prefix).unwrap_or(path)
}

fn unified_ops(patch: &str) -> Result<Vec<Op>, String> {
    // diffy matches lines with their endings; patches written on Windows come with CRLF.
    let text = patch.replace("\r\n", "\n");
    // git's format needs its `diff --git` lines; a plain `diff -u` has only `---`/`+++`.
    let options = if text.lines().any(|l| l.starts_with("diff --git ")) {
        ParseOptions::gitdiff()
    } else {
        ParseOptions::unidiff()
    };
    let mut ops = Vec::new();
    for file in PatchSet::parse(&text, options) {
        let file = match file {
            Ok(file) => file,
            Err(_) if ops.is_empty() && !text.lines().any(|l| l.starts_with("@@")) => break,
            Err(e) => return Err(format!("the patch cannot be read: {e}")),
        };
        let PatchKind::Text(diff) = file.patch() else {
            return Err("the patch changes a binary file; only text files are patched".into());
        };
        let hunks = diff.to_string();
        let op = match file.operation() {
            FileOperation::Create(path) => {
                let content = diffy::apply("", diff)
                    .map_err(|e| format!("the new file `{path}` cannot be made: {e}"))?;
                Op::Add {
                    path: strip(path, "b/").to_string(),
                    content,
                }
            }
            FileOperation::Delete(path) => Op::Delete {
                path: strip(path, "a/").to_string(),
            },
            FileOperation::Modify { original, modified } => {
                let from = strip(original, "a/").to_string();
                let to = strip(modified, "b/").to_string();
                Op::Update {
                    to: (from != to).then_some(to),
                    path: from,
                    edit: Edit::Unified(hunks),
                }
            }
            // git's rename and copy headers carry no `a/` or `b/`.
            FileOperation::Rename { from, to } => Op::Update {
                path: from.to_string(),
                to: Some(to.to_string()),
                edit: Edit::Unified(hunks),
            },
            FileOperation::Copy { from, .. } => {
                return Err(format!(
                    "the patch copies `{from}`; copies are not supported (add the new file instead)"
                ));
            }
        };
        ops.push(op);
    }
    if ops.is_empty() {
        return Err(
            "the patch is neither a unified diff (`--- a/path`, `+++ b/path`, `@@` hunks) nor \
             starts with `*** Begin Patch`"
                .into(),
        );
    }
    Ok(ops)
}

// ---- the Codex format ------------------------------------------------------------------------

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// One chunk of an update: the lines it replaces, found after its context line if it has one.
#[derive(Debug, PartialEq)]
struct Chunk {
    context: Option<String>,
    old: Vec<String>,
    new: Vec<String>,
    /// The old lines are at the end of the file.
    end_of_file: bool,
}

/// Whether `patch` is in the Codex format (possibly wrapped in a heredoc, as models write it
/// for a shell).
fn is_codex(patch: &str) -> bool {
    let lines = codex_lines(patch);
    lines.first().is_some_and(|l| l.trim() == BEGIN)
}

/// The lines of a Codex patch, without a heredoc around it (`<<'EOF'` … `EOF`).
fn codex_lines(patch: &str) -> Vec<&str> {
    let lines: Vec<&str> = patch.trim().lines().collect();
    match lines.as_slice() {
        [first, inner @ .., last]
            if matches!(*first, "<<EOF" | "<<'EOF'" | "<<\"EOF\"") && last.trim() == "EOF" =>
        {
            inner.to_vec()
        }
        _ => lines,
    }
}

fn codex_ops(patch: &str) -> Result<Vec<Op>, String> {
    let lines = codex_lines(patch);
    if lines.first().map(|l| l.trim()) != Some(BEGIN) {
        return Err(format!("the first line of the patch must be `{BEGIN}`"));
    }
    if lines.len() < 2 || lines.last().map(|l| l.trim()) != Some(END) {
        return Err(format!("the last line of the patch must be `{END}`"));
    }
    let body = &lines[1..lines.len() - 1];
    let mut ops = Vec::new();
    let mut i = 0;
    // Line numbers in messages count from the `*** Begin Patch` line, as 1.
    let at = |i: usize| i + 2;
    while i < body.len() {
        let line = body[i].trim();
        if line.is_empty() {
            i += 1;
            continue;
        }
        if let Some(path) = line.strip_prefix(ADD) {
            i += 1;
            let mut content = String::new();
            while i < body.len() {
                let Some(added) = body[i].strip_prefix('+') else {
                    break;
                };
                content.push_str(added);
                content.push('\n');
                i += 1;
            }
            ops.push(Op::Add {
                path: path.trim().to_string(),
                content,
            });
        } else if let Some(path) = line.strip_prefix(DELETE) {
            ops.push(Op::Delete {
                path: path.trim().to_string(),
            });
            i += 1;
        } else if let Some(path) = line.strip_prefix(UPDATE) {
            let start = i;
            i += 1;
            let to = body
                .get(i)
                .and_then(|l| l.trim().strip_prefix(MOVE))
                .map(|p| p.trim().to_string());
            if to.is_some() {
                i += 1;
            }
            let mut chunks: Vec<Chunk> = Vec::new();
            while i < body.len() {
                let line = body[i];
                if line.starts_with("***") && line.trim() != END_OF_FILE {
                    break;
                }
                let context = if line.trim_end() == "@@" {
                    i += 1;
                    None
                } else if let Some(context) = line.strip_prefix("@@ ") {
                    i += 1;
                    Some(context.to_string())
                } else if chunks.is_empty() {
                    // The first chunk may start with its lines, without `@@`.
                    None
                } else {
                    return Err(format!(
                        "line {}: expected `@@` to start the next chunk of `{path}`, got `{line}`",
                        at(i)
                    ));
                };
                let mut chunk = Chunk {
                    context,
                    old: Vec::new(),
                    new: Vec::new(),
                    end_of_file: false,
                };
                let first = i;
                while i < body.len() {
                    let line = body[i];
                    if line.trim() == END_OF_FILE {
                        chunk.end_of_file = true;
                        i += 1;
                        break;
                    }
                    if line.starts_with("@@") || line.starts_with("***") {
                        break;
                    }
                    match line.chars().next() {
                        // An empty line is an empty context line (editors strip the space).
                        None => {
                            chunk.old.push(String::new());
                            chunk.new.push(String::new());
                        }
                        Some(' ') => {
                            chunk.old.push(line[1..].to_string());
                            chunk.new.push(line[1..].to_string());
                        }
                        Some('-') => chunk.old.push(line[1..].to_string()),
                        Some('+') => chunk.new.push(line[1..].to_string()),
                        Some(_) => {
                            return Err(format!(
                                "line {}: every line of a chunk starts with ` ` (context), `-` \
                                 (removed) or `+` (added); got `{line}`",
                                at(i)
                            ));
                        }
                    }
                    i += 1;
                }
                if i == first || (chunk.old.is_empty() && chunk.new.is_empty()) {
                    return Err(format!(
                        "line {}: a chunk of `{path}` has no lines",
                        at(first)
                    ));
                }
                chunks.push(chunk);
            }
            if chunks.is_empty() && to.is_none() {
                return Err(format!(
                    "line {}: `{UPDATE}{path}` changes nothing",
                    at(start)
                ));
            }
            ops.push(Op::Update {
                path: path.trim().to_string(),
                to,
                edit: Edit::Chunks(chunks),
            });
        } else {
            return Err(format!(
                "line {}: `{line}` is not `{ADD}path`, `{DELETE}path` or `{UPDATE}path`",
                at(i)
            ));
        }
    }
    Ok(ops)
}

/// Applies Codex chunks to `text` (LF endings).
fn apply_chunks(text: &str, chunks: &[Chunk], shown: &str) -> Result<String, String> {
    let had_newline = text.is_empty() || text.ends_with('\n');
    let mut lines: Vec<&str> = text.split('\n').collect();
    if had_newline {
        lines.pop();
    }
    let mut replacements: Vec<(usize, usize, &[String])> = Vec::new();
    let mut next = 0usize;
    let total = chunks.len();
    for (k, chunk) in chunks.iter().enumerate() {
        let label = if total == 1 {
            String::new()
        } else {
            format!("chunk {} of {total}: ", k + 1)
        };
        if let Some(context) = &chunk.context {
            match seek(&lines, std::slice::from_ref(context), next, false) {
                Some(at) => next = at + 1,
                None => {
                    return Err(format!(
                        "{label}the context line `{context}` was not found in `{shown}`"
                    ));
                }
            }
        }
        if chunk.old.is_empty() {
            let at = if chunk.context.is_some() && !chunk.end_of_file {
                next
            } else {
                lines.len()
            };
            replacements.push((at, 0, &chunk.new));
            continue;
        }
        let mut old: &[String] = &chunk.old;
        let mut new: &[String] = &chunk.new;
        let mut found = seek(&lines, old, next, chunk.end_of_file);
        // A trailing empty line in the chunk often stands for the file's last newline.
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(&lines, old, next, chunk.end_of_file);
        }
        let Some(at) = found else {
            return Err(format!(
                "{label}the lines to change were not found in `{shown}` (looking for `{}`{})",
                chunk.old[0],
                if chunk.old.len() > 1 {
                    " and what follows"
                } else {
                    ""
                }
            ));
        };
        replacements.push((at, old.len(), new));
        next = at + old.len();
    }
    replacements.sort_by_key(|r| r.0);
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut cursor = 0;
    for (at, len, new) in replacements {
        if at < cursor {
            return Err(format!("two chunks of `{shown}` change the same lines"));
        }
        out.extend_from_slice(&lines[cursor..at]);
        out.extend(new.iter().map(String::as_str));
        cursor = at + len;
    }
    out.extend_from_slice(&lines[cursor..]);
    let mut result = out.join("\n");
    if had_newline && !out.is_empty() {
        result.push('\n');
    }
    Ok(result)
}

/// Whether a line of the file matches a line of a chunk, at one level of strictness.
type LineMatch = fn(&str, &str) -> bool;

/// Where `pattern` starts in `lines`, at `from` or later (from the end with `end_of_file`):
/// exactly, else ignoring trailing whitespace, else ignoring surrounding whitespace.
fn seek(lines: &[&str], pattern: &[String], from: usize, end_of_file: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(from);
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    let starts: Vec<usize> = if end_of_file {
        std::iter::once(last).chain(from..=last).collect()
    } else {
        (from..=last).collect()
    };
    let same: [LineMatch; 3] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
    ];
    same.iter().find_map(|eq| {
        starts
            .iter()
            .copied()
            .find(|&at| at >= from && pattern.iter().zip(&lines[at..]).all(|(p, l)| eq(l, p)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_patches_parse_into_file_operations() {
        let ops = codex_ops(
            "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Delete File: b.txt\n\
             *** Update File: c.txt\n*** Move to: d.txt\n@@ fn main\n context\n-old\n+new\n\
             *** End of File\n*** End Patch\n",
        )
        .unwrap();
        assert_eq!(
            ops,
            [
                Op::Add {
                    path: "a.txt".into(),
                    content: "one\ntwo\n".into()
                },
                Op::Delete {
                    path: "b.txt".into()
                },
                Op::Update {
                    path: "c.txt".into(),
                    to: Some("d.txt".into()),
                    edit: Edit::Chunks(vec![Chunk {
                        context: Some("fn main".into()),
                        old: vec!["context".into(), "old".into()],
                        new: vec!["context".into(), "new".into()],
                        end_of_file: true,
                    }])
                }
            ]
        );
        assert_eq!(
            codex_ops("*** Begin Patch\n*** Frobnicate: x\n*** End Patch").unwrap_err(),
            "line 2: `*** Frobnicate: x` is not `*** Add File: path`, `*** Delete File: path` or `*** Update File: path`"
        );
        assert_eq!(
            codex_ops("*** Begin Patch\n*** Add File: x\n+a").unwrap_err(),
            "the last line of the patch must be `*** End Patch`"
        );
        // A heredoc around it, as a model writes it for a shell, is taken off.
        assert!(is_codex(
            "<<'EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF\n"
        ));
    }

    #[test]
    fn chunks_apply_after_their_context_and_tolerate_trailing_whitespace() {
        let text = "fn a() {\n    x\n}\nfn b() {\n    x\n}\n";
        let chunks = vec![Chunk {
            context: Some("fn b() {".into()),
            old: vec!["    x  ".into()],
            new: vec!["    y".into()],
            end_of_file: false,
        }];
        assert_eq!(
            apply_chunks(text, &chunks, "f.rs").unwrap(),
            "fn a() {\n    x\n}\nfn b() {\n    y\n}\n"
        );
        let missing = vec![Chunk {
            context: None,
            old: vec!["nope".into()],
            new: vec![],
            end_of_file: false,
        }];
        assert_eq!(
            apply_chunks(text, &missing, "f.rs").unwrap_err(),
            "the lines to change were not found in `f.rs` (looking for `nope`)"
        );
    }
}
