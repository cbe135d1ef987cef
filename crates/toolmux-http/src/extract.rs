//! Extractors whose rejections are [`ApiError`]s, so that a malformed request gets the same
//! error body as every other failure instead of axum's plain-text message.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A query string, parsed into `T`; a bad one is a 400 naming the parameter.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Self(q.0))
            .map_err(|e| ApiError::malformed(format!("bad query string: {}", e.body_text())))
    }
}

/// Path parameters, parsed into `T`.
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Self(p.0))
            .map_err(|e| ApiError::malformed(format!("bad path: {}", e.body_text())))
    }
}

/// Whether a `Content-Type` value is JSON: `application/json` or `application/<anything>+json`,
/// with any parameters. No browser sends one from another origin without a preflight.
pub(crate) fn is_json(content_type: &str) -> bool {
    content_type.parse::<mime::Mime>().is_ok_and(|mime| {
        mime.type_() == mime::APPLICATION
            && (mime.subtype() == mime::JSON || mime.suffix() == Some(mime::JSON))
    })
}

/// A JSON body parsed into `T`. An empty body without a `Content-Type` counts as `{}`, so
/// that a call without arguments needs no body; anything else must be JSON and say so
/// (`Content-Type: application/json`). A body of another type is refused with 415 before it is
/// read: a `text/plain`, form or multipart body is what a page of another origin can send
/// without the browser asking first. A body with no type at all is read as JSON only from a
/// client that sent a credential header (a key, which no page of another origin can send
/// without a preflight), so that scripts which leave the type out keep working.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let content_type = match request.headers().get(header::CONTENT_TYPE) {
            None => None,
            Some(value) => Some(
                value
                    .to_str()
                    .map_err(|_| not_json(Some("not valid text")))?,
            ),
        };
        let json = match content_type {
            Some(value) if !is_json(value) => return Err(not_json(Some(value))),
            Some(_) => true,
            None => crate::guard::carries_preflighted_header(request.headers()),
        };
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|e| ApiError::malformed(format!("cannot read the body: {}", e.body_text())))?;
        let empty = bytes.iter().all(u8::is_ascii_whitespace);
        if !empty && !json {
            return Err(not_json(None));
        }
        let text: &[u8] = if empty { b"{}" } else { &bytes };
        let mut deserializer = serde_json::Deserializer::from_slice(text);
        let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." || path.is_empty() {
                ApiError::malformed(format!("the body is not valid: {inner}"))
            } else {
                ApiError::malformed(format!("the body is not valid at `{path}`: {inner}"))
            }
        })?;
        deserializer
            .end()
            .map_err(|e| ApiError::malformed(format!("the body is not valid: {e}")))?;
        Ok(Self(value))
    }
}

/// 415: the body does not say it is JSON.
fn not_json(content_type: Option<&str>) -> ApiError {
    let sent = match content_type {
        Some(t) => format!("`Content-Type: {t}` was sent"),
        None => "no Content-Type was sent".to_string(),
    };
    ApiError::unsupported_media_type(format!(
        "the body must be JSON sent as `Content-Type: application/json`; {sent}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::StatusCode;

    async fn parse(content_type: Option<&str>, body: &str) -> Result<serde_json::Value, ApiError> {
        let mut request = Request::post("/");
        if let Some(t) = content_type {
            request = request.header(header::CONTENT_TYPE, t);
        }
        let request = request.body(Body::from(body.to_string())).expect("request");
        ApiJson::<serde_json::Value>::from_request(request, &())
            .await
            .map(|j| j.0)
    }

    #[test]
    fn json_types_are_told_from_the_others() {
        for json in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/merge-patch+json",
        ] {
            assert!(is_json(json), "{json}");
        }
        for other in [
            "text/plain",
            "text/plain; application/json",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "json",
            "",
        ] {
            assert!(!is_json(other), "{other}");
        }
    }

    /// A `Content-Type` is outside input: odd and huge ones are told apart without panicking.
    #[test]
    fn any_content_type_is_judged_without_panicking() {
        let pieces = [
            ";",
            "/",
            "\"",
            "=",
            "+json",
            "application",
            " ",
            "\\",
            "*",
            ",",
        ];
        for size in [0usize, 1, 7, 64, 1000, 100_000] {
            for piece in pieces {
                let value = piece.repeat(size);
                assert!(!is_json(&value) || value.contains("json"), "{size} {piece}");
                let prefixed = format!("application/json;{value}");
                let _ = is_json(&prefixed);
            }
        }
    }

    /// D26: a body is read as JSON only when it says it is JSON; a plain-text or form body,
    /// which any page can send without a preflight, is a 415.
    #[tokio::test]
    async fn d26_a_body_that_is_not_declared_json_is_refused() {
        let body = r#"{"name": "x", "command": "sh"}"#;
        assert!(parse(Some("application/json"), body).await.is_ok());
        for other in [
            Some("text/plain"),
            Some("text/plain;charset=UTF-8"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=b"),
            None,
        ] {
            let refused = parse(other, body).await.expect_err("refused");
            assert_eq!(
                refused.status(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{other:?}"
            );
            assert_eq!(answer(refused).await, unsupported(other), "{other:?}");
        }
        // A key holder's script that leaves the type out is read as JSON; a declared type that
        // is not JSON is refused whoever sends it.
        let keyed = |content_type: Option<&str>| {
            let mut request = Request::post("/").header("authorization", "Bearer k");
            if let Some(t) = content_type {
                request = request.header(header::CONTENT_TYPE, t);
            }
            request.body(Body::from(body.to_string())).expect("request")
        };
        assert!(
            ApiJson::<serde_json::Value>::from_request(keyed(None), &())
                .await
                .is_ok()
        );
        match ApiJson::<serde_json::Value>::from_request(keyed(Some("text/plain")), &()).await {
            Err(refused) => assert_eq!(answer(refused).await, unsupported(Some("text/plain"))),
            Ok(_) => panic!("a text/plain body with a key was read as JSON"),
        }
        // No body and no type is an empty object; a declared type must still be JSON.
        assert_eq!(parse(None, "").await.ok(), Some(serde_json::json!({})));
        assert_eq!(
            parse(Some("application/json"), " ").await.ok(),
            Some(serde_json::json!({}))
        );
        let refused = parse(Some("text/plain"), "").await.expect_err("refused");
        assert_eq!(answer(refused).await, unsupported(Some("text/plain")));
    }

    /// The JSON body an error answers with.
    async fn answer(error: ApiError) -> serde_json::Value {
        let response = axum::response::IntoResponse::into_response(error);
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("the body");
        serde_json::from_slice(&bytes).expect("a JSON body")
    }

    /// The 415 body for a request that sent `content_type`.
    fn unsupported(content_type: Option<&str>) -> serde_json::Value {
        let sent = match content_type {
            Some(t) => format!("`Content-Type: {t}` was sent"),
            None => "no Content-Type was sent".to_string(),
        };
        serde_json::json!({"error": {
            "code": "unsupported_media_type",
            "message": format!("the body must be JSON sent as `Content-Type: application/json`; {sent}"),
            "details": {},
        }})
    }
}
