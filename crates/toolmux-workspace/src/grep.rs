//! `grep`: a regex (or literal) search over the project's text files, with ripgrep's own
//! crates doing the walking and the searching, in parallel.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use rustix::fs::OFlags;
use serde_json::{Map, Value, json};
use toolmux_core::{ToolDescriptor, ToolResult};

use crate::args::Args;
use crate::output::Budget;
use crate::root::ProjectRoot;
use crate::walk::{PathGlob, walker};
use crate::{Access, Workspace, WorkspaceLimits, descriptor};
use toolmux_core::human_bytes;

pub(crate) const NAME: &str = "grep";

const DEFAULT_LIMIT: usize = 200;
const MAX_CONTEXT: usize = 10;
/// Lines longer than this are shown as a window around their first match.
const MAX_LINE_BYTES: usize = 500;
/// How many skipped files a result names; the rest are counted.
const MAX_SKIPPED_SHOWN: usize = 10;

pub(crate) fn descriptor_for(limits: &WorkspaceLimits) -> ToolDescriptor {
    let max = limits.max_results;
    let default = DEFAULT_LIMIT.min(max);
    descriptor(
        Access::Read,
        NAME,
        "Search file contents",
        "Search the project's text files for a regular expression (Rust regex syntax, like \
         ripgrep) or, with `literal`, a plain string. Returns matching lines as \
         `path:line: text`, sorted by path and line. Files ignored by .gitignore and binary \
         files are skipped, hidden files are included, symbolic links are not followed.",
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The regular expression (e.g. `fn\\s+main`), or the exact text when `literal` is true. It matches within one line."
                },
                "literal": {
                    "type": "boolean",
                    "default": false,
                    "description": "Treat `pattern` as plain text, not a regular expression. Default false."
                },
                "path": {
                    "type": "string",
                    "default": ".",
                    "description": "The directory (or file) to search, relative to the project root. Default `.` (the whole project)."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files matching this glob: with a `/` it matches the path from the project root (`src/**/*.rs`), without one the file name (`*.rs`). Default: all files."
                },
                "caseSensitive": {
                    "type": "boolean",
                    "default": true,
                    "description": "Match case exactly. Default true; false makes the search case-insensitive."
                },
                "context": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_CONTEXT,
                    "default": 0,
                    "description": format!("Lines of context to show before and after each match. Default 0, at most {MAX_CONTEXT}.")
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": max,
                    "default": default,
                    "description": format!("How many matching lines to return at most; the search stops there. Default {default}, at most {max}.")
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
        json!({
            "type": "object",
            "properties": {
                "matches": {
                    "type": "array",
                    "description": "Matching lines, sorted by path then line.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "The file, relative to the project root."},
                            "line": {"type": "integer", "minimum": 1, "description": "The line number (1-based)."},
                            "text": {"type": "string", "description": format!("The line, without its line ending; a line over {MAX_LINE_BYTES} bytes is shortened around its first match, with `…` marking the cuts.")},
                            "before": {"type": "array", "items": {"type": "string"}, "description": "Present when `context` > 0: the lines just before, in order (fewer at the start of the file)."},
                            "after": {"type": "array", "items": {"type": "string"}, "description": "Present when `context` > 0: the lines just after, in order (fewer at the end of the file)."}
                        },
                        "required": ["path", "line", "text"],
                        "additionalProperties": false
                    }
                },
                "truncated": {"type": "boolean", "description": "True when there are more matches than were returned (the limit or the output cap was reached)."},
                "filesSearched": {"type": "integer", "minimum": 0, "description": "How many files were searched."},
                "skipped": {
                    "type": "array",
                    "description": format!("Present when some files could not be searched to their end (at most {MAX_SKIPPED_SHOWN} are named): a line longer than the line limit, or a read error. Matches before that point are included."),
                    "items": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "The file, relative to the project root."},
                            "reason": {"type": "string", "description": "Why the search of this file stopped."}
                        },
                        "required": ["path", "reason"],
                        "additionalProperties": false
                    }
                },
                "filesSkipped": {"type": "integer", "minimum": 1, "description": "Present with `skipped`: how many files were skipped in all."}
            },
            "required": ["matches", "truncated", "filesSearched"],
            "additionalProperties": false
        }),
    )
}

pub(crate) fn run(
    ws: &Workspace,
    arguments: &Map<String, Value>,
    abandoned: &AtomicBool,
) -> Result<ToolResult, String> {
    let args = Args::new(
        arguments,
        &[
            "pattern",
            "literal",
            "path",
            "glob",
            "caseSensitive",
            "context",
            "limit",
        ],
    )?;
    let pattern = args.required_string("pattern")?;
    let literal = args.boolean("literal", false)?;
    let path = args.string("path", ".")?;
    let glob = args.optional_string("glob")?;
    let case_sensitive = args.boolean("caseSensitive", true)?;
    let context = args.integer("context", 0, 0, MAX_CONTEXT)?;
    let max = ws.limits.max_results;
    let limit = args.integer("limit", DEFAULT_LIMIT.min(max), 1, max)?;

    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(!case_sensitive)
        .fixed_strings(literal)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| {
            if literal {
                format!("invalid search text `{pattern}`: {e}")
            } else {
                format!("invalid regex `{pattern}`: {e}")
            }
        })?;
    let glob = glob.map(PathGlob::new).transpose()?;
    let start = ws.root.resolve(path).map_err(|e| e.to_string())?;

    let search = Search {
        root: &ws.root,
        matcher,
        glob,
        context,
        limit,
        taken: AtomicUsize::new(0),
        more: AtomicBool::new(false),
        files_searched: AtomicUsize::new(0),
        hits: Mutex::new(Vec::new()),
        max_line_bytes: ws.limits.max_line_bytes,
        skipped: Mutex::new(Vec::new()),
        abandoned,
    };
    search.run(&start)?;
    if abandoned.load(Ordering::Relaxed) {
        return Err(crate::ABANDONED.to_string());
    }
    let mut hits = search
        .hits
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    hits.sort_by(|a, b| a.path.cmp(&b.path));
    let more = search.more.into_inner();
    let files_searched = search.files_searched.into_inner();
    let mut skipped = search
        .skipped
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    skipped.sort();

    let rendered = render(ws, &search.matcher, &hits, context);
    let mut text = rendered.text;
    let shown = rendered.matches.len();
    if rendered.capped {
        text.push_str(&format!(
            "[output capped at {} after {shown} matches; narrow the search]\n",
            human_bytes(ws.limits.max_output_bytes as u64)
        ));
    } else if more {
        text.push_str(&format!(
            "[stopped at {limit} matches; there are more: narrow the search{}]\n",
            if limit < max {
                format!(" or raise limit (at most {max})")
            } else {
                String::new()
            }
        ));
    } else if shown == 0 {
        text.push_str(&format!(
            "no matches for `{pattern}` under `{path}` ({files_searched} file{} searched)\n",
            if files_searched == 1 { "" } else { "s" }
        ));
    }
    let mut structured = json!({
        "matches": rendered.matches,
        "truncated": more || rendered.capped,
        "filesSearched": files_searched,
    });
    if !skipped.is_empty() {
        let named: Vec<Value> = skipped
            .iter()
            .take(MAX_SKIPPED_SHOWN)
            .map(|(path, reason)| json!({"path": ws.root.display(path), "reason": reason}))
            .collect();
        let count = skipped.len();
        text.push_str(&format!(
            "[{count} file{} not searched to the end: {}{}]\n",
            if count == 1 { "" } else { "s" },
            named
                .iter()
                .map(|v| format!(
                    "`{}` ({})",
                    v["path"].as_str().unwrap_or(""),
                    v["reason"].as_str().unwrap_or("")
                ))
                .collect::<Vec<_>>()
                .join(", "),
            if count > MAX_SKIPPED_SHOWN {
                format!(" and {} more", count - MAX_SKIPPED_SHOWN)
            } else {
                String::new()
            }
        ));
        structured["skipped"] = Value::Array(named);
        structured["filesSkipped"] = json!(count);
    }
    Ok(ToolResult::structured_with_text(structured, text))
}

/// One search, shared by the walker's threads.
struct Search<'a> {
    root: &'a ProjectRoot,
    matcher: RegexMatcher,
    glob: Option<PathGlob>,
    context: usize,
    limit: usize,
    /// Matches accepted so far, across threads; a match is kept only if it gets a slot below
    /// `limit`.
    taken: AtomicUsize,
    /// A match beyond the limit was found: stop everything.
    more: AtomicBool,
    files_searched: AtomicUsize,
    hits: Mutex<Vec<FileHits>>,
    /// The searcher's heap limit: the longest line (with its context) it holds.
    max_line_bytes: usize,
    /// Files whose search stopped early, and why.
    skipped: Mutex<Vec<(PathBuf, String)>>,
    /// Set when the caller went away: stop walking.
    abandoned: &'a AtomicBool,
}

/// The reported lines of one file: its matches and their context, in line order.
struct FileHits {
    path: PathBuf,
    lines: Vec<HitLine>,
}

struct HitLine {
    number: u64,
    is_match: bool,
    text: String,
}

impl Search<'_> {
    fn run(&self, start: &std::path::Path) -> Result<(), String> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        walker(self.root, start, false)?
            .threads(threads)
            .build_parallel()
            .run(|| {
                // One searcher per thread, reused for every file it searches: its buffers
                // are allocated once.
                // The heap limit bounds the one line (and its context) the searcher holds: a
                // file with a longer line fails with an allocation error and is skipped.
                let mut searcher = SearcherBuilder::new()
                    .line_number(true)
                    .binary_detection(BinaryDetection::quit(b'\x00'))
                    .before_context(self.context)
                    .after_context(self.context)
                    .heap_limit(Some(self.max_line_bytes))
                    .build();
                Box::new(move |entry| self.visit(&mut searcher, entry))
            });
        Ok(())
    }

    fn visit(
        &self,
        searcher: &mut Searcher,
        entry: Result<ignore::DirEntry, ignore::Error>,
    ) -> WalkState {
        if self.more.load(Ordering::Relaxed) || self.abandoned.load(Ordering::Relaxed) {
            return WalkState::Quit;
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                tracing::debug!(error = %e, "grep skipped an entry");
                return WalkState::Continue;
            }
        };
        // Regular files only: links are never followed, devices and pipes never opened.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        if let Some(glob) = &self.glob
            && !glob.is_match(&self.root.display(entry.path()))
        {
            return WalkState::Continue;
        }
        // Opened beneath the root with no link on the way (the walker read its directory by
        // name, which could have been swapped for a link since), non-blocking in case a FIFO
        // was swapped in, and searched only if it is still a regular file. A file that cannot
        // be opened so is passed over silently: its name may come from outside the root.
        let file = match self
            .root
            .open_beneath(entry.path(), OFlags::RDONLY | OFlags::NONBLOCK)
        {
            Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => file,
            Ok(_) => return WalkState::Continue,
            Err(e) => {
                tracing::debug!(path = %entry.path().display(), error = %e, "grep passed over a file it could not open beneath the root");
                return WalkState::Continue;
            }
        };
        self.files_searched.fetch_add(1, Ordering::Relaxed);
        let mut sink = FileSink {
            search: self,
            lines: Vec::new(),
        };
        if let Err(e) = searcher.search_file(&self.matcher, &file, &mut sink) {
            tracing::debug!(path = %entry.path().display(), error = %e, "grep could not search a file to its end");
            // grep-searcher reports its heap limit only as an `io::Error` of kind `Other`
            // whose message says "configured allocation limit (N) exceeded".
            let reason = if e.to_string().contains("allocation limit") {
                format!(
                    "a line longer than {}",
                    human_bytes(self.max_line_bytes as u64)
                )
            } else {
                e.to_string()
            };
            self.skipped
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((entry.path().to_path_buf(), reason));
        }
        if sink.lines.iter().any(|l| l.is_match) {
            let lines = sink.lines;
            self.hits
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(FileHits {
                    path: entry.into_path(),
                    lines,
                });
        }
        if self.more.load(Ordering::Relaxed) {
            WalkState::Quit
        } else {
            WalkState::Continue
        }
    }
}

struct FileSink<'s, 'a> {
    search: &'s Search<'a>,
    lines: Vec<HitLine>,
}

impl Sink for FileSink<'_, '_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = mat.line_number().unwrap_or(0);
        for (i, line) in mat.lines().enumerate() {
            let slot = self.search.taken.fetch_add(1, Ordering::Relaxed);
            if slot >= self.search.limit {
                self.search.more.store(true, Ordering::Relaxed);
                return Ok(false);
            }
            self.lines.push(HitLine {
                number: first + i as u64,
                is_match: true,
                text: line_text(line),
            });
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.lines.push(HitLine {
            number: ctx.line_number().unwrap_or(0),
            is_match: false,
            text: line_text(ctx.bytes()),
        });
        Ok(true)
    }
}

/// A line as text: line ending removed, invalid UTF-8 replaced.
fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

/// A long line shortened to a window around its first match (or its start), `…` marking cuts.
fn shorten(line: &str, matcher: &RegexMatcher) -> String {
    if line.len() <= MAX_LINE_BYTES {
        return line.to_string();
    }
    let at = matcher
        .find(line.as_bytes())
        .ok()
        .flatten()
        .map_or(0, |m| m.start());
    let mut start = at.saturating_sub(MAX_LINE_BYTES / 5);
    while !line.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + MAX_LINE_BYTES).min(line.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = String::with_capacity(end - start + 8);
    if start > 0 {
        out.push('…');
    }
    out.push_str(&line[start..end]);
    if end < line.len() {
        out.push('…');
    }
    out
}

struct Rendered {
    text: String,
    matches: Vec<Value>,
    capped: bool,
}

/// Turns the sorted hits into the text a model reads (`path:line: text`, context lines as
/// `path-line- text`, `--` between groups) and the structured matches, within the output cap.
fn render(ws: &Workspace, matcher: &RegexMatcher, hits: &[FileHits], context: usize) -> Rendered {
    let mut budget = Budget::new(ws.limits.max_output_bytes);
    let mut text = String::new();
    let mut matches = Vec::new();
    let mut capped = false;
    let mut first_group = true;
    for file in hits {
        let rel = ws.root.display(&file.path);
        // The searcher reports lines in order, so a window is a slice found by bisection.
        let lines: Vec<(u64, bool, String)> = file
            .lines
            .iter()
            .map(|l| (l.number, l.is_match, shorten(&l.text, matcher)))
            .collect();
        let index_of = |number: u64| lines.partition_point(|l| l.0 < number);
        let mut shown: Vec<usize> = Vec::new();
        for (i, (number, is_match, line)) in lines.iter().enumerate() {
            if !is_match {
                continue;
            }
            let c = context as u64;
            let before = index_of(number.saturating_sub(c))..i;
            let after = i + 1..index_of(number + c + 1);
            let mut entry = json!({"path": rel, "line": number, "text": line});
            if context > 0 {
                let texts = |r: std::ops::Range<usize>| -> Vec<&str> {
                    lines[r].iter().map(|l| l.2.as_str()).collect()
                };
                entry["before"] = json!(texts(before.clone()));
                entry["after"] = json!(texts(after.clone()));
            }
            let text_cost: usize = lines[before.start..after.end]
                .iter()
                .map(|l| rel.len() + l.2.len() + 12)
                .sum();
            if !budget.spend(entry.to_string().len() + text_cost) {
                capped = true;
                break;
            }
            matches.push(entry);
            shown.extend(before.start..after.end);
        }
        emit(
            &mut text,
            &rel,
            &lines,
            shown,
            context > 0,
            &mut first_group,
        );
        if capped {
            break;
        }
    }
    Rendered {
        text,
        matches,
        capped,
    }
}

/// Appends the shown lines of one file to the text, with `--` before each group of
/// consecutive lines but the first when context is on (as ripgrep prints them).
fn emit(
    text: &mut String,
    rel: &str,
    lines: &[(u64, bool, String)],
    mut shown: Vec<usize>,
    separate_groups: bool,
    first_group: &mut bool,
) {
    shown.sort_unstable();
    shown.dedup();
    let mut previous: Option<u64> = None;
    for j in shown {
        let (number, is_match, line) = &lines[j];
        let contiguous = previous.is_some_and(|p| p + 1 == *number);
        if separate_groups && !contiguous && !*first_group {
            text.push_str("--\n");
        }
        *first_group = false;
        let sep = if *is_match { ':' } else { '-' };
        text.push_str(&format!("{rel}{sep}{number}{sep} {line}\n"));
        previous = Some(*number);
    }
}
