//! `toolmux serve`: the HTTP server. It carries the MCP endpoint (`/mcp`, streamable HTTP) and
//! the REST API (`/api`, `/metrics`) in one process, on one hub, over TCP or a Unix socket.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use axum::Router;
use axum::serve::ListenerExt;
use toolmux_api::{
    API_PATH, ApiOptions, ApiState, Apply, ConfigFiles, ConfigWatcher, ConfigWriter, api_router,
};
use toolmux_mcp_server::{CancellationToken, MCP_PATH, http_router};

use crate::cli::ServeArgs;
use crate::commands::mcp::serve_options;
use crate::exit::{Failure, OK};
use crate::project::{Project, log_dir};

pub async fn run(project: Option<&Path>, args: ServeArgs) -> Result<u8, Failure> {
    let project = Project::open(project)?;
    // Servers never discovered (or configured differently since) are discovered without
    // holding up start-up.
    project.upstreams.discover_stale_in_background();
    let server = &project.loaded.config.server;
    let mut options = serve_options(&args.filters, &project.hub)?;
    options.api_keys = api_keys(&args.api_key_env, &server.api_keys)?;
    options.allowed_origins = server
        .allowed_origins
        .iter()
        .chain(&args.allow_origin)
        .cloned()
        .collect();
    options.allowed_hosts = server
        .allowed_hosts
        .iter()
        .chain(&args.allow_host)
        .cloned()
        .collect();
    // A Unix socket is reachable only by its owner (mode 0600), like loopback.
    let beyond_loopback = args.socket.is_none() && !args.bind.is_loopback();
    if beyond_loopback {
        if options.api_keys.is_empty() {
            return Err(Failure::Usage(format!(
                "binding to {} makes the server reachable from other machines, so it needs an \
                 API key: put one in an environment variable and pass --api-key-env VAR (or \
                 list it in `server.apiKeys`)",
                args.bind
            )));
        }
        // Requests to a specific address carry it in `Host`; accept it without a flag.
        if !args.bind.is_unspecified() {
            options.allowed_hosts.push(args.bind.to_string());
        }
    }

    let files = ConfigFiles {
        project_dir: project.loaded.project_dir.clone(),
        user_config: toolmux_config::user_config_path(),
    };
    let apply = apply_to(project.hub.clone(), project.loaded.clone());
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
        ApiOptions {
            api_keys: options.api_keys.clone(),
            require_key_for_reads: beyond_loopback,
            allowed_hosts: options.effective_allowed_hosts(),
            allowed_origins: options.effective_allowed_origins(),
        },
        Some(writer),
        Some(Arc::new(UpstreamServers {
            upstreams: project.upstreams.clone(),
            hub: project.hub.clone(),
        })),
    );
    let unspecified_without_hosts = args.bind.is_unspecified() && options.allowed_hosts.is_empty();
    let shutdown = CancellationToken::new();
    // The chat routes sit behind the REST API's guard, so every HTTP route is checked alike.
    let chat = toolmux_api::guarded(api.clone(), crate::commands::chat::http_router(&project)?);
    let router = http_router(project.hub.clone(), options, shutdown.clone())
        .merge(api_router(api))
        .merge(chat);
    let signals = StopSignals::install()?;
    let served = match &args.socket {
        Some(path) => serve_unix(path, router, signals, shutdown).await,
        None => {
            serve_tcp(
                SocketAddr::new(args.bind, args.port),
                unspecified_without_hosts,
                router,
                signals,
                shutdown,
            )
            .await
        }
    };
    project.log.flush();
    served?;
    Ok(OK)
}

async fn serve_tcp(
    address: SocketAddr,
    warn_hosts: bool,
    router: Router,
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
    axum::serve(listener, router)
        .with_graceful_shutdown(signals.wait(shutdown))
        .await
        .context("the HTTP server failed")?;
    Ok(())
}

#[cfg(unix)]
async fn serve_unix(
    path: &Path,
    router: Router,
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
    axum::serve(listener, router)
        .with_graceful_shutdown(signals.wait(shutdown))
        .await
        .context("the HTTP server failed")?;
    Ok(())
}

#[cfg(not(unix))]
async fn serve_unix(
    path: &Path,
    _router: Router,
    _signals: StopSignals,
    _shutdown: CancellationToken,
) -> Result<(), Failure> {
    Err(Failure::Usage(format!(
        "--socket {}: Unix sockets are not available on this system",
        path.display()
    )))
}

/// How a changed configuration takes effect in the running server: the pipeline settings and
/// the script tools are replaced, which publishes a new catalog (MCP clients hear
/// `list_changed`). MCP servers added or removed by hand take effect on the next start.
fn apply_to(hub: toolmux_core::Hub, current: toolmux_config::LoadedConfig) -> Apply {
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
        *current = loaded.clone();
        hub.configure(loaded.config.hub_settings());
        if loaded.config.tools.is_empty() {
            hub.remove_source(toolmux_scripts::SOURCE_ID);
        } else {
            hub.add_source(Arc::new(toolmux_scripts::ScriptSource::new(
                &loaded.config.tools,
                &loaded.root,
            )));
        }
    })
}

/// The configured MCP servers as the REST API shows them.
struct UpstreamServers {
    upstreams: Arc<toolmux_upstream::Upstreams>,
    hub: toolmux_core::Hub,
}

impl UpstreamServers {
    fn view(&self, source: &toolmux_upstream::UpstreamSource) -> serde_json::Value {
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
    fn list(&self) -> Vec<serde_json::Value> {
        self.upstreams.iter().map(|s| self.view(s)).collect()
    }

    fn get(&self, name: &str) -> Option<serde_json::Value> {
        self.upstreams.get(name).map(|s| self.view(s))
    }

    async fn refresh(&self, name: &str) -> Option<Result<serde_json::Value, String>> {
        let source = self.upstreams.get(name)?;
        Some(match source.discover().await {
            Ok(_) => Ok(self.view(source)),
            Err(e) => Err(e.to_string()),
        })
    }
}

/// Removes the socket file when the server stops.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The keys from the named environment variables and from `server.apiKeys` (expanded when the
/// configuration was read). A named variable that is unset or empty is an error, and so is an
/// empty configured key: starting without the key someone meant to require would leave the
/// server open.
fn api_keys(vars: &[String], configured: &[String]) -> Result<Vec<String>, Failure> {
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
    for (i, key) in configured.iter().enumerate() {
        if key.trim().is_empty() {
            return Err(Failure::Config(format!(
                "`server.apiKeys[{i}]` is empty (is the variable it refers to set?)"
            )));
        }
        keys.push(key.trim().to_string());
    }
    Ok(keys)
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
