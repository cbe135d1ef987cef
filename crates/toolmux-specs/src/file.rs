//! Reading the pack's files with a bound. A cloned repository chooses its specs, so every read
//! is capped before it is buffered (a 300 MB README once took 1.87 GB to view, finding D32):
//! spec files (READMEs, sub-specs, a file whose tokens are counted) at
//! [`MAX_SPEC_FILE_BYTES`], the LeanSpec config at [`toolmux_core::MAX_YAML_BYTES`]. Spec files
//! are opened beneath the project root as the workspace tools open files: no link on the way,
//! and a FIFO or device swapped in is refused without blocking.

use std::path::Path;

use toolmux_core::human_bytes;
use toolmux_workspace::ProjectRoot;

use crate::error::SpecsError;

/// The largest spec file the pack reads (README, sub-spec, a counted file): far above any spec
/// LeanSpec would call readable (its error threshold is 5,000 tokens), far below what an MCP
/// message can carry. One bound for every spec file, so whatever is listed can be viewed.
pub(crate) const MAX_SPEC_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A spec file's text, or why there is none.
#[derive(Debug)]
pub(crate) enum Capped {
    /// The whole file.
    Text(String),
    /// Larger than [`MAX_SPEC_FILE_BYTES`]: its size (at least), nothing of it buffered past
    /// the cap.
    TooLarge(u64),
    /// Not UTF-8.
    NotUtf8,
}

/// Reads the regular file at `abs` (inside the project) up to [`MAX_SPEC_FILE_BYTES`].
pub(crate) fn read_spec_file(project: &ProjectRoot, abs: &Path) -> Result<Capped, SpecsError> {
    let shown = abs.strip_prefix(project.path()).unwrap_or(abs);
    let failed = |message: String| SpecsError::io(abs, std::io::Error::other(message));
    let (file, meta) = project
        .open_for_reading(abs, &shown.to_string_lossy())
        .map_err(|e| failed(e.to_string()))?;
    if !meta.is_file() {
        return Err(failed("not a regular file".into()));
    }
    if meta.len() > MAX_SPEC_FILE_BYTES {
        return Ok(Capped::TooLarge(meta.len()));
    }
    // It may have grown since it was looked at: the cap holds for what is read.
    match toolmux_files::read_capped(file, MAX_SPEC_FILE_BYTES)
        .map_err(|e| SpecsError::io(abs, e))?
    {
        Some(bytes) => Ok(String::from_utf8(bytes).map_or(Capped::NotUtf8, Capped::Text)),
        None => Ok(Capped::TooLarge(MAX_SPEC_FILE_BYTES + 1)),
    }
}

/// Why a spec file of `size` bytes is not read.
pub(crate) fn too_large(size: u64) -> String {
    format!(
        "the file is {}, more than the {} the spec pack reads; split it into sub-spec files",
        human_bytes(size),
        human_bytes(MAX_SPEC_FILE_BYTES)
    )
}

/// The text of a spec file at `abs`, an error naming it when it is too large or not UTF-8.
pub(crate) fn read_spec_text(project: &ProjectRoot, abs: &Path) -> Result<String, SpecsError> {
    match read_spec_file(project, abs)? {
        Capped::Text(text) => Ok(text),
        Capped::TooLarge(size) => Err(SpecsError::Unreadable {
            path: abs.to_path_buf(),
            message: too_large(size),
        }),
        Capped::NotUtf8 => Err(SpecsError::Unreadable {
            path: abs.to_path_buf(),
            message: "the file is not valid UTF-8".into(),
        }),
    }
}

/// The LeanSpec config file at `path` (`.lean-spec/config.json` or `config.yaml`), read up to
/// [`toolmux_core::MAX_YAML_BYTES`]: a config is a few lines.
pub(crate) fn read_config(path: &Path) -> Result<String, SpecsError> {
    let limit = toolmux_core::MAX_YAML_BYTES as u64;
    let Some(bytes) = std::fs::File::open(path)
        .and_then(|f| toolmux_files::read_capped(f, limit))
        .map_err(|e| SpecsError::io(path, e))?
    else {
        return Err(SpecsError::Config {
            path: path.to_path_buf(),
            message: format!("larger than the {} a config may be", human_bytes(limit)),
        });
    };
    String::from_utf8(bytes).map_err(|_| SpecsError::Config {
        path: path.to_path_buf(),
        message: "not valid UTF-8".into(),
    })
}
