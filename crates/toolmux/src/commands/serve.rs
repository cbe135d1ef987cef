//! `toolmux serve`: the HTTP server. It carries the MCP endpoint (`/mcp`, streamable HTTP) and
//! the REST API (`/api`, `/metrics`) in one process, on one hub, over TCP or a Unix socket.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use axum::Router;
use axum::serve::ListenerExt;
use serde_json::{Map, Value, json};
use toolmux_api::{
    API_PATH, ApiState, Apply, ConfigFiles, ConfigWatcher, ConfigWriter, RelayError,
    api_router_with,
};
use toolmux_http::{ApiOptions, ConnectionLimits, LiveOptions, OpenApiRouter, mcp_guarded};
use toolmux_mcp_server::{
    CancellationToken, LOOPBACK_HOSTS, LOOPBACK_ORIGINS, MCP_PATH, http_router,
};
use toolmux_upstream::{Relay, Relayed, UpstreamSource, Upstreams};

use crate::cli::ServeArgs;
use crate::commands::mcp::serve_options;
use crate::exit::{Failure, OK};
use crate::project::{Project, log_dir};

pub async fn run(project: Option<&Path>, args: ServeArgs) -> Result<u8, Failure> {
    let project = Project::open(project)?;
    // Servers never discovered (or configured differently since) are discovered without
    // holding up start-up.
    project.upstreams.discover_stale_in_background();
    let mut options = serve_options(&args.filters, &project)?;
    // A Unix socket is reachable only by its owner (mode 0600), like loopback.
    let beyond_loopback = args.socket.is_none() && !args.bind.is_loopback();
    let access = Access {
        env_keys: api_keys(&args.api_key_env)?,
        hosts: args
            .allow_host
            .iter()
            .cloned()
            // Requests to a specific address carry it in `Host`; accept it without a flag.
            .chain((beyond_loopback && !args.bind.is_unspecified()).then(|| args.bind.to_string()))
            .collect(),
        origins: args.allow_origin.clone(),
        beyond_loopback,
        live: LiveOptions::default(),
    };
    let server = &project.loaded.config.server;
    access
        .live
        .replace(access.options(server).map_err(|e| match e {
            AccessError::NoKey => Failure::Usage(format!(
                "binding to {} makes the server reachable from other machines, so it needs an \
             API key: put one in an environment variable and pass --api-key-env VAR (or \
             list it in `server.apiKeys`)",
                args.bind
            )),
            AccessError::EmptyKey(_) => Failure::Config(e.to_string()),
        })?);
    // Host, Origin and keys of `/mcp` are checked by the REST API's live guard in front of it.
    options.guarded_in_front = true;
    let unspecified_without_hosts =
        args.bind.is_unspecified() && server.allowed_hosts.is_empty() && args.allow_host.is_empty();

    let files = ConfigFiles {
        project_dir: project.loaded.project_dir.clone(),
        user_config: toolmux_config::user_config_path(),
    };
    let live = access.live.clone();
    let chat_engine = crate::commands::chat::engine(&project)?;
    let apply = apply_to(
        project.hub.clone(),
        project.upstreams.clone(),
        chat_engine.clone(),
        project.loaded.clone(),
        access,
    );
    let writer = ConfigWriter::spawn(project.hub.clone(), files.clone(), apply.clone());
    // Hand edits are picked up while the server runs; without a watcher they wait for a restart.
    let _watcher = match ConfigWatcher::start(files, apply) {
        Ok(watcher) => Some(watcher),
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the configuration file; edits need a restart");
            None
        }
    };
    let api = ApiState::new(
        project.hub.clone(),
        project.approvals.clone(),
        project.metrics.clone(),
        log_dir(&project.loaded.project_dir),
        live.clone(),
        Some(writer),
        Some(Arc::new(UpstreamServers {
            upstreams: project.upstreams.clone(),
            hub: project.hub.clone(),
        })),
    );
    let shutdown = CancellationToken::new();
    // The chat routes are served with the REST API's: behind its guard, so every HTTP route is
    // checked alike, and in its OpenAPI document, made from the chat's own route list.
    let chat = OpenApiRouter::with_openapi(toolmux_chat::http::openapi())
        .merge(crate::commands::chat::http_router(chat_engine).into());
    let mcp = http_router(project.hub.clone(), options, shutdown.clone());
    let router = mcp_guarded(live, mcp).merge(api_router_with(api, chat));
    let limits = connection_limits(&args);
    let signals = StopSignals::install()?;
    let served = match &args.socket {
        Some(path) => serve_unix(path, router, limits, signals, shutdown).await,
        None => {
            serve_tcp(
                SocketAddr::new(args.bind, args.port),
                unspecified_without_hosts,
                router,
                limits,
                signals,
                shutdown,
            )
            .await
        }
    };
    // Stop the servers (and what a background discovery was still starting) before the runtime
    // goes away under them, then whatever escaped their process groups: nothing toolmux
    // started outlives it.
    project.upstreams.shutdown().await;
    toolmux_scripts::child::sweep_escaped();
    project.log.flush();
    served?;
    Ok(OK)
}

async fn serve_tcp(
    address: SocketAddr,
    warn_hosts: bool,
    router: Router,
    limits: ConnectionLimits,
    signals: StopSignals,
    shutdown: CancellationToken,
) -> Result<(), Failure> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let address = listener
        .local_addr()
        .context("cannot read the address the server listens on")?;
    // An SSE response goes out in several small writes, which Nagle's algorithm would hold
    // back until the client's delayed ACK (40 ms a response on Linux).
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    // The first line is the MCP URL: scripts and tests read it to find the port.
    eprintln!("toolmux: serving MCP at http://{address}{MCP_PATH}");
    eprintln!(
        "toolmux: REST API at http://{address}{API_PATH} (OpenAPI at {API_PATH}/openapi.json)"
    );
    if warn_hosts {
        eprintln!(
            "toolmux: only loopback Host names are accepted; add the names clients use with --allow-host"
        );
    }
    toolmux_http::serve(listener, router, limits, signals.wait(shutdown)).await;
    Ok(())
}

#[cfg(unix)]
async fn serve_unix(
    path: &Path,
    router: Router,
    limits: ConnectionLimits,
    signals: StopSignals,
    shutdown: CancellationToken,
) -> Result<(), Failure> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    // A socket file left by a server that is gone would make bind fail; one that still
    // answers belongs to a running server and is left alone.
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(Failure::Usage(format!(
                "--socket {}: the path exists and is not a socket",
                path.display()
            )));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(Failure::Usage(format!(
                "--socket {}: another server is listening on it",
                path.display()
            )));
        }
        std::fs::remove_file(path)
            .with_context(|| format!("cannot remove the stale socket `{}`", path.display()))?;
    }
    let listener = tokio::net::UnixListener::bind(path)
        .with_context(|| format!("cannot listen on the Unix socket `{}`", path.display()))?;
    let _remove = RemoveOnDrop(path.to_path_buf());
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot restrict `{}` to its owner", path.display()))?;
    eprintln!("toolmux: serving MCP at unix:{}:{MCP_PATH}", path.display());
    eprintln!("toolmux: REST API at unix:{}:{API_PATH}", path.display());
    toolmux_http::serve(listener, router, limits, signals.wait(shutdown)).await;
    Ok(())
}

#[cfg(not(unix))]
async fn serve_unix(
    path: &Path,
    _router: Router,
    _limits: ConnectionLimits,
    _signals: StopSignals,
    _shutdown: CancellationToken,
) -> Result<(), Failure> {
    Err(Failure::Usage(format!(
        "--socket {}: Unix sockets are not available on this system",
        path.display()
    )))
}

/// How a changed configuration takes effect in the running server: the pipeline settings, the
/// script tools and the MCP servers are replaced where they changed (each publishes a new
/// catalog, which MCP clients hear as `list_changed`); an unchanged part is left alone, so an
/// unrelated edit restarts no server and rebuilds no source. Keys, hosts and origins count from
/// the next request on `/mcp` and `/api` alike. What only takes effect at start is named in a
/// warning instead of being silently ignored.
fn apply_to(
    hub: toolmux_core::Hub,
    upstreams: Arc<Upstreams>,
    chat: Arc<toolmux_chat::ChatEngine>,
    current: toolmux_config::LoadedConfig,
    access: Access,
) -> Apply {
    // The writer's own writes reach the watcher too; an unchanged configuration is not applied
    // twice.
    let current = std::sync::Mutex::new(current);
    Arc::new(move |loaded: &toolmux_config::LoadedConfig| {
        let mut current = current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *current == *loaded {
            return;
        }
        // A file that was read before and is missing now was deleted or renamed away, not
        // emptied on purpose: loading it as empty would drop its keys, deny rules, tools and
        // servers. The watcher checks this too; here it also covers a file that vanished
        // between that check and the read.
        if let Some(gone) = current.files.iter().find(|f| !loaded.files.contains(f)) {
            tracing::warn!(
                "the configuration file `{}` is gone; the last good configuration stays in \
                 force (its keys and policies too) until the file is back",
                gone.display()
            );
            return;
        }
        let old = std::mem::replace(&mut *current, loaded.clone());
        let (before, after) = (&old.config, &loaded.config);
        if before.server != after.server {
            match access.options(&after.server) {
                Ok(options) => {
                    access.live.replace(options);
                    tracing::info!("server access settings (keys, hosts, origins) updated");
                }
                // Keeping the previous settings errs on the side of refusing: the edit that
                // failed may have been meant to revoke a key, but applying it half (or opening
                // a server beyond loopback to keyless requests) would be worse.
                Err(e) => tracing::warn!(
                    "`server` changed in the configuration but was not applied, the previous \
                     keys, hosts and origins stay in force: {e}"
                ),
            }
        }
        if hub_settings_changed(before, after) {
            hub.configure(after.hub_settings());
        }
        if before.tools != after.tools || old.root != loaded.root {
            if after.tools.is_empty() {
                hub.remove_source(toolmux_scripts::SOURCE_ID);
            } else {
                hub.add_source(Arc::new(toolmux_scripts::ScriptSource::new(
                    &after.tools,
                    &loaded.root,
                )));
            }
        }
        let sampling = toolmux_chat::SamplingSettings::from_config(after);
        if sampling != toolmux_chat::SamplingSettings::from_config(before) {
            chat.set_sampling(sampling);
            tracing::info!("sampling settings (`chat.sampling`, `mcpServers.*.sampling`) updated");
        }
        let report = upstreams.apply(loaded, &hub);
        if !report.is_empty() {
            tracing::info!(
                added = ?report.added,
                changed = ?report.changed,
                reconfigured = ?report.reconfigured,
                removed = ?report.removed,
                "MCP servers updated"
            );
        }
        for field in needs_restart(&old, loaded) {
            tracing::warn!(
                "`{field}` changed in the configuration, but `toolmux serve` reads it only at \
                 start: restart the server for the change to take effect"
            );
        }
    })
}

/// Whether anything [`toolmux_config::Config::hub_settings`] is made from changed.
fn hub_settings_changed(before: &toolmux_config::Config, after: &toolmux_config::Config) -> bool {
    let disabled = |c: &toolmux_config::Config| -> Vec<String> {
        c.mcp_servers
            .iter()
            .filter(|(_, s)| !s.enabled)
            .map(|(name, _)| name.as_str().to_string())
            .collect()
    };
    before.defaults != after.defaults
        || before.policies != after.policies
        || before.tool_settings != after.tool_settings
        || before.filters != after.filters
        || before.sources != after.sources
        || disabled(before) != disabled(after)
}

/// The fields that changed and are only read when `serve` starts. The listen address, port and
/// socket are command-line flags, not configuration, so no edit can change them.
fn needs_restart(
    old: &toolmux_config::LoadedConfig,
    new: &toolmux_config::LoadedConfig,
) -> Vec<&'static str> {
    let (before, after) = (&old.config, &new.config);
    [
        ("root", old.root != new.root),
        ("workspace", before.workspace != after.workspace),
        ("logs", before.logs != after.logs),
        ("providers", before.providers != after.providers),
        // `chat.sampling` applies live (above); the rest of `chat` shapes the engine at start.
        ("chat", {
            let without_sampling = |c: &toolmux_config::ChatSettings| {
                let mut c = c.clone();
                c.sampling = Default::default();
                c
            };
            without_sampling(&before.chat) != without_sampling(&after.chat)
        }),
    ]
    .into_iter()
    .filter(|(_, changed)| *changed)
    .map(|(field, _)| field)
    .collect()
}

/// The configured MCP servers as the REST API shows them, with their prompts, resources and
/// completions relayed the way the MCP channel relays them: prompts under their served names
/// (`PREFIX__prompt`), resources under their own URIs, each request to the server that listed
/// the item.
struct UpstreamServers {
    upstreams: Arc<Upstreams>,
    hub: toolmux_core::Hub,
}

impl UpstreamServers {
    fn view(&self, source: &UpstreamSource) -> Value {
        let mut discovery = serde_json::to_value(source.record()).unwrap_or_default();
        // The cached tool list is the catalog's business; show registry names instead.
        if let Some(record) = discovery.as_object_mut() {
            record.remove("tools");
        }
        let tools: Vec<String> = self
            .hub
            .catalog()
            .all_tools()
            .iter()
            .filter(|e| e.descriptor.source == source.name())
            .map(|e| e.descriptor.name.clone())
            .collect();
        serde_json::json!({
            "name": source.name(),
            "prefix": source.prefix(),
            "discovery": discovery,
            "tools": tools,
        })
    }
}

#[async_trait::async_trait]
impl toolmux_api::McpServers for UpstreamServers {
    fn list(&self) -> Vec<Value> {
        self.upstreams
            .servers()
            .iter()
            .map(|s| self.view(s))
            .collect()
    }

    fn get(&self, name: &str) -> Option<Value> {
        self.upstreams.get(name).map(|s| self.view(&s))
    }

    async fn refresh(&self, name: &str) -> Option<Result<Value, String>> {
        let source = self.upstreams.get(name)?;
        Some(match source.discover().await {
            Ok(_) => Ok(self.view(&source)),
            Err(e) => Err(e.to_string()),
        })
    }

    fn prompts(&self) -> Vec<Value> {
        served(self.relay().prompts())
    }

    async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, RelayError> {
        let request = from_json(json!({ "name": name, "arguments": arguments }))?;
        to_json(self.relay().get_prompt(request).await)
    }

    fn resources(&self) -> Vec<Value> {
        served(self.relay().resources())
    }

    fn resource_templates(&self) -> Vec<Value> {
        served(self.relay().resource_templates())
    }

    async fn read_resource(&self, uri: &str) -> Result<Value, RelayError> {
        let request = from_json(json!({ "uri": uri }))?;
        to_json(self.relay().read_resource(request).await)
    }

    async fn complete(&self, request: Value) -> Result<Value, RelayError> {
        let reference = request
            .get("ref")
            .and_then(Value::as_object)
            .ok_or_else(|| RelayError::Invalid("`ref` must be an object".into()))?;
        if !matches!(
            reference.get("type").and_then(Value::as_str),
            Some("ref/prompt" | "ref/resource")
        ) {
            return Err(RelayError::Invalid(
                "`ref.type` must be `ref/prompt` or `ref/resource`".into(),
            ));
        }
        let request = from_json(request)?;
        to_json(self.relay().complete(request).await)
    }
}

impl UpstreamServers {
    /// The one relay, serving everything under registry names: REST has no serve-time filters.
    fn relay(&self) -> Relay<'_> {
        Relay::new(&self.upstreams)
    }
}

/// Items the relay serves, as the REST API shows them: MCP's JSON, with their server.
fn served(relayed: Vec<Relayed<impl serde::Serialize>>) -> Vec<Value> {
    relayed
        .into_iter()
        .map(|Relayed { server, item }| {
            let mut value = serde_json::to_value(item).unwrap_or_else(|_| json!({}));
            if let Some(fields) = value.as_object_mut() {
                fields.insert("server".into(), Value::String(server));
            }
            value
        })
        .collect()
}

/// MCP params from the JSON the API received; the API checked its shape, rmcp checks the rest.
fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, RelayError> {
    serde_json::from_value(value)
        .map_err(|e| RelayError::Invalid(format!("not a valid MCP request: {e}")))
}

/// The relay's answer as the API's JSON, or its failure as the API's [`RelayError`], kind for
/// kind.
fn to_json(
    answer: Result<impl serde::Serialize, toolmux_upstream::RelayError>,
) -> Result<Value, RelayError> {
    use toolmux_upstream::RelayError as Upstream;
    let message = |e: &Upstream| e.to_string();
    match answer {
        Ok(result) => serde_json::to_value(result)
            .map_err(|e| RelayError::Failed(format!("cannot render the server's answer: {e}"))),
        Err(error) => Err(match error {
            Upstream::NotFound(_) => RelayError::NotFound(message(&error)),
            Upstream::Invalid(_) | Upstream::NoSubscriptions { .. } => {
                RelayError::Invalid(message(&error))
            }
            Upstream::Answered {
                server,
                code,
                message,
            } => RelayError::Answered {
                server,
                code,
                message,
            },
            Upstream::Failed(_) => RelayError::Failed(message(&error)),
            Upstream::Unavailable(_) => RelayError::Unavailable(message(&error)),
            Upstream::Timeout { after, .. } => RelayError::Timeout {
                message: message(&error),
                after_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
            },
        }),
    }
}

/// The connection limits: the defaults, or `--header-timeout` (how long a request's head and an
/// idle keep-alive connection may take) and `--max-connections` where given.
fn connection_limits(args: &ServeArgs) -> ConnectionLimits {
    let mut limits = ConnectionLimits::default();
    if let Some(timeout) = args.header_timeout {
        limits.header_timeout = timeout;
    }
    if let Some(n) = args.max_connections {
        limits.max_connections = n.get();
    }
    limits
}

/// Removes the socket file when the server stops.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The keys from the named environment variables. A named variable that is unset or empty is an
/// error: starting without the key someone meant to require would leave the server open.
fn api_keys(vars: &[String]) -> Result<Vec<String>, Failure> {
    let mut keys = Vec::new();
    for var in vars {
        match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => keys.push(key.trim().to_string()),
            _ => {
                return Err(Failure::Usage(format!(
                    "--api-key-env {var}: the environment variable `{var}` is unset or empty"
                )));
            }
        }
    }
    Ok(keys)
}

/// Who may use the HTTP server: what the command line gave, fixed for the server's life, and
/// the live options made from it and the configuration's `server` section, which every request
/// on `/mcp` and `/api` reads.
struct Access {
    /// Keys from `--api-key-env`.
    env_keys: Vec<String>,
    /// `--allow-host`, and the bound address when it is a specific one beyond loopback.
    hosts: Vec<String>,
    /// `--allow-origin`.
    origins: Vec<String>,
    /// The server is reachable from other machines: every request needs a key.
    beyond_loopback: bool,
    live: LiveOptions,
}

/// Why a `server` section cannot be put in force.
#[derive(Debug)]
enum AccessError {
    /// `server.apiKeys[i]` is empty (its variable is unset, most likely).
    EmptyKey(usize),
    /// Beyond loopback, without a key.
    NoKey,
}

impl std::fmt::Display for AccessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AccessError::EmptyKey(i) => write!(
                f,
                "`server.apiKeys[{i}]` is empty (is the variable it refers to set?)"
            ),
            AccessError::NoKey => f.write_str(
                "the server is reachable from other machines and would be left without an API key",
            ),
        }
    }
}

impl Access {
    /// The options for `server`: its keys (expanded when the configuration was read) after the
    /// command line's, loopback names and origins plus the configured and command-line ones. An
    /// empty configured key is an error, because dropping it silently would leave the server
    /// open to requests it was meant to refuse.
    fn options(&self, server: &toolmux_config::ServerSettings) -> Result<ApiOptions, AccessError> {
        let mut api_keys = self.env_keys.clone();
        for (i, key) in server.api_keys.iter().enumerate() {
            if key.trim().is_empty() {
                return Err(AccessError::EmptyKey(i));
            }
            api_keys.push(key.trim().to_string());
        }
        if self.beyond_loopback && api_keys.is_empty() {
            return Err(AccessError::NoKey);
        }
        Ok(ApiOptions {
            api_keys,
            require_key_for_reads: self.beyond_loopback,
            allowed_hosts: allow_list(&LOOPBACK_HOSTS, &server.allowed_hosts, &self.hosts),
            allowed_origins: allow_list(&LOOPBACK_ORIGINS, &server.allowed_origins, &self.origins),
        })
    }
}

/// Loopback is always allowed; the configuration and the command line can only add to it.
fn allow_list(loopback: &[&str], configured: &[String], given: &[String]) -> Vec<String> {
    loopback
        .iter()
        .map(|name| (*name).to_string())
        .chain(configured.iter().cloned())
        .chain(given.iter().cloned())
        .collect()
}

/// Ctrl-C and SIGTERM, listened for from before the URL is printed: a signal that arrives
/// between the two must end the server gracefully, not kill it.
struct StopSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    fn install() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C")?,
                terminate: signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Resolves on the first signal, after ending the MCP sessions so that their open SSE
    /// streams do not hold the graceful shutdown.
    async fn wait(mut self, shutdown: CancellationToken) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => {}
        }
        #[cfg(not(unix))]
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
        eprintln!("toolmux: shutting down");
        shutdown.cancel();
    }
}
