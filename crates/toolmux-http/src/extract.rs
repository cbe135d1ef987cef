//! Extractors whose rejections are [`ApiError`]s, so that a malformed request gets the same
//! error body as every other failure instead of axum's plain-text message.

use axum::extract::{FromRequest, FromRequestParts, Request};
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

/// A JSON body parsed into `T`. An empty body counts as `{}`, so that a call without
/// arguments needs no body; anything else must be JSON (whatever its `Content-Type`).
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|e| ApiError::malformed(format!("cannot read the body: {}", e.body_text())))?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
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
