//! `toolmux serve`: the HTTP server. It carries the MCP endpoint (`/mcp`, streamable HTTP) and
//! the REST API (`/api`, `/metrics`) in one process, on one hub, over TCP or a Unix socket.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use axum::Router;
use axum::serve::ListenerExt;
use toolmux_api::{
    API_PATH, ApiState, Apply, ConfigFiles, ConfigWatcher, ConfigWriter, api_router_with,
};
use toolmux_http::{ConnectionLimits, LiveOptions, OpenApiRouter, mcp_guarded, page_guarded};
use toolmux_mcp_server::{CancellationToken, MCP_PATH, http_router};

use crate::access::{Access, AccessError};
use crate::assembly::Assembly;
use crate::cli::ServeArgs;
use crate::exit::{Failure, OK};
use crate::project::log_dir;

pub async fn run(project: Option<&Path>, args: ServeArgs) -> Result<u8, Failure> {
    let assembly = Arc::new(Assembly::open(project)?);
    // Servers never discovered (or configured differently since) are discovered without
    // holding up start-up.
    assembly.upstreams.discover_stale_in_background();
    let filters = &args.filters;
    let mut options = assembly.mcp_options(
        &filters.tools,
        &filters.exclude,
        filters.pass_through.as_deref(),
        filters.code_mode,
        filters.discovery,
    )?;
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
    let live = assembly.serve_with(access).map_err(|e| match e {
        AccessError::NoKey => Failure::Usage(format!(
            "binding to {} makes the server reachable from other machines, so it needs an \
             API key: put one in an environment variable and pass --api-key-env VAR (or \
             list it in `server.apiKeys`)",
            args.bind
        )),
        AccessError::EmptyKey(_) => Failure::Config(e.to_string()),
    })?;
    let local_token = local_token(&assembly, &args, &live)?;
    // Host, Origin and keys of `/mcp` are checked by the REST API's live guard in front of it.
    options.guarded_in_front = true;
    // MCP clients' approvals and questions wait in the queue the REST API answers, too.
    options.people = Some(assembly.approvals.clone());
    let unspecified_without_hosts = args.bind.is_unspecified()
        && assembly.loaded.config.server.allowed_hosts.is_empty()
        && args.allow_host.is_empty();

    let files = ConfigFiles {
        project_dir: assembly.loaded.project_dir.clone(),
        user_config: toolmux_config::user_config_path(),
        secrets: crate::project::config_secrets(&assembly.loaded.project_dir),
    };
    let chat_engine = assembly.chat_engine()?;
    // The writer's changes and hand edits alike are put in force by the assembly's one reload.
    let apply: Apply = {
        let assembly = assembly.clone();
        Arc::new(move |loaded| assembly.reload(loaded))
    };
    let writer = ConfigWriter::spawn(assembly.hub.clone(), files.clone(), apply.clone());
    // Hand edits are picked up while the server runs; without a watcher they wait for a restart.
    let _watcher = match ConfigWatcher::start(files, apply) {
        Ok(watcher) => Some(watcher),
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the configuration file; edits need a restart");
            None
        }
    };
    let api = ApiState::new(
        assembly.hub.clone(),
        assembly.approvals.clone(),
        assembly.metrics.clone(),
        log_dir(&assembly.loaded.project_dir),
        live.clone(),
        Some(writer),
        Some(assembly.upstream_view()),
    );
    let shutdown = CancellationToken::new();
    // The approvals stream never ends by itself: end it with the server, so that open streams
    // do not hold the graceful shutdown.
    tokio::spawn({
        let (approvals, shutdown) = (assembly.approvals.clone(), shutdown.clone());
        async move {
            shutdown.cancelled().await;
            approvals.close_streams();
        }
    });
    // The chat routes are served with the REST API's: behind its guard, so every HTTP route is
    // checked alike, and in its OpenAPI document, made from the chat's own route list.
    let chat_routes = toolmux_api::chat::router(
        toolmux_api::chat::ChatHttpState::new(chat_engine).with_prompts(assembly.upstream_view()),
    );
    let chat = OpenApiRouter::with_openapi(toolmux_api::chat::openapi())
        .merge(chat_routes.into())
        .merge(toolmux_http::auth_routes(live.clone()));
    let mcp = http_router(assembly.hub.clone(), options, shutdown.clone());
    // The web app is the fallback: every path the API and MCP do not own.
    let page = page_guarded(live.clone(), toolmux_ui::router());
    // `server.auth`'s protected-resource metadata, which OAuth clients read before signing in.
    let oauth = toolmux_http::protected_resource_routes(live.clone());
    let router = mcp_guarded(live, mcp)
        .merge(api_router_with(api, chat))
        .merge(oauth)
        .merge(page);
    let web = WebApp {
        token: local_token,
        state_dir: toolmux_config::state_dir(&assembly.loaded.project_dir),
        open: args.open,
    };
    let limits = connection_limits(&args);
    let signals = StopSignals::install()?;
    let served = match &args.socket {
        Some(path) => {
            if args.open {
                eprintln!(
                    "toolmux: --open needs a TCP address; a browser cannot open a Unix socket"
                );
            }
            // Commands run by `shell` and `code_execution` must not reach toolmux through its
            // own socket (network access by proxy, the API without a key).
            match std::path::absolute(path) {
                Ok(absolute) => assembly.exec_protected.hide(absolute),
                Err(e) => {
                    return Err(Failure::Usage(format!("--socket {}: {e}", path.display())));
                }
            }
            serve_unix(path, router, limits, signals, shutdown).await
        }
        None => {
            serve_tcp(
                SocketAddr::new(args.bind, args.port),
                unspecified_without_hosts,
                web,
                router,
                limits,
                signals,
                shutdown,
            )
            .await
        }
    };
    // Stop the servers (those a background discovery was still starting included) before the
    // runtime goes away under them; `main` then stops whatever escaped their process groups.
    assembly.upstreams.shutdown().await;
    // Coding sessions this server started are cancelled and recorded as such (not found
    // `lost` by the next start), each given the grace its runner gets on a cancel.
    assembly.stop_sessions().await;
    assembly.log.flush();
    served?;
    Ok(OK)
}

/// The local token when `serve` makes one: on loopback TCP without a configured key. Made once
/// per project and reused, so a bookmarked URL and a local MCP client's configuration keep
/// working across restarts. A Unix socket gets none: its file mode (0600) is its guard, as
/// before. On loopback TCP every request needs a credential from now on, even if the keys the
/// server started with are removed while it runs.
fn local_token(
    assembly: &Assembly,
    args: &ServeArgs,
    live: &LiveOptions,
) -> Result<Option<toolmux_http::LocalToken>, Failure> {
    if args.socket.is_some() || !args.bind.is_loopback() {
        return Ok(None);
    }
    live.require_credentials();
    if !live.current().api_keys.is_empty() {
        return Ok(None);
    }
    let state = toolmux_config::state_dir(&assembly.loaded.project_dir);
    let made = toolmux_http::load_or_create(&state).context("cannot make the local token")?;
    live.set_local_token(Some(made.token.clone()));
    Ok(Some(made))
}

/// What `serve` says about the web app, and whether it opens it.
struct WebApp {
    token: Option<toolmux_http::LocalToken>,
    /// The project's state directory, where the server is published for hand-offs while a
    /// local token is in force (`crate::handoff`).
    state_dir: PathBuf,
    open: bool,
}

impl WebApp {
    /// The URL to open: loopback for an unspecified address, the token in the fragment, which
    /// a browser never sends (no server log or `Referer` sees it).
    fn url(&self, address: SocketAddr) -> String {
        let mut address = address;
        if address.ip().is_unspecified() {
            address.set_ip(match address {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        match &self.token {
            Some(made) => format!("http://{address}/#token={}", made.token),
            None => format!("http://{address}/"),
        }
    }
}

async fn serve_tcp(
    address: SocketAddr,
    warn_hosts: bool,
    web: WebApp,
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
    // One-shot commands of the project hand their coding sessions to this server, which
    // they reach with the local token (none: no hand-offs); the entry goes when it stops. Written before the
    // address is printed, so that whoever reads that finds it.
    let _published = web
        .token
        .is_some()
        .then(|| crate::handoff::publish(&web.state_dir, address))
        .flatten();
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
    let url = web.url(address);
    eprintln!("toolmux web app: {url}");
    if let Some(warning) = web.token.as_ref().and_then(|made| made.replaced.as_ref()) {
        eprintln!("toolmux: {warning}");
    }
    if web.open
        && let Err(e) = toolmux_ui::open_in_browser(&url)
    {
        eprintln!("toolmux: {e}; open the URL above yourself");
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

/// The connection limits: the defaults, or `--header-timeout` (how long a request's head and an
/// idle keep-alive connection may take), `--max-connections` and `--max-connections-per-peer`
/// where given.
fn connection_limits(args: &ServeArgs) -> ConnectionLimits {
    let mut limits = ConnectionLimits::default();
    if let Some(timeout) = args.header_timeout {
        limits.header_timeout = timeout;
    }
    if let Some(n) = args.max_connections {
        limits.max_connections = n.get();
    }
    if let Some(n) = args.max_connections_per_peer {
        limits.max_connections_per_peer = Some(n.get());
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
        // From toolmux's kept environment: the key was taken out of the process environment
        // at start, so that no child inherits it.
        match toolmux_core::process_env::var(var) {
            Some(key) if !key.trim().is_empty() => keys.push(key.trim().to_string()),
            _ => {
                return Err(Failure::Usage(format!(
                    "--api-key-env {var}: the environment variable `{var}` is unset or empty"
                )));
            }
        }
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
