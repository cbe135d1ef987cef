//! The Python MCP servers several tests start, as entries of `mcpServers`: the fault server of
//! the peers (`tests/peers/upstream/faults.py`), the rogue server kept here
//! (`servers/rogue.py`: a server that misbehaves on request), a server of whatever tools a
//! file lists (`servers/catalog.py`), and a server that hangs before its handshake.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::peers::{mcp_python, peer_file, python};
use crate::project::write_file;

/// The fault server's script (`tests/peers/upstream/faults.py`).
pub fn faults_script() -> PathBuf {
    peer_file("upstream/faults.py")
}

/// The rogue server's script, kept in this crate (`servers/rogue.py`). Found from the running
/// test's own crate (`cargo test` sets `CARGO_MANIFEST_DIR` for it; every crate sits beside this
/// one), not from this crate's build: cargo reuses this crate's build for another checkout
/// sharing the build directory (CI's clone), and a path baked in at build time then names a
/// checkout that may be gone.
pub fn rogue_script() -> PathBuf {
    kept_script("rogue.py")
}

/// A stdio entry running `script` with the test Python and `extra` arguments.
fn python_server(script: &Path, extra: &[&str]) -> Value {
    let mut args = vec![script.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    json!({"command": mcp_python(), "args": args})
}

/// `python faults.py EXTRA...` as a server entry.
pub fn faults(extra: &[&str]) -> Value {
    python_server(&faults_script(), extra)
}

/// A script kept in this crate's `servers/`, found as [`rogue_script`] finds its own.
fn kept_script(name: &str) -> PathBuf {
    let relative = format!("servers/{name}");
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(|running| {
            Path::new(&running)
                .join("../toolmux-testkit")
                .join(&relative)
        })
        .filter(|script| script.is_file())
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(relative))
}

/// `python catalog.py TOOLS_JSON` as a server entry: it serves the tools `tools_json` lists
/// (`servers/catalog.py`), each answering with what it received.
pub fn catalog_server(tools_json: &Path) -> Value {
    python_server(
        &kept_script("catalog.py"),
        &[&tools_json.display().to_string()],
    )
}

/// `python rogue.py EXTRA...` as a server entry.
pub fn rogue(extra: &[&str]) -> Value {
    python_server(&rogue_script(), extra)
}

/// A server that writes its pid to the file named by its first argument, then never finishes
/// its handshake and never exits on its own.
pub const HUNG_SERVER: &str =
    "import os, sys, time\nopen(sys.argv[1], 'w').write(str(os.getpid()))\ntime.sleep(300)\n";

/// [`HUNG_SERVER`] written to `dir/hung.py`, run under a shell (as a Node server sits under
/// `npx`) and writing its pid to `dir/hung.pid`.
pub struct HungServer {
    /// The `mcpServers` entry, with a start-up limit long enough never to end the wait.
    pub entry: Value,
    /// Where the server writes its pid once it runs.
    pub pid_file: PathBuf,
}

impl HungServer {
    pub fn write(dir: &Path) -> Self {
        let script = write_file(dir, "hung.py", HUNG_SERVER);
        let pid_file = dir.join("hung.pid");
        let wrapped = format!(
            "'{}' '{}' '{}'; true",
            python().display(),
            script.display(),
            pid_file.display()
        );
        Self {
            entry: json!({
                "command": "sh",
                "args": ["-c", wrapped],
                "startupTimeoutMs": 60_000,
            }),
            pid_file,
        }
    }
}
