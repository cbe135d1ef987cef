//! The sessions of a scratch project whose runners are the fakes under `tests/fixtures/bin`
//! (they read their command line as the real CLIs' parsers do), shared by the sessions tests.

#![allow(
    dead_code,
    reason = "each test binary uses its own part of these helpers"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolmux_config::RunnerSettings;
use toolmux_sessions::{RunRequest, Sessions};
use toolmux_workspace::ProjectRoot;

/// A fake runner's path.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bin")
        .join(name)
}

/// A runner that runs `command`.
pub fn settings(command: &Path) -> RunnerSettings {
    RunnerSettings {
        command: Some(command.display().to_string()),
        ..Default::default()
    }
}

/// The project's root as the binary gives it to the sessions (default protected paths).
pub fn project_root(root: &Path) -> ProjectRoot {
    ProjectRoot::new(root).expect("the project root")
}

/// The built-in `claude` and `codex` pointed at the fakes, plus `extra`.
pub fn open_with(root: &Path, extra: BTreeMap<String, RunnerSettings>) -> Sessions {
    let mut runners = BTreeMap::new();
    for name in ["claude", "codex"] {
        runners.insert(name.to_string(), settings(&fixture(name)));
    }
    runners.extend(extra);
    Sessions::for_project(
        &project_root(root),
        &root.join(".toolmux/state"),
        &runners,
        None,
    )
    .expect("open the sessions")
}

/// The built-in `claude` and `codex` pointed at the fakes.
pub fn open(root: &Path) -> Sessions {
    open_with(root, BTreeMap::new())
}

/// A request to run `runner` with `prompt`.
pub fn request(runner: &str, prompt: &str) -> RunRequest {
    RunRequest {
        runner: runner.to_string(),
        prompt: Some(prompt.to_string()),
        ..Default::default()
    }
}
