//! The MCP server over streamable HTTP, as an axum router mounting `/mcp`: sessions
//! (`Mcp-Session-Id`), resumable SSE streams (`Last-Event-ID`), Host and Origin checks against
//! DNS rebinding, and bearer tokens.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolmux_core::Hub;

use crate::options::ServeOptions;
use crate::server::{McpServer, Shared};

/// The path the MCP endpoint is mounted at.
pub const MCP_PATH: &str = "/mcp";

/// A router serving `hub` as an MCP server at [`MCP_PATH`]. Cancelling `shutdown` ends every
/// session and open SSE stream, so that a graceful HTTP shutdown does not wait on them.
///
/// Serve it with `TCP_NODELAY` on accepted connections (`axum::serve::ListenerExt::tap_io`):
/// responses are SSE streams written in several small pieces, and without it Nagle's algorithm
/// holds each response for the client's delayed ACK, 40 ms on Linux.
///
/// With [`ServeOptions::guarded_in_front`], Host, Origin and keys are left to the caller's
/// middleware.
pub fn http_router(hub: Hub, options: ServeOptions, shutdown: CancellationToken) -> Router {
    let config = StreamableHttpServerConfig::default().with_cancellation_token(shutdown);
    let config = if options.guarded_in_front {
        // rmcp takes its allowed hosts and origins once, here, and offers no way to change them
        // on a running service, so a list that follows the configuration cannot live in it.
        // Turning its checks off (an empty host list allows every Host; an empty origin list
        // without enforcement checks no Origin) is safe only because the caller's middleware
        // runs on every request before rmcp sees it, with the same lists (loopback plus the
        // configured ones) and the same outcome (403). rmcp still refuses a request with no
        // Host at all.
        config.disable_allowed_hosts().disable_allowed_origins()
    } else {
        config
            .with_allowed_hosts(options.effective_allowed_hosts())
            .with_allowed_origins(options.effective_allowed_origins())
            .enforce_origin_validation()
    };
    let keys: Arc<[String]> = if options.guarded_in_front {
        Arc::from([])
    } else {
        options.api_keys.clone().into()
    };
    let shared = Shared::new(hub, options);
    let service = StreamableHttpService::new(
        move || Ok(McpServer::for_session(Arc::clone(&shared))),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = Router::new().route_service(MCP_PATH, service);
    if keys.is_empty() {
        router
    } else {
        router.layer(middleware::from_fn_with_state(keys, require_api_key))
    }
}

/// Why a request was refused by [`check_api_key`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization: Bearer` header.
    #[error("this server requires an API key: send `Authorization: Bearer <key>`")]
    Missing,
    /// A token that is not one of the keys.
    #[error("the API key is not valid")]
    Invalid,
}

/// Checks a request's bearer token against the accepted keys. The one place that decides
/// whether an HTTP request is authenticated, so that the MCP endpoint and the REST API agree.
/// An empty key list accepts every request.
pub fn check_api_key(headers: &HeaderMap, keys: &[String]) -> Result<(), AuthError> {
    if keys.is_empty() {
        return Ok(());
    }
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .ok_or(AuthError::Missing)?;
    if key_is_valid(token, keys) {
        Ok(())
    } else {
        Err(AuthError::Invalid)
    }
}

/// Whether `token` is one of `keys`. Compares against every key, in time that depends only on
/// the lengths, so that timing does not reveal how much of a key a guess got right. The one
/// place that decides what a valid key is, whichever header carried it.
pub fn key_is_valid(token: &str, keys: &[String]) -> bool {
    let mut matched = false;
    for key in keys {
        matched |= constant_time_eq(key.as_bytes(), token.as_bytes());
    }
    matched
}

/// Compares in time that does not depend on where the bytes differ (`subtle`'s comparison,
/// which the optimiser cannot turn into an early exit). Only the length may leak.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

async fn require_api_key(
    State(keys): State<Arc<[String]>>,
    request: Request,
    next: Next,
) -> Response {
    match check_api_key(request.headers(), &keys) {
        Ok(()) => next.run(request).await,
        Err(e) => {
            let body = json!({"error": {"code": "unauthorized", "message": e.to_string()}});
            let mut response = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"toolmux\""),
            );
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = auth {
            h.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(v).expect("ascii"),
            );
        }
        h
    }

    #[test]
    fn no_keys_means_no_token_is_asked_for() {
        assert_eq!(check_api_key(&headers(None), &[]), Ok(()));
    }

    #[test]
    fn a_configured_key_is_required_as_a_bearer_token() {
        let keys = vec!["k-one".to_string(), "k-two".to_string()];
        assert_eq!(
            check_api_key(&headers(None), &keys),
            Err(AuthError::Missing)
        );
        assert_eq!(
            check_api_key(&headers(Some("Basic k-one")), &keys),
            Err(AuthError::Missing)
        );
        assert_eq!(
            check_api_key(&headers(Some("Bearer k-thr")), &keys),
            Err(AuthError::Invalid)
        );
        assert_eq!(
            check_api_key(&headers(Some("Bearer k-one-longer")), &keys),
            Err(AuthError::Invalid)
        );
        assert_eq!(check_api_key(&headers(Some("Bearer k-two")), &keys), Ok(()));
        assert_eq!(
            check_api_key(&headers(Some("bearer  k-one ")), &keys),
            Ok(())
        );
    }
}
