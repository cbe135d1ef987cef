//! The encrypted-file backend: `.toolmux/state/secrets.enc`, mode 0600.
//!
//! # Format
//! `TMXS` `0x01` | key id (8 bytes) | nonce (24 bytes) | ciphertext. The plaintext is a JSON
//! object of name → value, sealed with XChaCha20-Poly1305 under a 256-bit key, the header (magic,
//! version, key id) as associated data. Every write draws a fresh random nonce, which a 192-bit
//! nonce makes safe without a counter. The key id is the first 8 bytes of a SHA-256 of the key
//! (domain-separated), so that a wrong key is told apart from a changed file.
//!
//! # The key
//! `$TOOLMUX_SECRET_KEY` (32 bytes as base64 or 64 hex digits) when it is set, else the key file
//! `~/.config/toolmux/secret.key` (`$XDG_CONFIG_HOME` honoured), created on the first write with
//! 32 random bytes and mode 0600; a key file that others can read is refused, as ssh refuses a
//! private key.
//!
//! # Threat model, honestly
//! This keeps secrets out of the project tree in the clear: a project directory that is copied,
//! backed up, synced, attached to a bug report or committed by mistake leaks no secret, because
//! the key lives elsewhere (the user's config directory or the environment). A changed or
//! truncated file is detected (AEAD), never silently read as other values. It does **not**
//! protect against anyone who runs as the same user (or root) while the key file is there: they
//! can read the key and the file, just as toolmux does — the OS keyring, used when there is one,
//! raises that bar on desktops only. Values live unencrypted in toolmux's memory while in use.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::{Backend, SecretError, SecretValue};

const MAGIC: &[u8; 5] = b"TMXS\x01";
const KEY_ID_LEN: usize = 8;
const NONCE_LEN: usize = 24;
const HEADER_LEN: usize = MAGIC.len() + KEY_ID_LEN;
/// Poly1305's tag.
const TAG_LEN: usize = 16;

/// Where the file backend's key comes from.
#[derive(Clone)]
pub enum SecretKey {
    /// The key's text, as `$TOOLMUX_SECRET_KEY` gives it (base64 or hex).
    Given(Zeroizing<String>),
    /// A key file, created on first write when missing.
    File(PathBuf),
    /// No place for a key (no home directory and no `$TOOLMUX_SECRET_KEY`).
    Missing,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl SecretKey {
    /// `$TOOLMUX_SECRET_KEY` when set, else the user's key file. Read from toolmux's kept
    /// environment: the binary takes the key out of the process environment at start, so that
    /// no child inherits it.
    pub fn from_environment() -> Self {
        if let Some(text) = toolmux_core::process_env::var("TOOLMUX_SECRET_KEY")
            && !text.is_empty()
        {
            return Self::Given(Zeroizing::new(text));
        }
        match toolmux_files::user_dir(&toolmux_core::process_env::var) {
            Some(dir) => Self::File(dir.join("secret.key")),
            None => Self::Missing,
        }
    }

    /// Where the key comes from, for messages (never the key).
    fn describe(&self) -> String {
        match self {
            Self::Given(_) => "TOOLMUX_SECRET_KEY".into(),
            Self::File(path) => format!("key file `{}`", path.display()),
            Self::Missing => "no key".into(),
        }
    }

    /// The key's 32 bytes; a missing key file is created when `create` says so, else `None`.
    fn load(&self, create: bool) -> Result<Option<Zeroizing<[u8; 32]>>, SecretError> {
        match self {
            Self::Given(text) => parse_key(text).map(Some),
            Self::Missing => Err(SecretError::Key(
                "no home directory for the key file; set TOOLMUX_SECRET_KEY".into(),
            )),
            Self::File(path) => match fs::symlink_metadata(path) {
                Ok(meta) => {
                    if meta.permissions().mode() & 0o077 != 0 {
                        return Err(SecretError::Key(format!(
                            "`{}` can be read by other users (mode {:o}); run `chmod 600` on it",
                            path.display(),
                            meta.permissions().mode() & 0o777
                        )));
                    }
                    let text = Zeroizing::new(
                        fs::read_to_string(path).map_err(|e| SecretError::io("read", path, e))?,
                    );
                    parse_key(&text).map(Some)
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                    create_key_file(path).map(Some)
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(SecretError::io("read", path, e)),
            },
        }
    }
}

fn parse_key(text: &str) -> Result<Zeroizing<[u8; 32]>, SecretError> {
    let text = text.trim();
    let bytes = Zeroizing::new(
        if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap_or_default())
                .collect::<Vec<u8>>()
        } else {
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text))
                .map_err(|_| SecretError::Key("the key is neither base64 nor hex".into()))?
        },
    );
    let key: [u8; 32] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| SecretError::Key(format!("the key is {} bytes, not 32", bytes.len())))?;
    Ok(Zeroizing::new(key))
}

fn create_key_file(path: &Path) -> Result<Zeroizing<[u8; 32]>, SecretError> {
    let mut key = Zeroizing::new([0u8; 32]);
    getrandom::fill(key.as_mut_slice())
        .map_err(|e| SecretError::Key(format!("no random bytes: {e}")))?;
    if let Some(dir) = path.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| SecretError::io("create", dir, e))?;
    }
    let text = Zeroizing::new(base64::engine::general_purpose::STANDARD.encode(key.as_slice()));
    // `create_new` with 0600: a key file another process made meanwhile is read, never replaced.
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut file) => {
            io::Write::write_all(&mut file, format!("{}\n", text.as_str()).as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(|e| SecretError::io("write", path, e))?;
            tracing::info!("created the secret key file `{}`", path.display());
            Ok(key)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let text = Zeroizing::new(
                fs::read_to_string(path).map_err(|e| SecretError::io("read", path, e))?,
            );
            parse_key(&text)
        }
        Err(e) => Err(SecretError::io("create", path, e)),
    }
}

fn key_id(key: &[u8; 32]) -> [u8; KEY_ID_LEN] {
    let digest = Sha256::new()
        .chain_update(b"toolmux secrets key id\0")
        .chain_update(key)
        .finalize();
    let mut id = [0u8; KEY_ID_LEN];
    id.copy_from_slice(&digest[..KEY_ID_LEN]);
    id
}

type Values = BTreeMap<String, SecretValue>;

/// The encrypted file of name → value.
pub struct FileBackend {
    path: PathBuf,
    key: SecretKey,
    /// The key once loaded, so the key file is read once per process.
    loaded: Mutex<Option<Arc<Zeroizing<[u8; 32]>>>>,
}

impl FileBackend {
    /// A backend on `path` with `key`; nothing is read yet.
    pub fn new(path: PathBuf, key: SecretKey) -> Self {
        Self {
            path,
            key,
            loaded: Mutex::new(None),
        }
    }

    fn key(&self, create: bool) -> Result<Option<Arc<Zeroizing<[u8; 32]>>>, SecretError> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = loaded.as_ref() {
            return Ok(Some(key.clone()));
        }
        let key = self.key.load(create)?.map(Arc::new);
        loaded.clone_from(&key);
        Ok(key)
    }

    fn read(&self) -> Result<Values, SecretError> {
        let bytes = match fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Values::new()),
            Err(e) => return Err(SecretError::io("read", &self.path, e)),
        };
        let tampered = |reason: &str| SecretError::Tampered {
            path: self.path.clone(),
            reason: reason.to_string(),
        };
        if bytes.len() < HEADER_LEN + NONCE_LEN + TAG_LEN || !bytes.starts_with(MAGIC) {
            return Err(tampered("not a toolmux secrets file"));
        }
        let key = self.key(false)?.ok_or_else(|| SecretError::WrongKey {
            path: self.path.clone(),
            source_of_key: format!("{}, which does not exist", self.key.describe()),
        })?;
        if bytes[MAGIC.len()..HEADER_LEN] != key_id(&key) {
            return Err(SecretError::WrongKey {
                path: self.path.clone(),
                source_of_key: self.key.describe(),
            });
        }
        let (header, rest) = bytes.split_at(HEADER_LEN);
        let (nonce, sealed) = rest.split_at(NONCE_LEN);
        let cipher = XChaCha20Poly1305::new(key.as_slice().into());
        let plain = Zeroizing::new(
            cipher
                .decrypt(
                    XNonce::from_slice(nonce),
                    Payload {
                        msg: sealed,
                        aad: header,
                    },
                )
                .map_err(|_| tampered("its contents do not authenticate"))?,
        );
        let values: BTreeMap<String, String> = serde_json::from_slice(&plain)
            .map_err(|_| tampered("its contents are not a table of secrets"))?;
        Ok(values
            .into_iter()
            .map(|(k, v)| (k, SecretValue::new(v)))
            .collect())
    }

    fn write(&self, values: &Values) -> Result<(), SecretError> {
        let key = self
            .key(true)?
            .ok_or_else(|| SecretError::Key(format!("cannot create {}", self.key.describe())))?;
        let plain = Zeroizing::new(
            serde_json::to_vec(
                &values
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.expose()))
                    .collect::<BTreeMap<_, _>>(),
            )
            .map_err(|e| SecretError::Key(format!("cannot encode the secrets: {e}")))?,
        );
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&key_id(&key));
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce)
            .map_err(|e| SecretError::Key(format!("no random bytes: {e}")))?;
        let cipher = XChaCha20Poly1305::new(key.as_slice().into());
        let sealed = cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: &plain,
                    aad: &header,
                },
            )
            .map_err(|_| SecretError::Key("encryption failed".into()))?;
        let mut bytes = header;
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);

        let dir = self.path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(|e| SecretError::io("create", dir, e))?;
        let name = self.path.file_name().unwrap_or(OsStr::new("secrets.enc"));
        // The one atomic writer, with 0600 given to the temporary file before a byte is
        // written, so the file is never readable by others, not even for a moment.
        let write = || -> io::Result<()> {
            let handle = Arc::new(fs::File::open(dir)?);
            toolmux_files::stage_in(
                &handle,
                name,
                &bytes,
                Some(0o600),
                toolmux_files::Commit::Replace,
            )?
            .commit()?;
            handle.sync_all()
        };
        write().map_err(|e| SecretError::io("write", &self.path, e))
    }
}

impl Backend for FileBackend {
    fn name(&self) -> &'static str {
        "file"
    }

    fn list(&self) -> Result<Vec<String>, SecretError> {
        Ok(self.read()?.into_keys().collect())
    }

    fn get(&self, name: &str) -> Result<Option<SecretValue>, SecretError> {
        Ok(self.read()?.remove(name))
    }

    fn set(&self, name: &str, value: &SecretValue) -> Result<(), SecretError> {
        let mut values = self.read()?;
        values.insert(name.to_string(), value.clone());
        self.write(&values)
    }

    fn delete(&self, name: &str) -> Result<bool, SecretError> {
        let mut values = self.read()?;
        if values.remove(name).is_none() {
            return Ok(false);
        }
        self.write(&values)?;
        Ok(true)
    }
}
