//! The real peers the tests talk to, as `./scripts/test` installs them under `tests/peers/`:
//! the test virtualenv's Python and its console scripts, the npm binaries, and the Python MCP
//! client (`tests/peers/mcp/client.py`). A missing peer fails the test instead of skipping it:
//! a test that cannot reach its peer proves nothing.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::processes::wait_bounded;

/// The Python of the test virtualenv (`TOOLMUX_TEST_PYTHON`), which has the requirements of
/// every `tests/peers/*/requirements.txt`.
pub fn python() -> PathBuf {
    let python = std::env::var_os("TOOLMUX_TEST_PYTHON").map(PathBuf::from);
    match python {
        Some(python) if python.exists() => python,
        _ => panic!(
            "this test needs the test virtualenv: run it through ./scripts/test, or set \
             TOOLMUX_TEST_PYTHON to a python with the requirements of tests/peers/*/requirements.txt"
        ),
    }
}

/// The repository's `tests/peers` folder (`TOOLMUX_PEERS`).
pub fn peers_dir() -> PathBuf {
    let peers = std::env::var_os("TOOLMUX_PEERS").map(PathBuf::from);
    match peers {
        Some(peers) if peers.is_dir() => peers,
        _ => panic!(
            "this test needs the peers: run it through ./scripts/test, or set TOOLMUX_PEERS to \
             the repository's tests/peers folder"
        ),
    }
}

/// A file of the peers folder, such as `mcp/conformance_fixture.py`; it must exist.
pub fn peer_file(relative: &str) -> PathBuf {
    let path = peers_dir().join(relative);
    assert!(
        path.exists(),
        "{} is missing: run ./scripts/test",
        path.display()
    );
    path
}

/// A command of the npm peers of one area (`tests/peers/AREA/node_modules/.bin/NAME`).
pub fn node_peer(area: &str, name: &str) -> PathBuf {
    let bin = peers_dir().join(area).join("node_modules/.bin").join(name);
    assert!(
        bin.exists(),
        "{} is missing: run ./scripts/test, or `npm ci` in tests/peers/{area}",
        bin.display()
    );
    bin
}

/// A console script of the test virtualenv (where `./scripts/test` installs the PyPI servers).
pub fn venv_script(name: &str) -> PathBuf {
    let script = python().with_file_name(name);
    assert!(
        script.exists(),
        "{} is missing: run ./scripts/test (it installs tests/peers/*/requirements.txt)",
        script.display()
    );
    script
}

/// Runs the Python MCP client (`tests/peers/mcp/client.py`) with a plan to its end, failing if
/// it fails or runs longer than a minute; returns every JSON line it printed: `connected`, one
/// outcome per step, then `done`.
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
