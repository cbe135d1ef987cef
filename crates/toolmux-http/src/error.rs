//! The one error type of every HTTP route, the REST API's and the chat's, and its JSON body,
//! `{"error": {"code", "message", "details"}}`, with the status that fits it.

use std::time::Duration;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};
use toolmux_core::{CallError, ToolErrorKind, ToolResult};
use utoipa::ToSchema;

/// A request that did not succeed. Every handler returns it; it renders as the one error body.
/// Boxed, so that the `Result`s of the happy path stay small.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", .0.message)]
pub struct ApiError(Box<Repr>);

#[derive(Debug, Clone)]
struct Repr {
    status: StatusCode,
    code: &'static str,
    message: String,
    details: Option<Value>,
    retry_after: Option<Duration>,
}

/// The JSON body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong, for people (`message`) and for programs (`code`, `details`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A short stable code: `malformed`, `unauthorized`, `forbidden`, `not_found`, `conflict`,
    /// `invalid_arguments`, `invalid` (a tool refused the request as asked), `tool_error`,
    /// `rate_limited`, `timeout`, `unavailable`, ...
    pub code: String,
    /// A sentence saying what went wrong and, where possible, what to do.
    pub message: String,
    /// Structured details: the violations of an invalid call, a suggested name, ...
    #[schema(value_type = Object)]
    pub details: Value,
}

impl ApiError {
    /// An error with its status, its stable code and its message, for what the shorthands
    /// below do not name (a crate's own refusals: `busy`, `invalid_answer`, ...).
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self(Box::new(Repr {
            status,
            code,
            message: message.into(),
            details: None,
            retry_after: None,
        }))
    }

    /// Adds structured details (violations, the server's own answer, ...).
    pub fn with_details(mut self, details: Value) -> Self {
        self.0.details = Some(details);
        self
    }

    /// 400: the request itself is malformed (bad JSON, a bad query parameter).
    pub fn malformed(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "malformed", message)
    }

    /// 401: no key, or a key that is not valid.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 415: the body's type is not one the route reads (a body that is not declared JSON).
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            message,
        )
    }

    /// 403: the request is understood and refused.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 404: nothing by that name.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 409: the request conflicts with the current state (a name that is taken).
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 422: a definition that does not pass the configuration's checks.
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_definition",
            message,
        )
    }

    /// 503: the server cannot do this now.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }

    /// The error result of a tool that a route runs on the caller's behalf (`/api/files`,
    /// `/api/specs`), by the kind the tool gave it ([`ToolResult::kind_error`]): 404
    /// `not_found`, 409 `conflict`, 422 `invalid` — the codes are the kinds' own names, as the
    /// result's `structuredContent.error.kind` carries them on every channel — and 400
    /// `tool_error` when the tool did not say (a path outside the root, a bad pattern). The one
    /// mapping of every route that stands for a tool.
    pub fn tool_error(result: &ToolResult) -> Self {
        let message = result.text_content();
        match result.error_kind() {
            Some(kind @ ToolErrorKind::NotFound) => {
                Self::new(StatusCode::NOT_FOUND, kind.as_str(), message)
            }
            Some(kind @ ToolErrorKind::Conflict) => {
                Self::new(StatusCode::CONFLICT, kind.as_str(), message)
            }
            Some(kind @ ToolErrorKind::Invalid) => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, kind.as_str(), message)
            }
            None => Self::new(StatusCode::BAD_REQUEST, "tool_error", message),
        }
    }

    /// 500: something on the server's side broke (the log could not be read).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.0.status
    }

    /// The stable code.
    pub fn code(&self) -> &'static str {
        self.0.code
    }

    /// The structured details, when there are any.
    pub fn details(&self) -> Option<&Value> {
        self.0.details.as_ref()
    }
}

/// Each pipeline refusal maps to one status: the same mapping for every route that calls a tool.
impl From<CallError> for ApiError {
    fn from(error: CallError) -> Self {
        let message = error.to_string();
        let code = error.code();
        match error {
            CallError::NotFound { suggestion, .. } => {
                Self::new(StatusCode::NOT_FOUND, code, message)
                    .with_details(json!({ "suggestion": suggestion }))
            }
            CallError::Disabled { .. } | CallError::NotServed { .. } | CallError::Denied { .. } => {
                Self::new(StatusCode::FORBIDDEN, code, message)
            }
            CallError::InvalidArguments { violations, .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
                    .with_details(json!({ "violations": violations }))
            }
            CallError::RateLimited { retry_after, .. } => {
                let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, code, message)
                    .with_details(json!({ "retryAfterMs": retry_after.as_millis() as u64 }));
                e.0.retry_after = Some(retry_after);
                e
            }
            CallError::Timeout { after, .. } => {
                Self::new(StatusCode::GATEWAY_TIMEOUT, code, message)
                    .with_details(json!({ "timeoutMs": after.as_millis() as u64 }))
            }
            CallError::Unavailable { .. } => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
            }
            CallError::Failed { .. } => Self::new(StatusCode::BAD_GATEWAY, code, message),
            CallError::InvalidOutput { violations, .. } => {
                Self::new(StatusCode::BAD_GATEWAY, code, message)
                    .with_details(json!({ "violations": violations }))
            }
        }
    }
}

/// A configuration edit that was not made: 422 when the result would not load (the one
/// violation it names is listed), 409 when the file must be fixed by hand first, 500 when it
/// cannot be read or written.
impl From<toolmux_config::EditError> for ApiError {
    fn from(error: toolmux_config::EditError) -> Self {
        use toolmux_config::EditError;
        let message = error.to_string();
        match error {
            EditError::Invalid(e) => Self::unprocessable(message).with_details(json!({
                "violations": [{"field": e.field, "message": e.message}],
            })),
            EditError::Uneditable { .. } => Self::conflict(message),
            EditError::Io { .. } => Self::internal(message),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // Kept on the response, so that a channel with its own error shape (`/mcp`'s
        // JSON-RPC) can say the same refusal its way: [`ApiError::from_response`].
        let kept = self.clone();
        let this = *self.0;
        let body = json!({
            "error": {
                "code": this.code,
                "message": this.message,
                "details": this.details.unwrap_or_else(|| json!({})),
            }
        });
        let mut response = (this.status, Json(body)).into_response();
        if let Some(after) = this.retry_after {
            // Whole seconds, rounded up: `Retry-After: 0` would invite an immediate retry.
            let secs = after.as_millis().div_ceil(1000).max(1);
            if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        if this.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"toolmux\""),
            );
        }
        response.extensions_mut().insert(kept);
        response
    }
}

impl ApiError {
    /// The error a response was made from, when it was made from one.
    pub fn from_response(response: &Response) -> Option<&ApiError> {
        response.extensions().get::<ApiError>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolmux_core::Violation;

    #[test]
    fn each_call_error_maps_to_its_status() {
        let cases = [
            (
                CallError::NotFound {
                    name: "x".into(),
                    suggestion: None,
                },
                StatusCode::NOT_FOUND,
            ),
            (
                CallError::Denied {
                    name: "x".into(),
                    reason: "no".into(),
                },
                StatusCode::FORBIDDEN,
            ),
            (
                CallError::InvalidArguments {
                    name: "x".into(),
                    violations: vec![Violation {
                        pointer: "/a".into(),
                        message: "bad".into(),
                    }],
                },
                StatusCode::UNPROCESSABLE_ENTITY,
            ),
            (
                CallError::RateLimited {
                    name: "x".into(),
                    retry_after: Duration::from_millis(1500),
                },
                StatusCode::TOO_MANY_REQUESTS,
            ),
            (
                CallError::Timeout {
                    name: "x".into(),
                    after: Duration::from_secs(1),
                },
                StatusCode::GATEWAY_TIMEOUT,
            ),
            (
                CallError::Unavailable {
                    name: "x".into(),
                    message: "down".into(),
                },
                StatusCode::SERVICE_UNAVAILABLE,
            ),
        ];
        for (error, status) in cases {
            assert_eq!(ApiError::from(error).status(), status);
        }
    }

    #[test]
    fn a_tool_error_result_maps_to_the_status_of_its_kind() {
        let cases = [
            (
                Some(ToolErrorKind::NotFound),
                StatusCode::NOT_FOUND,
                "not_found",
            ),
            (
                Some(ToolErrorKind::Conflict),
                StatusCode::CONFLICT,
                "conflict",
            ),
            (
                Some(ToolErrorKind::Invalid),
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
            ),
            (None, StatusCode::BAD_REQUEST, "tool_error"),
        ];
        for (kind, status, code) in cases {
            let result = match kind {
                Some(kind) => ToolResult::kind_error(kind, "it says no"),
                None => ToolResult::error("it says no"),
            };
            let error = ApiError::tool_error(&result);
            assert_eq!((error.status(), error.code()), (status, code), "{kind:?}");
            assert_eq!(error.to_string(), "it says no");
        }
    }

    #[test]
    fn a_rate_limited_call_says_when_to_retry_in_whole_seconds() {
        let response = ApiError::from(CallError::RateLimited {
            name: "x".into(),
            retry_after: Duration::from_millis(1500),
        })
        .into_response();
        assert_eq!(response.headers()[header::RETRY_AFTER], "2");
    }
}
