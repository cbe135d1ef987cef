//! The manager a connection to a server signs its requests with.

use rmcp::transport::auth::{AuthorizationManager, CredentialStore, OAuthClientConfig};

use crate::store::SecretCredentialStore;
use crate::{OAuthError, OAuthGrant, Target, login};

/// The OAuth manager for one connection to `target`: the tokens kept for it (refreshed before
/// they expire and once on a 401, by rmcp's `AuthClient`), or none, so that requests go out
/// without a token and a 401 says the server needs sign-in. With `grant: "client_credentials"`
/// a missing or expired token is fetched here, since no person is needed for it.
///
/// Only a server whose tokens are kept is asked for its metadata, so a connection to a server
/// that never asked for sign-in costs no extra request.
pub async fn connection_manager(target: &Target) -> Result<AuthorizationManager, OAuthError> {
    let flow_error = |e| OAuthError::flow(&target.server, e);
    let store = SecretCredentialStore::open(&target.project_dir, &target.server)?;
    let mut manager = AuthorizationManager::new(target.url.as_str())
        .await
        .map_err(flow_error)?;
    manager.set_credential_store(store.clone());
    let settings = &target.settings;
    if settings.grant == OAuthGrant::ClientCredentials {
        let resolution = manager.resolve_metadata().await.map_err(flow_error)?;
        manager.set_metadata(resolution.metadata);
        if manager.get_access_token().await.is_err() {
            login::client_credentials(&mut manager, target).await?;
        }
        return Ok(manager);
    }
    let Ok(Some(stored)) = store.load().await else {
        return Ok(manager);
    };
    if stored.token_response.is_none() {
        return Ok(manager);
    }
    if let Err(e) = manager.initialize_from_store().await {
        // The token is still sent; only refreshing it needs the metadata.
        let error = crate::printable(&e.to_string(), crate::MAX_ERROR_CHARS);
        tracing::warn!(server = %target.server, %error, "cannot reach the authorization server's metadata; the stored token is used as it is");
        return Ok(manager);
    }
    // rmcp restores the client id alone; a confidential client's refresh needs its secret too.
    if let (Some(id), Some(secret)) = (&settings.client_id, &settings.client_secret)
        && *id == stored.client_id
    {
        // The redirect URI is not used by a refresh; the client needs one all the same.
        let config = OAuthClientConfig::new(id.clone(), "http://127.0.0.1/callback")
            .with_client_secret(secret.clone());
        manager.configure_client(config).map_err(flow_error)?;
    }
    Ok(manager)
}
