//! Who may use the HTTP routes: Host and Origin checks against DNS rebinding and other
//! origins, and credentials. Every HTTP route of `toolmux serve` passes this guard: the REST
//! API's and the chat's through [`guarded`], the MCP endpoint's through [`mcp_guarded`], the web
//! app's page through [`page_guarded`] (Host and Origin only: the page itself holds no data).
//!
//! An `Origin` must be the request's own (the scheme, host *and port* it was sent to: another
//! port on the same host is another origin) or one configured exactly; a request that changes
//! something must be one a browser preflights ([`check_preflighted`]): `Content-Type:
//! application/json`, or a credential header, which no page of another origin can send without
//! a preflight this server never grants.
//!
//! A credential is a configured API key or the project's local token, sent as
//! `Authorization: Bearer <key>` or `X-API-Key: <key>` and checked in constant time
//! ([`key_is_valid`]), or the web app's session — its cookie *and* the session key the page
//! sends as `X-Toolmux-Session`; the cookie alone is nothing, since cookies are not bound to a
//! port ([`crate::auth`]) — or, with `server.auth`, an access token (a JWT) from
//! the configured issuer ([`crate::bearer`]), whose refusals carry the OAuth challenge MCP
//! clients sign in by. Each credential is the owner's but an access token, which is the
//! owner's only with one of `server.adminScopes` ([`Caller::owner`]). One rule for `/api`, `/mcp` and `/metrics`: once
//! the server has a key or a local token, every request needs a credential except `GET
//! /api/health` and the auth routes ([`OPEN_ROUTES`]). Without either (a Unix socket, which its
//! file mode guards, with no key configured), reads and MCP are open and a change is refused
//! with how to configure a key. A credential that is sent must be valid, even where none is
//! needed. Every check reads the [`LiveOptions`] on each request, so a key added to or removed
//! from the configuration counts at once.

use std::sync::{Arc, PoisonError, RwLock};

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::{Credentials, Via, session_secret};
use crate::bearer;
use crate::error::ApiError;
use crate::token_issuer::Principal;

/// Who may use the HTTP routes.
#[derive(Clone, Debug, Default)]
pub struct ApiOptions {
    /// Accepted keys. Once there is one, every request needs one of them except a read of
    /// [`OPEN_ROUTES`]; without any, a request that changes anything is refused.
    pub api_keys: Vec<String>,
    /// Every request needs a key, reads too: set when the server is reachable beyond loopback.
    pub require_key_for_reads: bool,
    /// Accepted `Host` values (name, or name and port); loopback names belong here too.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted besides the request's own origin (the scheme, host and port
    /// it was sent to, which is always accepted); `scheme://host:*` takes any port, and is never
    /// a default.
    pub allowed_origins: Vec<String>,
    /// The issuer whose JWT access tokens count as credentials too (`server.auth`); with one,
    /// every request needs a credential, and refusals carry an OAuth challenge.
    pub token_issuer: Option<Arc<crate::token_issuer::TokenIssuer>>,
    /// Scopes of the issuer's access tokens that make their holder the owner's equal
    /// (`server.adminScopes`): internal tools, registry and configuration writes. Without one,
    /// a token holder may list and call tools only.
    pub admin_scopes: Vec<String>,
    /// The configured principals' keys: each key's SHA-256 and the principal it speaks for.
    /// Such a key is a credential that is not the owner's: what its principal's roles grant.
    pub principal_keys: Vec<([u8; 32], String)>,
    /// Access-token subjects (`sub`) that speak for a configured principal, and its name.
    pub principal_subjects: Vec<(String, String)>,
}

/// The [`ApiOptions`] in force, shared by every HTTP route and replaced as a whole when the
/// configuration changes, so that a revoked key is refused by the very next request on `/api`
/// and `/mcp` alike. Each request reads one snapshot; a change never splits a request's checks
/// between two versions.
/// Beside them it keeps what lives as long as the process, whatever the configuration says: the
/// local token and the web app's sessions.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions(Arc<RwLock<Arc<ApiOptions>>>, Arc<Credentials>);

impl LiveOptions {
    /// Options that start as `options`.
    pub fn new(options: ApiOptions) -> Self {
        Self(Arc::new(RwLock::new(Arc::new(options))), Arc::default())
    }

    /// The options in force now.
    pub fn current(&self) -> Arc<ApiOptions> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Puts `options` in force for every request that starts from now on.
    pub fn replace(&self, options: ApiOptions) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(options);
    }

    /// Accepts `token` (the project's local token) as a credential from now on, for as long as
    /// no key is configured: keys, once there are some, are the only keys.
    pub fn set_local_token(&self, token: Option<String>) {
        self.1.set_local_token(token);
    }

    /// Every request on a guarded route needs a credential from now on, whatever the
    /// configuration later says: a server on loopback TCP stays closed when its keys are
    /// removed while it runs (until a restart makes a local token).
    pub fn require_credentials(&self) {
        self.1.require();
    }

    pub(crate) fn credentials(&self) -> &Credentials {
        &self.1
    }
}

impl From<ApiOptions> for LiveOptions {
    fn from(options: ApiOptions) -> Self {
        Self::new(options)
    }
}

/// The header that carries a key as an alternative to `Authorization: Bearer`.
pub const API_KEY_HEADER: &str = "x-api-key";

/// The routes (as registered, with their `{parameters}`) open to requests without a credential
/// even when one exists: health, which load balancers and the page poll, and the auth routes,
/// where the page gets its cookie. Every other route is closed to requests without one once a
/// key or a local token exists; a new route is closed unless it is added here.
const OPEN_ROUTES: [&str; 3] = [
    "/api/health",
    crate::auth::AUTH_ROUTES[0],
    crate::auth::AUTH_ROUTES[1],
];

/// What the middleware learned about a request's caller; handlers read it as an extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The request carried a valid credential (a key, the local token, the web app's session
    /// or an access token).
    pub authenticated: bool,
    /// Which one.
    pub via: Option<Via>,
    /// The credential is the owner's: a configured key, the local token, the web app's session
    /// made with one of them, or an access token that grants one of `server.adminScopes`. Only
    /// the owner is trusted with internal tools, secrets, and registry and configuration
    /// writes; trust comes from the kind of credential, never from being authenticated at all.
    pub owner: bool,
}

/// Puts `routes` (the REST API's, the chat's) behind the guard: Host and Origin checks, and
/// API keys — once any is configured, needed by every request but a read of [`OPEN_ROUTES`];
/// without one, needed by every request that changes something; beyond loopback, needed by
/// every request. Handlers read the [`Caller`] it records.
pub fn guarded<S: Clone + Send + Sync + 'static>(
    options: LiveOptions,
    routes: Router<S>,
) -> Router<S> {
    routes.layer(axum::middleware::from_fn_with_state(options, guard))
}

/// Refuses requests with a foreign Host or Origin, checks the key, and records the caller.
async fn guard(State(live): State<LiveOptions>, mut request: Request, next: Next) -> Response {
    let options = live.current();
    if let Err(e) = check_host_and_origin(request.headers(), &options) {
        return e.into_response();
    }
    let found = match bearer::authenticate(request.headers(), &live, &options).await {
        Ok(found) => found,
        Err(refusal) => {
            return bearer::refused(refusal, request.headers(), request.uri().path(), &options);
        }
    };
    if found.via.is_none()
        && let Some(message) = credential_needed(&request, &live, &options)
    {
        return bearer::credential_missing(
            message,
            request.headers(),
            request.uri().path(),
            &options,
        );
    }
    if let Err(e) = check_preflighted(request.method(), request.headers()) {
        return e.into_response();
    }
    request.extensions_mut().insert(Caller {
        authenticated: found.via.is_some(),
        via: found.via,
        owner: found.owner,
    });
    Principal::scope(found.principal, next.run(request)).await
}

/// What a request without a credential is told.
const SEND_A_CREDENTIAL: &str = "this request needs a credential: open the web app with the URL \
    `toolmux serve` printed, or send the project's local token (`.toolmux/state/local-token`) or \
    a configured API key as `Authorization: Bearer <key>` or `X-API-Key: <key>`";

/// Why a request without a credential is refused, or `None` when it may go on without one.
fn credential_needed(
    request: &Request,
    live: &LiveOptions,
    options: &ApiOptions,
) -> Option<&'static str> {
    let open = request
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|route| OPEN_ROUTES.contains(&route.as_str()));
    if open {
        return None;
    }
    if options.require_key_for_reads {
        return Some(
            "this server is reachable beyond loopback, so every request needs an API key: send \
             `Authorization: Bearer <key>` or `X-API-Key: <key>`",
        );
    }
    if !options.api_keys.is_empty()
        || !options.principal_keys.is_empty()
        || live.credentials().required()
        || options.token_issuer.is_some()
    {
        return Some(SEND_A_CREDENTIAL);
    }
    // No key and no local token: a Unix socket, which its file mode guards. Reads stay open;
    // a change needs a key, which does not exist yet.
    let reads_only = matches!(*request.method(), Method::GET | Method::HEAD);
    (!reads_only).then_some(
        "this request needs an API key, and none is configured: add one to `server.apiKeys` in \
         the configuration (as a `${VAR}` reference) or pass --api-key-env VAR",
    )
}

/// Puts the web app's page and assets behind the Host and Origin checks only: the page holds
/// no data, and it must load before the person has logged in.
pub fn page_guarded(options: LiveOptions, routes: Router) -> Router {
    routes.layer(axum::middleware::from_fn_with_state(options, page_guard))
}

async fn page_guard(State(live): State<LiveOptions>, request: Request, next: Next) -> Response {
    if let Err(e) = check_host_and_origin(request.headers(), &live.current()) {
        return e.into_response();
    }
    next.run(request).await
}

fn check_host_and_origin(headers: &HeaderMap, options: &ApiOptions) -> Result<(), ApiError> {
    check_host(headers, &options.allowed_hosts)?;
    check_origin(headers, &options.allowed_origins)
}

/// The headers a page of another origin cannot make a browser send without a preflight, which
/// this server never grants (it answers no CORS): a request that carries one was sent by a
/// same-origin page or by a program that is no browser.
const PREFLIGHTED_HEADERS: [&str; 4] = [
    "authorization",
    API_KEY_HEADER,
    crate::auth::SESSION_HEADER,
    "mcp-session-id",
];

/// Whether the request carries one of [`PREFLIGHTED_HEADERS`]: it comes from a same-origin
/// page or from a program that is no browser.
pub(crate) fn carries_preflighted_header(headers: &HeaderMap) -> bool {
    PREFLIGHTED_HEADERS.iter().any(|h| headers.contains_key(*h))
}

/// Refuses a request that changes something unless a browser would have preflighted it: its
/// `Content-Type` is JSON, or it carries one of [`PREFLIGHTED_HEADERS`]. A "simple" request
/// (`text/plain`, a form, `multipart/form-data`, no type at all; `mode: "no-cors"`) is one any
/// page can send anywhere, with the browser's cookies and without asking; it never changes
/// anything here, whatever it carries. Reads (`GET`, `HEAD`) and preflights (`OPTIONS`) pass.
pub(crate) fn check_preflighted(method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(crate::extract::is_json);
    if json || carries_preflighted_header(headers) {
        return Ok(());
    }
    Err(ApiError::unsupported_media_type(
        "a request that changes something must send `Content-Type: application/json` or a \
         credential header (`Authorization`, `X-API-Key`, or the web app's `X-Toolmux-Session`): \
         a form or plain-text request could come from any web page",
    ))
}

/// Puts the MCP endpoint's router (`toolmux_mcp_server::http_router`, built with
/// `guarded_in_front`) behind the Host, Origin and key checks of `options`, read on every
/// request. rmcp's own checks take their lists once, when the router is built; these follow
/// the configuration while the server runs.
pub fn mcp_guarded(options: LiveOptions, routes: Router) -> Router {
    routes.layer(axum::middleware::from_fn_with_state(options, mcp_guard))
}

/// MCP's rules: a foreign Host or Origin is refused (against DNS rebinding, like rmcp's check),
/// and once the server has a key or a local token every request needs a credential — an MCP
/// client has no notion of "reads". Every refusal is a JSON-RPC error ([`as_json_rpc`]).
async fn mcp_guard(State(live): State<LiveOptions>, request: Request, next: Next) -> Response {
    match admit_mcp(&live, request).await {
        Ok(request) => next.run(request).await,
        Err(refusal) => as_json_rpc(refusal),
    }
}

/// The request, with the token's principal recorded, when `/mcp`'s rules let it through; the
/// refusal otherwise.
async fn admit_mcp(live: &LiveOptions, mut request: Request) -> Result<Request, Response> {
    let options = live.current();
    check_host_and_origin(request.headers(), &options).map_err(IntoResponse::into_response)?;
    let found = match bearer::authenticate(request.headers(), live, &options).await {
        Ok(found) => found,
        Err(refusal) => {
            return Err(bearer::refused(
                refusal,
                request.headers(),
                request.uri().path(),
                &options,
            ));
        }
    };
    let (via, principal) = (found.via, found.principal);
    let needed = !options.api_keys.is_empty()
        || !options.principal_keys.is_empty()
        || options.require_key_for_reads
        || live.credentials().required()
        || options.token_issuer.is_some();
    if via.is_none() && needed && options.token_issuer.is_some() {
        return Err(bearer::credential_missing(
            SEND_A_CREDENTIAL,
            request.headers(),
            request.uri().path(),
            &options,
        ));
    }
    if via.is_none() && needed {
        // `ApiError`'s 401 carries the challenge an MCP client that knows only OAuth looks
        // for (`Bearer realm="toolmux"`); toolmux takes a bearer token.
        return Err(ApiError::unauthorized(SEND_A_CREDENTIAL).into_response());
    }
    check_preflighted(request.method(), request.headers()).map_err(IntoResponse::into_response)?;
    // rmcp hands the request's parts, extensions included, to the handler: the MCP channel
    // names the token's principal as the caller of its calls.
    if let Some(principal) = principal {
        request.extensions_mut().insert(principal);
    }
    Ok(request)
}

/// JSON-RPC's server error for a request refused before it reached MCP (`-32000`, as the MCP
/// SDKs answer a transport-level refusal).
const REFUSED: i64 = -32000;

/// `error` as an MCP door answers a request it refuses before MCP sees it (an unknown
/// endpoint, `/mcp/<name>`): the same JSON-RPC error as the guard's refusals.
pub fn mcp_refusal(error: ApiError) -> Response {
    as_json_rpc(error.into_response())
}

/// A guard's refusal as `/mcp` answers everything, a JSON-RPC error without an id: its status
/// and headers (an OAuth challenge among them) as they are, the message the REST API would
/// give, and its stable code as the error's `data`.
fn as_json_rpc(refusal: Response) -> Response {
    let Some(error) = ApiError::from_response(&refusal).cloned() else {
        return refusal;
    };
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": REFUSED, "message": error.to_string(), "data": {"code": error.code()}},
    });
    let (parts, _) = refusal.into_parts();
    let mut answer = Response::from_parts(parts, axum::body::Body::from(body.to_string()));
    answer.headers_mut().remove(header::CONTENT_LENGTH);
    answer
}

/// Which credential a secret is in force as now: a configured key, or the local token while no
/// key is configured.
pub(crate) fn credential_kind(secret: &str, live: &LiveOptions) -> Option<Via> {
    let options = live.current();
    if key_is_valid(secret, &options.api_keys) {
        return Some(Via::Key);
    }
    let token = live.credentials().local_token()?;
    (options.api_keys.is_empty() && constant_time_eq(token.as_bytes(), secret.as_bytes()))
        .then_some(Via::Token)
}

/// How the request is authenticated: a key or the local token it sent, or its session (the
/// cookie and the session key, both); `Ok(None)` when it sent none. A key that is sent must be
/// valid (a client that sends one expects it to be checked); a session that is gone, or a cookie
/// without its key, counts as none, so that the page is asked to log in again.
pub(crate) fn authenticate(
    headers: &HeaderMap,
    live: &LiveOptions,
    options: &ApiOptions,
) -> Result<Option<Via>, ApiError> {
    let x_api_key = headers.get(API_KEY_HEADER);
    let sent = headers.contains_key(header::AUTHORIZATION) || x_api_key.is_some();
    if sent {
        return authenticate_key(headers, x_api_key, live, options).map(Some);
    }
    Ok(session_secret(headers, live.credentials())
        .and_then(|secret| credential_kind(&secret, live))
        .map(|_| Via::Cookie))
}

fn authenticate_key(
    headers: &HeaderMap,
    x_api_key: Option<&HeaderValue>,
    live: &LiveOptions,
    options: &ApiOptions,
) -> Result<Via, ApiError> {
    if options.api_keys.is_empty() && live.credentials().local_token().is_none() {
        return Err(ApiError::unauthorized(
            "an API key was sent, but this server has none configured",
        ));
    }
    // Every key that was sent must be valid: a right `X-API-Key` does not excuse a wrong
    // `Authorization`, or the other way round.
    let mut via = None;
    if headers.contains_key(header::AUTHORIZATION) {
        let token = bearer_token(headers).ok_or_else(|| {
            ApiError::unauthorized(
                "the Authorization header must be `Bearer <key>` (or send `X-API-Key: <key>`)",
            )
        })?;
        via = Some(
            credential_kind(token, live)
                .ok_or_else(|| ApiError::unauthorized("the API key is not valid"))?,
        );
    }
    if let Some(key) = x_api_key {
        let kind = key
            .to_str()
            .ok()
            .and_then(|k| credential_kind(k.trim(), live))
            .ok_or_else(|| ApiError::unauthorized("the API key is not valid"))?;
        via = Some(kind);
    }
    via.ok_or_else(|| ApiError::unauthorized("the API key is not valid"))
}

/// The configured principal whose key `secret` is: its hash compared, in constant time, with
/// every stored hash (never stopping at the first match), so that timing tells nothing of
/// which key, or how much of one, was right.
pub(crate) fn principal_of_key<'a>(secret: &str, options: &'a ApiOptions) -> Option<&'a str> {
    if options.principal_keys.is_empty() {
        return None;
    }
    let hash = toolmux_config::key_hash(secret);
    let mut found = None;
    for (stored, name) in &options.principal_keys {
        if constant_time_eq(stored, &hash) {
            found = Some(name.as_str());
        }
    }
    found
}

/// The token of an `Authorization: Bearer <token>` header.
pub(crate) fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
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
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
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

/// The origin a request was sent to: `http://` and its `Host` (already checked against the
/// allowed hosts), `https://` behind a proxy that says so with `X-Forwarded-Proto` (a header no
/// page of another origin can set). A page served by this server sends exactly this as its
/// `Origin`; a page on any other port, scheme or host sends something else.
fn own_origin(headers: &HeaderMap) -> Option<String> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
    Some(format!("{}://{host}", if https { "https" } else { "http" }))
}

fn check_origin(headers: &HeaderMap, allowed: &[String]) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin
        .to_str()
        .map_err(|_| ApiError::forbidden("the Origin header is not valid text"))?;
    // Compared exactly (never as a pattern, whatever the `Host` says), with or without the
    // scheme's default port.
    let own = own_origin(headers).is_some_and(|own| {
        without_default_port(&own).eq_ignore_ascii_case(without_default_port(origin))
    });
    if own || allowed.iter().any(|p| origin_matches(p, origin)) {
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

    fn live(keys: &[&str], token: Option<&str>) -> LiveOptions {
        let live = LiveOptions::new(ApiOptions {
            api_keys: keys.iter().map(|k| k.to_string()).collect(),
            ..ApiOptions::default()
        });
        live.set_local_token(token.map(str::to_string));
        live
    }

    /// `authenticate` with `keys` configured and an optional local token.
    fn auth(h: &HeaderMap, keys: &[&str], token: Option<&str>) -> Result<Option<Via>, ApiError> {
        let live = live(keys, token);
        let options = live.current();
        authenticate(h, &live, &options)
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).expect("ascii"));
        }
        h
    }

    #[test]
    fn a_principals_key_is_found_by_its_hash_among_all_and_a_near_miss_is_none() {
        let keys = ["tmk_first", "tmk_second", "tmk_third"];
        let options = ApiOptions {
            principal_keys: keys
                .iter()
                .zip(["a", "b", "c"])
                .map(|(k, name)| (toolmux_config::key_hash(k), name.to_string()))
                .collect(),
            ..ApiOptions::default()
        };
        assert_eq!(principal_of_key("tmk_first", &options), Some("a"));
        assert_eq!(principal_of_key("tmk_third", &options), Some("c"));
        for miss in ["tmk_thirD", "tmk_third ", "", "tmk_"] {
            assert_eq!(principal_of_key(miss, &options), None, "{miss:?}");
        }
        assert_eq!(principal_of_key("tmk_first", &ApiOptions::default()), None);
    }

    #[test]
    fn a_key_is_accepted_as_bearer_token_or_x_api_key() {
        let keys = ["secret"];
        assert_eq!(auth(&headers(&[]), &keys, None).ok(), Some(None));
        assert_eq!(
            auth(&headers(&[("authorization", "Bearer secret")]), &keys, None).ok(),
            Some(Some(Via::Key))
        );
        assert_eq!(
            auth(&headers(&[("x-api-key", "secret")]), &keys, None).ok(),
            Some(Some(Via::Key))
        );
        let wrong = auth(&headers(&[("x-api-key", "secreT")]), &keys, None);
        assert_eq!(
            wrong.map_err(|e| e.to_string()),
            Err("the API key is not valid".to_string())
        );
    }

    #[test]
    fn every_key_sent_must_be_valid_whichever_header_carries_it() {
        let keys = ["secret"];
        for sent in [
            [("authorization", "Bearer wrong"), ("x-api-key", "secret")],
            [("authorization", "Bearer secret"), ("x-api-key", "wrong")],
        ] {
            let refused = auth(&headers(&sent), &keys, None);
            assert_eq!(
                refused.map_err(|e| e.to_string()),
                Err("the API key is not valid".to_string()),
                "{sent:?}"
            );
        }
        let both_right = [("authorization", "Bearer secret"), ("x-api-key", "secret")];
        assert_eq!(
            auth(&headers(&both_right), &keys, None).ok(),
            Some(Some(Via::Key))
        );
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

    #[test]
    fn the_local_token_is_a_credential_only_while_no_key_is_configured() {
        let sent = headers(&[("authorization", "Bearer tok")]);
        assert_eq!(auth(&sent, &[], Some("tok")).ok(), Some(Some(Via::Token)));
        assert!(auth(&sent, &["key"], Some("tok")).is_err());
        assert!(
            auth(
                &headers(&[("authorization", "Bearer tik")]),
                &[],
                Some("tok")
            )
            .is_err()
        );
        assert!(
            auth(
                &headers(&[("authorization", "Basic tok")]),
                &[],
                Some("tok")
            )
            .is_err()
        );
        assert!(
            auth(&sent, &[], None).is_err(),
            "nothing to check a key against"
        );
    }

    #[test]
    fn a_session_counts_with_its_cookie_and_key_while_its_secret_does() {
        let live = live(&[], Some("tok"));
        let opened = live.credentials().open("tok").expect("session");
        let cookie = format!("toolmux_session={}", opened.id);
        let sent = headers(&[("cookie", &cookie), ("x-toolmux-session", &opened.key)]);
        assert_eq!(
            authenticate(&sent, &live, &live.current()).ok(),
            Some(Some(Via::Cookie))
        );
        // D26: the cookie is sent to every port of the host, so on its own it is nothing; the
        // key without the cookie is nothing either.
        for half in [
            headers(&[("cookie", &cookie)]),
            headers(&[("cookie", &cookie), ("x-toolmux-session", "guess")]),
            headers(&[("x-toolmux-session", &opened.key)]),
        ] {
            assert_eq!(authenticate(&half, &live, &live.current()).ok(), Some(None));
        }
        // A key configured since: the token, and the sessions made with it, no longer count.
        live.replace(ApiOptions {
            api_keys: vec!["key".into()],
            ..ApiOptions::default()
        });
        assert_eq!(authenticate(&sent, &live, &live.current()).ok(), Some(None));
        let stranger = headers(&[
            ("cookie", "toolmux_session=made-up"),
            ("x-toolmux-session", "made-up"),
        ]);
        assert_eq!(
            authenticate(&stranger, &live, &live.current()).ok(),
            Some(None)
        );
    }

    /// D26: the default origin is the request's own — scheme, host and port — and a page on
    /// another port of the same host is another origin.
    #[test]
    fn d26_the_only_default_origin_is_the_requests_own_with_its_port() {
        let own = |host: &str, origin: &str| {
            check_origin(&headers(&[("host", host), ("origin", origin)]), &[]).is_ok()
        };
        assert!(own("127.0.0.1:7700", "http://127.0.0.1:7700"));
        assert!(own("localhost:7700", "http://LOCALHOST:7700"));
        assert!(own("[::1]:7700", "http://[::1]:7700"));
        assert!(own("intranet", "http://intranet:80"));
        assert!(!own("127.0.0.1:7700", "http://127.0.0.1:18090"));
        assert!(!own("127.0.0.1:7700", "http://localhost:7700"));
        assert!(!own("127.0.0.1:7700", "https://127.0.0.1:7700"));
        assert!(!own("127.0.0.1:7700", "http://127.0.0.1"));
        assert!(!own("127.0.0.1:7700", "null"));
        // A `Host` that looks like a pattern is compared as text, never as a pattern.
        assert!(!own("127.0.0.1:*", "http://127.0.0.1:18090"));
        // Behind a TLS proxy that says so, the own origin is `https://`.
        let proxied = headers(&[
            ("host", "tools.example.com"),
            ("x-forwarded-proto", "https"),
            ("origin", "https://tools.example.com"),
        ]);
        assert!(check_origin(&proxied, &[]).is_ok());
        // Configured origins still count, exactly or with their port pattern.
        let configured = vec!["https://app.example.com".to_string()];
        let from_app = headers(&[
            ("host", "127.0.0.1:7700"),
            ("origin", "https://app.example.com"),
        ]);
        assert!(check_origin(&from_app, &configured).is_ok());
        let refused = check_origin(&from_app, &[]).expect_err("refused");
        assert!(refused.to_string().contains("--allow-origin"), "{refused}");
    }

    /// D26: what changes something must be a request a browser preflights.
    #[test]
    fn d26_a_change_needs_json_or_a_credential_header() {
        let post = |pairs: &[(&'static str, &str)]| {
            check_preflighted(&Method::POST, &headers(pairs)).map_err(|e| e.status().as_u16())
        };
        assert_eq!(post(&[("content-type", "application/json")]), Ok(()));
        assert_eq!(post(&[("authorization", "Bearer k")]), Ok(()));
        assert_eq!(post(&[("x-api-key", "k")]), Ok(()));
        assert_eq!(post(&[("x-toolmux-session", "k")]), Ok(()));
        for simple in [
            &[][..],
            &[("content-type", "text/plain")][..],
            &[("content-type", "text/plain; application/json")][..],
            &[("content-type", "application/x-www-form-urlencoded")][..],
            &[("content-type", "multipart/form-data; boundary=x")][..],
            &[
                ("cookie", "toolmux_session=abc"),
                ("content-type", "text/plain"),
            ][..],
        ] {
            assert_eq!(post(simple), Err(415), "{simple:?}");
        }
        for method in [Method::PUT, Method::PATCH, Method::DELETE] {
            assert!(
                check_preflighted(&method, &headers(&[])).is_err(),
                "{method}"
            );
        }
        for method in [Method::GET, Method::HEAD, Method::OPTIONS] {
            assert!(
                check_preflighted(&method, &headers(&[])).is_ok(),
                "{method}"
            );
        }
    }

    /// Found in review of issue 28: `/mcp` refused a request with the REST API's error body
    /// (`DELETE /mcp` without a credential header, where none is configured, got its `415`).
    /// `/mcp` answers in JSON-RPC's shape, whatever refuses the request.
    #[tokio::test]
    async fn every_refusal_on_mcp_is_a_json_rpc_error() {
        use axum::routing::any;
        use tower::ServiceExt;

        let answer = |options: ApiOptions, method: Method, pairs: &[(&'static str, &str)]| {
            let mut request = Request::builder()
                .method(method)
                .uri("/mcp")
                .header(header::HOST, "localhost");
            for (name, value) in pairs {
                request = request.header(*name, *value);
            }
            let request = request.body(axum::body::Body::empty()).expect("request");
            let routes = Router::new().route("/mcp", any(|| async { "mcp" }));
            async move {
                let response = mcp_guarded(LiveOptions::new(options), routes)
                    .oneshot(request)
                    .await
                    .expect("infallible");
                let status = response.status().as_u16();
                let headers = response.headers().clone();
                let body = axum::body::to_bytes(response.into_body(), 1 << 20)
                    .await
                    .expect("body");
                let body: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
                (status, headers, body)
            }
        };
        let rpc = |code: &str, message: &str| {
            serde_json::json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32000, "message": message, "data": {"code": code}}})
        };
        // A Unix socket with no key: no credential is needed, but a DELETE that carries no
        // header a browser preflights is refused all the same.
        let keyless = || ApiOptions {
            allowed_hosts: vec!["localhost".into()],
            ..ApiOptions::default()
        };
        let (status, headers, body) = answer(keyless(), Method::DELETE, &[]).await;
        assert_eq!(status, 415);
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        assert_eq!(
            body,
            rpc(
                "unsupported_media_type",
                "a request that changes something must send `Content-Type: application/json` \
                 or a credential header (`Authorization`, `X-API-Key`, or the web app's \
                 `X-Toolmux-Session`): a form or plain-text request could come from any web page"
            )
        );
        // With a key: no credential, a wrong one, a foreign Origin and Host.
        let keyed = || ApiOptions {
            api_keys: vec!["k".into()],
            ..keyless()
        };
        let (status, headers, body) = answer(keyed(), Method::DELETE, &[]).await;
        assert_eq!(status, 401);
        assert_eq!(
            headers[header::WWW_AUTHENTICATE],
            "Bearer realm=\"toolmux\""
        );
        assert_eq!(body, rpc("unauthorized", SEND_A_CREDENTIAL));
        let (status, _, body) =
            answer(keyed(), Method::POST, &[("authorization", "Bearer wrong")]).await;
        assert_eq!(status, 401);
        assert_eq!(body, rpc("unauthorized", "the API key is not valid"));
        let (status, _, body) = answer(
            keyed(),
            Method::POST,
            &[
                ("authorization", "Bearer k"),
                ("origin", "http://localhost:1"),
            ],
        )
        .await;
        assert_eq!(status, 403);
        assert_eq!(
            body,
            rpc(
                "forbidden",
                "Origin `http://localhost:1` is not allowed: start the server with \
                 --allow-origin http://localhost:1 or add it to `server.allowedOrigins`"
            )
        );
        // What passes reaches MCP untouched.
        let passed = mcp_guarded(
            LiveOptions::new(keyed()),
            Router::new().route("/mcp", any(|| async { "mcp" })),
        )
        .oneshot(
            Request::delete("/mcp")
                .header(header::HOST, "localhost")
                .header("authorization", "Bearer k")
                .body(axum::body::Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
        assert_eq!(passed.status(), 200);
    }

    /// Issue 12, D8, as issue 14 narrowed it: once a key is configured, a request without one
    /// passes only on [`OPEN_ROUTES`].
    #[tokio::test]
    async fn d8_with_keys_a_keyless_read_passes_only_on_the_open_routes() {
        use axum::routing::get;
        use tower::ServiceExt;

        let status = |options: ApiOptions, path: &'static str, key: Option<&'static str>| async move {
            let routes = Router::new()
                .route("/api/health", get(|| async { "up" }))
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
        assert_eq!(status(keyed(), "/api/health", None).await, 200);
        assert_eq!(status(keyed(), "/api/tools", None).await, 401);
        assert_eq!(status(keyed(), "/api/tools/grep", None).await, 401);
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
