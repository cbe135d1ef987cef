//! `mcpServers`: the upstream servers — external MCP servers, in the shape Claude Code, Cursor
//! and Claude Desktop use, so that a user can paste an existing block. toolmux's own
//! per-server settings sit beside the familiar keys.
//!
//! A server entry is read in two steps: [`ServerEntry`] is the file's shape (every key optional,
//! unknown keys rejected), and [`UpstreamServer`] is what it means (one transport, checked). The step
//! between them is where mistakes that involve several keys (`command` and `url` together, an
//! `sse` server without a URL) are reported, at the entry's position.

use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolmux_core::Policy;

use crate::fields::ToolPattern;
use crate::providers::SamplingPolicy;

/// How long discovery (start, handshake, `tools/list`) may take when a server sets nothing.
pub const DEFAULT_DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long starting a server (process start and handshake) may take when it sets nothing.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a started server may sit unused before it is stopped, when it sets nothing.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// How many upstream sessions a `per-client` server may have open at once, when it sets nothing.
pub const DEFAULT_MAX_SESSIONS: usize = 32;
/// How long one client's connection to a `per-client` server may sit unused before it is
/// stopped, when the server sets nothing: shorter than a shared server's idle time, since an
/// abandoned client's process is a whole process per client.
pub const DEFAULT_CLIENT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Whether toolmux's callers share one connection to a server or each get their own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SessionMode {
    /// One connection for every caller; a server→client request (elicitation, sampling) is
    /// relayed only when it can be attributed to one caller.
    #[default]
    Shared,
    /// One connection (one upstream MCP session, one stdio process) per downstream session
    /// (an MCP client's session, a chat conversation), opened on its first call and closed
    /// when it ends, so the server's requests, log levels and subscriptions are that
    /// session's alone. toolmux's own requests (discovery, refresh) use a shared connection.
    PerClient,
}

/// Whether a call whose connection dropped while it ran is made again on a new connection.
/// A call that provably never reached the server is always made again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RetryMode {
    /// Only tools annotated `readOnlyHint` or `idempotentHint` (the default).
    Safe,
    /// Every tool: running it twice does no harm.
    Always,
    /// Never, even a read-only tool.
    Never,
}

/// The transport of a server as written in `type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TransportKind {
    /// A local process speaking MCP on stdin and stdout.
    #[serde(rename = "stdio")]
    Stdio,
    /// Streamable HTTP (the current HTTP transport).
    #[serde(rename = "http")]
    Http,
    /// Streamable HTTP, spelt the way some clients write it.
    #[serde(rename = "streamable-http", alias = "streamableHttp")]
    StreamableHttp,
    /// The legacy HTTP+SSE transport (2024-11-05).
    #[serde(rename = "sse")]
    Sse,
}

/// One `mcpServers` entry as it is written in the file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "a server object with `command` (stdio) or `url` (HTTP)"
)]
#[schemars(rename = "McpServer")]
pub struct ServerEntry {
    /// `stdio`, `http` (also `streamable-http`) or `sse`. Optional: a server with `command` is
    /// stdio and one with `url` is streamable HTTP unless this says `sse`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<TransportKind>,
    /// The program to start (stdio), found on `PATH` unless it is a path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments (stdio).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment variables for the process (stdio); keep secrets as `${VAR}`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The working directory of the process (stdio), relative to the project directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// `true` hands the process toolmux's whole environment (stdio). By default it gets only
    /// the basics a program needs (`PATH`, `HOME`, `USER`, locale, temp dir …) plus `env`, so
    /// toolmux's own API keys and provider keys never reach a server that was not given them.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inherit_env: bool,
    /// The server's endpoint (`http`, `sse`): `http://` or `https://`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers sent with every request (`http`, `sse`); keep secrets as `${VAR}`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// How toolmux signs in to the server when it asks for OAuth (`http`, `sse`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth: Option<crate::oauth::OAuthSettings>,
    /// `false` keeps the server configured but unused: it is never started and none of its
    /// tools are offered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// When not empty, only the server's tools whose own names match one of these globs are
    /// offered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub enabled_tools: Vec<ToolPattern>,
    /// The server's tools whose own names match one of these globs are not offered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<ToolPattern>,
    /// The policy of every tool of this server (`allow`, `ask`, `deny`), unless `toolPolicies`
    /// or a rule in `policies.tools` says otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// Policies by the server's own tool name or glob (`"delete_*": "ask"`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_policies: BTreeMap<ToolPattern, Policy>,
    /// How long starting the server (process start or connection, and the MCP handshake) may
    /// take, in milliseconds (default 30000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_timeout_ms: Option<NonZeroU64>,
    /// How long discovering its tools (start, handshake and every `tools/list` page) may take,
    /// in milliseconds (default 30000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery_timeout_ms: Option<NonZeroU64>,
    /// How long one call of its tools may run, in milliseconds (default: `defaults.timeoutMs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_timeout_ms: Option<NonZeroU64>,
    /// How long a started server may sit unused before it is stopped, in milliseconds
    /// (default 600000; 0 keeps it running until toolmux exits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// The prefix of its tools' registry names (`PREFIX__tool`); default: the server's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<Prefix>,
    /// What toolmux's chat does when this server asks to use the chat's model (MCP sampling):
    /// `ask` asks the person each time, `allow` answers without asking, which spends your
    /// tokens on the server's behalf, and `deny` refuses without asking. Default: `chat.sampling`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingPolicy>,
    /// `shared` (default): one connection for every caller; `per-client`: one upstream session
    /// per MCP client session or chat conversation, so that what the server asks (elicitation,
    /// sampling) and its log levels and subscriptions belong to that client alone.
    /// `toolmux serve --pass-through NAME` serves NAME per client whatever this says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_mode: Option<SessionMode>,
    /// The most upstream sessions a per-client server may have open at once (default 32); a
    /// client beyond them gets an error saying so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_sessions: Option<NonZeroU64>,
    /// How long one client's connection to a per-client server (its process, its upstream
    /// session) may sit unused before it is stopped, in milliseconds (default 300000; 0 keeps
    /// it until the client's session ends). The client's next request opens a new one, with its
    /// log level and subscriptions; a connection with subscriptions is never stopped as idle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_idle_timeout_ms: Option<u64>,
    /// When a call whose connection dropped while it ran is made again (up to 3 more times,
    /// after the server is restarted or a new session opened): `safe` (default) for tools
    /// annotated `readOnlyHint` or `idempotentHint`, `always`, or `never`. Otherwise the call
    /// fails with an error saying it may have run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryMode>,
    /// `retry` by the server's own tool name or glob (`"search_*": "always"`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_retry: BTreeMap<ToolPattern, RetryMode>,
    /// The server's tools whose own names match one of these globs are internal: hidden from
    /// models and MCP clients, callable only by trusted callers (the CLI, an authenticated REST
    /// request). A tool whose definition says `_meta._internal: true` is internal too.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub internal_tools: Vec<ToolPattern>,
    /// What a tool whose name, description or schema has a high-severity finding of the trust
    /// scanner gets (hidden instructions, credential paths, concealment …): `ask` (default)
    /// asks a person before each call (over `policy` and `toolPolicies`, unless they deny),
    /// `block` leaves it out, `warn` only shows the finding. Rules in `policies.tools` win.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_finding: Option<toolmux_trust::Action>,
    /// What a tool gets that appears after the server's first discovery: `pin` (default)
    /// holds it until a person accepts it (`toolmux mcp trust NAME TOOL`), `auto` pins it as
    /// it comes. A tool whose definition changed (or that appeared as another went away) is
    /// held either way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust: Option<toolmux_trust::pins::TrustMode>,
}

/// How toolmux reaches a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpstreamTransport {
    /// A local process speaking MCP on stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// Its working directory, relative to the project directory.
        cwd: Option<PathBuf>,
        /// It gets toolmux's whole environment, not only the basics plus `env`.
        inherit_env: bool,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
    /// The legacy HTTP+SSE transport.
    Sse {
        /// The SSE endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
    },
}

impl UpstreamTransport {
    /// `stdio`, `http` or `sse`.
    pub fn kind(&self) -> &'static str {
        match self {
            UpstreamTransport::Stdio { .. } => "stdio",
            UpstreamTransport::Http { .. } => "http",
            UpstreamTransport::Sse { .. } => "sse",
        }
    }
}

/// One upstream server (an `mcpServers` entry), checked: exactly one transport, with
/// everything it needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "ServerEntry", into = "ServerEntry")]
#[schemars(rename = "McpServer")]
pub struct UpstreamServer {
    /// How toolmux reaches it.
    pub transport: UpstreamTransport,
    /// Whether it is used at all.
    pub enabled: bool,
    /// Globs over its own tool names; when not empty, only matching tools are offered.
    pub enabled_tools: Vec<ToolPattern>,
    /// Globs over its own tool names; matching tools are not offered.
    pub disabled_tools: Vec<ToolPattern>,
    /// The policy of all its tools.
    pub policy: Option<Policy>,
    /// Policies by its own tool name or glob.
    pub tool_policies: BTreeMap<ToolPattern, Policy>,
    /// Start-up limit.
    pub startup_timeout: Duration,
    /// Discovery limit.
    pub discovery_timeout: Duration,
    /// Per-call limit, when set.
    pub tool_timeout: Option<Duration>,
    /// Idle limit; `None` keeps it running.
    pub idle_timeout: Option<Duration>,
    /// The prefix override.
    pub prefix: Option<Prefix>,
    /// Its sampling override of `chat.sampling`, when set.
    pub sampling: Option<SamplingPolicy>,
    /// Shared or per-client connections.
    pub session_mode: SessionMode,
    /// The most per-client sessions open at once.
    pub max_sessions: usize,
    /// Idle limit of one client's connection to a per-client server; `None` keeps it.
    pub client_idle_timeout: Option<Duration>,
    /// The retry rule of all its tools, when set.
    pub retry: Option<RetryMode>,
    /// Retry rules by its own tool name or glob.
    pub tool_retry: BTreeMap<ToolPattern, RetryMode>,
    /// Globs over its own tool names; matching tools are internal.
    pub internal_tools: Vec<ToolPattern>,
    /// How toolmux signs in to it (HTTP and SSE servers), when configured.
    pub oauth: Option<crate::oauth::OAuthSettings>,
    /// What a tool with a high-severity trust finding gets; `None` is `ask`.
    pub on_finding: Option<toolmux_trust::Action>,
    /// What a tool that appears after the first discovery gets.
    pub trust: toolmux_trust::pins::TrustMode,
}

impl UpstreamServer {
    /// Whether a tool (by the server's own name) is offered under `enabledTools` and
    /// `disabledTools`.
    pub fn offers(&self, tool: &str) -> bool {
        let included = self.enabled_tools.is_empty()
            || self.enabled_tools.iter().any(|p| p.pattern().matches(tool));
        included
            && !self
                .disabled_tools
                .iter()
                .any(|p| p.pattern().matches(tool))
    }

    /// The policy configured for one of its tools: the most specific `toolPolicies` match (an
    /// exact name first, then the longest glob), else `policy`.
    pub fn policy_for(&self, tool: &str) -> Option<Policy> {
        most_specific(&self.tool_policies, tool).or(self.policy)
    }

    /// The retry rule of one of its tools: the most specific `toolRetry` match (as
    /// [`UpstreamServer::policy_for`]), else `retry`, else `safe`.
    pub fn retry_for(&self, tool: &str) -> RetryMode {
        most_specific(&self.tool_retry, tool)
            .or(self.retry)
            .unwrap_or(RetryMode::Safe)
    }

    /// Whether one of its tools (by its own name) is internal by `internalTools`.
    pub fn is_internal(&self, tool: &str) -> bool {
        self.internal_tools
            .iter()
            .any(|p| p.pattern().matches(tool))
    }
}

/// The value of the most specific pattern matching `tool`: an exact name first, then the
/// longest glob.
fn most_specific<T: Copy>(rules: &BTreeMap<ToolPattern, T>, tool: &str) -> Option<T> {
    let mut best: Option<(&ToolPattern, T)> = None;
    for (pattern, value) in rules {
        if pattern.as_str() == tool {
            return Some(*value);
        }
        if pattern.pattern().matches(tool)
            && best.is_none_or(|(b, _)| pattern.as_str().len() > b.as_str().len())
        {
            best = Some((pattern, *value));
        }
    }
    best.map(|(_, v)| v)
}

impl TryFrom<ServerEntry> for UpstreamServer {
    type Error = String;

    fn try_from(entry: ServerEntry) -> Result<Self, String> {
        let ServerEntry {
            kind,
            command,
            args,
            env,
            cwd,
            inherit_env,
            url,
            headers,
            oauth,
            enabled,
            enabled_tools,
            disabled_tools,
            policy,
            tool_policies,
            startup_timeout_ms,
            discovery_timeout_ms,
            tool_timeout_ms,
            idle_timeout_ms,
            prefix,
            sampling,
            session_mode,
            max_sessions,
            client_idle_timeout_ms,
            retry,
            tool_retry,
            internal_tools,
            on_finding,
            trust,
        } = entry;
        let kind = match (kind, &command, &url) {
            (_, Some(_), Some(_)) => {
                return Err(
                    "a server has either `command` (stdio) or `url` (HTTP), not both".to_string(),
                );
            }
            (None, None, None) => {
                return Err(
                    "a server needs `command` (a stdio server) or `url` (an HTTP or SSE server)"
                        .to_string(),
                );
            }
            (Some(kind), _, _) => kind,
            (None, Some(_), None) => TransportKind::Stdio,
            (None, None, Some(_)) => TransportKind::Http,
        };
        let transport = match kind {
            TransportKind::Stdio => {
                let Some(command) = command else {
                    return Err("a `stdio` server needs `command`".to_string());
                };
                if command.trim().is_empty() {
                    return Err("`command` is empty".to_string());
                }
                if !headers.is_empty() {
                    return Err("`headers` only apply to `http` and `sse` servers; a stdio \
                                server takes `env`"
                        .to_string());
                }
                if oauth.is_some() {
                    return Err("`oauth` only applies to `http` and `sse` servers".to_string());
                }
                UpstreamTransport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                    inherit_env,
                }
            }
            TransportKind::Http | TransportKind::StreamableHttp | TransportKind::Sse => {
                let name = if kind == TransportKind::Sse {
                    "sse"
                } else {
                    "http"
                };
                let Some(url) = url else {
                    return Err(format!("an `{name}` server needs `url`"));
                };
                check_url(&url)?;
                if !args.is_empty() || !env.is_empty() || cwd.is_some() {
                    return Err(format!(
                        "`args`, `env` and `cwd` only apply to stdio servers, not to an `{name}` \
                         server"
                    ));
                }
                if inherit_env {
                    return Err(format!(
                        "`inheritEnv` only applies to stdio servers, not to an `{name}` server"
                    ));
                }
                if let Some(oauth) = &oauth {
                    oauth.check()?;
                }
                if kind == TransportKind::Sse {
                    UpstreamTransport::Sse { url, headers }
                } else {
                    UpstreamTransport::Http { url, headers }
                }
            }
        };
        let millis = |ms: NonZeroU64| Duration::from_millis(ms.get());
        Ok(Self {
            transport,
            enabled: enabled.unwrap_or(true),
            enabled_tools,
            disabled_tools,
            policy,
            tool_policies,
            startup_timeout: startup_timeout_ms.map_or(DEFAULT_STARTUP_TIMEOUT, millis),
            discovery_timeout: discovery_timeout_ms.map_or(DEFAULT_DISCOVERY_TIMEOUT, millis),
            tool_timeout: tool_timeout_ms.map(millis),
            idle_timeout: match idle_timeout_ms {
                None => Some(DEFAULT_IDLE_TIMEOUT),
                Some(0) => None,
                Some(ms) => Some(Duration::from_millis(ms)),
            },
            prefix,
            sampling,
            session_mode: session_mode.unwrap_or_default(),
            max_sessions: max_sessions.map_or(DEFAULT_MAX_SESSIONS, |n| {
                usize::try_from(n.get()).unwrap_or(usize::MAX)
            }),
            client_idle_timeout: match client_idle_timeout_ms {
                None => Some(DEFAULT_CLIENT_IDLE_TIMEOUT),
                Some(0) => None,
                Some(ms) => Some(Duration::from_millis(ms)),
            },
            retry,
            tool_retry,
            internal_tools,
            oauth,
            on_finding,
            trust: trust.unwrap_or_default(),
        })
    }
}

impl From<UpstreamServer> for ServerEntry {
    fn from(server: UpstreamServer) -> Self {
        let millis = |d: Duration| NonZeroU64::new(d.as_millis() as u64);
        let mut entry = ServerEntry {
            enabled: (!server.enabled).then_some(false),
            enabled_tools: server.enabled_tools,
            disabled_tools: server.disabled_tools,
            policy: server.policy,
            tool_policies: server.tool_policies,
            startup_timeout_ms: (server.startup_timeout != DEFAULT_STARTUP_TIMEOUT)
                .then(|| millis(server.startup_timeout))
                .flatten(),
            discovery_timeout_ms: (server.discovery_timeout != DEFAULT_DISCOVERY_TIMEOUT)
                .then(|| millis(server.discovery_timeout))
                .flatten(),
            tool_timeout_ms: server.tool_timeout.and_then(millis),
            idle_timeout_ms: match server.idle_timeout {
                None => Some(0),
                Some(d) if d == DEFAULT_IDLE_TIMEOUT => None,
                Some(d) => Some(d.as_millis() as u64),
            },
            prefix: server.prefix,
            sampling: server.sampling,
            session_mode: (server.session_mode != SessionMode::Shared)
                .then_some(server.session_mode),
            max_sessions: (server.max_sessions != DEFAULT_MAX_SESSIONS)
                .then(|| NonZeroU64::new(server.max_sessions as u64))
                .flatten(),
            client_idle_timeout_ms: match server.client_idle_timeout {
                None => Some(0),
                Some(d) if d == DEFAULT_CLIENT_IDLE_TIMEOUT => None,
                Some(d) => Some(d.as_millis() as u64),
            },
            retry: server.retry,
            tool_retry: server.tool_retry,
            internal_tools: server.internal_tools,
            oauth: server.oauth,
            on_finding: server.on_finding,
            trust: (server.trust != toolmux_trust::pins::TrustMode::Pin).then_some(server.trust),
            ..ServerEntry::default()
        };
        match server.transport {
            UpstreamTransport::Stdio {
                command,
                args,
                env,
                cwd,
                inherit_env,
            } => {
                entry.command = Some(command);
                entry.args = args;
                entry.env = env;
                entry.cwd = cwd;
                entry.inherit_env = inherit_env;
            }
            UpstreamTransport::Http { url, headers } => {
                entry.url = Some(url);
                entry.headers = headers;
            }
            UpstreamTransport::Sse { url, headers } => {
                entry.kind = Some(TransportKind::Sse);
                entry.url = Some(url);
                entry.headers = headers;
            }
        }
        entry
    }
}

/// A URL must be absolute `http://` or `https://` with a host.
fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| format!("invalid url `{url}`: it must start with http:// or https://"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.chars().any(char::is_whitespace) {
        return Err(format!("invalid url `{url}`: it has no host"));
    }
    Ok(())
}

/// The name of a configured server, the key in `mcpServers` and the id of its source: 1 to 100
/// characters, no control characters, not only spaces.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerName(String);

impl ServerName {
    /// Checks a name. The error is the message a user sees.
    pub fn new(text: &str) -> Result<Self, String> {
        if text.trim().is_empty()
            || text.chars().count() > 100
            || text.chars().any(char::is_control)
        {
            return Err(format!(
                "invalid server name `{}`: a server name is 1 to 100 characters and not blank",
                text.escape_debug()
            ));
        }
        Ok(Self(text.to_string()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for ServerName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

checked_text! {
    ServerName => {
        "type": "string",
        "minLength": 1,
        "maxLength": 100,
        "description": "A server's name: the id of its tools' source.",
    }
}

/// A registry-name prefix: 1 to 40 letters, digits, `_` or `-`, without `__` (which separates
/// the prefix from the tool's own name).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefix(String);

/// The longest prefix; leaves room for a tool name under the 64-character limit.
const MAX_PREFIX_LEN: usize = 40;

impl Prefix {
    /// Checks a prefix. The error is the message a user sees.
    pub fn new(text: &str) -> Result<Self, String> {
        let valid = (1..=MAX_PREFIX_LEN).contains(&text.len())
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && !text.contains("__");
        if valid {
            Ok(Self(text.to_string()))
        } else {
            Err(format!(
                "invalid prefix `{text}`: a prefix is 1 to {MAX_PREFIX_LEN} letters, digits, `_` \
                 or `-`, without `__`"
            ))
        }
    }

    /// The prefix.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The default prefix of a server: its name, with every character outside the registry
    /// alphabet (and each `__`) turned into one `_`, cut to the longest prefix.
    pub fn from_server_name(name: &str) -> Self {
        let mut out = String::with_capacity(name.len());
        for c in name.chars() {
            let c = if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            };
            if c == '_' && out.ends_with('_') {
                continue;
            }
            out.push(c);
            if out.len() >= MAX_PREFIX_LEN {
                break;
            }
        }
        let trimmed = out.trim_matches('_');
        if trimmed.is_empty() {
            Self("server".to_string())
        } else {
            Self(trimmed.to_string())
        }
    }
}

checked_text! {
    Prefix => {
        "type": "string",
        "pattern": "^(?!.*__)[A-Za-z0-9_-]{1,40}$",
        "description": "The prefix of a server's tool names: letters, digits, `_` or `-`, \
                        without `__`.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_prefixes_keep_to_the_registry_alphabet() {
        assert_eq!(Prefix::from_server_name("github").as_str(), "github");
        assert_eq!(
            Prefix::from_server_name("my server.v2").as_str(),
            "my_server_v2"
        );
        assert_eq!(Prefix::from_server_name("a__b").as_str(), "a_b");
        assert_eq!(Prefix::from_server_name("??").as_str(), "server");
        assert_eq!(Prefix::from_server_name(&"x".repeat(90)).as_str().len(), 40);
    }

    #[test]
    fn prefixes_are_checked() {
        assert!(Prefix::new("gh").is_ok());
        assert!(Prefix::new("g__h").is_err());
        assert!(Prefix::new("").is_err());
        assert!(Prefix::new("a b").is_err());
    }

    #[test]
    fn session_mode_retry_and_internal_tools_are_read_and_written_back() {
        let written = serde_json::json!({
            "command": "srv",
            "sessionMode": "per-client",
            "maxSessions": 4,
            "clientIdleTimeoutMs": 1500,
            "retry": "never",
            "toolRetry": {"search_*": "always", "search_exact": "safe"},
            "internalTools": ["admin_*"],
            "onFinding": "block",
            "trust": "auto",
        });
        let server: UpstreamServer = serde_json::from_value(written.clone()).expect("valid");
        assert_eq!(server.session_mode, SessionMode::PerClient);
        assert_eq!(server.max_sessions, 4);
        assert_eq!(
            server.client_idle_timeout,
            Some(Duration::from_millis(1500))
        );
        assert_eq!(server.retry_for("search_all"), RetryMode::Always);
        assert_eq!(server.retry_for("search_exact"), RetryMode::Safe);
        assert_eq!(server.retry_for("delete"), RetryMode::Never);
        assert!(server.is_internal("admin_reset") && !server.is_internal("search_all"));
        assert_eq!(server.on_finding, Some(toolmux_trust::Action::Block));
        assert_eq!(server.trust, toolmux_trust::pins::TrustMode::Auto);
        assert_eq!(serde_json::to_value(&server).expect("serialises"), written);

        let plain: UpstreamServer =
            serde_json::from_value(serde_json::json!({"command": "srv"})).expect("valid");
        assert_eq!(plain.session_mode, SessionMode::Shared);
        assert_eq!(plain.max_sessions, DEFAULT_MAX_SESSIONS);
        assert_eq!(plain.retry_for("anything"), RetryMode::Safe);
        assert!(
            serde_json::from_value::<UpstreamServer>(
                serde_json::json!({"command": "srv", "sessionMode": "per-caller"})
            )
            .is_err()
        );
    }

    #[test]
    fn urls_need_a_scheme_and_a_host() {
        assert!(check_url("http://127.0.0.1:3000/mcp").is_ok());
        assert!(check_url("https://example.com").is_ok());
        assert!(check_url("ftp://example.com").is_err());
        assert!(check_url("http:///mcp").is_err());
    }
}
