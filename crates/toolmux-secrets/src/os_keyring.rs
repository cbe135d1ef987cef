//! The OS keyring backend, on the `keyring` crate. Entries are `service = "toolmux"`, `user =
//! "<project dir>#<name>"`, so two projects keep their own values. Keyrings cannot list, so the
//! names (never the values) are kept in `.toolmux/state/secrets.names.json`, written under the
//! store's lock.
//!
//! Every keyring call runs on a thread of its own: the Secret Service client blocks on its own
//! async runtime, which must not be started from inside tokio's.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::{Backend, SecretError, SecretValue};

const SERVICE: &str = "toolmux";

pub(crate) struct KeyringBackend {
    project: String,
    index: PathBuf,
}

/// Runs `work` on a fresh thread and waits for it.
fn isolated<T: Send>(work: impl FnOnce() -> T + Send) -> Result<T, SecretError> {
    std::thread::scope(|scope| {
        scope
            .spawn(work)
            .join()
            .map_err(|_| SecretError::Keyring("the keyring call panicked".into()))
    })
}

fn keyring_error(e: keyring::Error) -> SecretError {
    SecretError::Keyring(e.to_string())
}

impl KeyringBackend {
    /// The keyring backend when a keyring answers: a probe read of an entry that need not
    /// exist must come back as a value or as "no entry", not as "no keyring".
    pub(crate) fn open(project_dir: &Path) -> Result<Self, SecretError> {
        let backend = Self {
            project: project_dir.display().to_string(),
            index: toolmux_files::state_dir(project_dir).join("secrets.names.json"),
        };
        isolated(|| {
            let entry = keyring::Entry::new(SERVICE, "probe").map_err(keyring_error)?;
            match entry.get_password() {
                Ok(_) | Err(keyring::Error::NoEntry) => Ok(()),
                Err(e) => Err(keyring_error(e)),
            }
        })??;
        Ok(backend)
    }

    fn entry(&self, name: &str) -> Result<keyring::Entry, SecretError> {
        keyring::Entry::new(SERVICE, &format!("{}#{name}", self.project)).map_err(keyring_error)
    }

    fn names(&self) -> Result<BTreeSet<String>, SecretError> {
        match fs::read(&self.index) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| SecretError::Tampered {
                path: self.index.clone(),
                reason: e.to_string(),
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(BTreeSet::new()),
            Err(e) => Err(SecretError::io("read", &self.index, e)),
        }
    }

    fn write_names(&self, names: &BTreeSet<String>) -> Result<(), SecretError> {
        if let Some(dir) = self.index.parent() {
            fs::create_dir_all(dir).map_err(|e| SecretError::io("create", dir, e))?;
        }
        let bytes = serde_json::to_vec_pretty(names).unwrap_or_default();
        toolmux_files::write_atomic(&self.index, &bytes)
            .map_err(|e| SecretError::io("write", &self.index, e))
    }
}

impl Backend for KeyringBackend {
    fn name(&self) -> &'static str {
        "keyring"
    }

    fn list(&self) -> Result<Vec<String>, SecretError> {
        Ok(self.names()?.into_iter().collect())
    }

    fn get(&self, name: &str) -> Result<Option<SecretValue>, SecretError> {
        let entry = self.entry(name)?;
        isolated(|| match entry.get_password() {
            Ok(value) => Ok(Some(SecretValue::new(value))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(keyring_error(e)),
        })?
    }

    fn set(&self, name: &str, value: &SecretValue) -> Result<(), SecretError> {
        let entry = self.entry(name)?;
        isolated(|| entry.set_password(value.expose()).map_err(keyring_error))??;
        let mut names = self.names()?;
        if names.insert(name.to_string()) {
            self.write_names(&names)?;
        }
        Ok(())
    }

    fn delete(&self, name: &str) -> Result<bool, SecretError> {
        let entry = self.entry(name)?;
        let existed = isolated(|| match entry.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(keyring_error(e)),
        })??;
        let mut names = self.names()?;
        if names.remove(name) {
            self.write_names(&names)?;
        }
        Ok(existed)
    }
}
