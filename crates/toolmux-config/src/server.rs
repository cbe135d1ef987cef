//! The `server` section: who may use `toolmux serve` over HTTP.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The HTTP server's access settings. Command-line flags of `toolmux serve` add to these.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `apiKeys`, `allowedHosts` and `allowedOrigins`"
)]
pub struct ServerSettings {
    /// Accepted API keys, as `${VAR}` references (`"${TOOLMUX_API_KEY}"`), never literal
    /// secrets. Requests send one as `Authorization: Bearer <key>` or `X-API-Key: <key>`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_keys: Vec<String>,
    /// `Host` values accepted besides loopback names (`tools.example.com`, `10.0.0.5:7700`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted besides loopback ones (`https://app.example.com`,
    /// `http://intranet:*`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_origins: Vec<String>,
}
