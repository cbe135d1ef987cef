//! The credentials besides configured keys: the per-project *local token* (made by `serve` on
//! loopback when no key is configured, see [`crate::local_token`]) and the web app's *session*,
//! which a page gets for the token or a key at `POST /api/auth/session` so that it never keeps
//! the secret itself. Sessions live in this process's memory only: a restart logs every page
//! out, and the page asks for the token again.
//!
//! A session is two halves, and only both together are a credential: an `HttpOnly` cookie, and
//! a session key the page keeps in its origin's storage and sends as [`SESSION_HEADER`]. Cookies
//! are not bound to a port: a browser sends `127.0.0.1`'s cookies to every port of `127.0.0.1`,
//! so any other server on the machine receives this one's cookie whenever the browser visits
//! it, and a page on another port can make the browser send it here. Neither gets the key,
//! which only a same-origin script can read, and which a browser sends from another origin only
//! after a preflight this server never grants. So a received cookie is useless on its own, and
//! a forged request that rides on it is refused.

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

/// The session cookie's name, followed by `_<port>` when the page was reached on an explicit
/// port ([`cookie_name`]), so that servers on two ports of one host do not overwrite each
/// other's cookie.
pub const SESSION_COOKIE: &str = "toolmux_session";

/// The header that carries the session key, the half of a session the page holds and a cookie
/// never carries.
pub const SESSION_HEADER: &str = "x-toolmux-session";

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
    /// The web app's session: its cookie together with the session key in
    /// `X-Toolmux-Session`.
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
    /// The half the page keeps and sends as [`SESSION_HEADER`]; the cookie names the session,
    /// this proves the request comes from the page that opened it.
    key: String,
    last_used: Instant,
}

/// What a new session gives the page: the id its cookie carries and the key it keeps.
pub(crate) struct Opened {
    pub(crate) id: String,
    pub(crate) key: String,
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

    /// A new session for `secret`.
    pub(crate) fn open(&self, secret: &str) -> Result<Opened, ApiError> {
        let id = random_token().map_err(|e| ApiError::internal(e.to_string()))?;
        let key = random_token().map_err(|e| ApiError::internal(e.to_string()))?;
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
                key: key.clone(),
                last_used: now,
            },
        );
        Ok(Opened { id, key })
    }

    /// The secret behind a live session whose key is `key`, marking it used; an idle one is
    /// forgotten. A wrong key leaves the session as it was: the cookie alone proves nothing.
    pub(crate) fn session_secret(&self, id: &str, key: &str) -> Option<String> {
        let now = Instant::now();
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let session = sessions.get_mut(id)?;
        if now.duration_since(session.last_used) >= SESSION_IDLE {
            sessions.remove(id);
            return None;
        }
        if !crate::guard::constant_time_eq(session.key.as_bytes(), key.as_bytes()) {
            return None;
        }
        session.last_used = now;
        Some(session.secret.clone())
    }

    /// Forgets the session, when `key` is its key.
    fn close(&self, id: &str, key: &str) {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if sessions
            .get(id)
            .is_some_and(|s| crate::guard::constant_time_eq(s.key.as_bytes(), key.as_bytes()))
        {
            sessions.remove(id);
        }
    }
}

/// 32 random bytes from the operating system, base64url without padding (43 characters).
pub(crate) fn random_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The name of the session cookie for a request: [`SESSION_COOKIE`], followed by `_<port>`
/// when its `Host` names a port.
pub(crate) fn cookie_name(headers: &HeaderMap) -> String {
    let port = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .and_then(|host| host.rsplit_once(':'))
        .map(|(_, port)| port)
        .filter(|port| !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()));
    match port {
        Some(port) => format!("{SESSION_COOKIE}_{port}"),
        None => SESSION_COOKIE.to_string(),
    }
}

/// The most session cookies of the request's name that are tried: as many as a browser keeps for
/// one host (Chromium's limit is 180 cookies a domain), so no number of cookies a page on another
/// port can plant hides the real one, while a hand-made request carrying thousands of them costs
/// no more than these lookups.
pub(crate) const MAX_SESSION_COOKIES: usize = 180;

/// Every session id the request's `Cookie` headers carry, at most [`MAX_SESSION_COOKIES`] of
/// them. More than one means a page on another port of the host set a cookie of the same name
/// (cookies are not port-bound, and one with a longer `Path` is sent first): each is tried, so a
/// planted cookie cannot hide the real one and lock the person out.
pub(crate) fn session_cookies(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    let name = cookie_name(headers);
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(move |(n, _)| *n == name)
        .map(|(_, value)| value.trim())
        .take(MAX_SESSION_COOKIES)
}

/// The session key a request sends, if any.
pub(crate) fn session_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// The secret behind the request's session: its cookie and its key, both, naming a live
/// session.
pub(crate) fn session_secret(headers: &HeaderMap, credentials: &Credentials) -> Option<String> {
    let key = session_key(headers)?;
    session_cookies(headers).find_map(|id| credentials.session_secret(id, key))
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

/// What `POST /api/auth/session` answers besides the cookie: the session key, which the page
/// keeps in its origin's storage and sends as `X-Toolmux-Session` on every request.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionOpened {
    pub authenticated: bool,
    /// Always `cookie`: the session's cookie together with its key.
    pub via: Via,
    /// The session key: send it as `X-Toolmux-Session` with the cookie. Either alone is
    /// refused.
    pub session_key: String,
}

/// Exchanges the local token or a configured key for a session: a cookie (`toolmux_session`,
/// or `toolmux_session_<port>` on an explicit port; `HttpOnly; SameSite=Strict; Path=/`) and
/// a session key in the body, which the page sends as `X-Toolmux-Session`. Kept in the server's
/// memory and forgotten after 12 hours unused, at logout, or when the server restarts.
#[utoipa::path(
    post, path = "/api/auth/session", tag = "auth",
    request_body = SessionRequest,
    responses(
        (status = 200, description = "The session cookie is set; the body has its key", body = SessionOpened, headers(("Set-Cookie" = String))),
        (status = 400, description = "The body is not `{\"token\": \"...\"}`", body = ErrorBody),
        (status = 401, description = "The token is not valid", body = ErrorBody),
        (status = 415, description = "The body is not `application/json`", body = ErrorBody),
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
    let opened = live.credentials().open(secret)?;
    // Plain HTTP is what toolmux serves; behind a TLS proxy that says so, the cookie is kept
    // to HTTPS as well.
    let secure = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"));
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/{}",
        cookie_name(&headers),
        opened.id,
        if secure { "; Secure" } else { "" }
    );
    let cookie = HeaderValue::from_str(&cookie).map_err(|e| ApiError::internal(e.to_string()))?;
    let body = SessionOpened {
        authenticated: true,
        via: Via::Cookie,
        session_key: opened.key,
    };
    Ok((
        StatusCode::OK,
        [
            (header::SET_COOKIE, cookie),
            // The key is a credential's half: no cache keeps it.
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        Json(body),
    )
        .into_response())
}

/// Whether this request is authenticated (by the session, a key or a token). The page asks
/// this first: a 401 means it must log in with the token.
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

/// Forgets the request's session (its cookie and its key, both) and clears the cookie.
#[utoipa::path(
    post, path = "/api/auth/logout", tag = "auth",
    responses((status = 204, description = "Logged out; the cookie is cleared"))
)]
async fn logout(State(live): State<LiveOptions>, request: Request) -> Result<Response, ApiError> {
    let headers = request.headers();
    if let Some(key) = session_key(headers) {
        for id in session_cookies(headers) {
            live.credentials().close(id, key);
        }
    }
    let cleared = format!(
        "{}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
        cookie_name(headers)
    );
    let cleared = HeaderValue::from_str(&cleared).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok((StatusCode::NO_CONTENT, [(header::SET_COOKIE, cleared)]).into_response())
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
        assert_eq!(session_cookies(&headers).collect::<Vec<_>>(), ["abc"]);
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("xtoolmux_session=abc"),
        );
        assert_eq!(session_cookies(&headers).next(), None);
    }

    #[test]
    fn the_cookie_is_named_after_the_port_the_page_was_reached_on() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:7700"));
        assert_eq!(cookie_name(&headers), "toolmux_session_7700");
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("toolmux_session_7701=other; toolmux_session_7700=mine"),
        );
        assert_eq!(session_cookies(&headers).collect::<Vec<_>>(), ["mine"]);
        headers.insert(header::HOST, HeaderValue::from_static("[::1]:8080"));
        assert_eq!(cookie_name(&headers), "toolmux_session_8080");
        headers.insert(header::HOST, HeaderValue::from_static("tools.example.com"));
        assert_eq!(cookie_name(&headers), "toolmux_session");
    }

    /// Cookies and `Host` are outside input: huge and odd ones find nothing, and never panic.
    #[test]
    fn odd_cookies_and_hosts_find_no_session() {
        for size in [0usize, 1, 100, 10_000, 200_000] {
            for piece in [";", "=", "toolmux_session=", ":", "[", "]:", "\u{7f}"] {
                let value = piece.repeat(size);
                let mut headers = HeaderMap::new();
                if let Ok(v) = HeaderValue::from_str(&value) {
                    headers.insert(header::HOST, v.clone());
                    headers.insert(header::COOKIE, v.clone());
                    headers.insert(SESSION_HEADER, v);
                }
                let _ = cookie_name(&headers);
                assert_eq!(
                    session_secret(&headers, &Credentials::default()),
                    None,
                    "{size} {piece:?}"
                );
            }
        }
    }

    #[test]
    fn a_session_needs_its_key_and_is_kept_until_closed() {
        let credentials = Credentials::default();
        let opened = credentials.open("secret").expect("open");
        assert_eq!(opened.id.len(), 43);
        assert_eq!(opened.key.len(), 43);
        assert_ne!(opened.id, opened.key);
        assert_eq!(
            credentials
                .session_secret(&opened.id, &opened.key)
                .as_deref(),
            Some("secret")
        );
        // The cookie alone, or with a wrong key, is nothing.
        assert_eq!(credentials.session_secret(&opened.id, ""), None);
        assert_eq!(credentials.session_secret(&opened.id, &opened.id), None);
        // A logout without the key does not end the session; with it, it does.
        credentials.close(&opened.id, "wrong");
        assert!(
            credentials
                .session_secret(&opened.id, &opened.key)
                .is_some()
        );
        credentials.close(&opened.id, &opened.key);
        assert_eq!(credentials.session_secret(&opened.id, &opened.key), None);
    }

    /// Found in review of issue 28 (D26's kind): a page on another port of the host can set a
    /// cookie of the session's name with a longer `Path`, which the browser sends first; only
    /// the first was read, so the person was locked out until it expired. Every value is tried.
    /// The headers of a request sending `cookie` and the session key `key`.
    fn sending(cookie: &str, key: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_str(cookie).expect("cookie"),
        );
        headers.insert(SESSION_HEADER, HeaderValue::from_str(key).expect("key"));
        headers
    }

    #[test]
    fn a_planted_cookie_of_the_same_name_does_not_hide_the_real_session() {
        let credentials = Credentials::default();
        let opened = credentials.open("secret").expect("open");
        let cookie = format!(
            "toolmux_session_7700=planted; toolmux_session_7700={}",
            opened.id
        );
        let mut headers = sending(&cookie, &opened.key);
        headers.insert(header::HOST, HeaderValue::from_static("127.0.0.1:7700"));
        assert_eq!(
            session_secret(&headers, &credentials).as_deref(),
            Some("secret")
        );
        // The planted value with the real key is nothing, and the real key opens nothing else.
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("toolmux_session_7700=planted"),
        );
        assert_eq!(session_secret(&headers, &credentials), None);
    }

    /// Found in review of issue 28: the same-name cookie lookup had no cap, so one request with
    /// 10,000 `toolmux_session` cookies made 10,000 session lookups. At most
    /// [`MAX_SESSION_COOKIES`] are tried: the real session among the first of them is found (as
    /// many as a browser keeps for a host), one sent after 10,000 planted ones is not.
    #[test]
    fn ten_thousand_same_name_cookies_are_tried_only_up_to_the_cap() {
        let credentials = Credentials::default();
        let opened = credentials.open("secret").expect("open");
        let with_planted = |planted: usize| {
            let planted = "toolmux_session=planted; ".repeat(planted);
            sending(
                &format!("{planted}toolmux_session={}", opened.id),
                &opened.key,
            )
        };
        let flood = with_planted(10_000);
        assert_eq!(session_cookies(&flood).count(), MAX_SESSION_COOKIES);
        assert_eq!(session_secret(&flood, &credentials), None);
        let last_tried = with_planted(MAX_SESSION_COOKIES - 1);
        assert_eq!(
            session_secret(&last_tried, &credentials).as_deref(),
            Some("secret")
        );
        assert_eq!(
            session_secret(&with_planted(MAX_SESSION_COOKIES), &credentials),
            None
        );
    }
}
