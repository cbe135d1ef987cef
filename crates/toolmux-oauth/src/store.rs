//! A server's tokens in the project's secret store, as rmcp's `CredentialStore`.

use std::path::Path;

use async_trait::async_trait;
use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use toolmux_secrets::{SecretStore, SecretValue};

use crate::OAuthError;

/// The tokens (and client id) of one server, kept as one JSON secret named
/// `oauth/<server>/credentials`: in the OS keyring or the encrypted file, never in the config.
#[derive(Clone, Debug)]
pub struct SecretCredentialStore {
    store: SecretStore,
    name: String,
}

impl SecretCredentialStore {
    /// The credentials of `server` in the project's secret store.
    pub fn open(project_dir: &Path, server: &str) -> Result<Self, OAuthError> {
        let store = toolmux_secrets::project_store(project_dir).map_err(|e| OAuthError::Store {
            server: server.to_string(),
            message: e.to_string(),
        })?;
        Ok(Self {
            store,
            name: secret_name(server),
        })
    }

    /// Whether tokens are kept for the server.
    pub async fn has_tokens(&self) -> bool {
        matches!(self.load().await, Ok(Some(c)) if c.token_response.is_some())
    }
}

/// The secret holding a server's credentials. Server names may hold characters a secret name
/// may not (and `.` alone is no segment), so every byte outside `[A-Za-z0-9-]` becomes `_XX`;
/// distinct names stay distinct.
fn secret_name(server: &str) -> String {
    let mut encoded = String::new();
    for byte in server.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("_{byte:02X}"));
        }
    }
    format!("oauth/{encoded}/credentials")
}

fn store_error(e: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait]
impl CredentialStore for SecretCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(value) = self
            .store
            .get_async(&self.name)
            .await
            .map_err(store_error)?
        else {
            return Ok(None);
        };
        // A value that no longer parses (an older format) counts as signed out, not as an error
        // that would block signing in again.
        Ok(serde_json::from_str(value.expose()).ok())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let text = serde_json::to_string(&credentials).map_err(store_error)?;
        self.store
            .set_async(&self.name, SecretValue::new(text))
            .await
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store
            .delete_async(&self.name)
            .await
            .map(|_| ())
            .map_err(store_error)
    }

    /// A refresh token the authorization server rejected is forgotten, so the server reads
    /// "needs sign-in" rather than failing each call on the same dead token.
    async fn on_refresh_token_rejected(
        &self,
        _credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        self.clear().await
    }
}

/// Forgets a server's tokens (`toolmux mcp logout`); whether there were any.
pub async fn logout(project_dir: &Path, server: &str) -> Result<bool, OAuthError> {
    let store = SecretCredentialStore::open(project_dir, server)?;
    let had = store.has_tokens().await;
    store.clear().await.map_err(|e| OAuthError::Store {
        server: server.to_string(),
        message: e.to_string(),
    })?;
    // Signed out is "needs sign-in" at once, not only after the next refusal.
    crate::state::record_challenge(project_dir, server, None);
    Ok(had)
}

#[cfg(test)]
mod tests {
    use super::secret_name;

    #[test]
    fn a_server_name_becomes_one_secret_name_segment() {
        assert_eq!(secret_name("github"), "oauth/github/credentials");
        assert_eq!(secret_name("a/b c_"), "oauth/a_2Fb_20c_5F/credentials");
    }
}
