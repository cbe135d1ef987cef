//! The built-in `web` pack: `url_fetch`, which reads one web page for a model, and
//! `web_search`, which asks the search service the user configured (`webSearch`).
//!
//! Reading the web is how a hostile prompt most easily reaches an agent, and a fetch tool is
//! how such a prompt would reach the machine's own network. So:
//!
//! - every address the client would connect to — the URL's, each redirect target's, after
//!   DNS — is checked by the guard ([`guard`]): loopback, private, link-local, shared (CGNAT),
//!   multicast, unspecified, documentation and benchmarking, cloud metadata addresses and
//!   every address of this machine's own interfaces are refused unless `urlFetch.allow`
//!   names them;
//! - a body is read under a byte cap (decompressed bytes, so a gzip bomb is cut too) and the
//!   whole fetch, redirects, body and rendering included, under a time cap, so a slow-loris
//!   server costs at most that; redirects are limited;
//! - HTML is measured before readability and htmd see it ([`html`]): a page too large, too
//!   deep or with too many elements becomes plain text, so no page can overflow a stack or
//!   keep a core busy after its caller has gone;
//! - only `GET`, only http and https.
//!
//! The tool is annotated read-only and open-world, so policy allows it by default like the
//! other reads (the "reads allow"); a project that wants a person to see every URL
//! first sets `"policies": {"tools": {"url_fetch": "ask"}}`. What the guard does not defend:
//! a page's text steering the model (that is the chat's and the user's concern: the result
//! names the URL it came from), and data sent out in a URL's query to a public host.

pub mod fetch;
pub mod guard;
pub mod html;
pub mod search;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolmux_core::{
    Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor, ToolResult,
    input_schema, parse_arguments,
};

pub use fetch::{Fetched, Fetcher, html_to_markdown};
pub use guard::{Allowlist, Refused, own_addresses, refused_kind};
pub use html::{Rendered, render_html};
pub use search::{SearchBackend, SearchHit, SearchSettings, Searcher};

/// The id of the pack's source in the registry.
pub const SOURCE_ID: &str = "web";

/// The name of the fetch tool (code mode's `fetch` calls it by this name).
pub const URL_FETCH: &str = "url_fetch";

/// The name of the search tool.
pub const WEB_SEARCH: &str = "web_search";

/// The caps and the allowlist of `url_fetch` (`urlFetch` in the configuration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchSettings {
    /// The most body bytes read (after decompression); a longer body is cut and says so.
    pub max_bytes: usize,
    /// The time one fetch may take, redirects and body included.
    pub timeout: Duration,
    /// The most redirects followed.
    pub max_redirects: usize,
    /// Hosts, addresses and CIDR networks let through although refused by default.
    pub allow: Vec<String>,
}

/// The configuration's `urlFetch` section as the fetcher takes it; its defaults are the
/// section's, so they live in one place.
impl From<&toolmux_config::UrlFetchSettings> for FetchSettings {
    fn from(section: &toolmux_config::UrlFetchSettings) -> Self {
        Self {
            max_bytes: usize::try_from(section.max_bytes.get()).unwrap_or(usize::MAX),
            timeout: Duration::from_millis(section.timeout_ms.get()),
            max_redirects: usize::try_from(section.max_redirects).unwrap_or(usize::MAX),
            allow: section.allow.clone(),
        }
    }
}

impl Default for FetchSettings {
    fn default() -> Self {
        Self::from(&toolmux_config::UrlFetchSettings::default())
    }
}

/// Why a fetch failed (or the pack could not be made).
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The guard refused an address, a scheme, or one redirect too many.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// The URL does not parse.
    #[error("not a URL: {0}")]
    BadUrl(String),
    /// The time cap passed.
    #[error("timed out after {}s (`urlFetch.timeoutMs`)", .0.as_secs_f64())]
    TimedOut(Duration),
    /// An entry of `urlFetch.allow` is neither a host name, an address nor a network.
    #[error(
        "`urlFetch.allow`: `{0}` is not a host name, an IP address or a CIDR network \
         (`10.0.0.0/8`)"
    )]
    Allowlist(String),
    /// The HTTP client failed (connection refused, TLS, a broken body).
    #[error("{0}")]
    Client(String),
    /// Turning a page into text failed (its thread could not start or stopped).
    #[error("rendering the page: {0}")]
    Render(String),
}

/// The `web` source. Cheap to clone.
#[derive(Clone, Debug)]
pub struct WebPack {
    fetcher: Fetcher,
    /// The configured search service; `web_search` is listed without one and says which
    /// setting is missing, so a model (and a person reading `tools list`) learns it exists.
    searcher: Option<Searcher>,
    tools: Arc<Vec<ToolDescriptor>>,
}

impl WebPack {
    /// The pack with these caps; fails on an allowlist entry it cannot read.
    pub fn new(settings: FetchSettings, search: Option<SearchSettings>) -> Result<Self, WebError> {
        let tools = vec![
            url_fetch_descriptor(&settings),
            web_search_descriptor(search.as_ref()),
        ];
        Ok(Self {
            fetcher: Fetcher::new(settings)?,
            searcher: search.map(Searcher::new).transpose()?,
            tools: Arc::new(tools),
        })
    }

    async fn url_fetch(&self, arguments: &serde_json::Map<String, Value>) -> ToolResult {
        let FetchArgs { url, max_bytes } = match parse_arguments(arguments) {
            Ok(args) => args,
            Err(e) => return ToolResult::error(e),
        };
        let url = url.as_str();
        let max_bytes = max_bytes.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        match self.fetcher.fetch(url, max_bytes).await {
            Ok(fetched) => {
                let text = summary(&fetched);
                match serde_json::to_value(&fetched) {
                    Ok(value) => ToolResult::structured_with_text(value, text),
                    Err(e) => ToolResult::error(format!("cannot encode the result: {e}")),
                }
            }
            Err(e) => ToolResult::error(format!("url_fetch {url}: {e}")),
        }
    }
}

impl WebPack {
    async fn web_search(&self, arguments: &serde_json::Map<String, Value>) -> ToolResult {
        let Some(searcher) = &self.searcher else {
            return ToolResult::error(
                "web_search has no search service: set `webSearch` in .toolmux/config.json \
                 (`{\"webSearch\": {\"kind\": \"searxng\", \"baseUrl\": \"http://localhost:8888\"}}`, \
                 or `\"kind\": \"brave\"` / `\"tavily\"` with `\"apiKey\": \"${VAR}\"`)",
            );
        };
        let SearchArgs { query, count } = match parse_arguments(arguments) {
            Ok(args) => args,
            Err(e) => return ToolResult::error(e),
        };
        let count = count.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        match searcher.search(&query, count).await {
            Ok(hits) => {
                let mut text = String::new();
                for (i, hit) in hits.iter().enumerate() {
                    text.push_str(&format!(
                        "{}. {}\n   {}\n   {}\n",
                        i + 1,
                        hit.title,
                        hit.url,
                        hit.snippet
                    ));
                }
                if hits.is_empty() {
                    text.push_str("no results");
                }
                let value = json!({"backend": searcher.backend_name(), "results": hits});
                ToolResult::structured_with_text(value, text.trim_end().to_string())
            }
            Err(e) => ToolResult::error(format!("web_search: {e}")),
        }
    }
}

/// The text a model reads: where it came from, and the content.
fn summary(fetched: &Fetched) -> String {
    let mut head = format!("{} (HTTP {}", fetched.url, fetched.status);
    if let Some(media) = &fetched.content_type {
        head.push_str(&format!(", {media}"));
    }
    head.push(')');
    if let Some(title) = &fetched.title {
        head.push_str(&format!("\n# {title}"));
    }
    let mut text = format!("{head}\n\n{}", fetched.content);
    if let Some(note) = &fetched.note {
        text.push_str(&format!("\n\n[plain text, not Markdown: {note}]"));
    }
    if fetched.truncated {
        text.push_str(&format!(
            "\n\n[cut: the body is longer than {} bytes (`maxBytes`, `urlFetch.maxBytes`)]",
            fetched.bytes
        ));
    }
    text
}

/// `url_fetch`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FetchArgs {
    /// The http or https URL to fetch.
    #[schemars(regex(pattern = "^[Hh][Tt][Tt][Pp][Ss]?://"))]
    url: String,
    /// Read at most this many bytes of the body (never more than the configured cap).
    #[schemars(range(min = 1))]
    max_bytes: Option<u64>,
}

/// `web_search`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// What to search for.
    #[schemars(length(min = 1))]
    query: String,
    /// How many results (default from `webSearch.maxResults`, else 5).
    #[schemars(range(min = 1, max = 20))]
    count: Option<u64>,
}

fn url_fetch_descriptor(settings: &FetchSettings) -> ToolDescriptor {
    let mut d = ToolDescriptor::new(
        SOURCE_ID,
        URL_FETCH,
        format!(
            "Fetches a web page (http or https, GET) and returns its main content as Markdown; \
             JSON and text come back as they are, other types are described (type and size). \
             At most {} bytes are read (longer bodies are cut and say so) within {} s. \
             Loopback, private, link-local, cloud metadata and this machine's own addresses \
             are refused.",
            settings.max_bytes,
            settings.timeout.as_secs()
        ),
        input_schema::<FetchArgs>(),
    );
    d.title = Some("Fetch a URL".to_string());
    d.annotations = ToolAnnotations {
        open_world_hint: Some(true),
        ..ToolAnnotations::read_only()
    };
    d.parallel = true;
    d.output_schema = Some(Arc::new(fetch::output_schema()));
    d
}

fn web_search_descriptor(search: Option<&SearchSettings>) -> ToolDescriptor {
    let service = match search.map(|s| &s.backend) {
        Some(SearchBackend::Searxng { .. }) => "a SearXNG instance",
        Some(SearchBackend::Brave { .. }) => "the Brave Search API",
        Some(SearchBackend::Tavily { .. }) => "the Tavily API",
        None => "the search service set in `webSearch` (none is set yet)",
    };
    let mut d = ToolDescriptor::new(
        SOURCE_ID,
        WEB_SEARCH,
        format!(
            "Searches the web through {service} and returns results as title, URL and snippet. \
             Read a result with url_fetch."
        ),
        input_schema::<SearchArgs>(),
    );
    d.title = Some("Search the web".to_string());
    d.annotations = ToolAnnotations {
        open_world_hint: Some(true),
        // A search engine's answer changes from one call to the next.
        idempotent_hint: Some(false),
        ..ToolAnnotations::read_only()
    };
    d.parallel = true;
    d.output_schema = Some(Arc::new(search::output_schema()));
    d
}

#[async_trait]
impl Source for WebPack {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some("Searches the web and reads web pages.".to_string())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.tools.as_ref().clone()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        match call.tool.original_name.as_str() {
            URL_FETCH => Ok(self.url_fetch(&call.arguments).await),
            WEB_SEARCH => Ok(self.web_search(&call.arguments).await),
            other => Err(SourceError::Failed(format!(
                "the web pack has no tool `{other}`"
            ))),
        }
    }
}
