//! `POST /api/mcp-servers/{name}/login` and `/logout`: signing in to an upstream server that
//! asks for OAuth, for the web app's *Sign in* button.
//!
//! The contract with the page: `login` answers at once with the `authorizationUrl` the page
//! opens; toolmux's loopback listener waits for the browser to come back there, finishes the
//! flow, keeps the tokens in the secret store and discovers the server's tools, so the page
//! only polls the server until its `discovery.discoveryStatus` is no longer `needs-sign-in`.
//! A server configured with `grant: "client_credentials"` needs no person: it is signed in
//! before the answer, which has `authorizationUrl: null`. `logout` forgets the tokens (204).
//! The flow itself lives in `toolmux_oauth`, reached through [`crate::UpstreamServers`].

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use toolmux_http::{ApiPath, OpenApiRouter, routes};
use utoipa::ToSchema;

use crate::ApiState;
use crate::error::{ApiError, ErrorBody};
use crate::registry::no_server_named;
use crate::upstreams::servers;

/// Why signing in (or out) could not start.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SignInError {
    /// A stdio server: nothing to sign in to (409).
    #[error("{0}")]
    NotHttp(String),
    /// Discovery, registration or the secret store failed (502).
    #[error("{0}")]
    Failed(String),
    /// This server's API cannot sign in (503).
    #[error("{0}")]
    Unavailable(String),
}

impl From<SignInError> for ApiError {
    fn from(error: SignInError) -> Self {
        match error {
            SignInError::NotHttp(message) => ApiError::conflict(message),
            SignInError::Failed(message) => {
                ApiError::new(StatusCode::BAD_GATEWAY, "sign_in_failed", message)
            }
            SignInError::Unavailable(message) => ApiError::unavailable(message),
        }
    }
}

/// The answer to `login`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignInStarted {
    /// The URL to open in a browser; `null` when the server was signed in to without one
    /// (client credentials).
    pub authorization_url: Option<String>,
}

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(login))
        .routes(routes!(logout))
}

/// Starts signing in to an HTTP or SSE server: answers with the URL to open; the flow finishes
/// (tokens kept, tools discovered) when the browser comes back to toolmux.
#[utoipa::path(
    post, path = "/api/mcp-servers/{name}/login", tag = "mcp-servers",
    params(("name" = String, Path, description = "The server's name")),
    responses(
        (status = 200, description = "`{authorizationUrl}`: open it to sign in", body = SignInStarted),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such server", body = ErrorBody),
        (status = 409, description = "A stdio server, which has no sign-in", body = ErrorBody),
        (status = 502, description = "Discovery or registration with the server's authorization server failed", body = ErrorBody),
    )
)]
pub(crate) async fn login(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<SignInStarted>, ApiError> {
    match servers(&state)?.login(&name).await {
        None => Err(no_server_named(&name)),
        Some(Ok(authorization_url)) => Ok(Json(SignInStarted { authorization_url })),
        Some(Err(e)) => Err(e.into()),
    }
}

/// Forgets the tokens of a server toolmux signed in to; it reads `needs-sign-in` again.
#[utoipa::path(
    post, path = "/api/mcp-servers/{name}/logout", tag = "mcp-servers",
    params(("name" = String, Path, description = "The server's name")),
    responses(
        (status = 204, description = "Signed out"),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such server", body = ErrorBody),
        (status = 409, description = "A stdio server, which has no sign-in", body = ErrorBody),
    )
)]
pub(crate) async fn logout(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    match servers(&state)?.logout(&name).await {
        None => Err(no_server_named(&name)),
        Some(Ok(())) => Ok(StatusCode::NO_CONTENT),
        Some(Err(e)) => Err(e.into()),
    }
}
