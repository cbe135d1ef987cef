//! toolmux's own environment as it was when it started, for toolmux alone. It lives in the
//! lowest crate because the configuration's `${VAR}`, the secret store's key and the shell's
//! `env` all read it, and the secret store does not depend on the configuration.
//!
//! At start the binary takes its secrets (API keys, tokens, passwords) out of the process
//! environment, so that no child inherits them and `/proc/<toolmux>/environ` does not show them
//! (`toolmux_scripts::environ`). toolmux itself still needs them afterwards: a configuration's
//! `${OPENAI_API_KEY}` is expanded at every load and reload, `--api-key-env` names a variable,
//! the secret store reads `TOOLMUX_SECRET_KEY`. Those reads go through [`var`], which finds
//! what was taken out in a private copy kept here ([`keep_removed`]).

use std::collections::HashMap;
use std::sync::{OnceLock, PoisonError, RwLock};

/// The variables taken out of the process environment, with their values: those of the start,
/// then those a reloaded configuration names for the first time ([`keep_more`]).
static REMOVED: OnceLock<RwLock<HashMap<String, String>>> = OnceLock::new();

/// Keeps `removed` — the variables taken out of the process environment — for [`var`]. Only
/// the first call counts (the environment is scrubbed once, at start); later calls return
/// `false` and change nothing.
pub fn keep_removed(removed: HashMap<String, String>) -> bool {
    REMOVED.set(RwLock::new(removed)).is_ok()
}

/// Keeps `more` for [`var`] besides what was kept at start: variables a reloaded configuration
/// names that are about to leave the process environment (kept first, so that a load running
/// meanwhile finds them one way or the other).
pub fn keep_more(more: HashMap<String, String>) {
    REMOVED
        .get_or_init(RwLock::default)
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(more);
}

fn removed(name: &str) -> Option<String> {
    REMOVED
        .get()?
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(name)
        .cloned()
}

/// The value toolmux's environment gave `name`: the process environment's, else the value
/// kept when it was taken out of it. `None` when unset or not valid Unicode.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().or_else(|| removed(name))
}

/// Whether `name` was taken out of the process environment (at start, or at a reload).
pub fn was_removed(name: &str) -> bool {
    removed(name).is_some()
}
