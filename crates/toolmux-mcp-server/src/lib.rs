//! The MCP server channel: serves a toolmux hub to MCP clients (Claude Code, Codex, Cursor,
//! VS Code, goose) over stdio and streamable HTTP.
//!
//! This crate and the upstream client are the only ones that know rmcp's types. It converts
//! between them and the core's types at its edge: `tools/list` is the hub's catalog (internal
//! tools never appear), `tools/call` runs through the hub's pipeline on the `mcp` channel, `ask`
//! policies become elicitation requests, and a new catalog becomes
//! `notifications/tools/list_changed`. Resources are the upstream servers' and toolmux's own
//! (`spec://…`, [`ServeOptions::resources`]), merged by the one relay, with
//! `notifications/resources/list_changed` when either list changes.
//!
//! Both eras of MCP are served on the same endpoint: a client that sends `initialize`
//! (2025-11-25 or older) gets a session; a 2026-07-28 client gets the stateless protocol
//! (`server/discover`, `_meta` on every request, caching hints, `subscriptions/listen`, forms
//! as input-required results); see `revision.rs` for what rmcp does and what is decided here.

mod approval;
mod backchannel;
mod convert;
mod http;
mod input_required;
mod listen;
mod options;
mod relay;
mod revision;
mod server;
mod sessions;

pub use approval::{ALLOW_ONCE, ALLOW_SESSION, DECISION_FIELD, DENY};
pub use http::{ENDPOINT_PATH, MCP_PATH, http_router};
pub use options::{LOOPBACK_HOSTS, ServeOptions};
pub use server::McpServer;
pub use sessions::{DEFAULT_SESSION_IDLE_TIMEOUT, LiveSessions};
pub use tokio_util::sync::CancellationToken;

use rmcp::ServiceExt;
use toolmux_core::Hub;

/// Why serving over stdio stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The client did not complete the `initialize` handshake.
    #[error("the MCP client did not complete the handshake: {0}")]
    Handshake(String),
    /// The server task ended abnormally.
    #[error("the MCP server stopped unexpectedly: {0}")]
    Stopped(String),
}

/// Serves `hub` over this process's stdin and stdout until the client closes stdin. Stdout
/// carries nothing but protocol messages; logs belong on stderr.
pub async fn serve_stdio(hub: Hub, options: ServeOptions) -> Result<(), ServeError> {
    let (stdin, stdout) = rmcp::transport::stdio();
    serve_on(hub, options, stdin, stdout).await
}

/// Serves `hub` on any byte stream pair speaking newline-delimited JSON-RPC, the stdio framing.
/// [`serve_stdio`] is this on stdin and stdout; tests and benchmarks use pipes.
pub async fn serve_on<R, W>(
    hub: Hub,
    options: ServeOptions,
    reader: R,
    writer: W,
) -> Result<(), ServeError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let running = McpServer::new(hub, options)
        .serve((reader, writer))
        .await
        .map_err(|e| ServeError::Handshake(e.to_string()))?;
    let reason = running
        .waiting()
        .await
        .map_err(|e| ServeError::Stopped(e.to_string()))?;
    tracing::debug!(?reason, "MCP stdio session ended");
    Ok(())
}
