//! `toolmux capabilities build`: the catalog's tools as TypeScript modules for code mode.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::assembly::Assembly;
use crate::cli::CapabilitiesCommand;
use crate::exit::{Failure, OK};
use crate::output::{emit, pretty};

/// Where the modules go unless `--out` says otherwise, relative to the project directory.
pub(crate) fn default_dir(project_dir: &Path) -> PathBuf {
    project_dir.join(".toolmux").join("capabilities")
}

pub fn run(project: Option<&Path>, cmd: CapabilitiesCommand) -> Result<u8, Failure> {
    let CapabilitiesCommand::Build { out, json } = cmd;
    let project = Assembly::open(project)?;
    let out_dir = out.unwrap_or_else(|| default_dir(&project.loaded.project_dir));
    let report = toolmux_codemode::build_capabilities(&project.hub.catalog(), &out_dir)
        .context("cannot build the capabilities")?;
    if json {
        emit(&pretty(&report)?)?;
        return Ok(OK);
    }
    for source in &report.sources {
        emit(&format!(
            "{}  {} tools  import {{ {} }} from \"{}\"",
            source.folder, source.tools, source.namespace, source.module
        ))?;
    }
    emit(&format!(
        "wrote {} tools from {} sources to {}",
        report.tool_count(),
        report.sources.len(),
        out_dir.display()
    ))?;
    Ok(OK)
}
