//! The `server` section: who may use `toolmux serve` over HTTP, and how long an idle MCP
//! session is kept.

use std::num::NonZeroU64;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The HTTP server's access settings, and how long an idle MCP session is kept. Command-line
/// flags of `toolmux serve` add to the access settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `apiKeys`, `allowedHosts`, `allowedOrigins`, `auth`, \
                 `adminScopes` and `sessionIdleTimeoutMs`"
)]
pub struct ServerSettings {
    /// Accepted API keys, as `${VAR}` references (`"${TOOLMUX_API_KEY}"`), never literal
    /// secrets. Requests send one as `Authorization: Bearer <key>` or `X-API-Key: <key>`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_keys: Vec<String>,
    /// `Host` values accepted besides loopback names (`tools.example.com`, `10.0.0.5:7700`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted besides the server's own (the scheme, host and port a page
    /// was served from): `https://app.example.com`. `http://intranet:*` takes every port of
    /// a host, so every other server there could drive toolmux: list exact origins.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
    /// How long an MCP session over HTTP (`/mcp`) may sit idle before toolmux closes it, in
    /// milliseconds (default 1800000, 30 minutes). A session is idle while its client has no
    /// request running and no stream open and sends nothing; a client that comes back with a
    /// closed session's id gets `404` and starts a new session. Read when `toolmux serve`
    /// starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_idle_timeout_ms: Option<NonZeroU64>,
    /// Accept OAuth access tokens (JWTs) from an issuer beside the keys: `issuer`, `audience`,
    /// optional `requiredScopes` and `jwksUrl`. toolmux then publishes its protected-resource
    /// metadata (`/.well-known/oauth-protected-resource`), so MCP clients can sign in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<crate::server_auth::ServerAuth>,
    /// Scopes of `auth`'s access tokens that make their holder the owner's equal: internal
    /// tools (secrets, `config_set`), registry and configuration writes (`/api/tools`,
    /// `/api/mcp-servers`, `/api/import`), the execution log, approvals, sessions and the
    /// chat (`["toolmux:admin"]`). A token without one lists and calls tools only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub admin_scopes: Vec<String>,
}

impl ServerSettings {
    /// The configured idle time of an MCP session, if one is set.
    pub fn session_idle_timeout(&self) -> Option<Duration> {
        self.session_idle_timeout_ms
            .map(|ms| Duration::from_millis(ms.get()))
    }

    /// These settings without the ones read only at start: what a reload can change live.
    pub fn access(&self) -> Self {
        Self {
            session_idle_timeout_ms: None,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use crate::{load_with_env, project_config_path, schema};

    /// Loads a project whose file is `text`: the settings, or the error as the user sees it.
    fn load(text: &str) -> Result<super::ServerSettings, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = project_config_path(dir.path());
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
        load_with_env(dir.path(), None, &|_| None)
            .map(|loaded| loaded.config.server)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn session_idle_timeout_is_read_in_milliseconds_and_absent_by_default() {
        let server = load(r#"{"server": {"sessionIdleTimeoutMs": 90000}}"#).expect("loads");
        assert_eq!(server.session_idle_timeout(), Some(Duration::from_secs(90)));
        assert_eq!(load("{}").expect("loads").session_idle_timeout(), None);
    }

    #[test]
    fn session_idle_timeout_must_be_a_whole_number_above_zero() {
        for bad in ["0", "-1", "1.5", "\"30m\""] {
            let text = format!("{{\"server\": {{\"sessionIdleTimeoutMs\": {bad}}}}}");
            let error = load(&text).expect_err(&text);
            assert!(
                error.contains("at `server.sessionIdleTimeoutMs`")
                    && error.contains("greater than 0"),
                "{text}: {error}"
            );
        }
    }

    #[test]
    fn session_idle_timeout_is_in_the_schema_with_its_default() {
        let schema = schema();
        let validator = jsonschema::validator_for(&schema).expect("a valid schema");
        assert!(validator.is_valid(&json!({"server": {"sessionIdleTimeoutMs": 60000}})));
        assert!(!validator.is_valid(&json!({"server": {"sessionIdleTimeoutMs": 0}})));
        let text = schema.to_string();
        assert!(
            text.contains("default 1800000, 30 minutes"),
            "the schema documents the default"
        );
    }

    #[test]
    fn only_the_access_settings_change_live() {
        let mut server = super::ServerSettings {
            api_keys: vec!["${KEY}".into()],
            ..Default::default()
        };
        let before = server.access();
        server.session_idle_timeout_ms = std::num::NonZeroU64::new(1000);
        assert_eq!(server.access(), before);
    }

    #[test]
    fn admin_scopes_are_read_and_in_the_schema() {
        let server = load(r#"{"server": {"adminScopes": ["toolmux:admin"]}}"#).expect("loads");
        assert_eq!(server.admin_scopes, ["toolmux:admin"]);
        assert!(load("{}").expect("loads").admin_scopes.is_empty());
        let error = load(r#"{"server": {"adminScopes": "toolmux:admin"}}"#).expect_err("a list");
        assert!(error.contains("server.adminScopes"), "{error}");
        let validator = jsonschema::validator_for(&schema()).expect("a valid schema");
        assert!(validator.is_valid(&json!({"server": {"adminScopes": ["a"]}})));
        assert!(!validator.is_valid(&json!({"server": {"adminScopes": [1]}})));
    }
}
