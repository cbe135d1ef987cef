//! Running one call of a script: the one way script tools spawn a process, feed it, read it and
//! make sure nothing it started survives the call.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use toolmux_core::{SourceError, ToolResult};

/// The most bytes of stdout kept; the rest is read and dropped so the command never blocks.
pub const MAX_STDOUT_BYTES: usize = 1024 * 1024;
/// The most bytes from the end of stderr shown with a failure.
pub const MAX_STDERR_TAIL: usize = 4 * 1024;

/// What to run.
pub(crate) struct Command<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a [(String, String)],
}

/// Kills the call's whole process group when dropped: at the end of a call, and when the
/// pipeline drops the call on a timeout or cancellation.
struct GroupKill(Option<u32>);

impl Drop for GroupKill {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.take() {
            kill_group(pgid);
        }
    }
}

#[cfg(unix)]
fn kill_group(pgid: u32) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    if let Ok(pgid) = i32::try_from(pgid) {
        // ESRCH (the group is gone already) is the usual, good case.
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_pgid: u32) {}

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
    let mut cmd = tokio::process::Command::new(resolved.as_deref().map_or_else(
        || Path::new(command.program).as_os_str().to_owned(),
        |p| p.as_os_str().to_owned(),
    ));
    cmd.args(command.args)
        .current_dir(command.cwd)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(|e| spawn_error(command.program, e))?;
    let mut group = GroupKill(child.id());

    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out_task = tokio::spawn(read_capped(stdout, MAX_STDOUT_BYTES));
    let err_task = tokio::spawn(read_tail(stderr, MAX_STDERR_TAIL));
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
    // Whatever the command left running in the background dies with the call, which also
    // closes the pipes it may still hold.
    if let Some(pgid) = group.0.take() {
        kill_group(pgid);
    }
    let (stdout, total) = out_task.await.unwrap_or_default();
    let stderr = err_task.await.unwrap_or_default();
    Ok(result(command.program, status, &stdout, total, &stderr))
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

/// The first `cap` bytes of a stream and its total length; the rest is drained.
async fn read_capped(stream: Option<impl AsyncRead + Unpin>, cap: usize) -> (Vec<u8>, usize) {
    let Some(mut stream) = stream else {
        return (Vec::new(), 0);
    };
    let mut kept = Vec::new();
    let mut total = 0;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                total += n;
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    (kept, total)
}

/// The last `cap` bytes of a stream.
async fn read_tail(stream: Option<impl AsyncRead + Unpin>, cap: usize) -> Vec<u8> {
    let Some(mut stream) = stream else {
        return Vec::new();
    };
    let mut tail = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > cap {
                    tail.drain(..tail.len() - cap);
                }
            }
        }
    }
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
