//! The guard's credential check with access tokens beside keys: a bearer value that is a
//! configured key or the local token counts as that, as before; any other, when `server.auth`
//! names an issuer, is checked as the issuer's JWT ([`TokenIssuer::verify`]). Refusals carry the
//! `WWW-Authenticate` challenge MCP's authorization spec asks for
//! ([`crate::resource_metadata::challenge`]).

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::auth::Via;
use crate::error::ApiError;
use crate::guard::{API_KEY_HEADER, ApiOptions, LiveOptions};
use crate::resource_metadata::{Challenge, challenge};
use crate::token_issuer::{Principal, TokenRefusal};

/// Why the guard refuses a request's credential.
pub(crate) enum Refusal {
    /// A key, the local token or the header itself was wrong.
    Key(ApiError),
    /// An access token was refused.
    Token(TokenRefusal),
}

/// What the guard learned from a request's credential.
pub(crate) struct Found {
    /// How the request proved who it is; `None` when it sent no credential.
    pub(crate) via: Option<Via>,
    /// The token's principal, when it was an access token.
    pub(crate) principal: Option<Principal>,
    /// The credential is the owner's: the local token, a configured key, the web app's session
    /// made with one of them, or an access token granting one of `server.adminScopes`.
    pub(crate) owner: bool,
}

/// How the request is authenticated, the token's principal when it was by a token, and whether
/// the credential is the owner's.
pub(crate) async fn authenticate(
    headers: &HeaderMap,
    live: &LiveOptions,
    options: &ApiOptions,
) -> Result<Found, Refusal> {
    if let Some(issuer) = &options.token_issuer
        && !headers.contains_key(API_KEY_HEADER)
        && let Some(token) = crate::guard::bearer_token(headers)
        && crate::guard::credential_kind(token, live).is_none()
        && looks_like_jwt(token)
    {
        let mut principal = issuer.verify(token).await.map_err(Refusal::Token)?;
        principal.owner = principal.grants_any(&options.admin_scopes);
        principal.name = (options.principal_subjects.iter())
            .find(|(subject, _)| principal.subject.as_ref() == Some(subject))
            .map(|(_, name)| name.clone());
        return Ok(Found {
            via: Some(Via::Jwt),
            owner: principal.owner,
            principal: Some(principal),
        });
    }
    if let Some(name) = principal_key(headers, options) {
        return Ok(Found {
            via: Some(Via::Key),
            principal: Some(Principal::of_key(name)),
            owner: false,
        });
    }
    crate::guard::authenticate(headers, live, options)
        .map(|via| Found {
            via,
            principal: None,
            // Every credential but an access token is the owner's (`Via::Jwt` never comes
            // from here).
            owner: via.is_some_and(|v| v != Via::Jwt),
        })
        .map_err(Refusal::Key)
}

/// The configured principal whose key the request sent, when it sent exactly one credential
/// header and that header holds one: a request that also sends another credential is checked
/// by the rule that every credential sent must be valid.
fn principal_key<'a>(headers: &HeaderMap, options: &'a ApiOptions) -> Option<&'a str> {
    let bearer = headers.contains_key(axum::http::header::AUTHORIZATION);
    let secret = match (bearer, headers.get(API_KEY_HEADER)) {
        (true, None) => crate::guard::bearer_token(headers)?,
        (false, Some(key)) => key.to_str().ok()?.trim(),
        _ => return None,
    };
    crate::guard::principal_of_key(secret, options)
}

/// Whether `token` has a JWS's shape (three dot-separated parts): anything else that is not a
/// key is a wrong key, and is told so.
fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

/// The response to a refused credential; with an issuer configured, a `401` or `403` carries
/// the challenge that tells an OAuth client where to sign in.
pub(crate) fn refused(
    refusal: Refusal,
    headers: &HeaderMap,
    path: &str,
    options: &ApiOptions,
) -> Response {
    let (error, kind) = match refusal {
        Refusal::Key(error) => (error, Challenge::InvalidToken),
        Refusal::Token(TokenRefusal::Invalid(why)) => (
            ApiError::unauthorized(TokenRefusal::Invalid(why).to_string()),
            Challenge::InvalidToken,
        ),
        Refusal::Token(refusal @ TokenRefusal::InsufficientScope(_)) => (
            ApiError::new(
                StatusCode::FORBIDDEN,
                "insufficient_scope",
                refusal.to_string(),
            ),
            Challenge::InsufficientScope,
        ),
        Refusal::Token(refusal @ TokenRefusal::KeysUnavailable(_)) => {
            tracing::warn!(error = %refusal, "an access token could not be checked");
            return ApiError::unavailable(refusal.to_string()).into_response();
        }
    };
    with_challenge(error.into_response(), headers, path, options, kind)
}

/// The response to a request that needed a credential and sent none.
pub(crate) fn credential_missing(
    message: &str,
    headers: &HeaderMap,
    path: &str,
    options: &ApiOptions,
) -> Response {
    let response = ApiError::unauthorized(message.to_string()).into_response();
    with_challenge(response, headers, path, options, Challenge::NoToken)
}

fn with_challenge(
    response: Response,
    headers: &HeaderMap,
    path: &str,
    options: &ApiOptions,
    kind: Challenge,
) -> Response {
    let status = response.status();
    match &options.token_issuer {
        Some(issuer) if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN => {
            challenge(response, headers, path, issuer, kind)
        }
        _ => response,
    }
}
