//! `web_search`: one interface over the search services a user may have (`webSearch` in the
//! configuration): a SearXNG instance's JSON API, the Brave Search API, the Tavily API. Each
//! answer becomes the same list of `{title, url, snippet}`.
//!
//! The service is the user's own choice, often a SearXNG on the local network, so this client
//! is not behind `url_fetch`'s guard; it only ever talks to the one configured address.

use std::time::Duration;

use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde::Serialize;
use serde_json::{Value, json};

use crate::WebError;
use crate::fetch::read_capped;

/// The most of a search service's answer read: twenty results with snippets are some tens of
/// kilobytes.
pub const MAX_ANSWER_BYTES: usize = 2 * 1024 * 1024;

/// Which service, where, with which key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchBackend {
    /// SearXNG's `GET {base}/search?q=…&format=json`; results' `content` is the snippet.
    Searxng {
        /// The instance's address.
        base_url: String,
    },
    /// Brave's `GET {base}/res/v1/web/search?q=…&count=N` with `X-Subscription-Token`;
    /// results are in `web.results`, the snippet in `description`.
    Brave {
        /// `https://api.search.brave.com` unless configured.
        base_url: String,
        /// The subscription token.
        api_key: String,
    },
    /// Tavily's `POST {base}/search` with `Authorization: Bearer` and `{query, max_results}`;
    /// the snippet is `content`.
    Tavily {
        /// `https://api.tavily.com` unless configured.
        base_url: String,
        /// The API key.
        api_key: String,
    },
}

impl SearchBackend {
    /// Brave's public API.
    pub const BRAVE_URL: &str = "https://api.search.brave.com";
    /// Tavily's public API.
    pub const TAVILY_URL: &str = "https://api.tavily.com";

    fn name(&self) -> &'static str {
        match self {
            SearchBackend::Searxng { .. } => "SearXNG",
            SearchBackend::Brave { .. } => "Brave Search",
            SearchBackend::Tavily { .. } => "Tavily",
        }
    }
}

/// `web_search`'s backend and defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchSettings {
    /// The service.
    pub backend: SearchBackend,
    /// Results returned when the caller does not ask for a number.
    pub max_results: usize,
    /// The time one search may take.
    pub timeout: Duration,
}

/// One result, whatever the service.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SearchHit {
    /// The page's title.
    pub title: String,
    /// Its address.
    pub url: String,
    /// The service's excerpt.
    pub snippet: String,
}

/// The output schema of `web_search`.
pub(crate) fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "backend": {"type": "string"},
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string"},
                        "url": {"type": "string"},
                        "snippet": {"type": "string"}
                    },
                    "required": ["title", "url", "snippet"]
                }
            }
        },
        "required": ["backend", "results"]
    })
}

/// A client for the configured service.
#[derive(Clone, Debug)]
pub struct Searcher {
    client: reqwest::Client,
    settings: SearchSettings,
}

impl Searcher {
    /// A client for `settings`' service.
    pub fn new(settings: SearchSettings) -> Result<Self, WebError> {
        let client = reqwest::Client::builder()
            .user_agent(concat!("toolmux-web-search/", env!("CARGO_PKG_VERSION")))
            .timeout(settings.timeout)
            .build()
            .map_err(|e| WebError::Client(e.to_string()))?;
        Ok(Self { client, settings })
    }

    /// The service's name, for results and messages.
    pub fn backend_name(&self) -> &'static str {
        self.settings.backend.name()
    }

    /// Searches for `query`, returning at most `count` results (the configured number when
    /// `None`).
    pub async fn search(
        &self,
        query: &str,
        count: Option<usize>,
    ) -> Result<Vec<SearchHit>, WebError> {
        let count = count.unwrap_or(self.settings.max_results).clamp(1, 20);
        let name = self.backend_name();
        let request = match &self.settings.backend {
            SearchBackend::Searxng { base_url } => {
                let mut url = endpoint(base_url, "search")?;
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("format", "json");
                self.client.get(url)
            }
            SearchBackend::Brave { base_url, api_key } => {
                let mut url = endpoint(base_url, "res/v1/web/search")?;
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("count", &count.to_string());
                self.client.get(url).header("X-Subscription-Token", api_key)
            }
            SearchBackend::Tavily { base_url, api_key } => self
                .client
                .post(endpoint(base_url, "search")?)
                .header(AUTHORIZATION, format!("Bearer {api_key}"))
                .header(CONTENT_TYPE, "application/json")
                .body(json!({"query": query, "max_results": count}).to_string()),
        };
        let response = request
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| WebError::Client(format!("{name}: {e}")))?;
        let mut response = response;
        let status = response.status();
        // The service is chosen by the user but answers what it likes (a public SearXNG
        // instance, or one taken over): its answer is read under a cap like any fetched page.
        let (body, truncated) = read_capped(&mut response, MAX_ANSWER_BYTES)
            .await
            .map_err(|e| WebError::Client(format!("{name}: {e}")))?;
        if truncated && status.is_success() {
            return Err(WebError::Client(format!(
                "{name} answered more than {} KiB; refusing to read the rest",
                MAX_ANSWER_BYTES / 1024
            )));
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let text: String = text.chars().take(300).collect();
            return Err(WebError::Client(format!(
                "{name} answered HTTP {status}: {text}"
            )));
        }
        let value: Value = serde_json::from_slice(&body).map_err(|e| {
            WebError::Client(format!("{name} answered something other than JSON: {e}"))
        })?;
        let (list, snippet) = match &self.settings.backend {
            SearchBackend::Searxng { .. } => (value.get("results"), "content"),
            SearchBackend::Brave { .. } => (value.pointer("/web/results"), "description"),
            SearchBackend::Tavily { .. } => (value.get("results"), "content"),
        };
        let text = |item: &Value, key: &str| {
            item.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Ok(list
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter(|item| item.get("url").and_then(Value::as_str).is_some())
            .take(count)
            .map(|item| SearchHit {
                title: text(item, "title"),
                url: text(item, "url"),
                snippet: text(item, snippet),
            })
            .collect())
    }
}

/// `base` joined with `path`, whether or not `base` ends in a slash.
fn endpoint(base: &str, path: &str) -> Result<Url, WebError> {
    let base = format!("{}/", base.trim_end_matches('/'));
    Url::parse(&base)
        .and_then(|b| b.join(path))
        .map_err(|e| WebError::BadUrl(format!("`webSearch.baseUrl` `{base}`: {e}")))
}
