//! The REST API's side of the one error type ([`ApiError`], from `toolmux-http`): how a relayed
//! request's failure maps to it, and the error responses its routes share in the OpenAPI
//! document.

use axum::http::StatusCode;
use serde_json::json;
use toolmux_core::RelayError;
pub use toolmux_http::{ApiError, ErrorBody, ErrorDetail};

/// The error responses of every route that calls a tool (`/api/tools/{name}/call`, and the
/// routes that stand for one tool: `/api/files`, `/api/specs`): one per status a
/// [`CallError`](toolmux_core::CallError) maps to, and on the routes that stand for a tool also
/// the statuses of the tool's own error result ([`ApiError::tool_error`]), written once so that
/// the OpenAPI document cannot drift between those routes.
#[derive(utoipa::IntoResponses)]
#[allow(
    dead_code,
    reason = "only its OpenAPI description is used; `ApiError` builds the bodies"
)]
pub(crate) enum CallFailures {
    /// A malformed request (a body that is not JSON, a bad query parameter); on a route that
    /// stands for a tool also the tool's own error result when it gives no kind (`tool_error`:
    /// a path outside the root, say).
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// A key that is not valid, or none where one is needed.
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// Denied by policy or by a person (a call with policy `ask` waits in `GET /api/approvals`
    /// until it is answered or the approval times out), disabled, or a foreign Host or Origin.
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// No such tool; on a route that stands for a tool, what the tool reports missing
    /// (`not_found`: no such spec) or the tool's whole source (`no_specs_directory`).
    #[response(status = 404)]
    NotFound(ErrorBody),
    /// The arguments break the tool's input schema (`invalid_arguments`, each violation
    /// listed); on a route that stands for a tool also a request the tool refuses as asked
    /// (`invalid`: a refused status transition, a link that would make a cycle).
    #[response(status = 422)]
    Unprocessable(ErrorBody),
    /// Rate limited; `Retry-After` says when to try again.
    #[response(status = 429)]
    RateLimited(ErrorBody),
    /// The source failed, or the tool broke its output schema.
    #[response(status = 502)]
    BadGateway(ErrorBody),
    /// The source is unavailable.
    #[response(status = 503)]
    Unavailable(ErrorBody),
    /// The call timed out.
    #[response(status = 504)]
    Timeout(ErrorBody),
}

/// The one status a tool's own error result has that no pipeline refusal has, on the routes
/// that stand for a tool that reports conflicts (`/api/specs`), beside [`CallFailures`].
/// (`POST /api/tools/{name}/call` answers any error result with 200 and the result itself.)
#[derive(utoipa::IntoResponses)]
#[allow(
    dead_code,
    reason = "only its OpenAPI description is used; `ApiError` builds the bodies"
)]
pub(crate) enum ToolConflict {
    /// The tool reports a conflict (`conflict`): what the request names changed since the
    /// caller read it (a stale `expectedContentHash`), or names more than one thing; read again.
    #[response(status = 409)]
    Conflict(ErrorBody),
}

/// The error responses a relayed request shares with every other one (`/api/prompts/{name}`,
/// `/api/resources/read`, `/api/completions`): one per status a [`RelayError`] of the server
/// itself maps to ([`relay_failure`]), written once so that the OpenAPI document cannot drift
/// between those routes. Each route describes its own 400, 401 and 404, which differ.
#[derive(utoipa::IntoResponses)]
#[allow(
    dead_code,
    reason = "only its OpenAPI description is used; `ApiError` builds the bodies"
)]
pub(crate) enum RelayFailures {
    /// The server answered with an error (its `code` and `message` are in `details`) or broke the protocol
    #[response(status = 502)]
    BadGateway(ErrorBody),
    /// The server cannot be started
    #[response(status = 503)]
    Unavailable(ErrorBody),
    /// The server did not answer in time
    #[response(status = 504)]
    Timeout(ErrorBody),
}

/// MCP's JSON-RPC code for "resource not found": the server does not have what was asked for,
/// which is a 404 whoever says it.
const RESOURCE_NOT_FOUND: i32 = -32002;

/// A relayed request that failed, as the REST channel answers it: the one mapping of the relay's
/// error ([`RelayError`], shared with the MCP channel) to a status and body. The server's own
/// error travels in `details`, so that a client sees the code an MCP client would.
pub(crate) fn relay_failure(error: RelayError) -> ApiError {
    let message = error.to_string();
    match error {
        RelayError::NotFound(_) => ApiError::not_found(message),
        RelayError::Invalid(_) | RelayError::NoSubscriptions { .. } => ApiError::malformed(message),
        RelayError::Answered {
            server,
            code,
            message: answer,
        } => {
            let details = json!({ "server": server, "code": code, "message": answer });
            let status = if code == RESOURCE_NOT_FOUND {
                (StatusCode::NOT_FOUND, "not_found")
            } else {
                (StatusCode::BAD_GATEWAY, "upstream_error")
            };
            ApiError::new(status.0, status.1, message).with_details(details)
        }
        RelayError::Failed(_) => ApiError::new(StatusCode::BAD_GATEWAY, "failed", message),
        RelayError::Unavailable(_) | RelayError::Unreadable(_) => ApiError::unavailable(message),
        RelayError::Timeout { after, .. } => {
            let after_ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
            ApiError::new(StatusCode::GATEWAY_TIMEOUT, "timeout", message)
                .with_details(json!({ "timeoutMs": after_ms }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolmux_core::Unknown;

    #[test]
    fn each_relay_error_maps_to_its_status_keeping_the_servers_answer() {
        let answered = |code| RelayError::Answered {
            server: "s".into(),
            code,
            message: "no".into(),
        };
        let cases = [
            (
                RelayError::NotFound(Unknown::Prompt("x".into())),
                StatusCode::NOT_FOUND,
            ),
            (RelayError::Invalid("x".into()), StatusCode::BAD_REQUEST),
            (
                RelayError::NoSubscriptions { server: "s".into() },
                StatusCode::BAD_REQUEST,
            ),
            (answered(-32602), StatusCode::BAD_GATEWAY),
            (answered(RESOURCE_NOT_FOUND), StatusCode::NOT_FOUND),
            (RelayError::Failed("x".into()), StatusCode::BAD_GATEWAY),
            (
                RelayError::Unavailable("x".into()),
                StatusCode::SERVICE_UNAVAILABLE,
            ),
            (
                RelayError::Unreadable("x".into()),
                StatusCode::SERVICE_UNAVAILABLE,
            ),
            (
                RelayError::Timeout {
                    message: "x".into(),
                    after: std::time::Duration::from_millis(5),
                },
                StatusCode::GATEWAY_TIMEOUT,
            ),
        ];
        for (error, status) in cases {
            assert_eq!(relay_failure(error.clone()).status(), status, "{error:?}");
        }
        let error = relay_failure(answered(-32602));
        assert_eq!(
            error.details(),
            Some(&json!({"server": "s", "code": -32602, "message": "no"}))
        );
        let timeout = relay_failure(RelayError::Timeout {
            message: "x".into(),
            after: std::time::Duration::from_millis(5),
        });
        assert_eq!(timeout.details(), Some(&json!({"timeoutMs": 5})));
    }
}
