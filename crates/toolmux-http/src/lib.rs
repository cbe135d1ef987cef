//! toolmux's HTTP edge, shared by every HTTP channel (the REST API, the chat routes, the MCP
//! endpoint, the web app's page): the one guard (exact Host and Origin checks against DNS
//! rebinding and other origins, API keys, the local token and the web app's session, and
//! whether a credential is the owner's), the one
//! error type and its JSON body, extractors whose rejections are that error, and how
//! connections are served, with the limits that keep one client from holding the server's
//! sockets and file descriptors.
//!
//! It knows no channel: no MCP type, no chat type. Channels put their routes behind
//! [`guarded`] or [`mcp_guarded`] and answer with [`ApiError`].

mod auth;
mod bearer;
mod connections;
mod error;
mod extract;
mod guard;
mod local_token;
mod resource_metadata;
mod token_issuer;

pub use auth::{
    SESSION_COOKIE, SESSION_HEADER, SESSION_IDLE, SessionOpened, SessionRequest, SessionStatus,
    Via, auth_routes,
};
pub use connections::{ConnectionLimits, PeerAddress, serve};
pub use error::{ApiError, ErrorBody, ErrorDetail};
pub use extract::{ApiJson, ApiPath, ApiQuery};
pub use guard::{
    API_KEY_HEADER, ApiOptions, Caller, LiveOptions, guarded, mcp_guarded, mcp_refusal,
    page_guarded,
};
pub use local_token::{LOCAL_TOKEN_FILE, LocalToken, LocalTokenError, load_or_create};
pub use resource_metadata::{RESOURCE_METADATA_PATH, protected_resource_routes};
pub use token_issuer::{Principal, TokenIssuer, TokenRefusal};
/// Route registration: a route is added with its OpenAPI operation (`routes!` reads the
/// handler's `#[utoipa::path]`), so none can exist without its entry in the document.
pub use utoipa_axum::{router::OpenApiRouter, routes};

/// Every operation an OpenAPI document lists, as `method path`, sorted: what a channel's check
/// that each of its routes is documented compares against its route table.
pub fn operations(document: &utoipa::openapi::OpenApi) -> Vec<String> {
    let mut operations: Vec<String> = document
        .paths
        .paths
        .iter()
        .flat_map(|(path, item)| {
            let methods = [
                ("get", item.get.is_some()),
                ("put", item.put.is_some()),
                ("post", item.post.is_some()),
                ("delete", item.delete.is_some()),
                ("options", item.options.is_some()),
                ("head", item.head.is_some()),
                ("patch", item.patch.is_some()),
                ("trace", item.trace.is_some()),
            ];
            methods
                .into_iter()
                .filter(|(_, present)| *present)
                .map(move |(method, _)| format!("{method} {path}"))
        })
        .collect();
    operations.sort();
    operations
}
