//! The credentials besides configured keys: the per-project *local token* (made by `serve` on
//! loopback when no key is configured, see [`crate::local_token`]) and the web app's *session
//! cookie*, which a page gets for the token or a key at `POST /api/auth/session` so that it never
//! keeps the secret itself. Sessions live in this process's memory only: a restart logs every
//! page out, and the page asks for the token again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::LiveOptions;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::guard::Caller;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "toolmux_session";

/// A session unused for this long is forgotten; the page then asks for the token again.
pub const SESSION_IDLE: Duration = Duration::from_secs(12 * 60 * 60);

/// At most this many sessions are kept; past it, the least recently used one is forgotten.
/// Only a holder of a credential can make one, so the cap bounds memory, not an attack.
const MAX_SESSIONS: usize = 1024;

/// How a request proved who it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// A configured API key (`Authorization: Bearer` or `X-API-Key`).
    Key,
    /// The project's local token, sent as a key.
    Token,
    /// The session cookie.
    Cookie,
    /// An access token (JWT) from the issuer `server.auth` names.
    Jwt,
}

/// What a process keeps beside the [`crate::ApiOptions`]: the local token and the sessions.
/// Shared by every clone of a [`LiveOptions`], and untouched when the options are replaced.
#[derive(Debug, Default)]
pub(crate) struct Credentials {
    /// Set by `serve` on loopback TCP: every request needs a credential even while the server
    /// has neither a key nor a local token (its keys were all removed while it ran), so that
    /// removing a key never opens the server.
    required: AtomicBool,
    local_token: RwLock<Option<String>>,
    sessions: Mutex<HashMap<String, Session>>,
}

#[derive(Debug)]
struct Session {
    /// The token or key the session was made with, checked again on every use, so that a key
    /// removed from the configuration ends the sessions made with it at once.
    secret: String,
    last_used: Instant,
}

impl Credentials {
    pub(crate) fn require(&self) {
        self.required.store(true, Ordering::Relaxed);
    }

    /// Whether a request needs a credential even without keys or a local token.
    pub(crate) fn required(&self) -> bool {
        self.required.load(Ordering::Relaxed) || self.local_token().is_some()
    }

    pub(crate) fn set_local_token(&self, token: Option<String>) {
        *self
            .local_token
            .write()
            .unwrap_or_else(PoisonError::into_inner) = token;
    }

    pub(crate) fn local_token(&self) -> Option<String> {
        self.local_token
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A new session for `secret`; returns its id.
    pub(crate) fn open(&self, secret: &str) -> Result<String, ApiError> {
        let id = random_token().map_err(|e| ApiError::internal(e.to_string()))?;
        let now = Instant::now();
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|_, s| now.duration_since(s.last_used) < SESSION_IDLE);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(id, _)| id.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(
            id.clone(),
            Session {
                secret: secret.to_string(),
                last_used: now,
            },
        );
        Ok(id)
    }

    /// The secret behind a live session, marking it used; an idle one is forgotten.
    pub(crate) fn session_secret(&self, id: &str) -> Option<String> {
        let now = Instant::now();
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let session = sessions.get_mut(id)?;
        if now.duration_since(session.last_used) >= SESSION_IDLE {
            sessions.remove(id);
            return None;
        }
        session.last_used = now;
        Some(session.secret.clone())
    }

    fn close(&self, id: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }
}

/// 32 random bytes from the operating system, base64url without padding (43 characters).
pub(crate) fn random_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The session id a request's `Cookie` headers carry, if any.
pub(crate) fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim())
}

/// The auth routes, open to requests without a credential (the guard lets them through):
/// exchange a token or key for a session cookie, ask whether the request is authenticated, and
/// log out. Merged into the REST API's router, so they are in its OpenAPI document.
pub fn auth_routes(live: LiveOptions) -> OpenApiRouter {
    OpenApiRouter::new()
        .routes(routes!(open_session, session_status))
        .routes(routes!(logout))
        .with_state(live)
}

/// The routes [`auth_routes`] registers, which the guard serves without a credential.
pub(crate) const AUTH_ROUTES: [&str; 2] = ["/api/auth/session", "/api/auth/logout"];

/// What `POST /api/auth/session` is given.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SessionRequest {
    /// The project's local token (from the URL `serve` printed) or a configured API key.
    pub token: String,
}

/// Whether the request is authenticated, and how.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionStatus {
    pub authenticated: bool,
    /// How: `key`, `token`, `cookie` or `jwt`; absent when not authenticated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
}

/// Exchanges the local token or a configured key for a session cookie
/// (`toolmux_session`, `HttpOnly; SameSite=Strict; Path=/`), kept in the server's memory and
/// forgotten after 12 hours unused, at logout, or when the server restarts.
#[utoipa::path(
    post, path = "/api/auth/session", tag = "auth",
    request_body = SessionRequest,
    responses(
        (status = 204, description = "The session cookie is set", headers(("Set-Cookie" = String))),
        (status = 400, description = "The body is not `{\"token\": \"...\"}`", body = ErrorBody),
        (status = 401, description = "The token is not valid", body = ErrorBody),
    )
)]
async fn open_session(
    State(live): State<LiveOptions>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<SessionRequest>,
) -> Result<Response, ApiError> {
    let secret = body.token.trim();
    if crate::guard::credential_kind(secret, &live).is_none() {
        return Err(ApiError::unauthorized(
            "the token is not valid: use the one in the URL `toolmux serve` printed (also in \
             `.toolmux/state/local-token`) or a configured API key",
        ));
    }
    let id = live.credentials().open(secret)?;
    // Plain HTTP is what toolmux serves; behind a TLS proxy that says so, the cookie is kept
    // to HTTPS as well.
    let secure = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"));
    let cookie = format!(
        "{SESSION_COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/{}",
        if secure { "; Secure" } else { "" }
    );
    let cookie = HeaderValue::from_str(&cookie).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, cookie)]).into_response())
}

/// Whether this request is authenticated (by cookie, key or token). The page asks this first:
/// a 401 means it must log in with the token.
#[utoipa::path(
    get, path = "/api/auth/session", tag = "auth",
    responses(
        (status = 200, description = "Authenticated", body = SessionStatus),
        (status = 401, description = "Not authenticated", body = SessionStatus),
    )
)]
async fn session_status(Extension(caller): Extension<Caller>) -> Response {
    let status = SessionStatus {
        authenticated: caller.via.is_some(),
        via: caller.via,
    };
    let code = if status.authenticated {
        StatusCode::OK
    } else {
        StatusCode::UNAUTHORIZED
    };
    (code, Json(status)).into_response()
}

/// Forgets the request's session and clears its cookie.
#[utoipa::path(
    post, path = "/api/auth/logout", tag = "auth",
    responses((status = 204, description = "Logged out; the cookie is cleared"))
)]
async fn logout(State(live): State<LiveOptions>, request: Request) -> Response {
    if let Some(id) = session_cookie(request.headers()) {
        live.credentials().close(id);
    }
    let cleared =
        HeaderValue::from_static("toolmux_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    (StatusCode::NO_CONTENT, [(header::SET_COOKIE, cleared)]).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; toolmux_session=abc ; b=2"),
        );
        assert_eq!(session_cookie(&headers), Some("abc"));
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("xtoolmux_session=abc"),
        );
        assert_eq!(session_cookie(&headers), None);
    }

    #[test]
    fn a_session_is_kept_until_closed() {
        let credentials = Credentials::default();
        let id = credentials.open("secret").expect("open");
        assert_eq!(id.len(), 43);
        assert_eq!(credentials.session_secret(&id).as_deref(), Some("secret"));
        credentials.close(&id);
        assert_eq!(credentials.session_secret(&id), None);
    }
}
