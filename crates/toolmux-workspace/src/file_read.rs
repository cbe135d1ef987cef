//! `file_read`: a window of lines from one text file, numbered, under a byte cap.

use std::fs::{File, Metadata};
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

use serde_json::{Map, Value, json};
use toolmux_core::{ToolDescriptor, ToolResult};

use crate::args::Args;
use crate::output::Budget;
use crate::reads::{Hashing, Stamp};
use crate::root::{ProjectRoot, Resolved};
use crate::{Access, Workspace, WorkspaceLimits, descriptor};
use toolmux_core::human_bytes;

pub(crate) const NAME: &str = "file_read";

const DEFAULT_LIMIT: usize = 2000;
/// How much of the start of a file decides whether it is text (as git and ripgrep do).
const SNIFF_BYTES: usize = 8 * 1024;
/// How far past the window `file_read` reads to count the file's lines. Counting a sparse
/// 60 GB file to its end kept a thread busy for minutes after the caller had given up
/// (issue 12, D11); past this the total is reported as a lower bound.
const COUNT_BUDGET_BYTES: u64 = 16 * 1024 * 1024;

pub(crate) fn descriptor_for(limits: &WorkspaceLimits) -> ToolDescriptor {
    let cap = human_bytes(limits.max_read_bytes as u64);
    descriptor(
        Access::Read,
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
                "totalLines": {"type": "integer", "minimum": 0, "description": "How many lines the file has; when `totalLinesExact` is false, a lower bound (the file goes on past what was counted)."},
                "totalLinesExact": {"type": "boolean", "description": format!("False when the file is too long past the window to count its lines (more than {} beyond it) and `totalLines` only says how many there are at least.", human_bytes(COUNT_BUDGET_BYTES))},
                "truncated": {"type": "boolean", "description": "True when the byte cap cut the window short of `limit` lines (or cut a single long line)."},
                "content": {"type": "string", "description": "The returned lines exactly as in the file, line endings included."}
            },
            "required": ["path", "startLine", "endLine", "totalLines", "totalLinesExact", "truncated", "content"],
            "additionalProperties": false
        }),
    )
}

pub(crate) fn run(
    ws: &Workspace,
    arguments: &Map<String, Value>,
    session: Option<&str>,
) -> Result<ToolResult, String> {
    let args = Args::new(arguments, &["path", "offset", "limit"])?;
    let path = args.required_string("path")?;
    let offset = args.integer("offset", 1, 1, usize::MAX)?;
    let limit = args.integer("limit", DEFAULT_LIMIT, 1, usize::MAX)?;

    let Resolved { path: abs, handle } = ws.root.resolve_open(path).map_err(|e| e.to_string())?;
    let shown = ws.root.display(&abs);
    let unreadable = |e: io::Error| cannot_read(&shown, e);
    // Looked at through the handle resolution opened (`O_PATH`), so a device is never opened.
    let meta = handle.metadata().map_err(unreadable)?;
    drop(handle);
    if meta.is_dir() {
        return Err(format!("`{shown}` is a directory; use directory_list"));
    }
    if !meta.is_file() {
        return Err(not_regular(&shown));
    }
    let (mut file, meta) = open_regular(&ws.root, &abs, path, &shown)?;
    let size = human_bytes(meta.len());

    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(unreadable)?;
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

    // Hashed on the way, so that a read to the end tells `file_write` what was seen.
    let mut reader =
        BufReader::with_capacity(64 * 1024, Hashing::new(Cursor::new(head).chain(file)));
    let window = read_window(&mut reader, offset, limit, &ws.limits, COUNT_BUDGET_BYTES)
        .map_err(|e| match NulByte::of(&e) {
            Some(NulByte { line: Some(line) }) => format!(
                "`{shown}` holds binary data (a NUL byte) at line {line}; file_read reads text files only"
            ),
            Some(NulByte { line: None }) => format!(
                "`{shown}` holds binary data (a NUL byte) before line {offset}; file_read reads text files only"
            ),
            None => unreadable(e),
        })?;
    let Window {
        lines,
        total_lines,
        exact,
        stop,
    } = window;
    // `exact`: the file was read to its end, so the hash is the whole content's.
    let content_hash = exact.then(|| reader.into_inner().finish());
    let total = if exact {
        total_lines.to_string()
    } else {
        format!("at least {total_lines}")
    };

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
    if total_lines == 0 && exact {
        text.push_str(&format!("(`{shown}` is empty)\n"));
    }
    let next = end_line + 1;
    let truncated = !matches!(stop, Stop::End | Stop::Limit);
    match stop {
        Stop::End => {}
        Stop::Limit => text.push_str(&format!(
            "[showing lines {offset}-{end_line} of {total}; use offset={next} to continue]\n"
        )),
        Stop::Cap(cap) => text.push_str(&format!(
            "[truncated: showing lines {offset}-{end_line} of {total}; {}; use offset={next} to continue]\n",
            cap.note(&ws.limits)
        )),
        Stop::LongLine(cap) => text.push_str(&format!(
            "[truncated: line {end_line} is longer than {} and is cut; use offset={next} to continue]\n",
            cap.name(&ws.limits)
        )),
    }
    if let Some(session) = session {
        ws.reads
            .record(session, &abs, Stamp::new(&meta, content_hash));
    }
    let structured = json!({
        "path": shown,
        "startLine": offset,
        "endLine": end_line,
        "totalLines": total_lines,
        "totalLinesExact": exact,
        "truncated": truncated,
        "content": content,
    });
    Ok(ToolResult::structured_with_text(structured, text))
}

/// Opens `abs` for reading, beneath the root with no link on the way, and non-blocking: if a
/// FIFO or a device was swapped in since it was looked at, the open returns at once and the
/// `fstat` on the descriptor refuses it.
fn open_regular(
    root: &ProjectRoot,
    abs: &Path,
    user_path: &str,
    shown: &str,
) -> Result<(File, Metadata), String> {
    let (file, meta) = root
        .open_for_reading(abs, user_path)
        .map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(not_regular(shown));
    }
    Ok((file, meta))
}

fn not_regular(shown: &str) -> String {
    format!(
        "`{shown}` is not a regular file (a device, socket or pipe); file_read reads text files only"
    )
}

fn cannot_read(shown: &str, e: io::Error) -> String {
    format!("`{shown}` cannot be read: {e}")
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
    /// The file's lines, or as many as were counted when `exact` is false.
    total_lines: usize,
    exact: bool,
    stop: Stop,
}

/// Reads lines `offset..offset+limit` under the caps, then counts the rest of the file, up to
/// `count_budget` bytes past the window. Never holds more than the cap in memory, however long
/// a line is. A NUL byte before `offset` is an `InvalidData` error: the file is binary past
/// the sniffed start (a sparse file, say), and skipping through it would only burn time.
fn read_window(
    reader: &mut impl BufRead,
    offset: usize,
    limit: usize,
    limits: &WorkspaceLimits,
    count_budget: u64,
) -> io::Result<Window> {
    let mut line_no = 0usize;
    while line_no + 1 < offset {
        if !skip_line(reader, true)? {
            return Ok(Window {
                lines: Vec::new(),
                total_lines: line_no,
                exact: true,
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
            if bytes.contains(&0) {
                return Err(nul_at(line_no + 1));
            }
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
            if bytes.contains(&0) {
                return Err(nul_at(line_no + 1));
            }
            let ended = bytes.last() == Some(&b'\n') || skip_line_within(reader, count_budget)?;
            lines.push(Line { bytes });
            line_no += 1;
            stop = Stop::LongLine(cap);
            if !ended {
                // The rest of the line alone is past the counting budget (a sparse file of
                // gigabytes, say): skipping it to count what follows could take minutes.
                return Ok(Window {
                    lines,
                    total_lines: line_no,
                    exact: false,
                    stop,
                });
            }
        } else {
            // Count the line we looked at but did not take, skipping at most the counting
            // budget of it.
            let ended = bytes.last() == Some(&b'\n') || skip_line_within(reader, count_budget)?;
            line_no += 1;
            if !ended {
                return Ok(Window {
                    lines,
                    total_lines: line_no,
                    exact: false,
                    stop: Stop::Cap(cap),
                });
            }
            let (rest, exact) = count_lines(reader, count_budget)?;
            return Ok(Window {
                lines,
                total_lines: line_no + rest,
                exact,
                stop: Stop::Cap(cap),
            });
        }
        break;
    }
    let (rest, exact) = count_lines(reader, count_budget)?;
    Ok(Window {
        lines,
        total_lines: line_no + rest,
        exact,
        stop,
    })
}

/// A NUL byte in a line that `file_read` would show (`line`) or skip over to reach the window
/// (no line): the file is binary past the sniffed start. Carried inside an `InvalidData`
/// [`io::Error`] and told apart from a read error by type, not by message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NulByte {
    line: Option<usize>,
}

impl NulByte {
    fn error(line: Option<usize>) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, NulByte { line })
    }

    /// The `NulByte` inside `e`, if that is what `e` is.
    fn of(e: &io::Error) -> Option<NulByte> {
        e.get_ref()?.downcast_ref::<NulByte>().copied()
    }
}

impl std::fmt::Display for NulByte {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "NUL byte at line {line}"),
            None => f.write_str("NUL byte"),
        }
    }
}

impl std::error::Error for NulByte {}

fn nul_at(line: usize) -> io::Error {
    NulByte::error(Some(line))
}

/// Consumes the rest of the current line, its `\n` included, reading at most about `budget`
/// bytes: true when the line ended (or the file did), false when the budget ran out first.
fn skip_line_within(reader: &mut impl BufRead, budget: u64) -> io::Result<bool> {
    let mut read = 0u64;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(true);
        }
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            reader.consume(i + 1);
            return Ok(true);
        }
        if read >= budget {
            return Ok(false);
        }
        let n = buf.len();
        read += n as u64;
        reader.consume(n);
    }
}

/// Consumes the rest of the current line, its `\n` included. False when already at the end.
/// With `refuse_nul`, a NUL byte on the way is an `InvalidData` error.
fn skip_line(reader: &mut impl BufRead, refuse_nul: bool) -> io::Result<bool> {
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        let end = buf.iter().position(|&b| b == b'\n');
        if refuse_nul && buf[..end.unwrap_or(buf.len())].contains(&0) {
            return Err(NulByte::error(None));
        }
        match end {
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

/// How many lines are left (newlines, plus one for a last line without one), reading at most
/// about `budget` bytes; false with the lines counted so far when the file goes on past that.
fn count_lines(reader: &mut impl BufRead, budget: u64) -> io::Result<(usize, bool)> {
    let mut count = 0usize;
    let mut last = None;
    let mut read = 0u64;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        if read >= budget {
            return Ok((count, false));
        }
        count += buf.iter().filter(|&&b| b == b'\n').count();
        last = buf.last().copied();
        let n = buf.len();
        read += n as u64;
        reader.consume(n);
    }
    if last.is_some_and(|b| b != b'\n') {
        count += 1;
    }
    Ok((count, true))
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
        let w = read_window(&mut r, offset, limit, &limits(read), u64::MAX).unwrap();
        assert!(w.exact);
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
    fn d11_counting_stops_at_the_budget_with_a_lower_bound() {
        let text = "l\n".repeat(100_000);
        // A small buffer, so that the budget is crossed after a few of its fills.
        let mut r = BufReader::with_capacity(1024, Cursor::new(text.into_bytes()));
        let w = read_window(&mut r, 1, 2, &limits(1 << 20), 4096).unwrap();
        assert_eq!(w.lines.len(), 2);
        assert!(!w.exact);
        assert!(
            w.total_lines >= 2 + 2048 && w.total_lines < 100_000,
            "{}",
            w.total_lines
        );
        // Within the budget the count is exact.
        let mut r = BufReader::with_capacity(1024, Cursor::new("l\n".repeat(100).into_bytes()));
        let w = read_window(&mut r, 1, 2, &limits(1 << 20), 4096).unwrap();
        assert!(w.exact);
        assert_eq!(w.total_lines, 100);
    }

    #[test]
    fn d11_skipping_to_an_offset_stops_at_a_nul_byte() {
        let mut text = "l\n".repeat(10).into_bytes();
        text.extend(std::iter::repeat_n(0u8, 100_000));
        let mut r = Cursor::new(text);
        let e = read_window(&mut r, 50, 2, &limits(1 << 20), u64::MAX)
            .err()
            .unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(NulByte::of(&e), Some(NulByte { line: None }));
        // In the window, the line is known.
        let mut r = Cursor::new(b"a\nb\0\n".to_vec());
        let e = read_window(&mut r, 1, 10, &limits(100), u64::MAX)
            .err()
            .unwrap();
        assert_eq!(NulByte::of(&e), Some(NulByte { line: Some(2) }));
        // Any other error is not mistaken for one, whatever its message says.
        let other = io::Error::new(io::ErrorKind::InvalidData, "at line 3");
        assert_eq!(NulByte::of(&other), None);
    }

    #[test]
    fn d6_a_fifo_opened_for_reading_is_refused_by_fstat_without_blocking() {
        // What happens when a FIFO is swapped in after the `O_PATH` look: the non-blocking
        // open returns at once, and the `fstat` on the descriptor refuses it.
        let dir = tempfile::tempdir().unwrap();
        let root = ProjectRoot::new(dir.path()).unwrap();
        let fifo = root.path().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        assert_eq!(
            open_regular(&root, &fifo, "pipe", "pipe").err().unwrap(),
            "`pipe` is not a regular file (a device, socket or pipe); file_read reads text files only"
        );
        std::fs::write(root.path().join("a.txt"), "text\n").unwrap();
        let (file, meta) =
            open_regular(&root, &root.path().join("a.txt"), "a.txt", "a.txt").unwrap();
        assert_eq!(meta.len(), 5);
        assert_eq!(io::read_to_string(file).unwrap(), "text\n");
    }

    #[test]
    fn a_long_first_line_is_cut_at_the_cap() {
        let (lines, total) = window("abcdefghij\nk\n", 1, 10, 4);
        assert_eq!(lines, ["abcd"]);
        assert_eq!(total, 2);
    }
}
