//! What an OAuth client needs to sign in to toolmux when `server.auth` is set: the protected
//! resource metadata (RFC 9728) at `/.well-known/oauth-protected-resource` and at its
//! path-suffixed form for the MCP endpoint (`/.well-known/oauth-protected-resource/mcp`, which
//! MCP clients try first), and the `WWW-Authenticate` challenge of a refused request, which
//! points at that metadata (MCP's authorization spec). Without `server.auth` the metadata is
//! `404`: toolmux then protects nothing with OAuth.
//!
//! Every other `/.well-known/*` path is a JSON `404` too, never the web app's page: an OAuth
//! client probing `/.well-known/oauth-authorization-server` or `openid-configuration` must
//! learn that toolmux is no authorization server, not fail on HTML it cannot read.

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use serde_json::json;

use crate::LiveOptions;
use crate::error::ApiError;
use crate::token_issuer::TokenIssuer;

/// Where the metadata is, relative to the server's origin.
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The metadata routes, behind the Host and Origin checks only: a client reads them before it
/// has a token.
pub fn protected_resource_routes(live: LiveOptions) -> Router {
    let routes = Router::new()
        .route(RESOURCE_METADATA_PATH, get(metadata))
        .route(
            &format!("{RESOURCE_METADATA_PATH}/{{*resource}}"),
            get(metadata),
        )
        .route("/.well-known/{*unknown}", any(not_served))
        .with_state(live.clone());
    crate::page_guarded(live, routes)
}

/// The metadata of the resource the request's path names after the well-known prefix: the
/// origin itself, or a path on it such as `/mcp`.
async fn metadata(State(live): State<LiveOptions>, request: Request) -> Response {
    let options = live.current();
    let Some(issuer) = &options.token_issuer else {
        return ApiError::not_found(
            "no protected-resource metadata here: `server.auth` is not configured",
        )
        .into_response();
    };
    let path = request
        .uri()
        .path()
        .strip_prefix(RESOURCE_METADATA_PATH)
        .unwrap_or_default();
    let resource = format!("{}{path}", origin(request.headers()));
    let settings = issuer.settings();
    let mut document = json!({
        "resource": resource,
        "authorization_servers": [settings.issuer],
        "bearer_methods_supported": ["header"],
        "resource_name": "toolmux",
    });
    if !settings.required_scopes.is_empty() {
        document["scopes_supported"] = json!(settings.required_scopes);
    }
    ([(header::CACHE_CONTROL, "no-cache")], axum::Json(document)).into_response()
}

/// A well-known document toolmux does not publish (it is no authorization server).
async fn not_served(uri: Uri) -> ApiError {
    ApiError::not_found(format!("toolmux serves no `{}`", uri.path()))
}

/// `http(s)://host[:port]` as the client reached the server: the `Host` header (already checked
/// against the allowed hosts by the guard), with `https` behind a proxy that says so.
fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"));
    format!("{}://{host}", if https { "https" } else { "http" })
}

/// What a refusal says about the token, in the challenge.
pub(crate) enum Challenge {
    /// No token was sent.
    NoToken,
    /// A credential was sent and refused.
    InvalidToken,
    /// The token lacks a required scope.
    InsufficientScope,
}

/// Adds the `WWW-Authenticate: Bearer` challenge to a refusal: where the resource metadata is
/// (the MCP endpoint's own form for a request under `/mcp`), the scopes to ask for, and the
/// error when a token was sent.
pub(crate) fn challenge(
    mut response: Response,
    request_headers: &HeaderMap,
    path: &str,
    issuer: &TokenIssuer,
    kind: Challenge,
) -> Response {
    let suffix = if path == "/mcp" || path.starts_with("/mcp/") {
        "/mcp"
    } else {
        ""
    };
    let mut value = format!(
        "Bearer resource_metadata=\"{}{RESOURCE_METADATA_PATH}{suffix}\"",
        origin(request_headers)
    );
    let required = &issuer.settings().required_scopes;
    match kind {
        Challenge::NoToken => {}
        Challenge::InvalidToken => value.push_str(", error=\"invalid_token\""),
        Challenge::InsufficientScope => value.push_str(", error=\"insufficient_scope\""),
    }
    // Every required scope, also after `insufficient_scope`: a client that steps up asks for
    // the union, and a token needs all of them.
    if !required.is_empty() {
        value.push_str(&format!(", scope=\"{}\"", required.join(" ")));
    }
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}
