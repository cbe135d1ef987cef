//! `mcpServers.<name>.oauth`: how toolmux signs in to an HTTP or SSE server that asks for OAuth.
//!
//! Every key is optional: a server that answers 401 is signed in to with nothing configured
//! (discovery and dynamic client registration). The keys name the client identity in the MCP
//! authorization spec's order of preference — a pre-registered client (`clientId`,
//! `clientSecret`), then a Client ID Metadata Document (`clientMetadataUrl`), then dynamic
//! registration — and the grant. Secrets stay `${VAR}` / `${secret:NAME}` references in the file.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which OAuth grant toolmux uses with a server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OAuthGrant {
    /// A person signs in in a browser (`toolmux mcp login NAME`): authorization code + PKCE.
    #[default]
    AuthorizationCode,
    /// Machine to machine: `clientId` and `clientSecret` are exchanged for a token, no person.
    ClientCredentials,
}

/// The `oauth` object of an HTTP or SSE server entry.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct OAuthSettings {
    /// A client id registered with the server's authorization server beforehand. Preferred
    /// over every other way of identifying toolmux.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The secret of `clientId` (a confidential client); keep it as `${VAR}` or
    /// `${secret:NAME}`. Sent as the authorization server advertises (`client_secret_basic` or
    /// `client_secret_post`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The HTTPS URL of toolmux's Client ID Metadata Document, used as the client id when the
    /// authorization server supports such documents and no `clientId` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for. Default: those the server's 401 names, else those its metadata
    /// lists, else none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// `authorization_code` (default: a person signs in) or `client_credentials`.
    #[serde(skip_serializing_if = "is_default_grant")]
    pub grant: OAuthGrant,
}

fn is_default_grant(grant: &OAuthGrant) -> bool {
    *grant == OAuthGrant::AuthorizationCode
}

// By hand: the secret is expanded while the file is read, and a Debug of the server
// configuration must not print it.
impl fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .finish()
    }
}

impl OAuthSettings {
    /// The mistakes that involve several keys, in words for the entry's error.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.client_secret.is_some() && self.client_id.is_none() {
            return Err("`oauth.clientSecret` needs `oauth.clientId`".to_string());
        }
        if self.grant == OAuthGrant::ClientCredentials
            && (self.client_id.is_none() || self.client_secret.is_none())
        {
            return Err(
                "`oauth.grant: \"client_credentials\"` needs `oauth.clientId` and \
                 `oauth.clientSecret`"
                    .to_string(),
            );
        }
        if let Some(url) = &self.client_metadata_url
            && !url.starts_with("https://")
        {
            return Err(format!(
                "`oauth.clientMetadataUrl` must be an https:// URL, got `{url}`"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::check_config_text;

    fn check(entry: &str) -> Result<crate::Config, String> {
        let text = format!("{{\"mcpServers\": {{\"gh\": {entry}}}}}");
        check_config_text(Path::new("config.json"), &text).map_err(|e| e.to_string())
    }

    #[test]
    fn an_oauth_object_is_read_onto_the_server() {
        let config = check(
            r#"{"url": "https://mcp.example.com/mcp",
                "oauth": {"clientId": "abc", "clientSecret": "s3cret", "scopes": ["read"],
                          "grant": "client_credentials"}}"#,
        )
        .expect("valid");
        let server = config.upstreams.values().next().expect("one server");
        let oauth = server.oauth.clone().expect("oauth");
        assert_eq!(oauth.client_id.as_deref(), Some("abc"));
        assert_eq!(oauth.grant, super::OAuthGrant::ClientCredentials);
        assert!(!format!("{oauth:?}").contains("s3cret"), "{oauth:?}");
    }

    #[test]
    fn oauth_mistakes_name_the_file_and_the_field() {
        let err = check(r#"{"url": "https://x.example/mcp", "oauth": {"clientSecret": "s"}}"#)
            .expect_err("a secret without an id");
        assert!(
            err.contains("config.json") && err.contains("clientId"),
            "{err}"
        );
        let err = check(r#"{"url": "https://x.example/mcp", "oauth": {"clientid": "a"}}"#)
            .expect_err("an unknown key");
        assert!(err.contains("clientid"), "{err}");
        let err = check(r#"{"command": "srv", "oauth": {}}"#).expect_err("stdio");
        assert!(err.contains("`oauth` only applies"), "{err}");
        let err =
            check(r#"{"url": "https://x.example/mcp", "oauth": {"grant": "client_credentials"}}"#)
                .expect_err("client credentials without a secret");
        assert!(err.contains("clientSecret"), "{err}");
    }
}
