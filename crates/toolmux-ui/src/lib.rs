//! toolmux's web app: the single-page app built in `web/` (its output, `web/dist`, embedded in
//! the binary, so `cargo install` needs no Node and the page works offline), served by
//! `toolmux serve` at `/`, on the same origin as `/api` and `/mcp`.
//!
//! # The contract between the page and the server (issue 14)
//!
//! **Routes.** `GET /` and every other path that is not under `/api`, `/mcp` or `/metrics` and is
//! not a file of `web/dist` answer `index.html`, so client-side routes (`/chat`, `/chat/<id>`,
//! `/tools`, `/servers`, `/activity`, `/approvals`, ...) load the app. Files under `/assets/`
//! (Vite's hashed names) are served with `Cache-Control: public, max-age=31536000, immutable`;
//! a missing one is a 404, never `index.html`. `index.html` and other files at the root
//! (`/favicon.svg`) get `Cache-Control: no-cache` and an `ETag` (`If-None-Match` → 304). Text
//! files are sent compressed as `Accept-Encoding` allows (`br`, then `gzip`). Every page
//! response carries `Content-Security-Policy: default-src 'self'; img-src 'self' data: blob:;
//! style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'` (so: no inline
//! scripts, no CDN, no `eval`; inline styles are allowed), `X-Content-Type-Options: nosniff`,
//! `Referrer-Policy: no-referrer` and `X-Frame-Options: DENY`. The page itself needs no
//! credential; Host and Origin are checked as on every route.
//!
//! **Logging in.** Every route under `/api`, `/mcp` and `/metrics` needs a credential, except
//! `GET /api/health` and the three auth routes:
//! - `GET /api/auth/session` → 200 `{"authenticated": true, "via": "cookie"|"key"|"token"|"jwt"}`,
//!   or 401 `{"authenticated": false}`: the page asks this first.
//! - `POST /api/auth/session` with `{"token": "..."}` (the local token or a configured API key,
//!   as `Content-Type: application/json`) → 200 `{"authenticated": true, "via": "cookie",
//!   "sessionKey": "..."}` with `Set-Cookie: toolmux_session_<port>=<id>; HttpOnly;
//!   SameSite=Strict; Path=/` (`toolmux_session` when the address has no port); a wrong token →
//!   401 with the error body `{"error": {"code": "unauthorized", ...}}`.
//! - `POST /api/auth/logout` (with the session's cookie and key) → 204; the session is
//!   forgotten and the cookie cleared.
//!
//! `toolmux serve` prints (and `--open` opens) `http://127.0.0.1:PORT/#token=TOKEN`. The page
//! reads `token` from `location.hash`, removes it at once (`history.replaceState`), and posts it
//! to `POST /api/auth/session`. From then on every request carries both halves of the session:
//! the cookie, which the browser sends by itself, and the session key, which the page keeps in
//! `localStorage` (its own origin's: scheme, host and port) and sends as `X-Toolmux-Session` —
//! event streams too, which the page reads with `fetch` since `EventSource` cannot send a
//! header. Neither half works alone: a browser sends the cookie to every port of the host, so
//! any other server there receives it, but only this origin's scripts can read the key. A reload
//! or a new tab of the same address stays signed in. The session lives in the server's memory:
//! it ends at logout, after 12 hours unused, when the key it was made with is removed, or when
//! the server restarts. **Any 401 from `/api`** (or a 401 from `GET /api/auth/session` at
//! start, with no `#token=` in the URL) means the page must show its login form: a field for the
//! token (in `.toolmux/state/local-token`, or the URL `toolmux serve` printed) or an API key,
//! posted to `POST /api/auth/session`. When the server has configured keys, there is no local
//! token: the printed URL has no fragment and the person logs in with a key.
//!
//! A page of another origin — another port of the same host included — gets nothing: its
//! `Origin` is refused (403) unless it is this server's own (or configured), a request that
//! changes something must be `application/json` or carry a credential header (so a browser
//! preflights it, and no preflight is granted), and the cookie alone is no credential.

mod compress;
mod open;

use std::borrow::Cow;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;
use toolmux_http::ApiError;

pub use open::{OpenError, open_in_browser};

use compress::Encoding;

/// `web/dist`, as `npm run build` in `web/` leaves it.
#[derive(RustEmbed)]
#[folder = "../../web/dist"]
struct Dist;

/// The page's security headers, on every response of [`router`].
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data: blob:; \
     style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'";

/// Hashed file names change with their content, so a browser may keep them for a year.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// Paths the other routers own: a path under them that they do not serve is their 404, never
/// the app.
const NOT_THE_APP: [&str; 3] = ["/api", "/mcp", "/metrics"];

/// The web app's router: `index.html` for `/` and every client-side route, the embedded files
/// at their paths. Meant to be merged last, as the fallback of `serve`'s router, behind
/// `toolmux_http::page_guarded`.
pub fn router() -> Router {
    Router::new().fallback(serve)
}

/// Whether the binary carries a built app (a build without `web/dist` still compiles).
pub fn has_app() -> bool {
    Dist::get("index.html").is_some()
}

async fn serve(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let path = uri.path();
    if NOT_THE_APP
        .iter()
        .any(|owned| path == *owned || path.starts_with(&format!("{owned}/")))
    {
        return ApiError::not_found(format!("no route at `{path}`")).into_response();
    }
    if method != Method::GET && method != Method::HEAD {
        let mut refused = ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("the web app's files are read with GET, not {method}"),
        )
        .into_response();
        refused
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return refused;
    }
    let name = path.trim_start_matches('/');
    let (name, cache) = match name {
        "" | "index.html" => ("index.html", "no-cache"),
        name if name.starts_with("assets/") => (name, IMMUTABLE),
        name if Dist::get(name).is_some() => (name, "no-cache"),
        // Anything else is a client-side route: the app decides what it shows.
        _ => ("index.html", "no-cache"),
    };
    let Some(file) = Dist::get(name) else {
        return ApiError::not_found(format!("no file at `{path}`")).into_response();
    };
    with_page_headers(respond(name, file, cache, &headers).await)
}

/// The file as the request accepts it: compressed where that helps, 304 when the browser has it.
async fn respond(
    name: &str,
    file: rust_embed::EmbeddedFile,
    cache: &'static str,
    request: &HeaderMap,
) -> Response {
    let mime = file.metadata.mimetype().to_string();
    let digest: String = file.metadata.sha256_hash()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if compress::worth_compressing(&mime, file.data.len()) {
        let accepted = compress::accepted(request);
        let mut chosen = None;
        // Brotli once its copy is made (in the background, on the first request that takes
        // it), gzip meanwhile or when brotli is not accepted.
        if accepted.brotli
            && let Cow::Borrowed(data) = &file.data
            && let Some(made) = compress::brotli_if_ready(name, data)
        {
            chosen = made.map(|bytes| (Encoding::Brotli, bytes));
        }
        if chosen.is_none() && accepted.gzip {
            chosen = compress::compressed(name, &file.data, Encoding::Gzip)
                .await
                .map(|bytes| (Encoding::Gzip, bytes));
        }
        if let Some((encoding, bytes)) = chosen {
            // Each representation has its own tag, so a cache never answers gzip for br.
            let etag = format!("\"{digest}-{}\"", encoding.token());
            return finish(
                &mime,
                &etag,
                cache,
                Some(encoding),
                Body::from(bytes),
                request,
            );
        }
    }
    let etag = format!("\"{digest}\"");
    finish(&mime, &etag, cache, None, Body::from(file.data), request)
}

fn finish(
    mime: &str,
    etag: &str,
    cache: &'static str,
    encoding: Option<Encoding>,
    body: Body,
    request: &HeaderMap,
) -> Response {
    let not_modified = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',')
                .map(|t| t.trim().trim_start_matches("W/"))
                .any(|t| t == etag || t == "*")
        });
    let mut response = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut response = Response::new(body);
        if let Ok(value) = HeaderValue::from_str(mime) {
            response.headers_mut().insert(header::CONTENT_TYPE, value);
        }
        if let Some(encoding) = encoding {
            response.headers_mut().insert(
                header::CONTENT_ENCODING,
                HeaderValue::from_static(encoding.token()),
            );
        }
        response
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(etag) {
        headers.insert(header::ETAG, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    response
}

fn with_page_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;
    use tower::ServiceExt;

    async fn get(path: &str, headers: &[(&str, &str)]) -> Response {
        let mut request = Request::get(path);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        router()
            .oneshot(request.body(Body::empty()).expect("request"))
            .await
            .expect("infallible")
    }

    #[tokio::test]
    async fn client_routes_get_the_index_and_other_owners_paths_do_not() {
        let index = get("/chat/0192", &[]).await;
        assert_eq!(index.status(), 200);
        assert_eq!(index.headers()[header::CACHE_CONTROL], "no-cache");
        assert!(
            index.headers()[header::CONTENT_TYPE]
                .to_str()
                .expect("text")
                .starts_with("text/html")
        );
        assert_eq!(get("/api/nothing", &[]).await.status(), 404);
        assert_eq!(get("/mcp/x", &[]).await.status(), 404);
        assert_eq!(get("/assets/gone-1234.js", &[]).await.status(), 404);
    }

    #[tokio::test]
    async fn the_etag_answers_304() {
        let first = get("/", &[]).await;
        let etag = first.headers()[header::ETAG]
            .to_str()
            .expect("text")
            .to_string();
        let again = get("/", &[("if-none-match", &etag)]).await;
        assert_eq!(again.status(), 304);
    }
}
