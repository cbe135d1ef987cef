//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, installed in
//! `tests/peers/mcp`) run in server mode against a URL.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::peers::node_peer;
use crate::processes::wait_bounded;

/// How long one whole run may take.
const SUITE_LIMIT: Duration = Duration::from_secs(300);

/// Runs the suite's server scenarios (`extra`: `--suite all`, say) against the MCP endpoint at
/// `url` with the scenarios expected to fail listed in `baseline`, and fails the test, with
/// everything the suite printed, when a scenario fails beyond the baseline or a listed one
/// passes. Returns what it printed on stdout: a `✓ NAME: N passed, 0 failed` line a scenario.
pub fn assert_server_suite_passes(url: &str, baseline: &Path, extra: &[&str]) -> String {
    let results = tempfile::tempdir().expect("a results folder");
    let mut suite = Command::new(node_peer("mcp", "conformance"))
        .args(["server", "--url", url])
        .args(extra)
        .arg("--expected-failures")
        .arg(baseline)
        .arg("-o")
        .arg(results.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the conformance suite");
    // Read on threads, so that a suite that hangs meets the time limit instead of blocking the
    // read, and a full stderr pipe never stalls it.
    let stdout = drain(suite.stdout.take().expect("stdout"));
    let stderr = drain(suite.stderr.take().expect("stderr"));
    let status = wait_bounded(&mut suite, SUITE_LIMIT);
    let stdout = stdout.join().expect("the stdout reader");
    let stderr = stderr.join().expect("the stderr reader");
    assert!(
        status.success(),
        "conformance failures beyond the baseline (or a stale baseline entry)\n{stdout}\n{stderr}"
    );
    stdout
}

/// Everything `pipe` carries until it closes, read on a thread of its own.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        pipe.read_to_string(&mut text)
            .expect("read the suite's output");
        text
    })
}
