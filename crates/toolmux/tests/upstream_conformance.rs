//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, client mode) with
//! the real `toolmux` binary as the client: for each scenario the suite starts its test server
//! and runs `tests/peers/upstream/conformance-client.sh URL`, which drives `toolmux mcp add`
//! and `toolmux tools call`; the suite then judges what it saw on the wire.
//!
//! A scenario passes when the suite exits 0 and none of its checks is a FAILURE or a WARNING
//! (the suite counts a warning as a failure). Known failures are listed, with their reasons,
//! in `tests/peers/upstream/conformance-client-baseline.yml`; a listed scenario must still
//! fail, so the list cannot go stale.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;
use toolmux_testkit::peers::{node_peer, peers_dir};

/// One scenario at a time: `sse-retry` measures the client's reconnection delay, and two
/// suites sharing the machine's cores would blur it.
static SUITE: Mutex<()> = Mutex::new(());

/// The upstream peers' folder (`tests/peers/upstream`), with the conformance suite installed.
fn upstream_peers() -> PathBuf {
    node_peer("upstream", "conformance");
    peers_dir().join("upstream")
}

/// The client scenarios listed in the baseline file as known failures.
fn baseline(dir: &Path) -> Vec<String> {
    let path = dir.join("conformance-client-baseline.yml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    // The file is the suite's small format: a `client:` key holding a list of names.
    let mut in_client = false;
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim_end();
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with([' ', '-']) {
            in_client = line.starts_with("client:");
            // The flow form, `client: [a, b]`.
            if let Some(list) = line.strip_prefix("client:").map(str::trim)
                && let Some(items) = list.strip_prefix('[').and_then(|l| l.strip_suffix(']'))
            {
                names.extend(
                    items
                        .split(',')
                        .map(|n| n.trim().trim_matches(['"', '\'']).to_string())
                        .filter(|n| !n.is_empty()),
                );
            }
            continue;
        }
        if in_client && let Some(name) = line.trim().strip_prefix("- ") {
            names.push(name.trim().trim_matches(['"', '\'']).to_string());
        }
    }
    names
}

/// What the suite said about one scenario.
struct Outcome {
    passed: bool,
    /// FAILURE and WARNING checks, one line each.
    problems: Vec<String>,
    output: String,
}

fn run_scenario(dir: &Path, scenario: &str) -> Outcome {
    let _one_at_a_time = SUITE.lock().unwrap_or_else(|e| e.into_inner());
    let results = tempfile::tempdir().expect("results dir");
    let client = format!("bash '{}'", dir.join("conformance-client.sh").display());
    let output = Command::new(dir.join("node_modules/.bin/conformance"))
        .args(["client", "--command", &client, "--scenario", scenario])
        .args(["--timeout", "30000", "--output-dir"])
        .arg(results.path())
        .current_dir(results.path())
        .env("TOOLMUX_BIN", env!("CARGO_BIN_EXE_toolmux"))
        .output()
        .expect("run the conformance suite (is node on PATH?)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let checks = checks(results.path(), scenario)
        .unwrap_or_else(|e| panic!("{scenario}: {e}\nsuite output:\n{text}"));
    let problems: Vec<String> = checks
        .iter()
        .filter(|c| matches!(c["status"].as_str(), Some("FAILURE" | "WARNING")))
        .map(|c| {
            format!(
                "{} {}: {}",
                c["status"].as_str().unwrap_or_default(),
                c["id"].as_str().unwrap_or_default(),
                c["errorMessage"]
                    .as_str()
                    .or(c["description"].as_str())
                    .unwrap_or_default()
            )
        })
        .collect();
    Outcome {
        passed: output.status.success() && problems.is_empty(),
        problems,
        output: text,
    }
}

/// The checks the suite saved under `results/<scenario>-<timestamp>/checks.json`.
fn checks(results: &Path, scenario: &str) -> Result<Vec<Value>, String> {
    let prefix = format!("{}-", scenario.replace('/', "-"));
    let dir = std::fs::read_dir(results)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .ok_or("the suite saved no results")?;
    let text =
        std::fs::read_to_string(dir.path().join("checks.json")).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| format!("checks.json is not JSON: {e}"))
}

/// Runs one scenario and asserts the outcome the baseline expects.
fn assert_scenario(scenario: &str) {
    let dir = upstream_peers();
    let expected_to_fail = baseline(&dir).iter().any(|s| s == scenario);
    let outcome = run_scenario(&dir, scenario);
    if expected_to_fail {
        assert!(
            !outcome.passed,
            "`{scenario}` passes now: remove it from tests/peers/upstream/conformance-client-baseline.yml\n{}",
            outcome.output
        );
    } else {
        assert!(
            outcome.passed,
            "conformance scenario `{scenario}` failed with toolmux as the client:\n  {}\nsuite output:\n{}",
            outcome.problems.join("\n  "),
            outcome.output
        );
    }
}

#[test]
fn initialize_handshake_is_conformant() {
    assert_scenario("initialize");
}

#[test]
fn tool_call_is_conformant() {
    assert_scenario("tools_call");
}

#[test]
fn interrupted_response_stream_is_resumed_after_the_retry_delay() {
    assert_scenario("sse-retry");
}
