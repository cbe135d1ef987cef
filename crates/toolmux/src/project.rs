//! Finding a project and its configuration: the project directory, the loaded configuration,
//! where the execution log lives, and the one editor of the config file. Commands that only
//! read or edit the file start here; everything that needs the hub takes it from
//! [`crate::assembly::Assembly`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use toolmux_config::{LoadedConfig, SecretLookup};

use crate::exit::Failure;

/// The project directory: the one given, else the nearest ancestor with `.toolmux/config.json`,
/// else the current directory.
pub fn locate(given: Option<&Path>) -> Result<PathBuf, Failure> {
    if let Some(dir) = given {
        if !dir.is_dir() {
            return Err(Failure::Usage(format!(
                "project directory `{}` does not exist",
                dir.display()
            )));
        }
        return Ok(dir.to_path_buf());
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    Ok(toolmux_config::find_project_dir(&cwd).unwrap_or(cwd))
}

/// What `${secret:NAME}` references in the configuration read: this project's secret store,
/// or none (a reference is then an error) when it cannot be opened.
pub fn config_secrets(project_dir: &Path) -> Option<Arc<dyn SecretLookup>> {
    match toolmux_secrets::project_store(project_dir) {
        Ok(store) => Some(Arc::new(move |name: &str| store.config_value(name))),
        Err(e) => {
            tracing::warn!("the secret store is not available: {e}");
            None
        }
    }
}

/// Loads the configuration of a project directory (project file over user file).
pub fn load_config(project_dir: &Path) -> Result<LoadedConfig, Failure> {
    let user = toolmux_config::user_config_path();
    let secrets = config_secrets(project_dir);
    toolmux_config::load_with_secrets(project_dir, user.as_deref(), secrets.as_deref())
        .map_err(|e| Failure::Config(e.to_string()))
}

/// Where the execution log lives.
pub fn log_dir(project_dir: &Path) -> PathBuf {
    toolmux_config::state_dir(project_dir).join("logs")
}

/// The one editor of the project's config file, checked merged with the user's file.
pub fn editor(project_dir: &Path) -> toolmux_config::ConfigEditor {
    toolmux_config::ConfigEditor::new(project_dir, toolmux_config::user_config_path().as_deref())
        .with_secrets(config_secrets(project_dir))
}
