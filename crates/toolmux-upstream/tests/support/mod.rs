//! Real peers for the upstream tests: the npm servers and the Python fault server installed by
//! `./scripts/test` under `tests/peers/upstream/`, a temporary project to configure them in, a
//! hub to call them through, and the check that no process is left behind.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use toolmux_core::{CallContext, CallError, Channel, Hub, HubSettings, NullSink, ToolResult};
use toolmux_upstream::{Backoff, Upstreams};

/// `tests/peers/upstream`, from `TOOLMUX_PEERS`; fails with what to run when it is missing.
pub fn peers() -> PathBuf {
    let root = std::env::var_os("TOOLMUX_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "TOOLMUX_PEERS is not set: run the tests through ./scripts/test, or set it to \
             <repo>/tests/peers after `npm ci` in tests/peers/upstream"
            )
        });
    let dir = root.join("upstream");
    let bin = dir.join("node_modules/.bin/mcp-server-everything");
    assert!(
        bin.exists(),
        "the npm peers are not installed: run `npm ci` in {} (./scripts/test does)",
        dir.display()
    );
    dir
}

/// The Python with the `mcp` SDK, from `TOOLMUX_TEST_PYTHON`.
pub fn python() -> String {
    let python = std::env::var("TOOLMUX_TEST_PYTHON").unwrap_or_else(|_| {
        panic!(
            "TOOLMUX_TEST_PYTHON is not set: run the tests through ./scripts/test, or point it \
             at a virtualenv with tests/peers/upstream/requirements.txt installed"
        )
    });
    let ok = Command::new(&python)
        .args(["-c", "import mcp"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "`{python}` cannot import the `mcp` SDK: pip install -r tests/peers/upstream/requirements.txt"
    );
    python
}

/// A path to an npm peer's binary.
pub fn npm_bin(name: &str) -> String {
    peers()
        .join("node_modules/.bin")
        .join(name)
        .display()
        .to_string()
}

/// The fault server's script.
pub fn faults_script() -> String {
    peers().join("faults.py").display().to_string()
}

/// A free TCP port on loopback.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A temporary project with a configuration.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    pub fn new(config: &Value) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = toolmux_config::project_config_path(dir.path());
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, config.to_string()).expect("write config");
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn state(&self) -> PathBuf {
        toolmux_upstream::state_dir(self.path())
    }

    /// Loads the configuration and builds the servers with a quick backoff.
    pub fn upstreams(&self) -> Upstreams {
        let loaded = toolmux_config::load(self.path(), None).expect("config loads");
        Upstreams::with_backoff(&loaded, &self.state(), quick_backoff())
    }

    /// A hub with the servers' sources and the configuration's settings.
    pub fn hub(&self, upstreams: &Upstreams) -> Hub {
        let loaded = toolmux_config::load(self.path(), None).expect("config loads");
        let hub = Hub::new(loaded.config.hub_settings(), Arc::new(NullSink));
        for source in upstreams.sources() {
            hub.add_source(source);
        }
        hub
    }
}

pub fn quick_backoff() -> Backoff {
    Backoff {
        tries: 3,
        first_delay: Duration::from_millis(20),
        window: Duration::from_millis(800),
    }
}

/// A hub with default settings, for tests that only need the pipeline.
pub fn bare_hub(upstreams: &Upstreams) -> Hub {
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    for source in upstreams.sources() {
        hub.add_source(source);
    }
    hub
}

/// Calls a tool through the hub as the CLI would.
pub async fn call(hub: &Hub, name: &str, arguments: Value) -> Result<ToolResult, CallError> {
    hub.call(name, arguments, &CallContext::new(Channel::Cli).trusted())
        .await
}

/// Waits until no process is left in the process group `pgid` (a stopped server and
/// everything it started), failing after a few seconds.
pub fn assert_group_gone(pgid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let members = group_members(pgid);
        if members.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes of group {pgid} are still running: {members:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The live (non-zombie) processes in a process group, from /proc.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // Fields after the command (which may hold spaces) start after the last ')'.
            let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.first() != Some(&"Z") && fields.get(2) == Some(&pgid.to_string().as_str())
        })
        .collect()
}

/// Waits for a condition, polling, failing with `what` after `limit`.
pub async fn eventually(limit: Duration, what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A server process the test starts itself (an HTTP or SSE server); killed when dropped.
pub struct Background {
    child: Child,
}

impl Background {
    pub fn start(program: &str, args: &[&str], envs: &[(&str, String)]) -> Self {
        let child = Command::new(program)
            .args(args)
            .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        Self { child }
    }

    /// Waits until the port accepts connections.
    pub fn wait_for_port(&mut self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the server exited before listening on {port}: {status}");
            }
            assert!(Instant::now() < deadline, "nothing listens on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A `sleep` argument no other test uses (fractional seconds, about 300 s), for finding the
/// process by its command line.
pub fn unique_sleep() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "300.{}{:03}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Live processes whose command line contains `marker` as one of its arguments (from /proc).
pub fn processes_with(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| c.split(|b| *b == 0).any(|arg| arg == marker.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}
