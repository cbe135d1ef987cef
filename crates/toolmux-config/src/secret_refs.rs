//! `${secret:NAME}` references: a configuration string may name a value in toolmux's secret
//! store, resolved while the file is read (so an error names file, line and field like a
//! `${VAR}`'s), while the file keeps the reference. This crate knows no store: the binary
//! installs one with [`set_secret_lookup`] for the process (the store lives in
//! `toolmux-secrets`, which depends on this crate for its atomic writer). Also the effective
//! configuration as written ([`unexpanded_config`]), references kept, for `config_get`.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use serde_json::{Map, Value};

use crate::env::EnvProblem;
use crate::load::merge;

/// Where `${secret:NAME}` values come from.
pub trait SecretLookup: Send + Sync {
    /// The value of `name`; `Ok(None)` when it is not set, `Err` with a message when the
    /// store cannot be read.
    fn lookup(&self, name: &str) -> Result<Option<String>, String>;
}

static LOOKUP: RwLock<Option<Arc<dyn SecretLookup>>> = RwLock::new(None);

/// Installs the secret store `${secret:NAME}` references read from, for the rest of the
/// process (a later call replaces it).
pub fn set_secret_lookup(lookup: Arc<dyn SecretLookup>) {
    *LOOKUP.write().unwrap_or_else(PoisonError::into_inner) = Some(lookup);
}

/// The value of a `${secret:NAME}` reference; `Ok(None)` when the store has no such name.
pub(crate) fn secret(name: &str) -> Result<Option<String>, EnvProblem> {
    let lookup = LOOKUP
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let Some(lookup) = lookup else {
        return Err(EnvProblem::SecretUnreadable {
            name: name.to_string(),
            reason: "no secret store is open in this process".into(),
        });
    };
    lookup
        .lookup(name)
        .map_err(|reason| EnvProblem::SecretUnreadable {
            name: name.to_string(),
            reason,
        })
}

/// Configuration files (lowest precedence first; a missing one counts as empty), merged as the loader merges them but with every
/// `${VAR}` and `${secret:NAME}` left as written: the effective configuration without the
/// secrets it refers to. A file that can no longer be read is left out.
pub fn unexpanded_config(files: &[PathBuf]) -> Value {
    let mut merged = Value::Object(Map::new());
    for path in files {
        let Ok(text) = crate::read::read_config_text(path) else {
            continue;
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let text = &*crate::jsonc::without_comments(text);
        if let Ok(file @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
            merge(&mut merged, file);
        }
    }
    merged
}
