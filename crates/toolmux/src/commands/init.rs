//! `toolmux init`: a starter configuration that explains itself — every section of the file,
//! set to its default or empty, each with a commented-out example (`starter_config.jsonc`; the
//! loader accepts comments). A test checks that it loads as written and with every example
//! switched on.

use std::path::Path;

use anyhow::Context;

use crate::exit::{Failure, OK};
use crate::output::emit;

/// The file `init` writes: JSON with comments, loaded as it is.
const STARTER_CONFIG: &str = include_str!("starter_config.jsonc");

pub fn run(project: Option<&Path>, force: bool) -> Result<u8, Failure> {
    let dir = match project {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let config_path = toolmux_config::project_config_path(&dir);
    if config_path.exists() && !force {
        return Err(Failure::Usage(format!(
            "`{}` already exists; use --force to overwrite it",
            config_path.display()
        )));
    }
    let toolmux_dir = dir.join(".toolmux");
    std::fs::create_dir_all(&toolmux_dir)
        .with_context(|| format!("cannot create `{}`", toolmux_dir.display()))?;
    // Through the editor's lock, so that `init --force` never lands in the middle of another
    // command's edit (or a running server's).
    toolmux_config::ConfigEditor::new(&dir, None).overwrite(STARTER_CONFIG.as_bytes())?;
    // The starter config points editors at this schema for completion and checking.
    let schema_path = toolmux_config::project_schema_path(&dir);
    let schema = serde_json::to_vec_pretty(&toolmux_config::schema())
        .context("cannot serialize the configuration schema")?;
    toolmux_files::write_atomic(&schema_path, &schema)
        .with_context(|| format!("cannot write `{}`", schema_path.display()))?;
    // Machine-written state (logs, caches) stays out of version control.
    let ignore = toolmux_dir.join(".gitignore");
    if !ignore.exists() {
        toolmux_files::write_atomic(&ignore, b"state/\n")
            .with_context(|| format!("cannot write `{}`", ignore.display()))?;
    }
    emit(&format!("wrote {}", config_path.display()))?;
    Ok(OK)
}
