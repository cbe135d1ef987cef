//! External MCP servers as toolmux tool sources: the MCP client side of toolmux.
//!
//! Each entry of `mcpServers` becomes an [`UpstreamSource`]. Its tools are read from a
//! discovery cache under `.toolmux/state/servers/` ([`DiscoveryRecord`]), so listing the
//! catalog never starts a process or opens a connection. A server is started (or connected to)
//! on the first call of one of its tools, or by an explicit discovery, and stopped after
//! `idleTimeoutMs` without calls and when toolmux exits. Names are `PREFIX__tool`, kept to the
//! registry alphabet ([`registry_names`]).
//!
//! Transports: stdio (a child process in its own process group, stderr to the server's log),
//! streamable HTTP (rmcp's client, which re-establishes a session the server forgot), and the
//! legacy HTTP+SSE transport ([`SseTransport`], written here because rmcp has none).
//!
//! This crate and `toolmux-mcp-server` are the only ones that know rmcp; everything it hands
//! out is core types.

mod cache;
mod callers;
mod connection;
mod elicitation;
mod error;
mod judging;
mod names;
mod pinning;
mod relay;
mod schema;
mod servers;
mod source;
mod sse;
mod stdio;
mod streamable;
pub mod wire;

pub use cache::{
    CachedTool, DiscoveryRecord, DiscoveryStatus, ServerIdentity, ServerOffers, ServerPaths,
    config_hash,
};
pub use connection::MAX_TOOL_PAGES;
pub use error::UpstreamError;
pub use names::{MAX_NAME_LEN, registry_names};
pub use pinning::{MAX_PINS_BYTES, pins_path};
pub use relay::{Relay, RelayError, Relayed, Unknown};
pub use schema::{MAX_SCHEMA_BYTES, Sanitised, input_schema, output_schema};
pub use servers::{ApplyReport, Upstreams, state_dir};
pub use source::{
    Backoff, CALL_RETRIES, DiscoveryOutcome, ResourceUpdate, ServerSpec, UpstreamSource,
};
pub use sse::{SseError, SseTransport};
/// The OAuth client this crate signs in to servers with (`toolmux mcp login`, the REST API).
pub use toolmux_oauth;
