//! The real peers the tests talk to, as `./scripts/test` installs them under `tests/peers/`
//! (`TOOLMUX_PEERS`): the test virtualenv's Python (`TOOLMUX_TEST_PYTHON`) and its console
//! scripts, the npm binaries of each area, and the files of the peers folder. A missing peer
//! fails the test instead of skipping it: a test that cannot reach its peer proves nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::processes::Background;

/// A path named by the environment variable `var`, which must be `usable`; else a failure that
/// says what is wrong and `how` to set it right.
fn path_from_env(var: &str, usable: fn(&Path) -> bool, how: &str) -> PathBuf {
    match std::env::var_os(var).map(PathBuf::from) {
        Some(path) if usable(&path) => path,
        Some(path) => panic!("{var} is {}, which is not usable: {how}", path.display()),
        None => panic!("{var} is not set, and this test needs it: {how}"),
    }
}

/// The repository's `tests/peers` folder (`TOOLMUX_PEERS`).
pub fn peers_dir() -> PathBuf {
    path_from_env(
        "TOOLMUX_PEERS",
        Path::is_dir,
        "run the test through ./scripts/test, or set it to the repository's tests/peers folder \
         after installing the peers (`npm ci` in each of its folders)",
    )
}

/// A file of the peers folder, such as `mcp/conformance_fixture.py`; it must exist.
pub fn peer_file(relative: &str) -> PathBuf {
    existing(peers_dir().join(relative), "run ./scripts/test")
}

/// A command of the npm peers of one area (`tests/peers/AREA/node_modules/.bin/NAME`).
pub fn node_peer(area: &str, name: &str) -> PathBuf {
    existing(
        peers_dir().join(area).join("node_modules/.bin").join(name),
        &format!("run ./scripts/test, or `npm ci` in tests/peers/{area}"),
    )
}

/// Starts the MCP conformance suite's TypeScript reference server (`tests/peers/reference`) on
/// `port` and waits until it listens. It runs under Node with tsx's loader rather than the
/// `tsx` wrapper: the wrapper relays SIGTERM to the server it starts but cannot relay the
/// SIGKILL that [`Background`] sends, so the server would outlive the test.
pub fn start_reference_server(port: u16) -> Background {
    start_reference("reference", port)
}

/// [`start_reference_server`] of the 2026-07-28 edition (`tests/peers/reference-2026`), which
/// also speaks that revision: `server/discover`, per-request `_meta`, caching hints, and
/// input-required results.
pub fn start_reference_server_2026(port: u16) -> Background {
    start_reference("reference-2026", port)
}

fn start_reference(folder: &str, port: u16) -> Background {
    let loader = peer_file(&format!("{folder}/node_modules/tsx/dist/loader.mjs"));
    let script = peer_file(&format!("{folder}/everything-server.ts"));
    let mut server = Background::start(
        "node",
        &[
            "--import",
            &format!("file://{}", loader.display()),
            script.to_str().expect("a UTF-8 path"),
        ],
        &[("PORT", port.to_string())],
    );
    server.wait_for_port(port);
    server
}

/// The Python of the test virtualenv (`TOOLMUX_TEST_PYTHON`), which has the requirements of
/// every `tests/peers/*/requirements.txt`.
pub fn python() -> PathBuf {
    path_from_env(
        "TOOLMUX_TEST_PYTHON",
        Path::exists,
        "run the test through ./scripts/test, or set it to a python with the requirements of \
         tests/peers/*/requirements.txt",
    )
}

/// [`python`], checked once per test binary to import the `mcp` SDK, for the tests that start
/// Python MCP servers: a virtualenv without it would fail them in confusing ways.
pub fn mcp_python() -> PathBuf {
    static CHECKED: OnceLock<()> = OnceLock::new();
    let python = python();
    CHECKED.get_or_init(|| {
        let ok = Command::new(&python)
            .args(["-c", "import mcp"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "`{}` cannot import the `mcp` SDK: pip install -r tests/peers/upstream/requirements.txt",
            python.display()
        );
    });
    python
}

/// A Python 3 for scripts that need only the standard library: the test virtualenv's when
/// `TOOLMUX_TEST_PYTHON` is set, else `python3` from `PATH`.
pub fn plain_python() -> PathBuf {
    std::env::var_os("TOOLMUX_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// A console script of the test virtualenv (where `./scripts/test` installs the PyPI servers).
pub fn venv_script(name: &str) -> PathBuf {
    existing(
        python().with_file_name(name),
        "run ./scripts/test (it installs tests/peers/*/requirements.txt)",
    )
}

/// `path`, which must exist; else a failure that says `how` to install it.
fn existing(path: PathBuf, how: &str) -> PathBuf {
    assert!(path.exists(), "{} is missing: {how}", path.display());
    path
}

/// The ACP test agent (`toolmux-sessions`' `toolmux-acp-test-agent`, on the official crate),
/// built beside the running test's binary: `cargo test --workspace` builds it with its
/// package's tests; a run of another package alone builds it here.
pub fn acp_test_agent() -> PathBuf {
    let deps = std::env::current_exe().expect("test binary");
    let profile = deps
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let agent = profile.join("toolmux-acp-test-agent");
    if !agent.is_file() {
        let built = Command::new(env!("CARGO"))
            .args([
                "build",
                "-p",
                "toolmux-sessions",
                "--bin",
                "toolmux-acp-test-agent",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo build");
        assert!(built.success(), "building the ACP test agent failed");
    }
    assert!(agent.is_file(), "no ACP test agent at {}", agent.display());
    agent
}
