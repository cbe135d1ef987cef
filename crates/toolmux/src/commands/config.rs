//! `toolmux config check | schema | path`.

use std::path::Path;

use crate::assembly::Assembly;
use crate::cli::ConfigCommand;
use crate::exit::{Failure, OK};
use crate::output::{emit, pretty};
use crate::project::locate;

pub fn run(project: Option<&Path>, cmd: ConfigCommand) -> Result<u8, Failure> {
    match cmd {
        ConfigCommand::Schema => {
            emit(&pretty(&toolmux_config::schema())?)?;
        }
        ConfigCommand::Path => {
            let dir = locate(project)?;
            let project_file = toolmux_config::project_config_path(&dir);
            emit(&format!(
                "project: {}{}",
                project_file.display(),
                existence(&project_file)
            ))?;
            match toolmux_config::user_config_path() {
                Some(user) => emit(&format!("user:    {}{}", user.display(), existence(&user)))?,
                None => emit("user:    (no home directory)")?,
            }
        }
        ConfigCommand::Check => {
            let project = Assembly::open(project)?;
            let catalog = project.hub.catalog();
            let files = if project.loaded.files.is_empty() {
                "no configuration file (defaults)".to_string()
            } else {
                project
                    .loaded
                    .files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            emit(&format!("configuration ok: {files}"))?;
            emit(&format!("project root: {}", project.loaded.root.display()))?;
            emit(&format!(
                "{} tools from {} sources",
                catalog.tools().count(),
                catalog.sources().len()
            ))?;
            // Reported, not fatal: an upstream not yet discovered has no tools to match.
            for stale in catalog.stale_overrides() {
                emit(&format!("stale override: {stale}"))?;
            }
        }
    }
    Ok(OK)
}

fn existence(path: &Path) -> &'static str {
    if path.exists() { "" } else { " (not present)" }
}
