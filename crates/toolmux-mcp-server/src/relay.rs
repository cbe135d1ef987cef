//! Prompts, resources, resource templates, subscriptions and completions of the upstream MCP
//! servers, served to this server's clients: an adapter over `toolmux_upstream`'s one relay,
//! which names, routes and sorts failures; here the serve-time filters become its scope and its
//! errors become JSON-RPC errors. Subscriptions, which only MCP has, are held per session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResult,
    Prompt, ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use toolmux_core::ToolScope;
use toolmux_upstream::{RelayError, Relayed, Unknown, UpstreamSource, Upstreams};

/// JSON-RPC's "resource not found", which MCP prescribes for an unknown URI.
const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);

/// The upstream servers as one MCP server's clients see them: through the server's scope (its
/// serve-time filters `--tools`, `--exclude`, `--code-mode`, and pass-through's one server),
/// the one built for its calls.
pub(crate) struct Relay<'a> {
    pub(crate) upstreams: &'a Arc<Upstreams>,
    pub(crate) scope: &'a Arc<ToolScope>,
}

impl Relay<'_> {
    fn relay(&self) -> toolmux_upstream::Relay<'_> {
        toolmux_upstream::Relay::new(self.upstreams, Some(self.scope))
    }

    pub(crate) fn prompts(&self) -> Vec<Prompt> {
        items(self.relay().prompts())
    }

    pub(crate) fn resources(&self) -> Vec<Resource> {
        items(self.relay().resources())
    }

    pub(crate) fn resource_templates(&self) -> Vec<ResourceTemplate> {
        items(self.relay().resource_templates())
    }

    pub(crate) async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, McpError> {
        self.relay().get_prompt(request).await.map_err(wire_error)
    }

    pub(crate) async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, McpError> {
        self.relay()
            .read_resource(request)
            .await
            .map_err(wire_error)
    }

    pub(crate) async fn complete(
        &self,
        request: CompleteRequestParams,
    ) -> Result<CompleteResult, McpError> {
        self.relay().complete(request).await.map_err(wire_error)
    }
}

fn items<T>(relayed: Vec<Relayed<T>>) -> Vec<T> {
    relayed.into_iter().map(|r| r.item).collect()
}

/// A relay failure as the JSON-RPC error the client gets; the server's own error passes
/// through with its code.
fn wire_error(error: RelayError) -> McpError {
    let message = error.to_string();
    match error {
        RelayError::NotFound(Unknown::Prompt(name)) => {
            McpError::invalid_params(message, Some(json!({ "prompt": name })))
        }
        RelayError::NotFound(Unknown::Resource(uri) | Unknown::Template(uri)) => {
            McpError::new(RESOURCE_NOT_FOUND, message, Some(json!({ "uri": uri })))
        }
        RelayError::NotFound(Unknown::Reported(_)) | RelayError::Invalid(_) => {
            McpError::invalid_params(message, None)
        }
        RelayError::NoSubscriptions { .. } => {
            McpError::new(ErrorCode::METHOD_NOT_FOUND, message, None)
        }
        RelayError::Answered { code, message, .. } => McpError::new(ErrorCode(code), message, None),
        RelayError::Failed(_) | RelayError::Unavailable(_) | RelayError::Timeout { .. } => {
            McpError::internal_error(message, None)
        }
    }
}

/// One session's resource subscriptions: each forwards the server's change notices to the
/// client until it is unsubscribed or the session ends, and then releases its upstream
/// subscription.
#[derive(Default)]
pub(crate) struct Subscriptions {
    held: Mutex<HashMap<String, CancellationToken>>,
}

impl Subscriptions {
    pub(crate) async fn subscribe(
        &self,
        relay: &Relay<'_>,
        uri: String,
        peer: Peer<RoleServer>,
        session_end: &CancellationToken,
    ) -> Result<(), McpError> {
        if self.lock().contains_key(&uri) {
            return Ok(()); // subscribing twice is one subscription
        }
        let source = relay
            .relay()
            .subscription_server(&uri)
            .map_err(wire_error)?;
        // Listen before subscribing, so that no change notice falls in between.
        let updates = source.resource_updates();
        source
            .subscribe(&uri)
            .await
            .map_err(|e| wire_error(e.into()))?;
        let stop = session_end.child_token();
        if let Some(replaced) = self.lock().insert(uri.clone(), stop.clone()) {
            replaced.cancel(); // a concurrent subscribe to the same URI: keep one
        }
        let follow = Follow {
            upstreams: Arc::clone(relay.upstreams),
            scope: Arc::clone(relay.scope),
        };
        tokio::spawn(forward_updates(follow, source, uri, updates, peer, stop));
        Ok(())
    }

    /// Ends the session's subscription to `uri`. Unsubscribing from something not subscribed
    /// is not an error: the client's wish (no more notices) holds either way.
    pub(crate) fn unsubscribe(&self, uri: &str) {
        if let Some(stop) = self.lock().remove(uri) {
            stop.cancel();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a subscription goes when its server is replaced: the URI's server now, if this scope
/// serves it.
struct Follow {
    upstreams: Arc<Upstreams>,
    scope: Arc<ToolScope>,
}

/// Passes `notifications/resources/updated` for `uri` on to the client until `stop`, then
/// releases the upstream subscription. When a configuration change replaces or removes the
/// server, the client is told the resource changed (what it reads now comes from elsewhere, or
/// nowhere) and the subscription moves to the URI's new server, if any offers it.
async fn forward_updates(
    follow: Follow,
    mut source: UpstreamSource,
    uri: String,
    mut updates: tokio::sync::broadcast::Receiver<String>,
    peer: Peer<RoleServer>,
    stop: CancellationToken,
) {
    let notify = |peer: &Peer<RoleServer>| {
        let peer = peer.clone();
        let notice = ResourceUpdatedNotificationParam::new(uri.clone());
        async move { peer.notify_resource_updated(notice).await.is_ok() }
    };
    loop {
        let retired = source.retirement();
        let updated = tokio::select! {
            () = stop.cancelled() => break,
            () = retired.cancelled() => {
                if !notify(&peer).await {
                    return; // the client is gone
                }
                let relay = Relay { upstreams: &follow.upstreams, scope: &follow.scope };
                let Ok(next) = relay.relay().subscription_server(&uri) else { return };
                updates = next.resource_updates();
                if let Err(e) = next.subscribe(&uri).await {
                    tracing::debug!(error = %e, uri, "cannot move a subscription to the new server");
                    return;
                }
                source = next;
                continue;
            }
            updated = updates.recv() => updated,
        };
        let changed = match updated {
            Ok(changed) => changed == uri,
            // Missed notices still mean "it changed": tell the client once.
            Err(RecvError::Lagged(_)) => true,
            Err(RecvError::Closed) => break,
        };
        if changed && !notify(&peer).await {
            break; // the client is gone
        }
    }
    if let Err(e) = source.unsubscribe(&uri).await {
        tracing::debug!(error = %e, uri, "could not unsubscribe upstream");
    }
}
