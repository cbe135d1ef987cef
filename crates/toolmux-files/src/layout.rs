//! Where toolmux keeps its files: in a project, under `.toolmux/` (the configuration the user
//! edits) and `.toolmux/state/` (what toolmux writes itself); for the user, one folder under
//! the XDG configuration directory (the user's configuration, the secret store's key).

use std::path::{Path, PathBuf};

/// The folder under a project that holds toolmux's files.
pub const PROJECT_DIR_NAME: &str = ".toolmux";

/// `<project_dir>/.toolmux/state`: where toolmux keeps machine-written state (execution log,
/// discovery caches, conversations, secrets), apart from what the user edits.
pub fn state_dir(project_dir: &Path) -> PathBuf {
    project_dir.join(PROJECT_DIR_NAME).join("state")
}

/// The user's toolmux folder: `$XDG_CONFIG_HOME/toolmux`, else `~/.config/toolmux`; `None`
/// when there is no home directory. `env` looks a variable up (toolmux's kept environment, or a
/// test's).
pub fn user_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    // The XDG spec says a relative value is invalid and must be ignored.
    let config_home = env("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            env("HOME")
                .or_else(|| env("USERPROFILE"))
                .filter(|h| !h.is_empty())
                .map(|home| PathBuf::from(home).join(".config"))
        })?;
    Some(config_home.join("toolmux"))
}
