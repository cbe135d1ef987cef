//! A temporary project for the loader's tests: its project file, a user file beside it, and the
//! environment its `${VAR}`s are read from.

#![allow(dead_code)] // each test file uses its own part of it

use std::path::{Path, PathBuf};

use toolmux_config::{ConfigError, LoadedConfig, load_with_env, project_config_path};
use toolmux_testkit::project::{TestProject, write_file};

/// A temporary project with an optional project file and an optional user file.
pub struct Project {
    dir: TestProject,
    env: fn(&str) -> Option<String>,
}

impl Project {
    /// A project whose environment sets nothing.
    pub fn new() -> Self {
        Self::with_env(|_| None)
    }

    /// A project whose `${VAR}`s are read from `env`.
    pub fn with_env(env: fn(&str) -> Option<String>) -> Self {
        Self {
            dir: TestProject::new(),
            env,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes the project's `.toolmux/config.json` and returns its path.
    pub fn config(&self, text: &str) -> PathBuf {
        let path = self.dir.config(text);
        assert_eq!(path, project_config_path(self.path()));
        path
    }

    /// Writes a user file outside the project and returns its path.
    pub fn user(&self, text: &str) -> PathBuf {
        write_file(self.path(), "home/.config/toolmux/config.json", text)
    }

    /// Loads the project, with the user file `user` if one is given.
    pub fn load(&self, user: Option<&Path>) -> Result<LoadedConfig, ConfigError> {
        load_with_env(self.path(), user, &self.env)
    }

    /// Writes `text` as the project file and loads it.
    pub fn load_text(&self, text: &str) -> Result<LoadedConfig, ConfigError> {
        self.config(text);
        self.load(None)
    }

    /// The error `text` is refused with, with the project file's path in place of `FILE`.
    pub fn refusal(&self, text: &str) -> String {
        let (file, error) = self.error(text);
        error
            .to_string()
            .replace(&file.display().to_string(), "FILE")
    }

    /// Writes `text` as the project file and returns it with the error loading it gives.
    pub fn error(&self, text: &str) -> (PathBuf, ConfigError) {
        let file = self.config(text);
        let err = self.load(None).expect_err("the file is invalid");
        (file, err)
    }
}
