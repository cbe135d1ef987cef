//! Named endpoints: filtered views of the one registry, each served at a door of its own
//! (`/mcp/<name>`, `?endpoint=<name>`, `toolmux mcp --endpoint <name>`).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::pattern::NamePattern;
use crate::scope::{CODE_MODE_TOOLS, ToolScope};

/// One named endpoint (`endpoints.<name>` in configuration): the part of the registry its
/// clients see and may call, what they are told about it, and whether it offers code mode.
/// An endpoint is a view of the one catalog: the same sources (and upstream processes) serve
/// every endpoint, and its [`scope`](Endpoint::scope) travels with every call made through it,
/// so the hub refuses a tool outside it on every channel, code mode's scripts included.
///
/// Who may use an endpoint is not its business: callers' rights are decided apart from it, so
/// that they can be added without changing what an endpoint is.
#[derive(Debug)]
pub struct Endpoint {
    /// Its name, the last segment of its URL.
    pub name: String,
    /// What calls through it may reach and what it lists.
    pub scope: Arc<ToolScope>,
    /// What its clients are told in `initialize`, in place of toolmux's own summary.
    pub instructions: Option<String>,
}

/// The configured endpoints by name.
pub type Endpoints = BTreeMap<String, Arc<Endpoint>>;

/// What an endpoint serves, as configuration states it.
#[derive(Clone, Debug, Default)]
pub struct EndpointFilter {
    /// When not empty, only tools (and prompts and resources) whose registry name matches one
    /// of these are served.
    pub tools: Vec<NamePattern>,
    /// What is not served, by registry name.
    pub exclude: Vec<NamePattern>,
    /// When not empty, only these sources' tools are served.
    pub servers: Vec<String>,
    /// Offer only code mode's `run_code` and `search_tools`, whose scripts reach the rest.
    pub code_mode: bool,
    /// Offer only discovery mode's `search_tools`, `describe_tool` and `call_tool`, which
    /// reach the rest.
    pub discovery: bool,
}

impl Endpoint {
    /// The endpoint `name` serving what `filter` lets through.
    pub fn new(name: &str, filter: EndpointFilter, instructions: Option<String>) -> Self {
        let scope = ToolScope {
            include: filter.tools,
            exclude: filter.exclude,
            source: None,
            sources: filter.servers,
            entry_points: crate::scope::entry_points(filter.code_mode, filter.discovery),
            served_by: format!("the endpoint `{name}`"),
            rights: None,
        };
        Self {
            name: name.to_string(),
            scope: Arc::new(scope),
            instructions,
        }
    }

    /// Whether it offers code mode's entry points in place of its tools.
    pub fn code_mode(&self) -> bool {
        CODE_MODE_TOOLS
            .iter()
            .all(|t| self.scope.entry_points.iter().any(|p| p == t))
    }
}

/// The most endpoint names an "unknown endpoint" message lists.
const NAMES_LISTED: usize = 20;

/// The longest part of an unknown name an error repeats: a name comes from a URL or a command
/// line, and an error is no place to echo a megabyte.
const NAME_SHOWN: usize = 100;

/// Why `name` names no endpoint, with the configured ones (the first few, when there are many),
/// in the words every door uses.
pub fn unknown_endpoint(name: &str, endpoints: &Endpoints) -> String {
    let shown: String = name.chars().take(NAME_SHOWN).collect();
    let shown = if shown.len() < name.len() {
        format!("{}…", shown.escape_debug())
    } else {
        shown.escape_debug().to_string()
    };
    if endpoints.is_empty() {
        return format!(
            "there is no endpoint `{shown}`: no endpoints are configured (`endpoints` in the \
             configuration)"
        );
    }
    let mut names: Vec<&str> = endpoints
        .keys()
        .take(NAMES_LISTED)
        .map(String::as_str)
        .collect();
    let more = endpoints.len().saturating_sub(NAMES_LISTED);
    let more = if more > 0 {
        names.push("");
        format!("and {more} more")
    } else {
        String::new()
    };
    let listed = names.join(", ");
    format!("there is no endpoint `{shown}`; the configured endpoints are: {listed}{more}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints(names: impl IntoIterator<Item = String>) -> Endpoints {
        names
            .into_iter()
            .map(|n| {
                let endpoint = Endpoint::new(&n, EndpointFilter::default(), None);
                (n, Arc::new(endpoint))
            })
            .collect()
    }

    #[test]
    fn an_unknown_name_is_told_with_the_configured_ones_and_never_echoed_whole() {
        let two = endpoints(["ops".to_string(), "review".to_string()]);
        assert_eq!(
            unknown_endpoint("nope", &two),
            "there is no endpoint `nope`; the configured endpoints are: ops, review"
        );
        assert_eq!(
            unknown_endpoint("nope", &Endpoints::new()),
            "there is no endpoint `nope`: no endpoints are configured (`endpoints` in the \
             configuration)"
        );
        let many = endpoints((0..25).map(|i| format!("e{i:02}")));
        let listed: Vec<String> = (0..20).map(|i| format!("e{i:02}")).collect();
        assert_eq!(
            unknown_endpoint("x\n", &many),
            format!(
                "there is no endpoint `x\\n`; the configured endpoints are: {}, and 5 more",
                listed.join(", ")
            )
        );
        let huge = "a".repeat(10_000);
        assert_eq!(
            unknown_endpoint(&huge, &two),
            format!(
                "there is no endpoint `{}…`; the configured endpoints are: ops, review",
                "a".repeat(100)
            )
        );
    }

    #[test]
    fn code_mode_offers_the_entry_points_and_names_the_endpoint_in_refusals() {
        let filter = EndpointFilter {
            code_mode: true,
            ..EndpointFilter::default()
        };
        let endpoint = Endpoint::new("agents", filter, Some("Use run_code.".into()));
        assert!(endpoint.code_mode());
        assert_eq!(endpoint.scope.entry_points, ["run_code", "search_tools"]);
        let discovery = Endpoint::new(
            "huge",
            EndpointFilter {
                discovery: true,
                ..EndpointFilter::default()
            },
            None,
        );
        assert!(!discovery.code_mode());
        assert_eq!(
            discovery.scope.entry_points,
            ["search_tools", "describe_tool", "call_tool"]
        );
        let both = crate::scope::entry_points(true, true);
        assert_eq!(
            both,
            ["run_code", "search_tools", "describe_tool", "call_tool"]
        );
        assert_eq!(endpoint.scope.served_by, "the endpoint `agents`");
    }
}
