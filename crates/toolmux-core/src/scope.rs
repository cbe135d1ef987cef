//! What a channel serves: the part of the catalog that calls made through it may reach.

use std::sync::Arc;

use crate::model::ToolDescriptor;
use crate::pattern::{NamePattern, admitted_by};
use crate::rights::Rights;

/// Code mode's tool that runs a script (the one definition; `toolmux-codemode` serves it).
pub const RUN_CODE: &str = "run_code";
/// Code mode's tool that finds tools and returns their declarations.
pub const SEARCH_TOOLS: &str = "search_tools";
/// Code mode's entry points: what a channel in code mode offers in place of the catalog.
pub const CODE_MODE_TOOLS: [&str; 2] = [RUN_CODE, SEARCH_TOOLS];

/// Discovery mode's entry points: what a channel in discovery mode offers in place of a catalog
/// too big to send — find tools, read their schemas, call one by name.
pub const DISCOVERY_TOOLS: [&str; 3] = [SEARCH_TOOLS, DESCRIBE_TOOL, CALL_TOOL];
/// Discovery mode's tool that returns tools' full definitions.
pub const DESCRIBE_TOOL: &str = "describe_tool";
/// Discovery mode's tool that calls a tool by name.
pub const CALL_TOOL: &str = "call_tool";

/// The entry points of a channel in code mode, discovery mode, both (a client may write scripts
/// and call by name) or neither (empty: the channel lists its tools).
pub fn entry_points(code_mode: bool, discovery: bool) -> Vec<String> {
    let mut points: Vec<String> = Vec::new();
    let chosen = [
        (code_mode, &CODE_MODE_TOOLS[..]),
        (discovery, &DISCOVERY_TOOLS[..]),
    ];
    for name in chosen
        .iter()
        .filter(|(on, _)| *on)
        .flat_map(|(_, n)| n.iter())
    {
        if !points.iter().any(|p| p == name) {
            points.push((*name).to_string());
        }
    }
    points
}

/// The tools a channel serves, by registry name and source — `toolmux mcp --tools`,
/// `--exclude`, `--pass-through`, or a named [`Endpoint`](crate::Endpoint)'s filter. It travels with every call in
/// [`CallContext::scope`](crate::CallContext), and the hub refuses a call to a tool outside it,
/// so a code-mode script started on that channel reaches (and `search_tools` and the generated
/// types show) no tool the channel filters out: a filter has one door, not one per channel.
#[derive(Clone, Debug, Default)]
pub struct ToolScope {
    /// When not empty, only tools whose registry name matches one of these are served.
    pub include: Vec<NamePattern>,
    /// Tools whose registry name matches one of these are not served.
    pub exclude: Vec<NamePattern>,
    /// Only tools of this source are served (pass-through mode), under their source's own names.
    pub source: Option<String>,
    /// When not empty, only tools of these sources are served, under their registry names (an
    /// endpoint's `servers`).
    pub sources: Vec<String>,
    /// Tools served whatever the filters above say: the entry points a channel offers in place
    /// of the catalog (code mode's `run_code` and `search_tools`), which reach the rest only
    /// through calls that are themselves checked against this scope.
    pub entry_points: Vec<String>,
    /// Names what narrowed the channel, for the refusal: "this MCP server (filtered out by …)".
    pub served_by: String,
    /// The caller's rights, once principals or roles are configured and the caller is not the
    /// owner: a tool its roles deny is neither listed nor reachable, entry points included,
    /// and one they say `ask` about asks whatever its policy says.
    pub rights: Option<Arc<Rights>>,
}

impl ToolScope {
    /// Whether `--tools` / `--exclude` let this registry name through, entry points aside (a
    /// tool's, or a relayed prompt's or resource's, which have no source of their own here).
    pub fn filters_admit(&self, registry_name: &str) -> bool {
        admitted_by(&self.include, &self.exclude, registry_name)
    }

    /// Whether a call through this scope may reach the tool.
    pub fn admits(&self, tool: &ToolDescriptor) -> bool {
        if !self.rights_admit(&tool.name) {
            return false;
        }
        if self.entry_points.contains(&tool.name) {
            return true;
        }
        self.source_admits(&tool.source) && self.filters_admit(&tool.name)
    }

    /// Whether the caller's rights (if any apply) let it list and call this registry name.
    fn rights_admit(&self, registry_name: &str) -> bool {
        self.rights.as_ref().is_none_or(|r| r.lists(registry_name))
    }

    /// This scope narrowed further to what `rights` grant: the scope of one caller's calls
    /// through the door `door` (an endpoint's name; `""` for none), named by its principal in
    /// refusals. A caller whose roles do not open the door is served nothing through it.
    pub fn for_caller(&self, rights: Arc<Rights>, door: &str) -> Self {
        if !rights.opens(door) {
            let closed = format!(
                "{}, which no role of `{}` opens",
                self.served_by, rights.principal
            );
            return Self {
                rights: Some(rights),
                ..Self::nothing(closed)
            };
        }
        Self {
            served_by: format!(
                "{}, or not granted to `{}` by its roles",
                self.served_by, rights.principal
            ),
            rights: Some(rights),
            ..self.clone()
        }
    }

    /// Whether the pass-through source and the `sources` list let `source` through.
    fn source_admits(&self, source: &str) -> bool {
        self.source.as_ref().is_none_or(|only| only == source)
            && (self.sources.is_empty() || self.sources.iter().any(|s| s == source))
    }

    /// The name a listing through this scope shows the tool under, or `None` when it is not
    /// listed: with entry points (code mode) only they are listed; in pass-through mode a tool
    /// is listed under the name its source gave it ([`ToolDescriptor::local_name`]), whatever
    /// prefix, cleaning or hash suffix the registry added; otherwise under its registry name.
    pub fn served_name<'a>(&self, tool: &'a ToolDescriptor) -> Option<&'a str> {
        if !self.entry_points.is_empty() {
            let listed = self.entry_points.contains(&tool.name) && self.rights_admit(&tool.name);
            return listed.then_some(tool.name.as_str());
        }
        if tool.entry_point || !self.admits(tool) {
            return None;
        }
        Some(if self.source.is_some() {
            tool.local_name()
        } else {
            tool.name.as_str()
        })
    }

    /// A scope that serves nothing at all (an endpoint taken out of the configuration while a
    /// request through it is under way): every name is excluded.
    pub fn nothing(served_by: String) -> Self {
        Self {
            exclude: NamePattern::new("*").into_iter().collect(),
            served_by,
            ..Self::default()
        }
    }

    /// Whether the channel serves an item that is not a tool — a relayed prompt, resource or
    /// template, or a built-in provider's resources (by its read tool's name) — listed by
    /// `source` under this registry name. The filters (`--tools`, `--exclude`) apply by name as
    /// they do to tools, and pass-through to the source; with entry points (code mode) only what
    /// `--tools` names explicitly is served beside them: an item is no entry point, and without
    /// `--tools` none is served.
    pub fn serves_item(&self, source: &str, registry_name: &str) -> bool {
        if !self.source_admits(source) || !self.rights_admit(registry_name) {
            return false;
        }
        let filtered = self.filters_admit(registry_name);
        if self.entry_points.is_empty() {
            return filtered;
        }
        self.entry_points.iter().any(|n| n == registry_name)
            || (!self.include.is_empty() && filtered)
    }

    /// Whether the scope lets everything through.
    pub fn is_unrestricted(&self) -> bool {
        self.include.is_empty()
            && self.exclude.is_empty()
            && self.source.is_none()
            && self.sources.is_empty()
            && self.rights.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(source: &str, name: &str) -> ToolDescriptor {
        ToolDescriptor::new(source, name, "", json!({"type": "object"}))
    }

    fn patterns(list: &[&str]) -> Vec<NamePattern> {
        list.iter()
            .map(|p| NamePattern::new(p).expect("valid pattern"))
            .collect()
    }

    #[test]
    fn filters_and_source_narrow_and_entry_points_always_pass() {
        let scope = ToolScope {
            include: patterns(&["file_*"]),
            exclude: patterns(&["file_search"]),
            source: Some("workspace".into()),
            entry_points: vec!["run_code".into()],
            served_by: "test".into(),
            ..ToolScope::default()
        };
        assert!(scope.admits(&tool("workspace", "file_read")));
        assert!(!scope.admits(&tool("workspace", "file_search")));
        assert!(!scope.admits(&tool("workspace", "grep")));
        assert!(!scope.admits(&tool("other", "file_read")));
        assert!(scope.admits(&tool("code", "run_code")));
        assert!(!scope.is_unrestricted());
        assert!(ToolScope::default().is_unrestricted());
    }

    #[test]
    fn sources_narrow_by_server_under_registry_names_and_nothing_serves_nothing() {
        let scope = ToolScope {
            sources: vec!["github".into(), "docs".into()],
            exclude: patterns(&["github__delete_*"]),
            ..ToolScope::default()
        };
        let mut issue = tool("github", "github__create_issue");
        issue.original_name = "create_issue".into();
        assert_eq!(scope.served_name(&issue), Some("github__create_issue"));
        assert_eq!(
            scope.served_name(&tool("docs", "docs__read")),
            Some("docs__read")
        );
        assert_eq!(
            scope.served_name(&tool("github", "github__delete_repo")),
            None
        );
        assert_eq!(scope.served_name(&tool("workspace", "grep")), None);
        assert!(scope.serves_item("docs", "docs__guide"));
        assert!(!scope.serves_item("workspace", "spec_read"));
        assert!(!scope.is_unrestricted());
        let none = ToolScope::nothing("gone".into());
        assert_eq!(none.served_name(&tool("docs", "docs__read")), None);
        assert!(!none.serves_item("docs", "docs__guide"));
    }

    #[test]
    fn a_scope_serves_by_registry_name_and_server_and_code_mode_only_what_tools_names() {
        let pattern = |p: &str| NamePattern::new(p).expect("valid pattern");
        let filtered = ToolScope {
            include: vec![pattern("github__*")],
            exclude: vec![pattern("github__secret")],
            ..ToolScope::default()
        };
        let pass_through = ToolScope {
            source: Some("github".into()),
            ..ToolScope::default()
        };
        let code_mode = ToolScope {
            entry_points: vec!["run_code".into(), "search_tools".into()],
            ..ToolScope::default()
        };
        let code_mode_with_tools = ToolScope {
            include: vec![pattern("github__review")],
            ..code_mode.clone()
        };
        let cases = [
            (None, "github", "github__anything", true),
            (Some(&filtered), "github", "github__review", true),
            (Some(&filtered), "github", "github__secret", false),
            (Some(&filtered), "gitlab", "gitlab__review", false),
            (Some(&pass_through), "github", "github__review", true),
            (Some(&pass_through), "gitlab", "gitlab__review", false),
            // Code mode serves no relayed item unless `--tools` names it.
            (Some(&code_mode), "github", "github__review", false),
            (
                Some(&code_mode_with_tools),
                "github",
                "github__review",
                true,
            ),
            (
                Some(&code_mode_with_tools),
                "github",
                "github__other",
                false,
            ),
        ];
        for (scope, server, name, served) in cases {
            assert_eq!(
                scope.is_none_or(|s| s.serves_item(server, name)),
                served,
                "{server} {name} {scope:?}"
            );
        }
    }
}
