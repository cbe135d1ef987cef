//! Reading the pack's files with a bound. A cloned repository chooses its specs, so every read
//! is capped before it is buffered (a 300 MB README once took 1.87 GB to view, finding D32):
//! spec files (READMEs, sub-specs, a file whose tokens are counted) at
//! [`MAX_SPEC_FILE_BYTES`], the LeanSpec config at [`toolmux_core::MAX_YAML_BYTES`]. Spec files
//! are opened beneath the project root as the workspace tools open files: no link on the way,
//! and a FIFO or device swapped in is refused without blocking.

use std::path::Path;

use toolmux_core::human_bytes;
use toolmux_files::ReadTextError;
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
    /// Not a regular file (a FIFO, a device … swapped in since it was listed): what it is.
    NotRegular(&'static str),
}

/// Reads the regular file at `abs` (inside the project) up to [`MAX_SPEC_FILE_BYTES`].
pub(crate) fn read_spec_file(project: &ProjectRoot, abs: &Path) -> Result<Capped, SpecsError> {
    let shown = abs.strip_prefix(project.path()).unwrap_or(abs);
    let failed = |message: String| SpecsError::io(abs, std::io::Error::other(message));
    let (file, _) = project
        .open_for_reading(abs, &shown.to_string_lossy())
        .map_err(|e| failed(e.to_string()))?;
    match toolmux_files::read_text_from(file, MAX_SPEC_FILE_BYTES) {
        Ok(text) => Ok(Capped::Text(text)),
        Err(ReadTextError::TooLarge { size, .. }) => Ok(Capped::TooLarge(size)),
        Err(ReadTextError::NotUtf8) => Ok(Capped::NotUtf8),
        Err(ReadTextError::NotRegular { kind }) => Ok(Capped::NotRegular(kind)),
        Err(ReadTextError::Io(e)) => Err(SpecsError::io(abs, e)),
        Err(e @ ReadTextError::Link) => Err(failed(e.to_string())),
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

/// Why a spec file that is `kind` (not a regular file) is not read.
pub(crate) fn not_regular(kind: &str) -> String {
    format!(
        "the file is {kind}, not a regular file; the spec pack reads only regular files and \
         follows no links"
    )
}

/// The text of a spec file at `abs`, an error naming it when it is too large, not UTF-8 or not
/// a regular file.
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
        Capped::NotRegular(kind) => Err(SpecsError::Unreadable {
            path: abs.to_path_buf(),
            message: not_regular(kind),
        }),
    }
}

/// The LeanSpec config file at `rel` (`.lean-spec/config.json` or `config.yaml`) beneath the
/// project, read as the workspace tools read a file (a link only to somewhere inside the
/// project, never a FIFO or a device: opened without waiting, refused unread) and up to
/// [`toolmux_core::MAX_YAML_BYTES`]: a config is a few lines.
pub(crate) fn read_config(project: &ProjectRoot, rel: &str) -> Result<String, SpecsError> {
    let path = project.path().join(rel);
    let refused = |message: String| SpecsError::Config {
        path: path.clone(),
        message,
    };
    let real = project.resolve(rel).map_err(|e| refused(e.to_string()))?;
    let (file, _) = project
        .open_for_reading(&real, rel)
        .map_err(|e| refused(e.to_string()))?;
    let limit = toolmux_core::MAX_YAML_BYTES as u64;
    toolmux_files::read_text_from(file, limit).map_err(|e| match e {
        ReadTextError::Io(e) => SpecsError::io(&path, e),
        ReadTextError::TooLarge { .. } => refused(format!(
            "larger than the {} a config may be",
            human_bytes(limit)
        )),
        refusal => refused(refusal.to_string()),
    })
}
