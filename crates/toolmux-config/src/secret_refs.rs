//! `${secret:NAME}` references: a configuration string may name a value in toolmux's secret
//! store, resolved while the file is read (so an error names file, line and field like a
//! `${VAR}`'s), while the file keeps the reference. This crate knows no store: whoever loads
//! the configuration passes one to the load ([`crate::load_with_secrets`],
//! [`crate::ConfigEditor::with_secrets`]), as it passes the variables; nothing is kept for the
//! process. Also the effective configuration as
//! written ([`unexpanded_config`]), references kept, for `config_get`.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::load::merge;

/// Where `${secret:NAME}` values come from. Any function from a name to its value is one.
pub trait SecretLookup: Send + Sync {
    /// The value of `name`; `Ok(None)` when it is not set, `Err` with a message when the
    /// store cannot be read.
    fn lookup(&self, name: &str) -> Result<Option<String>, String>;
}

/// A store shows as its kind only: its values never reach a `Debug` output.
impl std::fmt::Debug for dyn SecretLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretLookup")
    }
}

impl<F> SecretLookup for F
where
    F: Fn(&str) -> Result<Option<String>, String> + Send + Sync,
{
    fn lookup(&self, name: &str) -> Result<Option<String>, String> {
        self(name)
    }
}

/// Configuration files (lowest precedence first; a missing one counts as empty), merged as the loader merges them but with every
/// `${VAR}` and `${secret:NAME}` left as written: the effective configuration without the
/// secrets it refers to. A file that can no longer be read is left out.
pub fn unexpanded_config(files: &[PathBuf]) -> Value {
    let mut merged = Value::Object(Map::new());
    for path in files {
        if let Some(Value::Object(file)) = crate::load::read_unexpanded(path) {
            merge(&mut merged, Value::Object(file));
        }
    }
    merged
}
