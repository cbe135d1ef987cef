//! `toolmux serve` in the background, for the tests of its REST API and its `/mcp` endpoint:
//! started on a free port in a [`TestProject`] that drives the binary, spoken to with the
//! [`http`](crate::http) client. Every route but health, the auth routes and the web app's page
//! needs a credential, so requests carry one: the project's local token, which `serve` prints
//! in the web app's URL when no key is configured, else [`KEY`].

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::http::{Response, request};
use crate::processes::wait_bounded;
use crate::project::{Run, TestProject};

/// The API key the tests configure, through the environment variable `TOOLMUX_TEST_KEY`.
pub const KEY: &str = "test-key-0123456789";

/// A `.toolmux/config.json` that requires [`KEY`] (as a `${VAR}` reference) plus `extra` keys.
pub fn config_with_key(extra: &str) -> String {
    let extra = extra.trim();
    let sep = if extra.is_empty() { "" } else { ", " };
    format!(r#"{{"server": {{"apiKeys": ["${{TOOLMUX_TEST_KEY}}"]}}{sep}{extra}}}"#)
}

/// The tools an empty project serves, by name in order: the built-in packs of a project with
/// no specs directory and no configuration (every built-in, the names the trust scanner guards
/// against shadowing). A test of a listing compares with it.
pub const DEFAULT_TOOLS: [&str; 35] = toolmux_trust::BUILTIN_TOOLS;

/// `toolmux serve` running in the background; killed on drop if a test fails early.
pub struct Served {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub address: String,
    /// Everything the server wrote on stderr after its first line, so far.
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    /// The local token from the web app's URL, when the server made one.
    pub token: Option<String>,
    /// The web app's URL as the server printed it.
    pub web_url: String,
}

impl Served {
    /// Starts `toolmux serve --port 0 ARGS` with `TOOLMUX_TEST_KEY` set to [`KEY`].
    pub fn start(project: &TestProject, args: &[&str]) -> Self {
        Self::start_with_env(project, args, &[])
    }

    /// Like [`Served::start`], with more environment variables (for `${VAR}` references).
    pub fn start_with_env(project: &TestProject, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::spawn(project, args, env, Stdio::null())
    }

    /// Like [`Served::start`], the server holding `held` (a socket of the test's) as its
    /// standard input, which it never reads: a hostile test's stand-in for a socket that is
    /// the server's as `/proc` sees it but that another process uses.
    pub fn start_holding(project: &TestProject, held: std::os::fd::OwnedFd) -> Self {
        Self::spawn(project, &[], &[], Stdio::from(held))
    }

    fn spawn(project: &TestProject, args: &[&str], env: &[(&str, &str)], stdin: Stdio) -> Self {
        let mut cmd = project.cmd();
        cmd.arg("serve")
            .args(["--port", "0"])
            .args(args)
            .env("TOOLMUX_TEST_KEY", KEY)
            .envs(env.iter().copied())
            .stdin(stdin)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start toolmux serve");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        // The serving line, after whatever the server logged while starting (a warning about
        // an upstream server discovered in the background may come first).
        let mut before = String::new();
        let address = loop {
            let mut line = String::new();
            let read = stderr.read_line(&mut line).expect("read stderr");
            assert!(read > 0, "toolmux serve ended before serving:\n{before}");
            if let Some(address) = line
                .trim()
                .strip_prefix("toolmux: serving MCP at http://")
                .and_then(|rest| rest.strip_suffix("/mcp"))
            {
                break address.to_string();
            }
            before.push_str(&line);
            assert!(
                before.len() < 64 * 1024,
                "no serving line in what toolmux serve printed:\n{before}"
            );
        };
        // The lines up to the web app's URL, which names the local token.
        let mut head = String::new();
        let web_url = loop {
            let mut line = String::new();
            let read = stderr.read_line(&mut line).expect("read stderr");
            assert!(
                read > 0,
                "the server ended before printing its web app URL:\n{head}"
            );
            head.push_str(&line);
            if let Some(url) = line.trim().strip_prefix("toolmux web app: ") {
                break url.to_string();
            }
        };
        let token = web_url
            .split_once("#token=")
            .map(|(_, token)| token.to_string());
        // Keep draining stderr so the server never blocks on a full pipe, keeping it for
        // tests that read the server's warnings.
        let kept = std::sync::Arc::new(std::sync::Mutex::new(head));
        let sink = kept.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
                if let Ok(mut kept) = sink.lock() {
                    kept.push_str(&line);
                }
                line.clear();
            }
        });
        Self {
            child,
            address,
            stderr: kept,
            token,
            web_url,
        }
    }

    /// The credential a client of this server sends: the local token, else [`KEY`].
    pub fn credential(&self) -> &str {
        self.token.as_deref().unwrap_or(KEY)
    }

    /// `Bearer <credential>`, for an `Authorization` header (the Python client's `headers`).
    pub fn authorization(&self) -> String {
        format!("Bearer {}", self.credential())
    }

    /// What the server wrote on stderr so far (after the line with its address).
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Sends a request with the [credential](Self::credential) and an optional JSON body.
    pub fn send(&self, method: &str, path: &str, body: Option<&str>) -> Response {
        let auth = self.authorization();
        self.request(
            method,
            path,
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            body,
        )
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.address
            .rsplit_once(':')
            .and_then(|(_, port)| port.parse().ok())
            .unwrap_or_else(|| panic!("no port in {}", self.address))
    }

    /// The names of one source's tools as the server lists them now, sorted.
    pub fn tool_names(&self, source: &str) -> Vec<String> {
        let listed = self.get(&format!("/api/tools?source={source}")).json();
        let mut names: Vec<String> = listed["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools in {listed}"))
            .iter()
            .map(|t| t["name"].as_str().expect("name").to_string())
            .collect();
        names.sort();
        names
    }

    /// The MCP endpoint's URL.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Sends one request; `headers` are added to `Host` and `Connection: close`.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Response {
        request(&self.address, method, path, headers, body)
    }

    /// `GET path` with the [credential](Self::credential).
    pub fn get(&self, path: &str) -> Response {
        self.get_with_key(path)
    }

    /// `GET path` with no credential at all.
    pub fn get_anonymous(&self, path: &str) -> Response {
        self.request("GET", path, &[], None)
    }

    /// `GET path` with the [credential](Self::credential).
    pub fn get_with_key(&self, path: &str) -> Response {
        let auth = self.authorization();
        self.request("GET", path, &[("Authorization", &auth)], None)
    }

    /// The oldest approval waiting in `GET /api/approvals`, waited for up to 10 s (a call
    /// that asks has just been made on another thread).
    pub fn next_approval(&self) -> serde_json::Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let list = self.get_with_key("/api/approvals").json();
            if let Some(first) = list["approvals"].as_array().and_then(|a| a.first()) {
                return first.clone();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no approval appeared: {list}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `POST path` with the [credential](Self::credential) and a JSON body.
    pub fn post(&self, path: &str, body: &str) -> Response {
        self.post_with(path, body, &[])
    }

    /// [`Served::post`] with `extra` headers.
    fn post_with(&self, path: &str, body: &str, extra: &[(&str, &str)]) -> Response {
        let auth = self.authorization();
        let mut headers = vec![
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ];
        headers.extend_from_slice(extra);
        self.request("POST", path, &headers, Some(body))
    }

    /// POSTs a 2025-11-25 `initialize` to the MCP door at `path` (`/mcp`, `/mcp/<endpoint>`)
    /// with the [credential](Self::credential), as a client opening a session does.
    pub fn initialize(&self, path: &str) -> Response {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "toolmux-testkit", "version": "1"}}});
        let accept = [("Accept", "application/json, text/event-stream")];
        self.post_with(path, &body.to_string(), &accept)
    }

    /// Sends SIGTERM and expects a clean exit. The bound is what a stop may take at worst, with
    /// room for a loaded machine: the connections' shutdown grace (5 s), then each upstream
    /// server's stop sequence (stdin closed, 3 s, SIGTERM, 3 s, SIGKILL) and the coding
    /// sessions' grace. On a loaded machine a stop once took longer than 10 s.
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(sent.success());
        let status = wait_bounded(&mut self.child, Duration::from_secs(30));
        assert!(status.success(), "toolmux serve exited with {status}");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `toolmux ARGS` in the project with `TOOLMUX_TEST_KEY` set, as the configs of
/// [`config_with_key`] need.
pub fn run_with_key(project: &TestProject, args: &[&str]) -> Run {
    let output = project
        .cmd()
        .env("TOOLMUX_TEST_KEY", KEY)
        .args(args)
        .output()
        .expect("run toolmux");
    Run(output)
}
