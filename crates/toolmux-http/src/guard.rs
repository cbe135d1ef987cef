//! Who may use the HTTP routes: Host and Origin checks against DNS rebinding, and API keys sent
//! as `Authorization: Bearer <key>` or `X-API-Key: <key>`, checked by the one bearer-token
//! check ([`check_api_key`]). Every HTTP route of `toolmux serve` passes this guard: the REST
//! API's and the chat's through [`guarded`], the MCP endpoint's through [`mcp_guarded`].
//!
//! Once any key is configured, every request needs it except reads of the catalog, health and
//! the OpenAPI document ([`OPEN_READS`]): a route that calls a tool (`/api/files*` included),
//! reads the log, a conversation, an approval, a relayed prompt or resource, or the metrics,
//! needs the key on loopback too, because on a shared host loopback is no boundary. Without a
//! configured key, reads are open on loopback and a change (any method but `GET` and `HEAD`) is
//! refused with how to configure one. When the server is reachable beyond loopback, every
//! request needs a key. A key that is sent must be valid, even where none is needed.
//!
//! The MCP endpoint passes the same Host and Origin checks ([`mcp_guarded`]), with MCP's own
//! key rule: every request needs a key once any is configured. Both read the [`LiveOptions`]
//! on each request, so a key added to or removed from the configuration counts at once.

use std::sync::{Arc, PoisonError, RwLock};

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Who may use the HTTP routes.
#[derive(Clone, Debug, Default)]
pub struct ApiOptions {
    /// Accepted keys. Once there is one, every request needs one of them except a read of
    /// [`OPEN_READS`]; without any, a request that changes anything is refused.
    pub api_keys: Vec<String>,
    /// Every request needs a key, reads too: set when the server is reachable beyond loopback.
    pub require_key_for_reads: bool,
    /// Accepted `Host` values (name, or name and port); loopback names belong here too.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` values; `scheme://host:*` takes any port.
    pub allowed_origins: Vec<String>,
}

/// The [`ApiOptions`] in force, shared by every HTTP route and replaced as a whole when the
/// configuration changes, so that a revoked key is refused by the very next request on `/api`
/// and `/mcp` alike. Each request reads one snapshot; a change never splits a request's checks
/// between two versions.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions(Arc<RwLock<Arc<ApiOptions>>>);

impl LiveOptions {
    /// Options that start as `options`.
    pub fn new(options: ApiOptions) -> Self {
        Self(Arc::new(RwLock::new(Arc::new(options))))
    }

    /// The options in force now.
    pub fn current(&self) -> Arc<ApiOptions> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Puts `options` in force for every request that starts from now on.
    pub fn replace(&self, options: ApiOptions) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(options);
    }
}

impl From<ApiOptions> for LiveOptions {
    fn from(options: ApiOptions) -> Self {
        Self::new(options)
    }
}

/// The header that carries a key as an alternative to `Authorization: Bearer`.
pub const API_KEY_HEADER: &str = "x-api-key";

/// The routes (as registered, with their `{parameters}`) that a `GET` may read without a key on
/// loopback even when keys are configured: the catalog, which never starts anything and shows
/// what a model would see anyway, health, and the API's description. Every other route is
/// closed to keyless requests once a key exists; a new route is closed unless it is added here.
const OPEN_READS: [&str; 4] = [
    "/api/tools",
    "/api/tools/{name}",
    "/api/health",
    "/api/openapi.json",
];

/// What the middleware learned about a request's caller; handlers read it as an extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The request carried a valid API key.
    pub authenticated: bool,
}

/// Puts `routes` (the REST API's, the chat's) behind the guard: Host and Origin checks, and
/// API keys — once any is configured, needed by every request but a read of [`OPEN_READS`];
/// without one, needed by every request that changes something; beyond loopback, needed by
/// every request. Handlers read the [`Caller`] it records.
pub fn guarded<S: Clone + Send + Sync + 'static>(
    options: LiveOptions,
    routes: Router<S>,
) -> Router<S> {
    routes.layer(axum::middleware::from_fn_with_state(options, guard))
}

/// Refuses requests with a foreign Host or Origin, checks the key, and records the caller.
async fn guard(State(options): State<LiveOptions>, mut request: Request, next: Next) -> Response {
    let options = options.current();
    if let Err(e) = check_host(request.headers(), &options.allowed_hosts) {
        return e.into_response();
    }
    if let Err(e) = check_origin(request.headers(), &options.allowed_origins) {
        return e.into_response();
    }
    let authenticated = match authenticate(request.headers(), &options.api_keys) {
        Ok(authenticated) => authenticated,
        Err(e) => return e.into_response(),
    };
    if !authenticated && let Some(message) = key_needed(&request, &options) {
        return ApiError::unauthorized(message).into_response();
    }
    request.extensions_mut().insert(Caller { authenticated });
    next.run(request).await
}

/// Why a request without a valid key is refused, or `None` when it may go on without one.
fn key_needed(request: &Request, options: &ApiOptions) -> Option<&'static str> {
    let reads_only = matches!(*request.method(), Method::GET | Method::HEAD);
    if !reads_only {
        return Some(if options.api_keys.is_empty() {
            "this request needs an API key, and none is configured: add one to `server.apiKeys` \
             in the configuration (as a `${VAR}` reference) or pass --api-key-env VAR"
        } else {
            "this request changes state and needs an API key: send `Authorization: Bearer <key>` \
             or `X-API-Key: <key>`"
        });
    }
    if options.require_key_for_reads {
        return Some(
            "this server is reachable beyond loopback, so every request needs an API key: send \
             `Authorization: Bearer <key>` or `X-API-Key: <key>`",
        );
    }
    let open = request
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|route| OPEN_READS.contains(&route.as_str()));
    if options.api_keys.is_empty() || open {
        None
    } else {
        Some(
            "this server has API keys, so reading anything but the tool catalog and health needs \
             one: send `Authorization: Bearer <key>` or `X-API-Key: <key>`",
        )
    }
}

/// Puts the MCP endpoint's router (`toolmux_mcp_server::http_router`, built with
/// `guarded_in_front`) behind the Host, Origin and key checks of `options`, read on every
/// request. rmcp's own checks take their lists once, when the router is built; these follow
/// the configuration while the server runs.
pub fn mcp_guarded(options: LiveOptions, routes: Router) -> Router {
    routes.layer(axum::middleware::from_fn_with_state(options, mcp_guard))
}

/// MCP's rules: a foreign Host or Origin is refused (against DNS rebinding, like rmcp's check),
/// and once any key is configured every request needs one as a bearer token — an MCP client
/// has no notion of "reads".
async fn mcp_guard(State(options): State<LiveOptions>, request: Request, next: Next) -> Response {
    let options = options.current();
    if let Err(e) = check_host(request.headers(), &options.allowed_hosts) {
        return e.into_response();
    }
    if let Err(e) = check_origin(request.headers(), &options.allowed_origins) {
        return e.into_response();
    }
    if let Err(e) = check_api_key(request.headers(), &options.api_keys) {
        return ApiError::unauthorized(e.to_string()).into_response();
    }
    next.run(request).await
}

/// `Ok(true)` for a valid key, `Ok(false)` when none was sent, an error for a wrong one (or any
/// key when none is configured: a client that sends one expects it to be checked).
fn authenticate(headers: &HeaderMap, keys: &[String]) -> Result<bool, ApiError> {
    let x_api_key = headers.get(API_KEY_HEADER);
    let sent = headers.contains_key(header::AUTHORIZATION) || x_api_key.is_some();
    if !sent {
        return Ok(false);
    }
    if keys.is_empty() {
        return Err(ApiError::unauthorized(
            "an API key was sent, but this server has none configured",
        ));
    }
    // Every key that was sent must be valid: a right `X-API-Key` does not excuse a wrong
    // `Authorization`, or the other way round.
    if headers.contains_key(header::AUTHORIZATION) {
        match check_api_key(headers, keys) {
            Ok(()) => {}
            Err(AuthError::Missing) => {
                return Err(ApiError::unauthorized(
                    "the Authorization header must be `Bearer <key>` (or send `X-API-Key: <key>`)",
                ));
            }
            Err(AuthError::Invalid) => {
                return Err(ApiError::unauthorized("the API key is not valid"));
            }
        }
    }
    if let Some(key) = x_api_key {
        let valid = key.to_str().is_ok_and(|k| key_is_valid(k.trim(), keys));
        if !valid {
            return Err(ApiError::unauthorized("the API key is not valid"));
        }
    }
    Ok(true)
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
fn check_api_key(headers: &HeaderMap, keys: &[String]) -> Result<(), AuthError> {
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
fn key_is_valid(token: &str, keys: &[String]) -> bool {
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

/// The host name of a `Host` value, without its port (`[::1]:7700` → `::1`).
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    }
}

fn check_host(headers: &HeaderMap, allowed: &[String]) -> Result<(), ApiError> {
    // HTTP/1.1 requires Host, and the check cannot vouch for a request without one; refused
    // as rmcp refuses it, so `/mcp` and `/api` answer alike.
    let Some(host) = headers.get(header::HOST) else {
        return Err(ApiError::forbidden(
            "the request has no Host header (a guard against DNS rebinding)",
        ));
    };
    let host = host
        .to_str()
        .map_err(|_| ApiError::forbidden("the Host header is not valid text"))?;
    let name = host_name(host);
    if allowed
        .iter()
        .any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(name))
    {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "Host `{host}` is not allowed (a guard against DNS rebinding): start the server with \
             --allow-host {name} or add it to `server.allowedHosts`"
        )))
    }
}

/// Whether `origin` matches a pattern such as `http://localhost:*` or `https://app.example.com`.
fn origin_matches(pattern: &str, origin: &str) -> bool {
    if let Some(prefix) = pattern.strip_suffix(":*") {
        if origin.eq_ignore_ascii_case(prefix) {
            return true;
        }
        return origin
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
            && origin[prefix.len()..]
                .strip_prefix(':')
                .is_some_and(|port| !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()));
    }
    without_default_port(pattern).eq_ignore_ascii_case(without_default_port(origin))
}

/// An origin without its scheme's default port (`https://a.example:443` → `https://a.example`):
/// a browser leaves the default port out of `Origin`, and configurations often write it in.
fn without_default_port(origin: &str) -> &str {
    let default = if origin
        .get(..8)
        .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
    {
        ":443"
    } else if origin
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
    {
        ":80"
    } else {
        return origin;
    };
    origin.strip_suffix(default).unwrap_or(origin)
}

fn check_origin(headers: &HeaderMap, allowed: &[String]) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin
        .to_str()
        .map_err(|_| ApiError::forbidden("the Origin header is not valid text"))?;
    if allowed.iter().any(|p| origin_matches(p, origin)) {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "Origin `{origin}` is not allowed: start the server with --allow-origin {origin} or \
             add it to `server.allowedOrigins`"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).expect("ascii"));
        }
        h
    }

    #[test]
    fn a_key_is_accepted_as_bearer_token_or_x_api_key() {
        let keys = vec!["secret".to_string()];
        assert_eq!(authenticate(&headers(&[]), &keys).ok(), Some(false));
        assert_eq!(
            authenticate(&headers(&[("authorization", "Bearer secret")]), &keys).ok(),
            Some(true)
        );
        assert_eq!(
            authenticate(&headers(&[("x-api-key", "secret")]), &keys).ok(),
            Some(true)
        );
        let wrong = authenticate(&headers(&[("x-api-key", "secreT")]), &keys);
        assert_eq!(
            wrong.map_err(|e| e.to_string()),
            Err("the API key is not valid".to_string())
        );
    }

    #[test]
    fn every_key_sent_must_be_valid_whichever_header_carries_it() {
        let keys = vec!["secret".to_string()];
        for sent in [
            [("authorization", "Bearer wrong"), ("x-api-key", "secret")],
            [("authorization", "Bearer secret"), ("x-api-key", "wrong")],
        ] {
            let refused = authenticate(&headers(&sent), &keys);
            assert_eq!(
                refused.map_err(|e| e.to_string()),
                Err("the API key is not valid".to_string()),
                "{sent:?}"
            );
        }
        let both_right = [("authorization", "Bearer secret"), ("x-api-key", "secret")];
        assert_eq!(authenticate(&headers(&both_right), &keys).ok(), Some(true));
    }

    #[test]
    fn host_names_are_compared_without_their_port() {
        let allowed = vec!["localhost".to_string(), "::1".to_string()];
        assert!(check_host(&headers(&[("host", "localhost:7700")]), &allowed).is_ok());
        assert!(check_host(&headers(&[("host", "[::1]:7700")]), &allowed).is_ok());
        assert!(check_host(&headers(&[("host", "evil.example:7700")]), &allowed).is_err());
    }

    #[test]
    fn origin_patterns_take_any_port_after_a_star() {
        assert!(origin_matches(
            "http://localhost:*",
            "http://localhost:3000"
        ));
        assert!(origin_matches("http://localhost:*", "http://localhost"));
        assert!(!origin_matches(
            "http://localhost:*",
            "http://localhost.evil:3000"
        ));
        assert!(!origin_matches(
            "http://localhost:*",
            "http://localhostevil"
        ));
        assert!(origin_matches(
            "https://app.example.com",
            "https://app.example.com"
        ));
    }

    #[test]
    fn an_origin_matches_with_or_without_its_schemes_default_port() {
        assert!(origin_matches(
            "https://app.example.com:443",
            "https://app.example.com"
        ));
        assert!(origin_matches(
            "https://app.example.com",
            "https://app.example.com:443"
        ));
        assert!(origin_matches("http://intranet:80", "http://intranet"));
        assert!(!origin_matches(
            "https://app.example.com:443",
            "http://app.example.com"
        ));
        assert!(!origin_matches(
            "https://app.example.com:8443",
            "https://app.example.com"
        ));
    }

    fn auth_headers(auth: Option<&str>) -> HeaderMap {
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
        assert_eq!(check_api_key(&auth_headers(None), &[]), Ok(()));
    }

    #[test]
    fn a_configured_key_is_required_as_a_bearer_token() {
        let keys = vec!["k-one".to_string(), "k-two".to_string()];
        assert_eq!(
            check_api_key(&auth_headers(None), &keys),
            Err(AuthError::Missing)
        );
        assert_eq!(
            check_api_key(&auth_headers(Some("Basic k-one")), &keys),
            Err(AuthError::Missing)
        );
        assert_eq!(
            check_api_key(&auth_headers(Some("Bearer k-thr")), &keys),
            Err(AuthError::Invalid)
        );
        assert_eq!(
            check_api_key(&auth_headers(Some("Bearer k-one-longer")), &keys),
            Err(AuthError::Invalid)
        );
        assert_eq!(
            check_api_key(&auth_headers(Some("Bearer k-two")), &keys),
            Ok(())
        );
        assert_eq!(
            check_api_key(&auth_headers(Some("bearer  k-one ")), &keys),
            Ok(())
        );
    }

    /// Issue 12, D8: once a key is configured, a keyless read is open only on [`OPEN_READS`].
    #[tokio::test]
    async fn d8_with_keys_a_keyless_read_passes_only_on_the_open_routes() {
        use axum::routing::get;
        use tower::ServiceExt;

        let status = |options: ApiOptions, path: &'static str, key: Option<&'static str>| async move {
            let routes = Router::new()
                .route("/api/tools", get(|| async { "catalog" }))
                .route("/api/tools/{name}", get(|| async { "tool" }))
                .route("/api/logs", get(|| async { "log" }))
                .route("/api/files/content", get(|| async { "file" }));
            let mut request = Request::get(path).header(header::HOST, "localhost");
            if let Some(key) = key {
                request = request.header(header::AUTHORIZATION, format!("Bearer {key}"));
            }
            let request = request.body(axum::body::Body::empty()).expect("request");
            guarded(LiveOptions::new(options), routes)
                .oneshot(request)
                .await
                .expect("infallible")
                .status()
                .as_u16()
        };
        let keyed = || ApiOptions {
            api_keys: vec!["k".into()],
            allowed_hosts: vec!["localhost".into()],
            ..ApiOptions::default()
        };
        assert_eq!(status(keyed(), "/api/tools", None).await, 200);
        assert_eq!(status(keyed(), "/api/tools/grep", None).await, 200);
        assert_eq!(status(keyed(), "/api/logs", None).await, 401);
        assert_eq!(status(keyed(), "/api/files/content", None).await, 401);
        assert_eq!(status(keyed(), "/api/logs", Some("k")).await, 200);
        let keyless = || ApiOptions {
            allowed_hosts: vec!["localhost".into()],
            ..ApiOptions::default()
        };
        assert_eq!(status(keyless(), "/api/logs", None).await, 200);
    }
}
