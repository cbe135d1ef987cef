//! toolmux's secret store: values kept by name (`GITHUB_TOKEN`, `oauth/github/refresh`), read by
//! `${secret:NAME}` references in the configuration, by the internal pack's `secrets_*` tools
//! and by `toolmux secrets`.
//!
//! Two backends, chosen when the store opens ([`SecretStore::open`]):
//! - the **OS keyring** (Keychain, Windows Credential Manager, the Secret Service on Linux) when
//!   one answers — the keyring keeps the values, and a names-only index under
//!   `.toolmux/state/secrets.names.json` lets the store list them (keyrings cannot enumerate);
//! - else an **encrypted file**, `.toolmux/state/secrets.enc` ([`file`]).
//!
//! `TOOLMUX_SECRET_BACKEND=file|keyring` forces one (`keyring` fails when none answers);
//! unset or `auto` probes the keyring and falls back to the file with a debug message, which is
//! what a headless machine (no session bus) gets.
//!
//! Every write takes `.toolmux/state/secrets.lock`, so concurrent writers (the CLI and a
//! running server) are serialised; reads take no lock because the file is replaced atomically.
//! Values are [`SecretValue`]s: their `Debug` prints `[redacted]` and their memory is zeroed
//! when dropped, so a value never reaches a log through a `{:?}`.

pub mod file;
mod os_keyring;

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use zeroize::Zeroizing;

pub use file::{FileBackend, SecretKey};

/// Why a secret could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The name is not a secret name.
    #[error(
        "`{0}` is not a secret name: use letters, digits, `_`, `.` and `-`, in segments \
         separated by `/` (`GITHUB_TOKEN`, `oauth/github/refresh`)"
    )]
    BadName(String),
    /// The key could not be read, created or parsed.
    #[error("secret key: {0}")]
    Key(String),
    /// The file was written with another key.
    #[error(
        "`{path}` was encrypted with a different key than this one ({source_of_key}); set \
         TOOLMUX_SECRET_KEY or restore the key file that wrote it"
    )]
    WrongKey {
        /// The secrets file.
        path: PathBuf,
        /// Where the key in use came from.
        source_of_key: String,
    },
    /// The file is not one this store wrote, or it was changed after it was written.
    #[error("`{path}` is damaged or was changed outside toolmux: {reason}")]
    Tampered {
        /// The secrets file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The OS keyring failed.
    #[error("OS keyring: {0}")]
    Keyring(String),
    /// A file could not be read or written.
    #[error("{what} `{path}`: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl SecretError {
    pub(crate) fn io(what: &'static str, path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A secret's value. Its `Debug` and `Display` never show it; [`SecretValue::expose`] does.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(Zeroizing<String>);

impl SecretValue {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(Zeroizing::new(value.into()))
    }

    /// The value itself, for the one place that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue([redacted])")
    }
}

impl From<String> for SecretValue {
    fn from(value: String) -> Self {
        Self::new(value)
    }
}

/// Checks a secret name: segments of `[A-Za-z0-9_.-]` separated by single `/`, so that a
/// caller can keep a family of names under a prefix (`oauth/<server>/...`), at most 200 bytes.
pub fn check_name(name: &str) -> Result<(), SecretError> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name.split('/').all(|segment| {
            !segment.is_empty()
                && segment != "."
                && segment != ".."
                && segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        });
    if ok {
        Ok(())
    } else {
        Err(SecretError::BadName(name.to_string()))
    }
}

/// Where values are kept.
pub(crate) trait Backend: Send + Sync {
    fn name(&self) -> &'static str;
    fn list(&self) -> Result<Vec<String>, SecretError>;
    fn get(&self, name: &str) -> Result<Option<SecretValue>, SecretError>;
    /// Called with the store's write lock held.
    fn set(&self, name: &str, value: &SecretValue) -> Result<(), SecretError>;
    /// Called with the store's write lock held; whether there was a value.
    fn delete(&self, name: &str) -> Result<bool, SecretError>;
}

/// The secret store of one project. Cheap to clone; every method blocks on file or keyring
/// work, so async code calls the `*_async` forms, which run it on tokio's blocking pool.
#[derive(Clone)]
pub struct SecretStore {
    backend: Arc<dyn Backend>,
    lock_path: PathBuf,
}

impl fmt::Debug for SecretStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretStore")
            .field("backend", &self.backend.name())
            .field("lock", &self.lock_path)
            .finish()
    }
}

/// The file the encrypted backend keeps the values in.
pub fn secrets_file(project_dir: &Path) -> PathBuf {
    toolmux_files::state_dir(project_dir).join("secrets.enc")
}

impl SecretStore {
    /// Opens the store of a project: the OS keyring when one answers, else the encrypted file
    /// (see the crate documentation; `TOOLMUX_SECRET_BACKEND` forces one). Reads no key yet:
    /// the file backend reads (or creates) its key on first use.
    pub fn open(project_dir: &Path) -> Result<Self, SecretError> {
        let state = toolmux_files::state_dir(project_dir);
        let lock_path = state.join("secrets.lock");
        // Its name holds SECRET: the binary may have taken it out of the process environment.
        let choice = toolmux_core::process_env::var("TOOLMUX_SECRET_BACKEND").unwrap_or_default();
        let file = || -> Arc<dyn Backend> {
            Arc::new(FileBackend::new(
                secrets_file(project_dir),
                SecretKey::from_environment(),
            ))
        };
        let backend = match choice.as_str() {
            "file" => file(),
            "keyring" => Arc::new(os_keyring::KeyringBackend::open(project_dir)?),
            "" | "auto" => match os_keyring::KeyringBackend::open(project_dir) {
                Ok(keyring) => Arc::new(keyring),
                Err(e) => {
                    tracing::debug!("no OS keyring ({e}); secrets are kept in an encrypted file");
                    file()
                }
            },
            other => {
                return Err(SecretError::Keyring(format!(
                    "TOOLMUX_SECRET_BACKEND is `{other}`; use `file`, `keyring` or `auto`"
                )));
            }
        };
        Ok(Self { backend, lock_path })
    }

    /// A store on the encrypted file `path` with `key`, its lock beside the file.
    pub fn with_file(path: PathBuf, key: SecretKey) -> Self {
        let lock_path = path.with_extension("lock");
        Self {
            backend: Arc::new(FileBackend::new(path, key)),
            lock_path,
        }
    }

    /// `keyring` or `file`.
    pub fn backend(&self) -> &'static str {
        self.backend.name()
    }

    /// The names under `prefix` (all with `""`), sorted. Names only, never values.
    pub fn list(&self, prefix: &str) -> Result<Vec<String>, SecretError> {
        let mut names = self.backend.list()?;
        names.retain(|n| n.starts_with(prefix));
        names.sort();
        Ok(names)
    }

    /// The value of `name`, if it is set.
    pub fn get(&self, name: &str) -> Result<Option<SecretValue>, SecretError> {
        check_name(name)?;
        self.backend.get(name)
    }

    /// Sets `name` to `value`, replacing what was there.
    pub fn set(&self, name: &str, value: &SecretValue) -> Result<(), SecretError> {
        check_name(name)?;
        let _lock = self.lock()?;
        self.backend.set(name, value)
    }

    /// Removes `name`; whether it was set.
    pub fn delete(&self, name: &str) -> Result<bool, SecretError> {
        check_name(name)?;
        let _lock = self.lock()?;
        self.backend.delete(name)
    }

    /// [`SecretStore::list`] on the blocking pool.
    pub async fn list_async(&self, prefix: &str) -> Result<Vec<String>, SecretError> {
        let (store, prefix) = (self.clone(), prefix.to_string());
        blocking(move || store.list(&prefix)).await
    }

    /// [`SecretStore::get`] on the blocking pool.
    pub async fn get_async(&self, name: &str) -> Result<Option<SecretValue>, SecretError> {
        let (store, name) = (self.clone(), name.to_string());
        blocking(move || store.get(&name)).await
    }

    /// [`SecretStore::set`] on the blocking pool.
    pub async fn set_async(&self, name: &str, value: SecretValue) -> Result<(), SecretError> {
        let (store, name) = (self.clone(), name.to_string());
        blocking(move || store.set(&name, &value)).await
    }

    /// [`SecretStore::delete`] on the blocking pool.
    pub async fn delete_async(&self, name: &str) -> Result<bool, SecretError> {
        let (store, name) = (self.clone(), name.to_string());
        blocking(move || store.delete(&name)).await
    }

    /// The exclusive advisory lock every writer holds, on a file of its own: the secrets file
    /// is replaced by rename, and a lock on a replaced inode excludes nobody.
    fn lock(&self) -> Result<File, SecretError> {
        if let Some(dir) = self.lock_path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| SecretError::io("create", dir, e))?;
        }
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock_path)
            .map_err(|e| SecretError::io("open", &self.lock_path, e))?;
        file.lock()
            .map_err(|e| SecretError::io("lock", &self.lock_path, e))?;
        Ok(file)
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, SecretError> + Send + 'static,
) -> Result<T, SecretError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| SecretError::Keyring(format!("the secret store's task failed: {e}")))?
}

/// The store of the project this process serves, opened once (the keyring probe is not
/// repeated on every configuration reload); the configuration reads `${secret:NAME}`
/// references through [`SecretStore::config_value`].
pub fn project_store(project_dir: &Path) -> Result<SecretStore, SecretError> {
    static OPEN: Mutex<Option<(PathBuf, SecretStore)>> = Mutex::new(None);
    let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((dir, store)) = open.as_ref()
        && dir == project_dir
    {
        return Ok(store.clone());
    }
    let store = SecretStore::open(project_dir)?;
    *open = Some((project_dir.to_path_buf(), store.clone()));
    Ok(store)
}

/// Lets the configuration load while a `${secret:NAME}` it refers to is not set (an unset one
/// reads as empty, with a warning), for the rest of the process: what `toolmux secrets` needs,
/// since setting the missing secret is how a person fixes that configuration.
pub fn tolerate_unset_in_config() {
    TOLERATE_UNSET.store(true, Ordering::Relaxed);
}

static TOLERATE_UNSET: AtomicBool = AtomicBool::new(false);

impl SecretStore {
    /// The value of `name` as a `${secret:NAME}` reference in the configuration reads it:
    /// `Ok(None)` when it is not set (an empty value, with a warning, after
    /// [`tolerate_unset_in_config`]), `Err` with a message when the store cannot be read. The
    /// configuration's loader is given this as its secret lookup; it keeps no store itself.
    pub fn config_value(&self, name: &str) -> Result<Option<String>, String> {
        match self.get(name) {
            Ok(None) if TOLERATE_UNSET.load(Ordering::Relaxed) => {
                tracing::warn!("secret `{name}` is not set; the configuration reads it as empty");
                Ok(Some(String::new()))
            }
            Ok(value) => Ok(value.map(|v| v.expose().to_string())),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_segments() {
        for good in ["GITHUB_TOKEN", "a.b-c", "oauth/github/refresh"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "a b", "/a", "a//b", "a/", "../x", "a/./b", "é"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn debug_never_shows_a_value() {
        let value = SecretValue::new("hunter2");
        assert_eq!(format!("{value:?}"), "SecretValue([redacted])");
    }
}
