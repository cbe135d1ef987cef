//! The stdio transport: a server process leading its own process group, spoken to over its
//! stdin and stdout. rmcp's `TokioChildProcess` would do, but toolmux needs three things it
//! cannot give: the server's environment limited to an allowlist, everything the server
//! started stopped with it (also what left its group with `setsid`), and a message too large
//! to read failing the calls in flight at once rather than being dropped while they wait for
//! their whole time limit.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use toolmux_scripts::child::{self, Guard, Signal};

use crate::connection::Fault;

/// How long a stdio server gets to exit after its stdin is closed, and again after SIGTERM,
/// before it is killed. (rmcp's own shutdown sequence uses the same three seconds.)
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);
/// The largest message toolmux reads from a stdio server: rmcp's limit for one line, which
/// matches its limit for one event over streamable HTTP.
pub(crate) const MAX_MESSAGE_BYTES: usize = DEFAULT_MAX_LINE_LENGTH;

/// What is needed to start a stdio server.
pub(crate) struct Launch<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    /// Whether it gets toolmux's whole environment rather than the allowlist.
    pub inherit_env: bool,
    pub dir: &'a Path,
}

/// A running stdio server as an rmcp transport.
pub(crate) struct StdioProcess {
    /// The server (its group's leader); `None` once it was waited for.
    child: Option<Child>,
    /// Stops its process group and what left it; dropped without [`StdioProcess::shutdown`]
    /// (a start-up cancelled half-way, or toolmux exiting without a clean shutdown), it still
    /// leaves nothing behind.
    group: Guard,
    transport: AsyncRwTransport<RoleClient, Lifted<Bounded<ChildStdout>>, ChildStdin>,
}

impl StdioProcess {
    /// Starts the server in a process group of its own, with its stderr piped to the caller.
    /// A message longer than [`MAX_MESSAGE_BYTES`] raises `fault` (which kills the group).
    pub(crate) fn spawn(
        launch: &Launch<'_>,
        fault: Arc<Fault>,
    ) -> io::Result<(Self, Option<ChildStderr>)> {
        let (mut process, group) = child::spawn(
            launch.command.as_ref(),
            launch.args,
            launch.dir,
            launch.env,
            launch.inherit_env,
        )?;
        if let Some(pgid) = group.pgid() {
            fault.set_group(pgid);
        }
        let (Some(stdout), Some(stdin)) = (process.stdout.take(), process.stdin.take()) else {
            return Err(io::Error::other("the server's stdin or stdout is missing"));
        };
        let stderr = process.stderr.take();
        let stdout = Bounded {
            inner: Some(stdout),
            line: 0,
            limit: MAX_MESSAGE_BYTES,
            fault,
        };
        // rmcp's own limit is set just above ours (a line ending may be `\r\n`), so that ours,
        // which fails the connection, always comes first; rmcp would drop the line silently.
        let stdout = Lifted {
            inner: stdout,
            line: Vec::new(),
            ready: Vec::new(),
            handed: 0,
            ended: false,
        };
        let transport =
            AsyncRwTransport::new(stdout, stdin).with_max_line_length(MAX_MESSAGE_BYTES + 2);
        Ok((
            Self {
                child: Some(process),
                group,
                transport,
            },
            stderr,
        ))
    }

    /// The server's process id, which is also its process group's.
    pub(crate) fn id(&self) -> Option<u32> {
        self.group.pgid()
    }

    /// Stops the server as MCP's stdio shutdown says (stdin closed, then SIGTERM, then
    /// SIGKILL, each after [`SHUTDOWN_GRACE`]), then everything it left behind.
    async fn shutdown(&mut self) -> io::Result<()> {
        self.transport.close().await?;
        if let Some(mut process) = self.child.take()
            && tokio::time::timeout(SHUTDOWN_GRACE, process.wait())
                .await
                .is_err()
        {
            if let Some(pgid) = self.group.pgid() {
                child::signal_group(pgid, Signal::Term);
            }
            if tokio::time::timeout(SHUTDOWN_GRACE, process.wait())
                .await
                .is_err()
            {
                process.start_kill()?;
                process.wait().await?;
            }
        }
        self.group.sweep().await;
        Ok(())
    }
}

impl Transport<RoleClient> for StdioProcess {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shutdown()
    }
}

/// A server's stdout that fails, and raises the connection's fault, once one line (one
/// message) grows past `limit`, instead of letting rmcp drop the line and the calls wait.
pub(crate) struct Bounded<R> {
    /// Dropped when the limit is passed: closing the pipe stops the server writing the rest.
    inner: Option<R>,
    /// Bytes of the current line read so far.
    line: usize,
    limit: usize,
    fault: Arc<Fault>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Bounded<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(Err(io::Error::other(oversized(this.limit))));
        };
        let before = buf.filled().len();
        ready!(Pin::new(inner).poll_read(cx, buf))?;
        let read = &buf.filled()[before..];
        let mut longest = this.line;
        for (i, segment) in read.split(|b| *b == b'\n').enumerate() {
            this.line = if i == 0 {
                this.line + segment.len()
            } else {
                segment.len()
            };
            longest = longest.max(this.line);
        }
        if longest > this.limit {
            // A reader that fails hands out nothing of what it read.
            buf.set_filled(before);
            this.inner = None;
            let message = oversized(this.limit);
            this.fault.raise(message.clone());
            return Poll::Ready(Err(io::Error::other(message)));
        }
        Poll::Ready(Ok(()))
    }
}

/// A server's stdout read line by line (one line is one message), each line passed through
/// [`crate::wire::lift_internal_marks`] before rmcp parses it. Under it, [`Bounded`] keeps a
/// line within the limit, so `line` never holds more than that.
pub(crate) struct Lifted<R> {
    inner: R,
    /// The line read so far, without its end.
    line: Vec<u8>,
    /// Whole lines (or the last, unended one) ready to hand out, from `handed` on.
    ready: Vec<u8>,
    handed: usize,
    /// The server closed its stdout.
    ended: bool,
}

impl<R> Lifted<R> {
    /// Moves the line read so far to `ready`, lifted.
    fn finish_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        let lifted = std::str::from_utf8(&line)
            .ok()
            .and_then(crate::wire::lift_internal_marks);
        match lifted {
            Some(text) => self.ready.extend_from_slice(text.as_bytes()),
            None => self.ready.extend_from_slice(&line),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Lifted<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.handed < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.handed);
                buf.put_slice(&this.ready[this.handed..this.handed + n]);
                this.handed += n;
                if this.handed == this.ready.len() {
                    this.ready.clear();
                    this.handed = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.ended {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 8192];
            let mut read = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            let read = read.filled();
            if read.is_empty() {
                this.ended = true;
                this.finish_line();
                continue;
            }
            let mut rest = read;
            while let Some(end) = rest.iter().position(|b| *b == b'\n') {
                this.line.extend_from_slice(&rest[..end]);
                this.finish_line();
                this.ready.push(b'\n');
                rest = &rest[end + 1..];
            }
            this.line.extend_from_slice(rest);
        }
    }
}

/// The most lines of a server's stderr log [`stderr_tail`] returns.
pub(crate) const STDERR_TAIL_LINES: usize = 200;
/// The most bytes of a server's stderr log [`stderr_tail`] reads.
pub(crate) const STDERR_TAIL_BYTES: u64 = 64 * 1024;

/// The end of a server's stderr log (`log`, where [`spawn`](crate::connection) appends it with
/// a `--- … started pid …` line per start, and whose previous part a rotation left in
/// `.log.1`): the last [`STDERR_TAIL_LINES`] lines of its last [`STDERR_TAIL_BYTES`]. Read from
/// the file rather than kept in memory, because the file is already bounded and holds every
/// start, also those of another toolmux process (`toolmux mcp`) and those before a restart;
/// what the page needs is its end, read on demand. No log yet is no lines.
pub(crate) fn stderr_tail(log: &Path) -> io::Result<Vec<String>> {
    let current = read_end(log, STDERR_TAIL_BYTES)?;
    let mut bytes = match STDERR_TAIL_BYTES.checked_sub(current.len() as u64) {
        Some(room) if room > 0 => read_end(&log.with_extension("log.1"), room)?,
        _ => Vec::new(),
    };
    let cut = bytes.len() as u64 + current.len() as u64 >= STDERR_TAIL_BYTES;
    bytes.extend_from_slice(&current);
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    // A read that started inside a line shows it from its start or not at all.
    if cut && !lines.is_empty() {
        lines.remove(0);
    }
    let start = lines.len().saturating_sub(STDERR_TAIL_LINES);
    Ok(lines[start..].iter().map(|l| (*l).to_string()).collect())
}

/// The last `at_most` bytes of a file; nothing when it does not exist.
fn read_end(path: &Path, at_most: u64) -> io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(at_most)))?;
    let mut bytes = Vec::new();
    file.take(at_most).read_to_end(&mut bytes)?;
    Ok(bytes)
}

fn oversized(limit: usize) -> String {
    format!(
        "the server sent a message larger than {}, the most toolmux reads",
        toolmux_core::human_bytes(limit as u64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn bounded(data: &'static [u8], limit: usize) -> (Bounded<&'static [u8]>, Arc<Fault>) {
        let fault = Arc::new(Fault::default());
        let reader = Bounded {
            inner: Some(data),
            line: 0,
            limit,
            fault: Arc::clone(&fault),
        };
        (reader, fault)
    }

    #[test]
    fn the_stderr_tail_is_the_end_of_the_log_and_its_rotated_part() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("server.log");
        assert!(stderr_tail(&log).expect("no log").is_empty());
        // The rotated part's end comes first when the current file is short.
        std::fs::write(log.with_extension("log.1"), "old 1\nold 2\n").expect("write");
        std::fs::write(&log, "--- started pid 7\nnew 1\n").expect("write");
        assert_eq!(
            stderr_tail(&log).expect("tail"),
            ["old 1", "old 2", "--- started pid 7", "new 1"]
        );
        // A long log: only its last lines, none of them cut at the front.
        let long: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, long).expect("write");
        let tail = stderr_tail(&log).expect("tail");
        assert_eq!(tail.len(), STDERR_TAIL_LINES);
        assert_eq!(tail.last().map(String::as_str), Some("line 19999"));
        assert_eq!(tail[0], "line 19800");
    }

    #[tokio::test]
    async fn a_listed_tools_top_level_internal_mark_reaches_rmcp_in_its_meta() {
        use tokio::io::AsyncReadExt;
        let listed = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"a\",\"_internal\":true}]}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}";
        let mut lifted = Lifted {
            inner: &listed[..],
            line: Vec::new(),
            ready: Vec::new(),
            handed: 0,
            ended: false,
        };
        let mut text = String::new();
        lifted.read_to_string(&mut text).await.expect("read");
        assert_eq!(
            text,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"a\",\"_internal\":true,\"_meta\":{\"_internal\":true}}]}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}"
        );
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_whole() {
        let (mut reader, fault) = bounded(b"12345\n1234\n12345\n", 5);
        let mut out = Vec::new();
        reader.read_to_end(&mut out).await.expect("read");
        assert_eq!(out, b"12345\n1234\n12345\n");
        assert!(fault.reason().is_none());
    }

    #[tokio::test]
    async fn a_line_past_the_limit_fails_the_read_and_raises_the_fault() {
        let (mut reader, fault) = bounded(b"12345\n123456\n", 5);
        let mut out = Vec::new();
        let err = reader.read_to_end(&mut out).await.expect_err("too long");
        let said = "the server sent a message larger than 5 bytes, the most toolmux reads";
        assert_eq!(err.to_string(), said);
        assert_eq!(fault.reason(), Some(said));
    }
}
