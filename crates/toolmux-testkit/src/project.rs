//! Scratch projects: a temporary project directory with its configuration, and an isolated
//! home so the user's own configuration is never read; optionally the program the test drives
//! in it (the `toolmux` binary), run the way ripgrep's integration tests run `rg`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where a project's configuration lives, relative to the project directory.
pub const CONFIG_FILE: &str = ".toolmux/config.json";

/// Writes `contents` to `root/relative`, creating the directories on the way; returns the path.
pub fn write_file(root: &Path, relative: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = root.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("create {}: {e}", parent.display()));
    }
    std::fs::write(&path, contents).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path
}

/// A temporary project directory and home, both removed on drop.
pub struct TestProject {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
    program: Option<PathBuf>,
}

impl TestProject {
    /// An empty project.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp project"),
            home: tempfile::tempdir().expect("temp home"),
            program: None,
        }
    }

    /// An empty project whose [`cmd`](Self::cmd) runs `program`.
    pub fn driving(program: impl Into<PathBuf>) -> Self {
        Self {
            program: Some(program.into()),
            ..Self::new()
        }
    }

    /// The project directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The isolated home directory.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// Writes a file under the project, creating parent directories.
    pub fn write(&self, relative: &str, contents: &str) -> PathBuf {
        write_file(self.path(), relative, contents)
    }

    /// Writes `.toolmux/config.json`.
    pub fn config(&self, json: &str) -> PathBuf {
        self.write(CONFIG_FILE, json)
    }

    /// The project's `.toolmux/config.json`.
    pub fn config_file(&self) -> PathBuf {
        self.path().join(CONFIG_FILE)
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

    /// The driven program as a command run in the project directory, with the isolated home
    /// and none of toolmux's own variables of the test's environment.
    pub fn cmd(&self) -> Command {
        let program = self
            .program
            .as_ref()
            .expect("this project drives no program: make it with TestProject::driving");
        let mut cmd = Command::new(program);
        cmd.current_dir(self.path())
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env_remove("TOOLMUX_PROJECT")
            .env_remove("TOOLMUX_LOG");
        cmd
    }

    /// A plan for the Python MCP client ([`crate::python_client`]) that starts the driven
    /// program with `args` (`["mcp"]`) over stdio in the project, as [`cmd`](Self::cmd) would:
    /// the isolated home, the project as the working directory.
    pub fn stdio_plan(&self, args: &[&str], steps: serde_json::Value) -> serde_json::Value {
        let program = self
            .program
            .as_ref()
            .expect("this project drives no program: make it with TestProject::driving");
        serde_json::json!({
            "transport": "stdio",
            "command": program,
            "args": args,
            "cwd": self.path(),
            "env": {
                "HOME": self.home(),
                "XDG_CONFIG_HOME": self.home().join(".config"),
            },
            "steps": steps,
        })
    }

    /// Runs the driven program with `args` and returns its output.
    pub fn run(&self, args: &[&str]) -> Run {
        Run(self.cmd().args(args).output().expect("run the program"))
    }

    /// [`TestProject::run`] with `TOOLMUX_TEST_KEY` set to [`crate::served::KEY`], the key a
    /// configuration made by [`crate::served::config_with_key`] refers to.
    pub fn run_keyed(&self, args: &[&str]) -> Run {
        Run(self
            .cmd()
            .args(args)
            .env("TOOLMUX_TEST_KEY", crate::served::KEY)
            .output()
            .expect("run the program"))
    }
}

impl Default for TestProject {
    fn default() -> Self {
        Self::new()
    }
}

/// The output of one run.
pub struct Run(pub Output);

impl Run {
    /// The exit code; fails if a signal ended the run.
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

    /// Stdout of a successful run, parsed as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.ok()).expect("stdout is JSON")
    }
}
