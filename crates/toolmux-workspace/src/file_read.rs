//! `file_read`: a window of lines from one text file, numbered, under a byte cap.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};

use serde_json::{Map, Value, json};
use toolmux_core::{ToolDescriptor, ToolResult};

use crate::args::Args;
use crate::output::{Budget, human_bytes};
use crate::{Workspace, WorkspaceLimits, descriptor};

pub(crate) const NAME: &str = "file_read";

const DEFAULT_LIMIT: usize = 2000;
/// How much of the start of a file decides whether it is text (as git and ripgrep do).
const SNIFF_BYTES: usize = 8 * 1024;

pub(crate) fn descriptor_for(limits: &WorkspaceLimits) -> ToolDescriptor {
    let cap = human_bytes(limits.max_read_bytes as u64);
    descriptor(
        NAME,
        "Read file",
        format!(
            "Read lines of a UTF-8 text file in the project, numbered from 1. Returns at most \
             `limit` lines starting at line `offset`, and at most {cap}; when the output is cut \
             it says which `offset` continues. Binary files and directories are refused (use \
             directory_list for a directory)."
        ),
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file, relative to the project root, with `/` separators (e.g. `src/main.rs`)."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "default": 1,
                    "description": "The first line to return, counting from 1. Default 1."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "default": DEFAULT_LIMIT,
                    "description": format!("How many lines to return at most. Default {DEFAULT_LIMIT}.")
                }
            },
            "required": ["path"],
            "additionalProperties": false
        }),
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the project root (symbolic links inside the root resolved)."},
                "startLine": {"type": "integer", "minimum": 1, "description": "The first line returned (1-based)."},
                "endLine": {"type": "integer", "minimum": 0, "description": "The last line returned; startLine - 1 when no line is returned (an empty file)."},
                "totalLines": {"type": "integer", "minimum": 0, "description": "How many lines the file has."},
                "truncated": {"type": "boolean", "description": "True when the byte cap cut the window short of `limit` lines (or cut a single long line)."},
                "content": {"type": "string", "description": "The returned lines exactly as in the file, line endings included."}
            },
            "required": ["path", "startLine", "endLine", "totalLines", "truncated", "content"],
            "additionalProperties": false
        }),
    )
}

pub(crate) fn run(ws: &Workspace, arguments: &Map<String, Value>) -> Result<ToolResult, String> {
    let args = Args::new(arguments, &["path", "offset", "limit"])?;
    let path = args.required_string("path")?;
    let offset = args.integer("offset", 1, 1, usize::MAX)?;
    let limit = args.integer("limit", DEFAULT_LIMIT, 1, usize::MAX)?;

    let abs = ws.root.resolve(path).map_err(|e| e.to_string())?;
    let shown = ws.root.display(&abs);
    let cannot_read = |e: io::Error| format!("`{shown}` cannot be read: {e}");
    let meta = std::fs::metadata(&abs).map_err(cannot_read)?;
    if meta.is_dir() {
        return Err(format!("`{shown}` is a directory; use directory_list"));
    }
    if !meta.is_file() {
        return Err(format!(
            "`{shown}` is not a regular file (a device, socket or pipe); file_read reads text files only"
        ));
    }
    let size = human_bytes(meta.len());
    let mut file = File::open(&abs).map_err(cannot_read)?;

    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(cannot_read)?;
    if head.contains(&0) {
        return Err(format!(
            "`{shown}` is a binary file ({size}); file_read reads text files only"
        ));
    }
    if let Err(e) = std::str::from_utf8(&head) {
        // A character cut by the sniff window is fine; anything else is not UTF-8.
        if e.error_len().is_some() || head.len() < SNIFF_BYTES {
            return Err(not_utf8(&shown, &size));
        }
    }

    let mut reader = BufReader::with_capacity(64 * 1024, Cursor::new(head).chain(file));
    let window = read_window(&mut reader, offset, limit, &ws.limits).map_err(cannot_read)?;
    let Window {
        lines,
        total_lines,
        stop,
    } = window;

    if offset > total_lines.max(1) {
        return Err(format!(
            "offset {offset} is past the end of `{shown}`, which has {total_lines} line{}",
            if total_lines == 1 { "" } else { "s" }
        ));
    }
    let mut content = String::new();
    for line in &lines {
        content.push_str(std::str::from_utf8(&line.bytes).map_err(|_| not_utf8(&shown, &size))?);
    }
    let end_line = offset + lines.len() - 1;
    let width = end_line.to_string().len();
    let mut text = String::with_capacity(content.len() + lines.len() * (width + 1) + 128);
    for (i, line) in content_lines(&content).enumerate() {
        text.push_str(&format!("{:>width$}\t{line}\n", offset + i));
    }
    if total_lines == 0 {
        text.push_str(&format!("(`{shown}` is empty)\n"));
    }
    let next = end_line + 1;
    let truncated = !matches!(stop, Stop::End | Stop::Limit);
    match stop {
        Stop::End => {}
        Stop::Limit => text.push_str(&format!(
            "[showing lines {offset}-{end_line} of {total_lines}; use offset={next} to continue]\n"
        )),
        Stop::Cap(cap) => text.push_str(&format!(
            "[truncated: showing lines {offset}-{end_line} of {total_lines}; {}; use offset={next} to continue]\n",
            cap.note(&ws.limits)
        )),
        Stop::LongLine(cap) => text.push_str(&format!(
            "[truncated: line {end_line} is longer than {} and is cut; use offset={next} to continue]\n",
            cap.name(&ws.limits)
        )),
    }
    let structured = json!({
        "path": shown,
        "startLine": offset,
        "endLine": end_line,
        "totalLines": total_lines,
        "truncated": truncated,
        "content": content,
    });
    Ok(ToolResult::structured_with_text(structured, text))
}

fn not_utf8(shown: &str, size: &str) -> String {
    format!("`{shown}` is not UTF-8 text ({size}); file_read reads text files only")
}

/// The lines of `content` for display: without their line endings.
fn content_lines(content: &str) -> impl Iterator<Item = &str> {
    content
        .split_inclusive('\n')
        .map(|l| l.strip_suffix('\n').unwrap_or(l))
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
}

struct Line {
    bytes: Vec<u8>,
}

/// Which cap cut the window.
#[derive(Clone, Copy)]
enum Cap {
    Read,
    Output,
}

impl Cap {
    /// For the note after several lines: `256 KiB cap`.
    fn note(self, limits: &WorkspaceLimits) -> String {
        match self {
            Cap::Read => format!("{} cap", human_bytes(limits.max_read_bytes as u64)),
            Cap::Output => format!(
                "output capped at {}",
                human_bytes(limits.max_output_bytes as u64)
            ),
        }
    }

    /// For the note about one line: `the 256 KiB cap`.
    fn name(self, limits: &WorkspaceLimits) -> String {
        match self {
            Cap::Read => format!("the {} cap", human_bytes(limits.max_read_bytes as u64)),
            Cap::Output => format!(
                "the {} output cap",
                human_bytes(limits.max_output_bytes as u64)
            ),
        }
    }
}

/// Why the window ended.
enum Stop {
    /// At the end of the file.
    End,
    /// After `limit` lines.
    Limit,
    /// A cap stopped it before `limit` lines.
    Cap(Cap),
    /// The first line of the window alone is over the cap; it is cut.
    LongLine(Cap),
}

struct Window {
    lines: Vec<Line>,
    total_lines: usize,
    stop: Stop,
}

/// Reads lines `offset..offset+limit` under the caps, then counts the rest of the file. Never
/// holds more than the cap in memory, however long a line is.
fn read_window(
    reader: &mut impl BufRead,
    offset: usize,
    limit: usize,
    limits: &WorkspaceLimits,
) -> io::Result<Window> {
    let mut line_no = 0usize;
    while line_no + 1 < offset {
        if !skip_line(reader)? {
            return Ok(Window {
                lines: Vec::new(),
                total_lines: line_no,
                stop: Stop::End,
            });
        }
        line_no += 1;
    }

    let mut read_left = limits.max_read_bytes;
    let mut budget = Budget::new(limits.max_output_bytes);
    let mut lines = Vec::new();
    let mut stop = Stop::End;
    loop {
        if lines.len() == limit {
            stop = Stop::Limit;
            break;
        }
        // Each line costs its bytes twice (the content and the numbered text) plus its number.
        let number_cost = (line_no + 1).to_string().len() + 1;
        let out_room = budget.left().saturating_sub(number_cost) / 2;
        let room = read_left.min(out_room);
        let cap = if read_left <= out_room {
            Cap::Read
        } else {
            Cap::Output
        };
        let mut bytes = Vec::new();
        (&mut *reader)
            .take(room as u64 + 1)
            .read_until(b'\n', &mut bytes)?;
        if bytes.is_empty() {
            break;
        }
        // Reading stopped within `room`: the line ended, or the file did.
        if bytes.len() <= room {
            read_left -= bytes.len();
            budget.spend(bytes.len() * 2 + number_cost);
            lines.push(Line { bytes });
            line_no += 1;
            continue;
        }
        // The line does not fit.
        if lines.is_empty() {
            // Show as much of it as fits, cut at a character boundary, and move past it.
            bytes.truncate(room);
            let keep = match std::str::from_utf8(&bytes) {
                Ok(s) => s.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(_) => bytes.len(), // reported as not UTF-8 by the caller
            };
            bytes.truncate(keep);
            if bytes.last() != Some(&b'\n') {
                skip_line(reader)?;
            }
            lines.push(Line { bytes });
            line_no += 1;
            stop = Stop::LongLine(cap);
        } else {
            // Count the line we looked at but did not take.
            if bytes.last() != Some(&b'\n') {
                skip_line(reader)?;
            }
            line_no += 1;
            let total_lines = line_no + count_lines(reader)?;
            return Ok(Window {
                lines,
                total_lines,
                stop: Stop::Cap(cap),
            });
        }
        break;
    }
    let total_lines = line_no + count_lines(reader)?;
    Ok(Window {
        lines,
        total_lines,
        stop,
    })
}

/// Consumes the rest of the current line, its `\n` included. False when already at the end.
fn skip_line(reader: &mut impl BufRead) -> io::Result<bool> {
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(true);
            }
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    }
}

/// How many lines are left: newlines, plus one for a last line without one.
fn count_lines(reader: &mut impl BufRead) -> io::Result<usize> {
    let mut count = 0usize;
    let mut last = None;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        count += buf.iter().filter(|&&b| b == b'\n').count();
        last = buf.last().copied();
        let n = buf.len();
        reader.consume(n);
    }
    if last.is_some_and(|b| b != b'\n') {
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(read: usize) -> WorkspaceLimits {
        WorkspaceLimits {
            max_read_bytes: read,
            ..WorkspaceLimits::default()
        }
    }

    fn window(text: &str, offset: usize, limit: usize, read: usize) -> (Vec<String>, usize) {
        let mut r = Cursor::new(text.as_bytes().to_vec());
        let w = read_window(&mut r, offset, limit, &limits(read)).unwrap();
        let lines = w
            .lines
            .into_iter()
            .map(|l| String::from_utf8(l.bytes).unwrap())
            .collect();
        (lines, w.total_lines)
    }

    #[test]
    fn counts_a_last_line_without_a_newline() {
        assert_eq!(
            window("a\nb", 1, 10, 100),
            (vec!["a\n".into(), "b".into()], 2)
        );
        assert_eq!(window("a\nb\n", 1, 10, 100).1, 2);
        assert_eq!(window("", 1, 10, 100).1, 0);
    }

    #[test]
    fn counts_lines_after_the_window() {
        assert_eq!(window("a\nb\nc\nd\n", 2, 1, 100), (vec!["b\n".into()], 4));
    }

    #[test]
    fn a_long_first_line_is_cut_at_the_cap() {
        let (lines, total) = window("abcdefghij\nk\n", 1, 10, 4);
        assert_eq!(lines, ["abcd"]);
        assert_eq!(total, 2);
    }
}
