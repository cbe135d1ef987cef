//! The web pack's sections: `urlFetch` (caps and the SSRF allowlist of `url_fetch`) and
//! `webSearch` (the search backend of `web_search`).

use std::num::NonZeroU64;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `url_fetch`'s caps, and the addresses it may reach although they are refused by default.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `maxBytes`, `timeoutMs`, `maxRedirects` and `allow`"
)]
pub struct UrlFetchSettings {
    /// The most bytes of a body read (after decompression); a longer body is cut and says so.
    pub max_bytes: NonZeroU64,
    /// How long one fetch may take, redirects and body included, in milliseconds.
    pub timeout_ms: NonZeroU64,
    /// The most redirects followed.
    pub max_redirects: u32,
    /// Hosts (`intranet.example.com`), addresses (`10.0.0.5`) and CIDR networks
    /// (`10.0.0.0/8`) that `url_fetch` may reach although loopback, private, link-local and
    /// cloud metadata addresses are refused by default. Checked against every resolved
    /// address of every hop.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
}

impl Default for UrlFetchSettings {
    fn default() -> Self {
        Self {
            max_bytes: NonZeroU64::new(5 * 1024 * 1024).expect("not zero"),
            timeout_ms: NonZeroU64::new(30_000).expect("not zero"),
            max_redirects: 5,
            allow: Vec::new(),
        }
    }
}

/// Which search service `web_search` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchBackendKind {
    /// A SearXNG instance's JSON API (`/search?format=json`; the instance must enable the
    /// `json` format). `baseUrl` is required.
    Searxng,
    /// The Brave Search API (`apiKey` required).
    Brave,
    /// The Tavily search API (`apiKey` required).
    Tavily,
}

/// The search backend of `web_search`; without one, `web_search` answers with an error that
/// names this setting.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `kind`, `baseUrl`, `apiKey` and `maxResults`"
)]
pub struct WebSearchSettings {
    /// The service: `searxng`, `brave` or `tavily`.
    pub kind: SearchBackendKind,
    /// The service's address (required for SearXNG; Brave and Tavily default to their public
    /// APIs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The API key, as a `${VAR}` reference (`"${BRAVE_API_KEY}"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// How many results a search returns when the caller does not say (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
}
