//! The two eras of MCP one server speaks: the handshake era (`initialize`, a session, up to
//! 2025-11-25) and the stateless one (2026-07-28: no handshake, no session; every request
//! carries its protocol version, client capabilities and client info in `_meta`).
//!
//! rmcp 3.9 does most of the stateless protocol itself: it routes a request that names
//! 2026-07-28 in `_meta` past the session machinery, checks `_meta` (-32602, `400`), the
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers against the body (-32020,
//! `400`), the version (-32022, `400`), answers the methods the revision removed with -32601
//! (`404`), adds `resultType` and refuses server-to-client requests. What it leaves to the
//! server is decided here: which requests are stateless (they get no session, no
//! server-to-client elicitation and no session-wide log level) and what the caching hints say.
//! Their approvals, questions and relayed upstream forms are input-required results
//! (`input_required.rs`).

// rmcp marks `LoggingLevel` deprecated (SEP-2577); 2026-07-28 still carries a request's log
// level in `_meta`.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CacheScope, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, LoggingLevel, ProtocolVersion, ReadResourceResult,
};
use rmcp::service::{RequestContext, RoleServer};

/// The newest revision toolmux serves; every known one before it is served too.
pub(crate) const NEWEST_SUPPORTED: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// Whether `context` is a request of the stateless era: it names 2026-07-28 or later in its
/// `_meta`, or came on a stdio connection that opened that way.
pub(crate) fn is_stateless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// The log level a stateless request asked for in its `_meta` (`io.modelcontextprotocol/
/// logLevel`), in the shape the session-wide level has, so that one delivery path serves both
/// eras: a stateless request that names none gets no log messages.
pub(crate) fn request_log_level(
    context: &RequestContext<RoleServer>,
) -> Arc<Mutex<Option<LoggingLevel>>> {
    Arc::new(Mutex::new(context.meta.log_level()))
}

/// Who may share a cached answer. A listing is the same for every caller of this server (its
/// filters are the server's, not the caller's), so any cache may keep it; a read goes through
/// the caller's own upstream session when its server is served per client, so only the
/// caller's may.
#[derive(Clone, Copy)]
pub(crate) enum Audience {
    Everyone,
    Caller,
}

/// How long an answer may be taken as fresh: not at all. A configuration reload, a discovery or
/// a file change can change any list at any moment; `subscriptions/listen` is how a client
/// learns when to ask again.
const TTL_MS: u64 = 0;

/// A result that carries caching hints on 2026-07-28 (`ttlMs`, `cacheScope`).
pub(crate) trait Cacheable: Sized {
    fn with_hints(self, ttl_ms: u64, scope: CacheScope) -> Self;
}

macro_rules! cacheable {
    ($($result:ty),* $(,)?) => {
        $(impl Cacheable for $result {
            fn with_hints(self, ttl_ms: u64, scope: CacheScope) -> Self {
                self.with_ttl_ms(ttl_ms).with_cache_scope(scope)
            }
        })*
    };
}

cacheable!(
    ListToolsResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
);

/// `result` with the caching hints for `audience` when `context` is a stateless request;
/// unchanged for the handshake era, whose clients get exactly the answers they always had.
pub(crate) fn hinted<T: Cacheable>(
    result: T,
    context: &RequestContext<RoleServer>,
    audience: Audience,
) -> T {
    if !is_stateless(context) {
        return result;
    }
    let scope = match audience {
        Audience::Everyone => CacheScope::Public,
        Audience::Caller => CacheScope::Private,
    };
    result.with_hints(TTL_MS, scope)
}
