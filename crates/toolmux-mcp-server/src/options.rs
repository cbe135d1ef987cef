//! What one MCP server serves and to whom: name filters, the pass-through mode, and the HTTP
//! security settings.

use std::sync::Arc;
use std::time::Duration;

use toolmux_core::{BuiltinResources, NamePattern, ToolDescriptor, ToolScope};
use toolmux_upstream::Upstreams;

use crate::sessions::LiveSessions;

/// How an MCP server built on a hub behaves. The same options serve stdio and HTTP; the HTTP-only
/// fields are ignored on stdio.
#[derive(Clone, Default)]
pub struct ServeOptions {
    /// When not empty, only tools whose registry name matches one of these are served
    /// (`--tools`).
    pub include: Vec<NamePattern>,
    /// Tools whose registry name matches one of these are not served (`--exclude`).
    pub exclude: Vec<NamePattern>,
    /// Serve only the tools of this source, under the names the source itself uses: a tool
    /// registered as `<source>__x` is served as `x`. Lets toolmux stand in for one upstream
    /// server while its policies, validation and log still apply.
    pub pass_through: Option<String>,
    /// When not empty, only these tools are served (`--code-mode`: `run_code` and
    /// `search_tools`), whatever the filters say; the calls they make on the client's behalf
    /// still reach only what the filters let through (see [`ServeOptions::scope`]).
    pub entry_points: Vec<String>,
    /// Serve the named endpoint (`endpoints.<name>` in configuration) in place of the filters
    /// above: its view, read from each catalog, so it follows configuration changes.
    pub endpoint: Option<String>,
    /// `Host` header values accepted over HTTP besides the loopback names (`localhost`,
    /// `127.0.0.1`, `::1`); an entry may carry a port (`example.com:8080`). Protects against DNS
    /// rebinding.
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted over HTTP besides loopback ones (`https://app.example.com:443`,
    /// `http://intranet:*`). Requests without an `Origin` header (non-browser clients) pass.
    pub allowed_origins: Vec<String>,
    /// Bearer tokens accepted over HTTP. Empty means no token is asked for; `toolmux serve`
    /// refuses to bind beyond loopback without one.
    pub api_keys: Vec<String>,
    /// The caller checks Host, Origin and keys in a middleware in front of the HTTP router, from
    /// settings that change while it runs (`toolmux serve` does, with
    /// `toolmux_http::mcp_guarded`); the router then makes none of these checks itself and
    /// ignores `allowed_hosts`, `allowed_origins` and `api_keys`. Never set it without that
    /// middleware: the endpoint would be open to DNS rebinding.
    pub guarded_in_front: bool,
    /// The upstream MCP servers whose prompts, resources, resource templates and completions
    /// are relayed (their tools come through the hub). Without them, the server offers tools
    /// only.
    pub upstreams: Option<Arc<Upstreams>>,
    /// toolmux's own resources (the spec pack's `spec://…`), served beside the relayed ones
    /// where the filters serve the tool that reads them (never in pass-through mode for
    /// another source), with `list_changed` and `updated` when their files change.
    pub resources: BuiltinResources,
    /// How long an HTTP session may sit idle — no request in flight, no stream open, nothing
    /// from its client — before it is closed; `None` is
    /// [`DEFAULT_SESSION_IDLE_TIMEOUT`](crate::DEFAULT_SESSION_IDLE_TIMEOUT).
    pub session_idle_timeout: Option<Duration>,
    /// Counts the sessions alive on servers built with these options (clones share it): what
    /// the expiry tests and the HTTP bench observe (not yet on `/metrics`).
    pub live_sessions: LiveSessions,
    /// The process's queue of everything waiting on a person (`toolmux serve`'s, answered
    /// through the REST API): when set, clients' approvals and questions wait there too, so a
    /// person can answer them out of band.
    pub people: Option<Arc<toolmux_core::ApprovalQueue>>,
}

impl std::fmt::Debug for ServeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeOptions")
            .field("include", &self.include)
            .field("exclude", &self.exclude)
            .field("pass_through", &self.pass_through)
            .field("entry_points", &self.entry_points)
            .field("endpoint", &self.endpoint)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("api_keys", &format_args!("{} keys", self.api_keys.len()))
            .field("guarded_in_front", &self.guarded_in_front)
            .field("relays_upstreams", &self.upstreams.is_some())
            .field("resources", &self.resources)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("live_sessions", &self.live_sessions.count())
            .finish()
    }
}

/// The loopback names every HTTP server accepts in `Host`.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

impl ServeOptions {
    /// The name a tool is served under, or `None` when these options do not serve it. Filters
    /// match registry names; in pass-through mode the tool is served under the name its source
    /// gave it (`original_name`), whatever prefix, cleaning or hash suffix the registry added.
    pub fn exposed_name<'a>(&self, tool: &'a ToolDescriptor) -> Option<&'a str> {
        self.scope().served_name(tool)
    }

    /// What every call made through this server may reach, a code-mode script's included: the
    /// filters, the pass-through source, and the entry points themselves. The hub enforces it,
    /// so a tool filtered out here has no second door.
    pub fn scope(&self) -> ToolScope {
        ToolScope {
            include: self.include.clone(),
            exclude: self.exclude.clone(),
            source: self.pass_through.clone(),
            sources: Vec::new(),
            entry_points: self.entry_points.clone(),
            served_by: "this MCP server (filtered out by --tools, --exclude or --pass-through)"
                .to_string(),
            rights: None,
        }
    }

    /// The `Host` values accepted over HTTP: loopback plus the configured ones.
    pub fn effective_allowed_hosts(&self) -> Vec<String> {
        LOOPBACK_HOSTS
            .iter()
            .map(|h| (*h).to_string())
            .chain(self.allowed_hosts.iter().cloned())
            .collect()
    }

    /// The `Origin` values accepted over HTTP besides a request's own origin (the scheme,
    /// host and port it was sent to, which the guard always accepts): the configured ones. No
    /// other loopback origin is a default, since another port is another origin (D26).
    pub fn effective_allowed_origins(&self) -> Vec<String> {
        self.allowed_origins.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patterns(list: &[&str]) -> Vec<NamePattern> {
        list.iter()
            .map(|p| NamePattern::new(p).expect("valid pattern"))
            .collect()
    }

    /// A tool as an upstream source registers it: `registry` in the catalog, `original` upstream.
    fn tool(source: &str, registry: &str, original: &str) -> ToolDescriptor {
        let mut tool = ToolDescriptor::new(source, registry, "", json!({"type": "object"}));
        tool.original_name = original.to_string();
        tool
    }

    #[test]
    fn everything_is_served_under_its_registry_name_by_default() {
        let options = ServeOptions::default();
        let grep = tool("workspace", "grep", "grep");
        assert_eq!(options.exposed_name(&grep), Some("grep"));
        let issue = tool("github", "github__create_issue", "create_issue");
        assert_eq!(options.exposed_name(&issue), Some("github__create_issue"));
    }

    #[test]
    fn include_and_exclude_patterns_filter_registry_names() {
        let options = ServeOptions {
            include: patterns(&["github__*", "grep"]),
            exclude: patterns(&["github__delete_*"]),
            ..ServeOptions::default()
        };
        let grep = tool("workspace", "grep", "grep");
        assert_eq!(options.exposed_name(&grep), Some("grep"));
        assert_eq!(
            options.exposed_name(&tool("workspace", "file_read", "file_read")),
            None
        );
        let list = tool("github", "github__list", "list");
        assert_eq!(options.exposed_name(&list), Some("github__list"));
        let delete = tool("github", "github__delete_repo", "delete_repo");
        assert_eq!(options.exposed_name(&delete), None);
    }

    #[test]
    fn pass_through_serves_one_source_under_its_own_names() {
        let options = ServeOptions {
            pass_through: Some("github".into()),
            ..ServeOptions::default()
        };
        let issue = tool("github", "github__create_issue", "create_issue");
        assert_eq!(options.exposed_name(&issue), Some("create_issue"));
        assert_eq!(
            options.exposed_name(&tool("workspace", "grep", "grep")),
            None
        );
        // A configured prefix (`gh`) or a cleaned, hash-suffixed registry name does not matter:
        // the source's own name is served.
        let prefixed = tool("github", "gh__create_issue", "create_issue");
        assert_eq!(options.exposed_name(&prefixed), Some("create_issue"));
        let cleaned = tool("github", "github__get_file_3f2a9c1d", "get file");
        assert_eq!(options.exposed_name(&cleaned), Some("get file"));
    }

    #[test]
    fn filters_apply_to_registry_names_in_pass_through_mode() {
        let options = ServeOptions {
            pass_through: Some("github".into()),
            exclude: patterns(&["github__delete_*"]),
            ..ServeOptions::default()
        };
        let delete = tool("github", "github__delete_repo", "delete_repo");
        assert_eq!(options.exposed_name(&delete), None);
        assert_eq!(
            options.exposed_name(&tool("github", "github__list", "list")),
            Some("list")
        );
    }
}
