//! Who may use each route, by the kind of credential: one table for every route the REST API
//! serves (the chat's and the sign-in routes too), read by one middleware. Trust comes from the
//! credential's kind, never from being authenticated at all (THREATS.md, rule 4): an access token
//! from `server.auth`'s issuer is an MCP client's equal — it lists and calls tools, and reads the
//! upstream servers' prompts and resources — unless it grants one of `server.adminScopes`; the
//! owner's credential (the local token, a configured key, the web app's session) may do
//! everything. A route missing from the table is the owner's: a new route is closed to token
//! holders until someone decides otherwise here.

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use toolmux_http::Caller;
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, ResponseBuilder};

use crate::ApiError;

/// Who may use a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Whoever passes the guard's Host and Origin checks, with or without a credential: health
    /// and signing in.
    Open,
    /// Any credential, an access token without an admin scope included: what an MCP client may
    /// do. Internal tools stay the owner's: the pipeline refuses them to a caller that is not
    /// trusted, and only the owner is.
    AnyCredential,
    /// The owner's credential, or an access token with one of `server.adminScopes`: internal
    /// tools, registry and configuration writes, the upstream servers' settings, the execution
    /// log, approvals and questions, coding sessions, the chat and its conversations, metrics.
    Owner,
}

use Access::{AnyCredential as Any, Open, Owner};

/// Every route with who may use it, as `(method, path as registered)`.
const ROUTES: &[(&str, &str, Access)] = &[
    // Health and signing in.
    ("GET", "/api/health", Open),
    ("GET", "/api/auth/session", Open),
    ("POST", "/api/auth/session", Open),
    ("POST", "/api/auth/logout", Open),
    ("GET", "/api/openapi.json", Any),
    // The catalog and calls: what `/mcp` gives any client. Internal tools are refused by the
    // pipeline to a caller that is not the owner.
    ("GET", "/api/tools", Any),
    ("GET", "/api/tools/{name}", Any),
    ("POST", "/api/tools/{name}/call", Any),
    ("GET", "/api/prompts", Any),
    ("POST", "/api/prompts/{name}", Any),
    ("GET", "/api/resources", Any),
    ("GET", "/api/resources/read", Any),
    ("GET", "/api/results/{id}", Any),
    ("POST", "/api/completions", Any),
    // Routes that each stand for one tool, called through the pipeline with its policy.
    ("GET", "/api/files", Any),
    ("GET", "/api/files/content", Any),
    ("GET", "/api/files/search", Any),
    ("GET", "/api/files/grep", Any),
    ("GET", "/api/specs", Any),
    ("GET", "/api/specs/search", Any),
    ("GET", "/api/specs/board", Any),
    ("GET", "/api/specs/stats", Any),
    ("GET", "/api/specs/validation", Any),
    ("GET", "/api/specs/tokens", Any),
    ("GET", "/api/specs/{spec}", Any),
    ("POST", "/api/specs", Any),
    ("PATCH", "/api/specs/{spec}", Any),
    ("POST", "/api/specs/{spec}/relationships", Any),
    ("DELETE", "/api/specs/{spec}/relationships", Any),
    ("GET", "/api/tasks", Any),
    ("POST", "/api/tasks", Any),
    ("GET", "/api/tasks/{id}", Any),
    ("PATCH", "/api/tasks/{id}", Any),
    ("DELETE", "/api/tasks/{id}", Any),
    ("POST", "/api/tasks/{id}/notes", Any),
    ("GET", "/api/skills", Any),
    ("GET", "/api/skills/{name}", Any),
    // The registry: what runs on this machine, and its policies.
    ("POST", "/api/tools", Owner),
    ("PUT", "/api/tools/{name}", Owner),
    ("PATCH", "/api/tools/{name}", Owner),
    ("DELETE", "/api/tools/{name}", Owner),
    ("GET", "/api/mcp-servers", Owner),
    ("GET", "/api/mcp-servers/{name}", Owner),
    ("POST", "/api/mcp-servers", Owner),
    ("PUT", "/api/mcp-servers/{name}", Owner),
    ("DELETE", "/api/mcp-servers/{name}", Owner),
    ("POST", "/api/mcp-servers/{name}/refresh", Owner),
    // Accepting a changed definition lets its text reach every model: the owner's call.
    ("POST", "/api/mcp-servers/{name}/trust", Owner),
    ("POST", "/api/mcp-servers/{name}/login", Owner),
    ("POST", "/api/mcp-servers/{name}/logout", Owner),
    ("POST", "/api/import", Owner),
    // A person's answers: approving calls (everyone's, not only the caller's) and questions.
    ("GET", "/api/approvals", Owner),
    ("POST", "/api/approvals/{id}", Owner),
    ("GET", "/api/approvals/stream", Owner),
    ("GET", "/api/inputs", Owner),
    ("POST", "/api/inputs/{id}", Owner),
    // Every caller's calls, arguments and results.
    ("GET", "/api/logs", Owner),
    ("GET", "/api/logs/stream", Owner),
    ("GET", "/metrics", Owner),
    // Coding agents, which run commands on this machine, and their logs.
    ("GET", "/api/runners", Owner),
    ("POST", "/api/runners/detect", Owner),
    ("GET", "/api/sessions", Owner),
    ("POST", "/api/sessions", Owner),
    ("GET", "/api/sessions/{id}", Owner),
    ("GET", "/api/sessions/{id}/logs", Owner),
    ("POST", "/api/sessions/{id}/cancel", Owner),
    ("GET", "/api/sessions/{id}/stream", Owner),
    // The chat: the owner's model keys and conversations.
    ("POST", "/api/chat", Owner),
    ("POST", "/api/chat/{conversation}/input", Owner),
    ("POST", "/api/chat/{conversation}/cancel", Owner),
    ("GET", "/api/conversations", Owner),
    ("GET", "/api/conversations/{id}", Owner),
    ("PATCH", "/api/conversations/{id}", Owner),
    ("DELETE", "/api/conversations/{id}", Owner),
    ("GET", "/api/models", Owner),
];

/// Who may use the route `path` (as registered, with its `{parameters}`) by `method`; `None`
/// for a route the table does not name, which [`enforce`] treats as the owner's.
pub fn route_access(method: &Method, path: &str) -> Option<Access> {
    ROUTES
        .iter()
        .find(|(m, p, _)| *p == path && method.as_str() == *m)
        .map(|(_, _, access)| *access)
}

/// Refuses a request whose credential is not enough for its route ([`route_access`]). Runs
/// inside the guard, which has recorded the [`Caller`]; a request without a credential got
/// here only where the guard lets such requests through (the open routes, or a server with no
/// credential at all, a Unix socket that its file mode guards), and the guard's rule stands.
pub(crate) async fn enforce(request: Request, next: Next) -> Response {
    let Some(route) = request.extensions().get::<MatchedPath>() else {
        // No route matched: the fallback's 404.
        return next.run(request).await;
    };
    let access = route_access(request.method(), route.as_str()).unwrap_or(Owner);
    let Some(caller) = request.extensions().get::<Caller>().copied() else {
        // Only a router without the guard in front could get here; refuse rather than guess.
        return ApiError::forbidden("this route is served only behind the guard").into_response();
    };
    if access == Owner && caller.authenticated && !caller.owner {
        let holder = if caller.via == Some(toolmux_http::Via::Jwt) {
            "this access token may list and call tools"
        } else {
            "a configured principal's key may list and call what its roles grant"
        };
        return ApiError::forbidden(format!(
            "`{} {}` needs the owner's credential (the local token, a configured API key, or \
             the web app signed in with one) or an access token with one of \
             `server.adminScopes`; {holder}",
            request.method(),
            route.as_str()
        ))
        .into_response();
    }
    next.run(request).await
}

/// Adds to every operation of `document` the refusals the guard and [`enforce`] give it: `403`
/// on the owner's routes for a token without an admin scope, `415` on each that takes a body
/// that is not JSON.
pub(crate) fn document_refusals(document: &mut OpenApi) {
    let error = || {
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("ErrorBody")))
            .build()
    };
    crate::openapi::each_operation(document, |path, method, operation| {
        let responses = &mut operation.responses.responses;
        if route_access(&method, path).unwrap_or(Owner) == Owner {
            responses.entry("403".to_string()).or_insert_with(|| {
                ResponseBuilder::new()
                    .description(
                        "Refused: the owner's credential, or an access token with an admin \
                             scope, is needed",
                    )
                    .content("application/json", error())
                    .build()
                    .into()
            });
        }
        if operation.request_body.is_some() {
            responses.entry("415".to_string()).or_insert_with(|| {
                ResponseBuilder::new()
                    .description("The body is not sent as `Content-Type: application/json`")
                    .content("application/json", error())
                    .build()
                    .into()
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The audit: every route the API serves is in the table, with a decision, and the table
    /// names no route that does not exist (the chat's and the sign-in routes are checked by
    /// the binary's tests, which serve them).
    #[test]
    fn every_route_has_a_decision() {
        let document = crate::openapi();
        let operations = toolmux_http::operations(&document);
        for operation in &operations {
            let (method, path) = operation.split_once(' ').expect("method path");
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("a method");
            assert!(
                route_access(&method, path).is_some(),
                "`{operation}` has no entry in access::ROUTES"
            );
        }
        let outside = [
            "/api/auth/session",
            "/api/auth/logout",
            "/api/chat",
            "/api/chat/{conversation}/input",
            "/api/chat/{conversation}/cancel",
            "/api/conversations",
            "/api/conversations/{id}",
            "/api/models",
        ];
        for (method, path, _) in ROUTES {
            let listed = operations.contains(&format!("{} {path}", method.to_lowercase()));
            assert!(
                listed || outside.contains(path),
                "`{method} {path}` is in the table but not served"
            );
        }
    }

    /// D27: what a token holder without an admin scope may never do.
    #[test]
    fn d27_registry_config_and_log_routes_are_the_owners() {
        for (method, path) in [
            (Method::POST, "/api/tools"),
            (Method::PATCH, "/api/tools/{name}"),
            (Method::POST, "/api/mcp-servers"),
            (Method::PUT, "/api/mcp-servers/{name}"),
            (Method::POST, "/api/import"),
            (Method::POST, "/api/approvals/{id}"),
            (Method::GET, "/api/logs"),
            (Method::POST, "/api/sessions"),
            (Method::POST, "/api/chat"),
            (Method::GET, "/api/no-such-route"),
        ] {
            assert_ne!(
                route_access(&method, path).unwrap_or(Owner),
                Any,
                "{method} {path}"
            );
        }
        assert_eq!(
            route_access(&Method::POST, "/api/tools/{name}/call"),
            Some(Any)
        );
        assert_eq!(route_access(&Method::GET, "/api/tools"), Some(Any));
    }
}
