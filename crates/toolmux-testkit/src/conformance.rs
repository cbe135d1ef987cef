//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, installed in
//! `tests/peers/mcp`) run in server mode against a URL, with a bearer token when the server
//! needs one.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::peers::{node_peer, peers_dir};
use crate::processes::wait_bounded;

/// How long one whole run may take.
const SUITE_LIMIT: Duration = Duration::from_secs(300);

/// Runs the suite's server scenarios (`extra`: `--suite all`, say) against the MCP endpoint at
/// `url` with the scenarios expected to fail listed in `baseline`, and fails the test, with
/// everything the suite printed, when a scenario fails beyond the baseline or a listed one
/// passes. Returns what it printed on stdout: a `✓ NAME: N passed, 0 failed` line a scenario.
///
/// `authorization` (`Bearer <token>`) is added to every request the suite makes: the suite has
/// no option for it, so a preloaded module puts it on Node's global HTTP dispatcher, which
/// `fetch` and undici's `request` (the DNS rebinding scenario's) both use. A request that sets
/// its own `Authorization` keeps it.
pub fn assert_server_suite_passes(
    url: &str,
    authorization: Option<&str>,
    baseline: &Path,
    extra: &[&str],
) -> String {
    let results = tempfile::tempdir().expect("a results folder");
    let mut suite = Command::new(node_peer("mcp", "conformance"));
    if let Some(authorization) = authorization {
        let preload = results.path().join("authorization.mjs");
        std::fs::write(&preload, AUTHORIZATION_PRELOAD).expect("write the preload module");
        let undici = peers_dir().join("mcp/node_modules/undici/index.js");
        suite
            .env("NODE_OPTIONS", format!("--import={}", preload.display()))
            .env("TOOLMUX_CONFORMANCE_UNDICI", undici)
            .env("TOOLMUX_CONFORMANCE_AUTHORIZATION", authorization);
    }
    let mut suite = suite
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

/// Adds `Authorization` to every request of the Node process through undici's global dispatcher
/// (shared with Node's own `fetch`).
const AUTHORIZATION_PRELOAD: &str = r#"
import { pathToFileURL } from "node:url";
const { Agent, setGlobalDispatcher } = await import(
  pathToFileURL(process.env.TOOLMUX_CONFORMANCE_UNDICI).href
);
const authorization = process.env.TOOLMUX_CONFORMANCE_AUTHORIZATION;
const withAuthorization = (headers) => {
  if (headers == null) return { authorization };
  if (Array.isArray(headers)) {
    const pairs = Array.isArray(headers[0]);
    const names = pairs ? headers.map((h) => h[0]) : headers.filter((_, i) => i % 2 === 0);
    if (names.some((n) => String(n).toLowerCase() === "authorization")) return headers;
    return pairs ? [...headers, ["authorization", authorization]] : [...headers, "authorization", authorization];
  }
  const entries = typeof headers[Symbol.iterator] === "function" ? [...headers] : Object.entries(headers);
  if (entries.some(([n]) => n.toLowerCase() === "authorization")) return headers;
  return { ...Object.fromEntries(entries), authorization };
};
setGlobalDispatcher(
  new Agent().compose((dispatch) => (options, handler) =>
    dispatch({ ...options, headers: withAuthorization(options.headers) }, handler),
  ),
);
"#;

/// Everything `pipe` carries until it closes, read on a thread of its own.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        pipe.read_to_string(&mut text)
            .expect("read the suite's output");
        text
    })
}
