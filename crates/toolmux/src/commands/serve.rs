//! `toolmux serve`: the HTTP server. For now it carries the MCP endpoint (`/mcp`, streamable
//! HTTP); the REST API and the web UI join it in the same process later.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;
use axum::serve::ListenerExt;
use toolmux_mcp_server::{CancellationToken, MCP_PATH, http_router};

use crate::cli::ServeArgs;
use crate::commands::mcp::serve_options;
use crate::exit::{Failure, OK};
use crate::project::Project;

pub async fn run(project: Option<&Path>, args: ServeArgs) -> Result<u8, Failure> {
    let project = Project::open(project)?;
    // Servers never discovered (or configured differently since) are discovered without
    // holding up start-up.
    project.upstreams.discover_stale_in_background();
    let mut options = serve_options(&args.filters, &project.hub)?;
    options.api_keys = api_keys(&args.api_key_env)?;
    options.allowed_origins = args.allow_origin.clone();
    options.allowed_hosts = args.allow_host.clone();
    if !args.bind.is_loopback() {
        if options.api_keys.is_empty() {
            return Err(Failure::Usage(format!(
                "binding to {} makes the server reachable from other machines, so it needs an \
                 API key: put one in an environment variable and pass --api-key-env VAR",
                args.bind
            )));
        }
        // Requests to a specific address carry it in `Host`; accept it without a flag.
        if !args.bind.is_unspecified() {
            options.allowed_hosts.push(args.bind.to_string());
        }
    }

    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .await
        .with_context(|| format!("cannot listen on {}:{}", args.bind, args.port))?;
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
    let shutdown = CancellationToken::new();
    let router = http_router(project.hub.clone(), options, shutdown.clone());
    let signals = StopSignals::install()?;
    eprintln!("toolmux: serving MCP at http://{address}{MCP_PATH}");
    if args.bind.is_unspecified() && args.allow_host.is_empty() {
        eprintln!(
            "toolmux: only loopback Host names are accepted; add the names clients use with --allow-host"
        );
    }
    let served = axum::serve(listener, router)
        .with_graceful_shutdown(signals.wait(shutdown))
        .await
        .context("the HTTP server failed");
    project.log.flush();
    served?;
    Ok(OK)
}

/// The keys from the named environment variables. A named variable that is unset or empty is an
/// error: starting without the key someone meant to require would leave the server open.
fn api_keys(vars: &[String]) -> Result<Vec<String>, Failure> {
    vars.iter()
        .map(|var| match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(key.trim().to_string()),
            _ => Err(Failure::Usage(format!(
                "--api-key-env {var}: the environment variable `{var}` is unset or empty"
            ))),
        })
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
