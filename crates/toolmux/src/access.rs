//! Who may use `toolmux serve` over HTTP: what its command line gave, fixed for the server's
//! life, and the configuration's `server` section, which a reload may change. Every request on
//! `/mcp` and `/api` reads the [`LiveOptions`] made from the two.

use toolmux_http::{ApiOptions, LiveOptions};
use toolmux_mcp_server::LOOPBACK_HOSTS;

/// Who may use the HTTP server: what the command line gave, fixed for the server's life, and
/// the live options made from it and the configuration's `server` section, which every request
/// on `/mcp` and `/api` reads.
pub struct Access {
    /// Keys from `--api-key-env`.
    pub env_keys: Vec<String>,
    /// `--allow-host`, and the bound address when it is a specific one beyond loopback.
    pub hosts: Vec<String>,
    /// `--allow-origin`: origins besides the server's own, which is always accepted.
    pub origins: Vec<String>,
    /// The server is reachable from other machines: every request needs a key.
    pub beyond_loopback: bool,
    /// The options in force, which the guard in front of every route reads.
    pub live: LiveOptions,
}

/// Why a `server` section cannot be put in force.
#[derive(Debug)]
pub enum AccessError {
    /// `server.apiKeys[i]` is empty (its variable is unset, most likely).
    EmptyKey(usize),
    /// Beyond loopback, without a key.
    NoKey,
}

impl std::fmt::Display for AccessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AccessError::EmptyKey(i) => write!(
                f,
                "`server.apiKeys[{i}]` is empty (is the variable it refers to set?)"
            ),
            AccessError::NoKey => f.write_str(
                "the server is reachable from other machines and would be left without an API key",
            ),
        }
    }
}

impl Access {
    /// The options for `server`: its keys (expanded when the configuration was read) after the
    /// command line's, loopback names plus the configured and command-line hosts, the
    /// configured and command-line origins, and the admin scopes of `server.auth`'s tokens. An
    /// empty configured key is an error, because dropping it silently would leave the server
    /// open to requests it was meant to refuse.
    pub fn options(&self, config: &toolmux_config::Config) -> Result<ApiOptions, AccessError> {
        let server = &config.server;
        let mut api_keys = self.env_keys.clone();
        for (i, key) in server.api_keys.iter().enumerate() {
            if key.trim().is_empty() {
                return Err(AccessError::EmptyKey(i));
            }
            api_keys.push(key.trim().to_string());
        }
        if self.beyond_loopback && api_keys.is_empty() && server.auth.is_none() {
            return Err(AccessError::NoKey);
        }
        Ok(ApiOptions {
            api_keys,
            require_key_for_reads: self.beyond_loopback,
            allowed_hosts: allow_list(&LOOPBACK_HOSTS, &server.allowed_hosts, &self.hosts),
            // Only what was configured or given: the guard always accepts a request's own
            // origin (scheme, host and port), and no other port of loopback is trusted (D26).
            allowed_origins: allow_list(&[], &server.allowed_origins, &self.origins),
            token_issuer: self.token_issuer(server.auth.as_ref()),
            admin_scopes: server.admin_scopes.clone(),
            principal_keys: (config.principals.iter())
                .flat_map(|(name, p)| p.keys.iter().map(move |key| (name, key)))
                // The loader refused any stored key that is not a hash.
                .filter_map(|(name, key)| {
                    toolmux_config::stored_hash(key).map(|hash| (hash, name.as_str().to_string()))
                })
                .collect(),
            principal_subjects: (config.principals.iter())
                .flat_map(|(name, p)| {
                    p.subjects
                        .iter()
                        .map(move |s| (s.clone(), name.as_str().to_string()))
                })
                .collect(),
        })
    }

    /// The issuer of `server.auth`: the one in force when its settings did not change, so that
    /// an edit of the keys or hosts keeps the issuer's cached signing keys.
    fn token_issuer(
        &self,
        auth: Option<&toolmux_config::ServerAuth>,
    ) -> Option<std::sync::Arc<toolmux_http::TokenIssuer>> {
        let auth = auth?;
        match self.live.current().token_issuer.clone() {
            Some(issuer) if issuer.settings() == auth => Some(issuer),
            _ => Some(std::sync::Arc::new(toolmux_http::TokenIssuer::new(
                auth.clone(),
            ))),
        }
    }
}

/// Loopback names are always allowed (origins are checked exactly instead: the request's own is
/// always allowed); the configuration and the command line can only add to them.
fn allow_list(loopback: &[&str], configured: &[String], given: &[String]) -> Vec<String> {
    loopback
        .iter()
        .map(|name| (*name).to_string())
        .chain(configured.iter().cloned())
        .chain(given.iter().cloned())
        .collect()
}
