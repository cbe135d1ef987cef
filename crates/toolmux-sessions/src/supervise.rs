//! Running one session's process: started the one way toolmux starts a child (its own process
//! group, the allowlisted environment, the subreaper's mark), its output read line by line into
//! the log (a line cut at [`LINE_CAP`], the whole log at [`LOG_CAP`]; nothing of it kept in
//! memory beyond a bounded channel), and stopped — SIGTERM to the group, SIGKILL after
//! [`GRACE`], then a sweep of what escaped the group — on cancel, at its time limit, and once
//! it has exited, so that a child it forked does not outlive it.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolmux_config::RunnerProtocol;
use toolmux_core::Asker;
use toolmux_scripts::child::{Signal, signal_group};

use crate::error::SessionError;
use crate::record::{LogEntry, SessionRecord, Status, Stream};
use crate::sessions::{Plan, Sessions};
use crate::store::LogSink;

/// The longest log line kept; the rest of a longer one is dropped (the entry says `cut`).
pub const LINE_CAP: usize = 64 * 1024;
/// The most log bytes a session writes; past it lines are counted, not kept.
pub const LOG_CAP: u64 = 512 * 1024 * 1024;
/// How long a runner has between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);
/// How often a session run here checks whether another process asked to cancel it.
const CANCEL_POLL: Duration = Duration::from_millis(250);
/// How many read lines may wait for the writer: the memory bound of a fast runner's output.
const QUEUE: usize = 1024;

/// Why a session ended, when not on its own.
enum Stop {
    Cancelled,
    TimedOut,
}

/// One line read from the runner, or an ACP update.
pub(crate) struct Line {
    pub(crate) stream: Stream,
    pub(crate) text: String,
    pub(crate) json: Option<Value>,
    pub(crate) kind: Option<String>,
    pub(crate) cut: bool,
}

/// Starts the session's process and leaves its supervision running on the runtime; `record`
/// is saved as `running`.
pub(crate) async fn launch(
    sessions: Sessions,
    plan: &Plan,
    record: &mut SessionRecord,
    token: CancellationToken,
    asker: Option<Asker>,
) -> Result<(), SessionError> {
    let sink = sessions.store().log_sink(&record.id)?;
    match plan.runner.protocol {
        RunnerProtocol::Shell => launch_shell(sessions, plan, record, token, sink).await,
        RunnerProtocol::Acp => {
            crate::acp_run::launch(sessions, plan, record, token, sink, asker).await
        }
    }
}

async fn launch_shell(
    sessions: Sessions,
    plan: &Plan,
    record: &mut SessionRecord,
    token: CancellationToken,
    sink: Box<dyn LogSink>,
) -> Result<(), SessionError> {
    let (mut child, guard) = toolmux_scripts::child::spawn(
        plan.program.as_os_str(),
        &plan.args,
        &plan.cwd,
        plan.env.iter(),
        plan.runner.inherit_env,
    )
    .map_err(|e| SessionError::Failed(format!("cannot start `{}`: {e}", plan.program.display())))?;
    // The prompt is on the command line; a runner that also reads stdin (codex does when it
    // is a pipe) sees it end at once instead of waiting for a person.
    drop(child.stdin.take());
    record.status = Status::Running;
    record.started_at = Some(chrono::Utc::now());
    record.pgid = guard.pgid();
    sessions.store().save(record)?;
    let (tx, rx) = mpsc::channel(QUEUE);
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(read_lines(out, Stream::Stdout, tx.clone())));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(read_lines(err, Stream::Stderr, tx.clone())));
    }
    drop(tx);
    let record = record.clone();
    let timeout = plan.timeout;
    tokio::spawn(async move {
        let mut log = Log::new(sink);
        log.note(&format!("started: {}", record.command.join(" ")));
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + timeout;
        let mut rx = rx;
        let mut poll = tokio::time::interval(CANCEL_POLL);
        let mut exited = None;
        let mut stop = None;
        let mut open = true;
        while exited.is_none() && stop.is_none() {
            tokio::select! {
                biased;
                line = rx.recv(), if open => match line {
                    Some(line) => {
                        log.write(line);
                        if rx.is_empty() {
                            log.flush();
                        }
                    }
                    None => open = false,
                },
                status = child.wait() => exited = Some(status),
                () = token.cancelled() => stop = Some(Stop::Cancelled),
                () = tokio::time::sleep_until(deadline) => stop = Some(Stop::TimedOut),
                _ = poll.tick() => if sessions.store().cancel_requested(&record.id) {
                    stop = Some(Stop::Cancelled);
                },
            }
        }
        let mut guard = guard;
        if stop.is_some() {
            if let Some(pgid) = guard.pgid() {
                signal_group(pgid, Signal::Term);
            }
            // Its output keeps being logged while it winds down.
            let wound_down = tokio::time::timeout(GRACE, async {
                loop {
                    tokio::select! {
                        line = rx.recv(), if open => match line {
                            Some(line) => log.write(line),
                            None => open = false,
                        },
                        status = child.wait() => return status,
                    }
                }
            })
            .await;
            if let Ok(status) = wound_down {
                exited = Some(status);
            }
        }
        // The group, and whatever left it, goes now: a child the runner forked must not
        // outlive the session, nor keep its output pipes open.
        guard.sweep().await;
        if exited.is_none() {
            exited = Some(child.wait().await);
        }
        drain(&mut rx, open, &mut log).await;
        for reader in readers {
            reader.abort();
        }
        let status = exited.and_then(Result::ok);
        let (final_status, error) = match stop {
            Some(Stop::Cancelled) => (Status::Cancelled, Some("cancelled".to_string())),
            Some(Stop::TimedOut) => (
                Status::Failed,
                Some(format!(
                    "the time limit of {}s was reached; the runner was stopped",
                    timeout.as_secs()
                )),
            ),
            None => match status.and_then(|s| s.code()) {
                Some(0) => (Status::Completed, None),
                Some(code) => (
                    Status::Failed,
                    Some(format!("the runner exited with status {code}")),
                ),
                None => (
                    Status::Failed,
                    Some("the runner was killed by a signal".to_string()),
                ),
            },
        };
        let exit_code = status.and_then(|s| s.code());
        finish(
            &sessions,
            record,
            &mut log,
            final_status,
            exit_code,
            error,
            started,
        );
    });
    Ok(())
}

/// What is still queued once the process is gone (bounded: the readers end with the pipes,
/// which the sweep closed).
async fn drain(rx: &mut mpsc::Receiver<Line>, open: bool, log: &mut Log) {
    if !open {
        return;
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Some(line) = rx.recv().await {
            log.write(line);
        }
    })
    .await;
}

/// Records how a session ended.
pub(crate) fn finish(
    sessions: &Sessions,
    mut record: SessionRecord,
    log: &mut Log,
    status: Status,
    exit_code: Option<i32>,
    error: Option<String>,
    started: Instant,
) {
    log.note(&format!(
        "{status}{}",
        exit_code
            .map(|c| format!(" (exit code {c})"))
            .unwrap_or_default()
    ));
    log.flush();
    record.status = status;
    record.exit_code = exit_code;
    record.error = error;
    record.ended_at = Some(chrono::Utc::now());
    record.duration_ms = Some(started.elapsed().as_millis() as u64);
    record.log_lines = log.seq;
    record.final_answer = log.answer.get();
    record.pgid = None;
    if let Err(e) = sessions.store().save(&record) {
        tracing::warn!("session {} cannot be recorded as ended: {e}", record.id);
    }
    sessions.live().remove(&record.id);
}

/// Reads a stream line by line, each cut at [`LINE_CAP`] (the rest of a longer line is read
/// and dropped, so a runner that prints a huge line costs no memory).
async fn read_lines(stream: impl AsyncRead + Unpin, kind: Stream, tx: mpsc::Sender<Line>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stream);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let mut cut = false;
        let mut ended = false;
        loop {
            let chunk = match reader.fill_buf().await {
                Ok(chunk) => chunk,
                Err(_) => {
                    ended = true;
                    break;
                }
            };
            if chunk.is_empty() {
                ended = true;
                break;
            }
            let (part, used, line_done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (&chunk[..i], i + 1, true),
                None => (chunk, chunk.len(), false),
            };
            let room = LINE_CAP.saturating_sub(buf.len());
            if part.len() > room {
                cut = true;
            }
            buf.extend_from_slice(&part[..part.len().min(room)]);
            reader.consume(used);
            if line_done {
                break;
            }
        }
        if ended && buf.is_empty() {
            return;
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        let text = String::from_utf8_lossy(&buf).into_owned();
        let json = (text.starts_with('{') && !cut)
            .then(|| serde_json::from_str::<Value>(&text).ok())
            .flatten()
            .filter(Value::is_object);
        let line = Line {
            stream: kind,
            text,
            json,
            kind: None,
            cut,
        };
        if tx.send(line).await.is_err() || ended {
            return;
        }
    }
}

/// A session's log as it is written: sequence numbers, the byte cap, flushing.
pub(crate) struct Log {
    sink: Box<dyn LogSink>,
    pub(crate) seq: u64,
    bytes: u64,
    dropped: u64,
    failed: bool,
    answer: Answer,
}

/// The agent's final answer as its log lines show it (see `SessionRecord::final_answer`).
#[derive(Default)]
struct Answer {
    text: String,
    /// The last ACP update was a piece of the message `text` holds: the next piece continues
    /// it; after any other update the next piece starts a new message.
    open: bool,
}

/// The most of a final answer kept in a session's record (its end; the log keeps it whole).
const ANSWER_CAP: usize = 64 * 1024;

impl Answer {
    fn see(&mut self, line: &Line) {
        match (line.stream, line.kind.as_deref()) {
            (Stream::Acp, Some("message_chunk")) => {
                if !self.open {
                    self.text.clear();
                    self.open = true;
                }
                self.text.push_str(&line.text);
            }
            // Thinking aloud does not end a message; the agent's self-description is no update.
            (Stream::Acp, Some("thought_chunk" | "agent")) => {}
            (Stream::Acp, _) => self.open = false,
            (Stream::Stdout, _) => {
                if let Some(text) = line.json.as_ref().and_then(result_text) {
                    self.text = text.to_string();
                }
            }
            _ => {}
        }
        if self.text.len() > ANSWER_CAP {
            let mut cut = self.text.len() - ANSWER_CAP;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
        }
    }

    fn get(&self) -> Option<String> {
        let text = self.text.trim();
        (!text.is_empty()).then(|| text.to_string())
    }
}

/// The final text of a stream-json line: Claude Code's `{"type": "result", "result"}` or
/// Codex's `{"type": "item.completed", "item": {"type": "agent_message", "text"}}`.
fn result_text(json: &Value) -> Option<&str> {
    match json["type"].as_str()? {
        "result" => json["result"].as_str(),
        "item.completed" if json["item"]["type"] == "agent_message" => {
            json["item"]["text"].as_str()
        }
        _ => None,
    }
}

impl Log {
    pub(crate) fn new(sink: Box<dyn LogSink>) -> Self {
        Self {
            sink,
            seq: 0,
            bytes: 0,
            dropped: 0,
            failed: false,
            answer: Answer::default(),
        }
    }

    pub(crate) fn write(&mut self, line: Line) {
        if self.bytes > LOG_CAP {
            self.dropped += 1;
            return;
        }
        self.bytes += line.text.len() as u64 + 64;
        self.answer.see(&line);
        let text = match &line.json {
            Some(json) if line.stream != Stream::Acp => summary(json).unwrap_or(line.text),
            _ => line.text,
        };
        let entry = LogEntry {
            seq: self.seq,
            at: chrono::Utc::now(),
            stream: line.stream,
            text,
            json: line.json,
            kind: line.kind,
            cut: line.cut,
        };
        self.seq += 1;
        if let Err(e) = self.sink.append(&entry)
            && !self.failed
        {
            self.failed = true;
            tracing::warn!("a session log cannot be written: {e}");
        }
        if self.bytes > LOG_CAP {
            let note = format!(
                "the log reached its cap of {} MiB; later lines are not kept",
                LOG_CAP / (1024 * 1024)
            );
            self.note(&note);
        }
    }

    pub(crate) fn note(&mut self, text: &str) {
        let entry = LogEntry {
            seq: self.seq,
            at: chrono::Utc::now(),
            stream: Stream::Toolmux,
            text: text.to_string(),
            json: None,
            kind: None,
            cut: false,
        };
        self.seq += 1;
        let _ = self.sink.append(&entry);
    }

    pub(crate) fn flush(&mut self) {
        if self.dropped > 0 {
            let dropped = std::mem::take(&mut self.dropped);
            self.note(&format!("{dropped} lines past the log cap were not kept"));
        }
        let _ = self.sink.flush();
    }
}

/// A readable line for a JSON event of a stream-json mode (Claude Code, Gemini CLI, Codex,
/// Cursor): its type and the first text in it.
fn summary(json: &Value) -> Option<String> {
    let kind = json
        .get("type")
        .or_else(|| json.get("method"))
        .and_then(Value::as_str);
    let text = first_text(json, 0);
    match (kind, text) {
        (Some(k), Some(t)) => Some(format!("[{k}] {t}")),
        (Some(k), None) => Some(format!("[{k}]")),
        (None, Some(t)) => Some(t),
        (None, None) => None,
    }
}

fn first_text(value: &Value, depth: usize) -> Option<String> {
    if depth > 6 {
        return None;
    }
    match value {
        Value::Object(map) => {
            for key in ["text", "result", "delta", "content", "message"] {
                if let Some(Value::String(s)) = map.get(key) {
                    return Some(s.clone());
                }
            }
            map.values().find_map(|v| first_text(v, depth + 1))
        }
        Value::Array(items) => items.iter().find_map(|v| first_text(v, depth + 1)),
        _ => None,
    }
}
