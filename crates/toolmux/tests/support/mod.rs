//! A tiny helper for driving the real `toolmux` binary on a real temporary project, the way
//! ripgrep's integration tests do.

#![allow(dead_code)]

pub mod peers;
pub mod processes;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A temporary project directory with an isolated home, so the user's own configuration is
/// never read.
pub struct TestProject {
    pub dir: tempfile::TempDir,
    pub home: tempfile::TempDir,
}

impl TestProject {
    /// An empty project.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp project"),
            home: tempfile::tempdir().expect("temp home"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file under the project, creating parent directories.
    pub fn write(&self, relative: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(&path, contents).expect("write file");
        path
    }

    /// Writes `.toolmux/config.json`.
    pub fn config(&self, json: &str) -> PathBuf {
        self.write(".toolmux/config.json", json)
    }

    /// The project's `.toolmux/config.json`.
    pub fn config_file(&self) -> PathBuf {
        self.dir.path().join(".toolmux/config.json")
    }

    /// `.toolmux/config.json` as it is on disk now, parsed.
    pub fn saved_config(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.config_file()).expect("read the config file");
        serde_json::from_str(&text).expect("the config file is JSON")
    }

    /// The names of the script tools in `.toolmux/config.json` as it is on disk now, sorted.
    pub fn saved_tool_names(&self) -> Vec<String> {
        let saved = self.saved_config();
        let mut names: Vec<String> = saved["tools"]
            .as_object()
            .unwrap_or_else(|| panic!("no tools in {saved}"))
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// A `toolmux` command run in the project directory.
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolmux"));
        cmd.current_dir(self.dir.path())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join(".config"))
            .env_remove("TOOLMUX_PROJECT")
            .env_remove("TOOLMUX_LOG");
        cmd
    }

    /// Runs `toolmux ARGS` and returns its output.
    pub fn run(&self, args: &[&str]) -> Run {
        let output = self.cmd().args(args).output().expect("run toolmux");
        Run(output)
    }
}

/// The output of one run.
pub struct Run(pub Output);

impl Run {
    pub fn code(&self) -> i32 {
        self.0.status.code().expect("exit code")
    }
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
    /// Asserts success and returns stdout.
    pub fn ok(&self) -> String {
        assert_eq!(
            self.code(),
            0,
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr()
        );
        self.stdout()
    }
    /// Stdout parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.ok()).expect("stdout is JSON")
    }
}

/// Polls `check` until it holds, for at most ten seconds: for what a running server does on
/// its own time, such as applying an edit of the config file after its watcher's debounce.
pub fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
