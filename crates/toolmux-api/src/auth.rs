//! Who may use the API: Host and Origin checks against DNS rebinding, and API keys sent as
//! `Authorization: Bearer <key>` or `X-API-Key: <key>`, checked by the one bearer-token check
//! the MCP endpoint uses too ([`toolmux_mcp_server::check_api_key`]).
//!
//! A request that changes anything (any method but `GET` and `HEAD`) needs a valid key; when the
//! server is reachable beyond loopback, every request does. A key that is sent must be valid,
//! even where none is needed.
//!
//! The MCP endpoint passes the same Host and Origin checks ([`mcp_guarded`]), with MCP's own
//! key rule: every request needs a key once any is configured. Both read the [`LiveOptions`]
//! on each request, so a key added to or removed from the configuration counts at once.

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use toolmux_mcp_server::{AuthError, check_api_key, key_is_valid};

use crate::error::ApiError;
use crate::{ApiState, LiveOptions};

/// The header that carries a key as an alternative to `Authorization: Bearer`.
pub const API_KEY_HEADER: &str = "x-api-key";

/// What the middleware learned about a request's caller; handlers read it as an extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The request carried a valid API key.
    pub authenticated: bool,
}

/// Refuses requests with a foreign Host or Origin, checks the key, and records the caller.
pub(crate) async fn guard(
    State(state): State<ApiState>,
    mut request: Request,
    next: Next,
) -> Response {
    let options = state.inner.options.current();
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
    let reads_only = matches!(*request.method(), Method::GET | Method::HEAD);
    if !authenticated && (!reads_only || options.require_key_for_reads) {
        let message = if options.api_keys.is_empty() {
            "this request needs an API key, and none is configured: add one to `server.apiKeys` \
             in the configuration (as a `${VAR}` reference) or pass --api-key-env VAR"
                .to_string()
        } else if reads_only {
            "this server is reachable beyond loopback, so every request needs an API key: send \
             `Authorization: Bearer <key>` or `X-API-Key: <key>`"
                .to_string()
        } else {
            "this request changes state and needs an API key: send `Authorization: Bearer <key>` \
             or `X-API-Key: <key>`"
                .to_string()
        };
        return ApiError::unauthorized(message).into_response();
    }
    request.extensions_mut().insert(Caller { authenticated });
    next.run(request).await
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
    pattern.eq_ignore_ascii_case(origin)
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
}
