//! Driving the real Python MCP client (`tests/peers/mcp/client.py`) with a plan: it connects
//! (stdio, streamable HTTP or SSE, as the plan says), runs the plan's steps and prints one JSON
//! line per outcome: `connected`, one line per step, then `done`. Either to its end from a
//! blocking test ([`run_mcp_client`], [`run_mcp_steps`]) or line by line from an async one
//! ([`PythonClient`]), so that the test can act between the client's steps.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

use crate::peers::{peer_file, python};
use crate::processes::wait_bounded;

/// Runs the client with a plan to its end, failing if it fails or runs longer than a minute;
/// returns every JSON line it printed.
pub fn run_mcp_client(plan: &Value) -> Vec<Value> {
    let mut child = Command::new(python())
        .arg(peer_file("mcp/client.py"))
        .arg(plan.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python MCP client");
    // Read both pipes while the client runs, so that a long answer never blocks it.
    let stdout = read_in_background(child.stdout.take().expect("stdout"));
    let stderr = read_in_background(child.stderr.take().expect("stderr"));
    let status = wait_bounded(&mut child, Duration::from_secs(60));
    let stdout = stdout.join().expect("read stdout");
    let stderr = stderr.join().expect("read stderr");
    assert!(
        status.success(),
        "the Python client failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Like [`run_mcp_client`], only the outcomes of the plan's steps, in order: what a test
/// asserts on when the handshake and the final summary do not matter to it.
pub fn run_mcp_steps(plan: &Value) -> Vec<Value> {
    let lines = run_mcp_client(plan);
    assert!(
        lines.first().is_some_and(|l| l.get("connected").is_some()),
        "the client did not connect: {lines:?}"
    );
    lines
        .into_iter()
        .filter(|l| l.get("connected").is_none() && l.get("done").is_none())
        .collect()
}

/// Reads a pipe to its end on a thread of its own.
fn read_in_background(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = pipe.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    })
}

/// The client running one plan in the background; its JSON lines are read as they come.
pub struct PythonClient {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    /// Every line read so far.
    pub seen: Vec<Value>,
}

impl PythonClient {
    pub fn start(plan: Value) -> Self {
        let mut child = tokio::process::Command::new(python())
            .arg(peer_file("mcp/client.py"))
            .arg(plan.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start the Python MCP client");
        let stdout = child.stdout.take().expect("piped stdout");
        Self {
            child,
            lines: BufReader::new(stdout).lines(),
            seen: Vec::new(),
        }
    }

    /// The next JSON line, waiting at most 20 s.
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the Python client said nothing for 20 s; so far: {:#?}",
                    self.seen
                )
            })
            .expect("read the client's stdout");
        let Some(line) = line else {
            panic!(
                "the Python client ended early; it printed: {:#?}",
                self.seen
            )
        };
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the client printed a line that is not JSON ({e}): {line}"));
        self.seen.push(value.clone());
        value
    }

    /// Every remaining line, then the exit status, which must be success; returns every line.
    pub async fn finish(mut self) -> Vec<Value> {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
                .await
                .expect("the Python client finishes within 30 s")
                .expect("read the client's stdout");
            match line {
                Some(line) => self.seen.push(
                    serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("not JSON ({e}): {line}")),
                ),
                None => break,
            }
        }
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .expect("the Python client exits")
            .expect("wait for the Python client");
        assert!(
            status.success(),
            "the Python client failed; it printed {:#?}",
            self.seen
        );
        self.seen
    }
}

/// Runs a plan to the end from an async test and returns every line the client printed.
pub async fn run_client(plan: Value) -> Vec<Value> {
    PythonClient::start(plan).finish().await
}

/// The tool names of a `list` step's line.
pub fn tool_names(line: &Value) -> Vec<String> {
    line["tools"]
        .as_array()
        .expect("a tools line")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_string())
        .collect()
}

/// The text of a call result's first content block.
pub fn result_text(line: &Value) -> &str {
    line["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a call result with text: {line}"))
}
