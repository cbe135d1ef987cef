//! The shape of `.toolmux/config.json`: one struct per section, every key camelCase, every
//! unknown key an error. Doc comments here become the descriptions in the published schema.
//!
//! Adding a section is adding one field to [`Config`] (with `#[serde(default)]` and a doc
//! comment); loading, merging, `${VAR}` expansion and the schema follow by themselves.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::num::{NonZeroU32, NonZeroU64};
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolmux_core::{
    ArgumentOverride, DerivedTool, DescriptionChange, Filters, HubSettings, Policy, PolicyRules,
    Presentation, RateLimit, ToolAnnotations, ToolOverride,
};

use crate::fields::{Period, ToolName, ToolPattern};
use crate::upstream::{ServerName, UpstreamServer};

/// toolmux configuration: `.toolmux/config.json` in a project, merged over the user's
/// `~/.config/toolmux/config.json`. Strings may use `${VAR}` and `${VAR:-default}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a configuration object"
)]
pub struct Config {
    /// The JSON Schema of this file, for editors; toolmux ignores it.
    #[serde(rename = "$schema", skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The project root that tools work in, relative to the directory that holds `.toolmux/`
    /// (default: that directory). It must exist and be a directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<PathBuf>,
    /// Time limits that apply when a tool sets none.
    pub defaults: Defaults,
    /// Which calls run without asking, which ask a person first, and which never run.
    pub policies: Policies,
    /// Settings for single tools, by the exact registry name their source gives them (`grep`,
    /// `github__create_issue`): limits, and how the tool presents itself to every channel
    /// (`name`, `title`, `description`, `annotations`, `arguments`).
    pub tool_settings: BTreeMap<ToolName, ToolSettings>,
    /// Tools defined as another tool plus fixed arguments, by their own registry name:
    /// `"get_open_bugs": {"from": "tracker__search", "description": "Open bugs.",
    /// "arguments": {"state": "open"}}`. The fixed arguments are injected on every call and left
    /// out of the schema callers see.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub derived_tools: BTreeMap<ToolName, DerivedToolSettings>,
    /// Which tools are available at all, by name pattern.
    pub filters: FilterSettings,
    /// Named endpoints, each a view of the one registry served at `/mcp/<name>` (and through
    /// `?endpoint=<name>` on the REST API, `toolmux mcp --endpoint <name>` on stdio): the
    /// tools, prompts and resources it serves (by `tools` pattern, `exclude` and `servers`),
    /// its own `instructions`, and `codeMode`. Every endpoint shares the one set of upstream
    /// servers; a change applies while `toolmux serve` runs.
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::endpoints::bounded"
    )]
    #[schemars(schema_with = "crate::endpoints::schema")]
    pub endpoints: BTreeMap<crate::endpoints::EndpointName, crate::endpoints::EndpointSettings>,
    /// Settings for whole sources (`workspace`, an MCP server's name), by source id.
    pub sources: BTreeMap<String, SourceSettings>,
    /// Limits of the built-in workspace tools (file reading and search).
    pub workspace: WorkspaceLimits,
    /// The execution log.
    pub logs: LogSettings,
    /// The upstream servers: external MCP servers whose tools join the registry as
    /// `NAME__tool`, in the shape Claude
    /// Code, Cursor and Claude Desktop use: `command`, `args`, `env`, `cwd` for a local (stdio)
    /// server; `url` and `headers` for a streamable-HTTP one; `"type": "sse"` and `url` for a
    /// legacy SSE one; plus toolmux's own per-server settings. A list of servers that each
    /// carry a `name` is accepted too.
    #[serde(
        rename = "mcpServers",
        deserialize_with = "crate::server_list::object_or_list"
    )]
    #[schemars(schema_with = "crate::server_list::schema")]
    pub upstreams: BTreeMap<ServerName, UpstreamServer>,
    /// LLM APIs toolmux's own chat can use, by name: `kind` (`openai`, `anthropic`, `gemini`),
    /// `baseUrl`, `apiKey` (as a `${VAR}` reference) and `defaultModel`.
    pub providers: crate::providers::Providers,
    /// How toolmux's own chat behaves: default provider, step limit, tool-result size cap.
    pub chat: crate::providers::ChatSettings,
    /// Who may use `toolmux serve` over HTTP: API keys (as `${VAR}` references) and the Host
    /// and Origin values accepted besides loopback.
    pub server: crate::server::ServerSettings,
    /// Who calls `toolmux serve` besides its owner: each principal's keys (stored as hashes by
    /// `toolmux keys create`), the access-token subjects that speak for it, and its roles.
    /// Once a principal or a role is configured, a caller that is not the owner gets only what
    /// its roles grant, and one matched by no principal gets nothing.
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::principals::bounded"
    )]
    pub principals: BTreeMap<crate::endpoints::EndpointName, crate::principals::PrincipalSettings>,
    /// What a principal may do, by role: the endpoints it may use (`*`, `default` for `/mcp`
    /// itself, or names) and `allow | ask | deny` by tool-name pattern, for listing and calling
    /// alike.
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::principals::bounded"
    )]
    pub roles: BTreeMap<crate::endpoints::EndpointName, crate::principals::RoleSettings>,
    /// Script tools, by registry name: a command that takes the arguments as JSON on stdin and
    /// answers on stdout.
    pub tools: BTreeMap<ToolName, crate::scripts::ScriptTool>,
    /// `url_fetch`: size, time and redirect caps, and the addresses it may reach although
    /// internal ones are refused by default.
    pub url_fetch: crate::web::UrlFetchSettings,
    /// `web_search`: the search service it asks (SearXNG, Brave or Tavily).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_search: Option<crate::web::WebSearchSettings>,
    /// Agent Skills: more places to find them, before the project's `.toolmux/skills/` and
    /// `.claude/skills/` and the user's `~/.config/toolmux/skills/`.
    pub skills: SkillsSettings,
    /// `shell` and `code_execution`: time limits, output cap, network and sandbox.
    pub shell: crate::exec::ShellSettings,
    /// Coding agents `run_session` may start, by name: a built-in runner's name changes it,
    /// another name defines one (`command`, `args` with `{prompt}`, `env`, `model`, `protocol`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub runners: BTreeMap<String, crate::runners::RunnerSettings>,
    /// Seed 004's registries, read in place and reloaded when they change: a `tools.json` of
    /// script tools (`description`, `inputSchema`, `outputSchema`, `parallel_capable`,
    /// `timeout` in seconds, `script`) or an `mcp.json` of servers (`mcpServers`), by path
    /// relative to the project (`"backend/src/tools/tools.json"`). Their tools and servers join
    /// `tools` and `mcpServers`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub registries: Vec<PathBuf>,
}

/// Where Agent Skills are found besides the standard places.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `paths`"
)]
pub struct SkillsSettings {
    /// Folders that hold skill folders (one `SKILL.md` each), relative to the project
    /// directory or absolute; searched first, in this order.
    pub paths: Vec<PathBuf>,
}

/// Time limits that apply when a tool sets none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `timeoutMs` and `approvalTimeoutMs`"
)]
pub struct Defaults {
    /// How long a tool may run, in milliseconds.
    pub timeout_ms: NonZeroU64,
    /// How long a call with policy `ask` waits for an answer before it is denied, in
    /// milliseconds.
    pub approval_timeout_ms: NonZeroU64,
}

/// The hub's own default, in milliseconds; not zero, checked at compile time.
const DEFAULT_TIMEOUT_MS: NonZeroU64 = millis(HubSettings::DEFAULT_TIMEOUT);
/// The hub's own default, in milliseconds.
const DEFAULT_APPROVAL_TIMEOUT_MS: NonZeroU64 = millis(HubSettings::DEFAULT_APPROVAL_TIMEOUT);

/// A default time limit of the hub as this file writes it.
const fn millis(limit: Duration) -> NonZeroU64 {
    NonZeroU64::new(limit.as_millis() as u64).expect("a default time limit is not zero")
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            timeout_ms: DEFAULT_TIMEOUT_MS,
            approval_timeout_ms: DEFAULT_APPROVAL_TIMEOUT_MS,
        }
    }
}

/// Policy rules: `allow` runs a call, `ask` asks a person first, `deny` never runs it. For one
/// tool the first rule that applies wins: an exact name in `tools`, then the most specific
/// matching pattern in `tools`, then the source's own setting, then `sources`, then the tool's
/// annotations (read-only tools are allowed, destructive ones ask), then `default`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `default`, `tools` and `sources`"
)]
pub struct Policies {
    /// The policy when no other rule decides (`allow` when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Policy>,
    /// Policies by tool name or pattern (`"grep": "allow"`, `"github__*": "ask"`).
    pub tools: BTreeMap<ToolPattern, Policy>,
    /// Policies by source id (`"workspace": "allow"`).
    pub sources: BTreeMap<String, Policy>,
}

/// Settings for one tool that override what its source declares.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `timeoutMs`, `rateLimit`, `enabled`, `approvalMessage`, `name`, \
                 `title`, `description`, `annotations`, `arguments` or `output`"
)]
pub struct ToolSettings {
    /// How long the tool may run, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<NonZeroU64>,
    /// At most this many calls per period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimitSetting>,
    /// `false` switches the tool off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The message a person sees when asked to approve a call, with `{{name}}` placeholders
    /// for its arguments (`"Send {{text}} to {{channel}}?"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_message: Option<toolmux_core::ApprovalTemplate>,
    /// The registry name callers see instead (a call is still routed to the source's tool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<ToolName>,
    /// The title callers see instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The description callers see: a string replaces the source's, `{"append": "..."}`
    /// follows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<DescriptionSetting>,
    /// Behaviour hints that replace the source's, hint by hint; they feed the policy rule that
    /// reads annotations (`readOnlyHint: true` runs without asking).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<AnnotationSettings>,
    /// Changes to arguments, by the source's name for them: `{"repo": {"value": "org/x",
    /// "hidden": true}}` injects a fixed value and hides it, `default` fills one in, `rename`
    /// shows it under another name. Calls are checked against the source's own schema after
    /// the change.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, ArgumentSetting>,
    /// What callers are shown of its results, on every channel: a jq `projection`, then a cap
    /// (`maxTokens` or `maxBytes`, keeping `head`, `tail` or `headTail`); a result over the cap
    /// is kept whole for a while as `toolmux://results/<id>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<toolmux_shaping::OutputSettings>,
}

impl ToolSettings {
    /// How the tool presents itself, as these settings change it.
    fn presentation(&self) -> Presentation {
        Presentation {
            name: self.name.as_ref().map(|n| n.as_str().to_string()),
            title: self.title.clone(),
            description: self.description.as_ref().map(|d| match d {
                DescriptionSetting::Replace(text) => DescriptionChange::Replace(text.clone()),
                DescriptionSetting::Append { append } => DescriptionChange::Append(append.clone()),
            }),
            annotations: self.annotations.as_ref().map(|a| ToolAnnotations {
                read_only_hint: a.read_only_hint,
                destructive_hint: a.destructive_hint,
                idempotent_hint: a.idempotent_hint,
                open_world_hint: a.open_world_hint,
            }),
            arguments: self
                .arguments
                .iter()
                .map(|(name, a)| {
                    let change = ArgumentOverride {
                        value: a.value.clone(),
                        hidden: a.hidden,
                        default: a.default.clone(),
                        rename: a.rename.clone(),
                    };
                    (name.clone(), change)
                })
                .collect(),
        }
    }
}

/// A tool's description as configuration sets it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "a string (replaces the description) or an object with `append`"
)]
pub enum DescriptionSetting {
    /// Replaces the source's description.
    Replace(String),
    /// Follows the source's description.
    Append {
        /// The text added after the source's description.
        append: String,
    },
}

/// Behaviour hints (MCP's tool annotations) set by configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `readOnlyHint`, `destructiveHint`, `idempotentHint` or \
                 `openWorldHint`"
)]
pub struct AnnotationSettings {
    /// The tool does not modify its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling the tool twice with the same arguments has no additional effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// What configuration changes about one argument of a tool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `value`, `hidden`, `default` or `rename`"
)]
pub struct ArgumentSetting {
    /// A value injected on every call, whatever the caller sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Leave the argument out of the schema callers see.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// The value used when the caller sends none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// The name callers use for the argument.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rename: Option<String>,
}

/// A tool defined as another tool plus fixed arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `from`, `description`, `title` and `arguments`"
)]
pub struct DerivedToolSettings {
    /// The registry name of the tool it calls, as its source names it.
    pub from: ToolName,
    /// What it does, for a model.
    pub description: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Arguments fixed on every call and left out of its schema.
    #[serde(default)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
}

/// At most `requests` calls per `period`; `requests` is also the burst size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `requests` and `period`"
)]
pub struct RateLimitSetting {
    /// Calls allowed in one period.
    pub requests: NonZeroU32,
    /// The length of the period (`"1m"`).
    pub period: Period,
}

/// Which tools are available at all, by name pattern.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `include` and `exclude`"
)]
pub struct FilterSettings {
    /// When not empty, only tools that match one of these patterns are available.
    pub include: Vec<ToolPattern>,
    /// Tools that match one of these patterns are not available.
    pub exclude: Vec<ToolPattern>,
}

/// Settings for one source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `enabled`"
)]
pub struct SourceSettings {
    /// `false` switches off every tool of the source.
    pub enabled: bool,
}

impl Default for SourceSettings {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// Limits of the built-in workspace tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `maxReadBytes`, `maxResults` and `maxOutputBytes`"
)]
pub struct WorkspaceLimits {
    /// The most bytes one file read returns.
    pub max_read_bytes: usize,
    /// The most matches or entries one search or listing returns.
    pub max_results: usize,
    /// The most bytes of output one workspace tool returns.
    pub max_output_bytes: usize,
}

impl Default for WorkspaceLimits {
    fn default() -> Self {
        Self {
            max_read_bytes: 256 * 1024,
            max_results: 1000,
            max_output_bytes: 1024 * 1024,
        }
    }
}

/// The execution log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `retentionDays`, `resultCapBytes`, `argumentCapBytes`, \
                 `wholeFileCapBytes` and `maxDayBytes`"
)]
pub struct LogSettings {
    /// Days an execution record is kept.
    pub retention_days: u32,
    /// The most bytes of a tool's result kept in its record.
    pub result_cap_bytes: usize,
    /// The most bytes of a call's arguments kept in its record.
    pub argument_cap_bytes: usize,
    /// A cut result or argument up to this size is also kept whole in a file of its own; a
    /// larger one only by its start.
    pub whole_file_cap_bytes: usize,
    /// A day's log past this many bytes keeps only short records (tool, outcome, sizes); past
    /// twice this, nothing more that day. No call can fill the disk through the log.
    pub max_day_bytes: u64,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            retention_days: 30,
            result_cap_bytes: 16 * 1024,
            argument_cap_bytes: 16 * 1024,
            whole_file_cap_bytes: 1024 * 1024,
            max_day_bytes: 256 * 1024 * 1024,
        }
    }
}

impl Config {
    /// The pipeline settings for [`toolmux_core::Hub`].
    pub fn hub_settings(&self) -> HubSettings {
        let millis = |ms: NonZeroU64| Duration::from_millis(ms.get());
        HubSettings {
            default_timeout: millis(self.defaults.timeout_ms),
            approval_timeout: millis(self.defaults.approval_timeout_ms),
            policies: PolicyRules {
                default: self.policies.default,
                tools: self
                    .policies
                    .tools
                    .iter()
                    .map(|(pattern, policy)| (pattern.pattern().clone(), *policy))
                    .collect(),
                sources: self
                    .policies
                    .sources
                    .iter()
                    .map(|(source, policy)| (source.clone(), *policy))
                    .collect::<HashMap<_, _>>(),
            },
            overrides: self
                .tool_settings
                .iter()
                .map(|(name, s)| {
                    let settings = ToolOverride {
                        timeout: s.timeout_ms.map(millis),
                        rate_limit: s.rate_limit.as_ref().map(|r| RateLimit {
                            requests: r.requests.get(),
                            period: r.period.duration(),
                        }),
                        enabled: s.enabled,
                        approval_message: s.approval_message.clone(),
                        presentation: s.presentation(),
                    };
                    (name.as_str().to_string(), settings)
                })
                .collect(),
            derived: self
                .derived_tools
                .iter()
                .map(|(name, d)| DerivedTool {
                    name: name.as_str().to_string(),
                    from: d.from.as_str().to_string(),
                    title: d.title.clone(),
                    description: d.description.clone(),
                    arguments: d.arguments.clone(),
                })
                .collect(),
            filters: Filters {
                include: patterns(&self.filters.include),
                exclude: patterns(&self.filters.exclude),
            },
            disabled_sources: self
                .sources
                .iter()
                .filter(|(_, s)| !s.enabled)
                .map(|(id, _)| id.clone())
                .chain(
                    self.upstreams
                        .iter()
                        .filter(|(_, s)| !s.enabled)
                        .map(|(name, _)| name.as_str().to_string()),
                )
                .collect::<HashSet<_>>(),
            endpoints: std::sync::Arc::new(crate::endpoints::hub_endpoints(&self.endpoints)),
            principals: std::sync::Arc::new(crate::principals::hub_principals(
                &self.principals,
                &self.roles,
            )),
        }
    }

    /// Whether [`Config::hub_settings`] may differ between two configurations: whether any
    /// field it reads differs. Kept beside it so that a reload that skips an unchanged hub
    /// reads exactly what opening reads.
    pub fn hub_settings_differ(&self, other: &Config) -> bool {
        fn disabled_servers(c: &Config) -> Vec<&ServerName> {
            c.upstreams
                .iter()
                .filter(|(_, s)| !s.enabled)
                .map(|(name, _)| name)
                .collect()
        }
        self.defaults != other.defaults
            || self.policies != other.policies
            || self.tool_settings != other.tool_settings
            || self.derived_tools != other.derived_tools
            || self.filters != other.filters
            || self.sources != other.sources
            || self.endpoints != other.endpoints
            || self.principals != other.principals
            || self.roles != other.roles
            || disabled_servers(self) != disabled_servers(other)
    }

    /// The shaping rules of results ([`toolmux_shaping::Shaper`]): each tool's `output`, and
    /// the default caps of MCP clients and of the chat (`chat.maxToolResultBytes`).
    pub fn shaping_rules(&self) -> toolmux_shaping::ShapingRules {
        let tools = self
            .tool_settings
            .iter()
            .filter_map(|(name, s)| Some((name.as_str().to_string(), s.output.clone()?)))
            .collect();
        toolmux_shaping::ShapingRules::with_defaults(tools, self.chat.max_tool_result_bytes.get())
    }

    /// The limits of the built-in workspace tools.
    pub fn workspace_limits(&self) -> WorkspaceLimits {
        self.workspace
    }
}

fn patterns(list: &[ToolPattern]) -> Vec<toolmux_core::NamePattern> {
    list.iter().map(|p| p.pattern().clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: serde_json::Value) -> Config {
        serde_json::from_value(json).expect("a valid configuration")
    }

    #[test]
    fn hub_settings_differ_exactly_when_a_field_they_read_changes() {
        let base = config(serde_json::json!({
            "mcpServers": {"docs": {"command": "docs-server"}},
            "logs": {"retentionDays": 30}
        }));
        assert!(!base.hub_settings_differ(&base.clone()));
        // The log and a server's command are not pipeline settings.
        let unrelated = config(serde_json::json!({
            "mcpServers": {"docs": {"command": "other-server"}},
            "logs": {"retentionDays": 7}
        }));
        assert!(!base.hub_settings_differ(&unrelated));
        // Switching a server off hides its source, which the hub decides.
        let disabled = config(serde_json::json!({
            "mcpServers": {"docs": {"command": "docs-server", "enabled": false}},
            "logs": {"retentionDays": 30}
        }));
        assert!(base.hub_settings_differ(&disabled));
        let denied = config(serde_json::json!({
            "mcpServers": {"docs": {"command": "docs-server"}},
            "logs": {"retentionDays": 30},
            "policies": {"tools": {"docs__*": "deny"}}
        }));
        assert!(base.hub_settings_differ(&denied));
    }
}
