//! Running one call of a script: the one way script tools spawn a process, feed it, read it and
//! make sure nothing it started survives the call.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use toolmux_core::{SourceError, ToolResult};

use crate::child;

/// The most bytes of stdout kept; the rest is read and dropped so the command never blocks.
pub const MAX_STDOUT_BYTES: usize = 1024 * 1024;
/// The most bytes from the end of stderr shown with a failure.
pub const MAX_STDERR_TAIL: usize = 4 * 1024;
/// How long the output is still read once the command has exited and what it left running
/// was killed; a process that escaped may hold the pipes open, and the call does not wait
/// for it.
const PIPE_GRACE: Duration = Duration::from_millis(250);

/// What to run.
pub(crate) struct Command<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a [(String, String)],
    /// Whether it gets toolmux's whole environment rather than the allowlist.
    pub inherit_env: bool,
}

/// Where the program is: a path with a `/` is taken from `cwd`; a bare name is looked up on
/// `PATH` by the operating system.
fn program_path(program: &str, cwd: &Path) -> Option<PathBuf> {
    program.contains('/').then(|| cwd.join(program))
}

pub(crate) async fn run(command: &Command<'_>, input: &[u8]) -> Result<ToolResult, SourceError> {
    if !command.cwd.is_dir() {
        return Err(SourceError::Failed(format!(
            "the working directory `{}` does not exist",
            command.cwd.display()
        )));
    }
    let resolved = program_path(command.program, command.cwd);
    if let Some(path) = &resolved
        && !path.exists()
    {
        return Err(SourceError::Failed(format!(
            "cannot run `{}`: `{}` does not exist",
            command.program,
            path.display()
        )));
    }
    let program = resolved
        .as_deref()
        .map_or_else(|| Path::new(command.program).as_os_str(), |p| p.as_os_str());
    // The guard kills the call's process group, and whatever it started that left the group,
    // when dropped: also when the pipeline drops the call on a timeout or cancellation.
    let (mut child, mut group) = child::spawn(
        program,
        command.args,
        command.cwd,
        command.env.iter().map(|(k, v)| (k, v)),
        command.inherit_env,
    )
    .map_err(|e| spawn_error(command.program, e))?;

    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    // Told to stop once the command has exited and a grace period has passed: a process that
    // escaped the sweep may hold the pipes open for ever.
    let (stop_out, stopped_out) = oneshot::channel();
    let (stop_err, stopped_err) = oneshot::channel();
    let out_task = tokio::spawn(read_capped(stdout, MAX_STDOUT_BYTES, stopped_out));
    let err_task = tokio::spawn(read_tail(stderr, MAX_STDERR_TAIL, stopped_err));
    let feed = async move {
        if let Some(mut stdin) = stdin {
            // A command that ignores its input may exit before reading it: not an error.
            let _ = stdin.write_all(input).await;
            let _ = stdin.shutdown().await;
        }
    };
    let (status, ()) = tokio::join!(child.wait(), feed);
    let status = status
        .map_err(|e| SourceError::Failed(format!("cannot wait for `{}`: {e}", command.program)))?;
    // Whatever the command left running in the background dies with the call, in its group
    // or out of it, which also closes the pipes it may still hold.
    group.sweep().await;
    let ((stdout, total), stderr) =
        tokio::join!(finish(out_task, stop_out), finish(err_task, stop_err));
    Ok(result(command.program, status, &stdout, total, &stderr))
}

/// A pipe reader's result, waiting at most [`PIPE_GRACE`] for the pipe to close before telling
/// the reader to stop with what it has.
async fn finish<T: Default>(mut task: JoinHandle<T>, stop: oneshot::Sender<()>) -> T {
    match tokio::time::timeout(PIPE_GRACE, &mut task).await {
        Ok(done) => done.unwrap_or_default(),
        Err(_) => {
            let _ = stop.send(());
            task.await.unwrap_or_default()
        }
    }
}

fn spawn_error(program: &str, e: io::Error) -> SourceError {
    match e.kind() {
        io::ErrorKind::NotFound => {
            SourceError::Failed(format!("cannot run `{program}`: no such program on PATH"))
        }
        io::ErrorKind::PermissionDenied => SourceError::Failed(format!(
            "cannot run `{program}`: permission denied (is it executable?)"
        )),
        _ => SourceError::Failed(format!("cannot run `{program}`: {e}")),
    }
}

/// Reads a stream in chunks of up to `chunk` bytes, handing each to `keep`, up to its end (or
/// a read error) or until told to stop.
async fn read_until_stopped(
    stream: Option<impl AsyncRead + Unpin>,
    chunk: usize,
    mut stop: oneshot::Receiver<()>,
    mut keep: impl FnMut(&[u8]),
) {
    let Some(mut stream) = stream else {
        return;
    };
    let mut buf = vec![0u8; chunk];
    loop {
        let read = tokio::select! {
            read = stream.read(&mut buf) => read,
            _ = &mut stop => break,
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => keep(&buf[..n]),
        }
    }
}

/// The first `cap` bytes of a stream and its total length; the rest is drained. Stops at the
/// end of the stream or when told to.
async fn read_capped(
    stream: Option<impl AsyncRead + Unpin>,
    cap: usize,
    stop: oneshot::Receiver<()>,
) -> (Vec<u8>, usize) {
    let mut kept = Vec::new();
    let mut total = 0;
    read_until_stopped(stream, 64 * 1024, stop, |bytes| {
        total += bytes.len();
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
    })
    .await;
    (kept, total)
}

/// The last `cap` bytes of a stream, up to its end or until told to stop.
async fn read_tail(
    stream: Option<impl AsyncRead + Unpin>,
    cap: usize,
    stop: oneshot::Receiver<()>,
) -> Vec<u8> {
    let mut tail = Vec::new();
    read_until_stopped(stream, 16 * 1024, stop, |bytes| {
        tail.extend_from_slice(bytes);
        if tail.len() > cap {
            tail.drain(..tail.len() - cap);
        }
    })
    .await;
    tail
}

fn result(
    program: &str,
    status: ExitStatus,
    stdout: &[u8],
    total: usize,
    stderr: &[u8],
) -> ToolResult {
    if !status.success() {
        let how = match status.code() {
            Some(code) => format!("exited with status {code}"),
            None => exit_signal(status)
                .map(|s| format!("was killed by signal {s}"))
                .unwrap_or_else(|| "failed".to_string()),
        };
        let stderr = String::from_utf8_lossy(stderr);
        let stderr = stderr.trim();
        return if stderr.is_empty() {
            ToolResult::error(format!("`{program}` {how}"))
        } else {
            ToolResult::error(format!("`{program}` {how}: {stderr}"))
        };
    }
    let text = String::from_utf8_lossy(stdout);
    if total > stdout.len() {
        return ToolResult::text(format!(
            "{text}\n[output cut: {total} bytes, only the first {} kept]",
            stdout.len()
        ));
    }
    match serde_json::from_str::<Value>(text.trim()) {
        Ok(value @ Value::Object(_)) => ToolResult::structured_with_text(value, text.trim()),
        _ => ToolResult::text(text.into_owned()),
    }
}

#[cfg(unix)]
fn exit_signal(status: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

#[cfg(not(unix))]
fn exit_signal(_status: ExitStatus) -> Option<i32> {
    None
}
