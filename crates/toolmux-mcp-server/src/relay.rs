//! Prompts, resources, resource templates, subscriptions and completions of the upstream MCP
//! servers, served to this server's clients. Prompts are named like tools (`PREFIX__prompt`,
//! or the server's own name in pass-through mode); resources keep their URIs, which already say
//! where they come from; every request goes to the server that listed the item.
//!
//! Listing reads the discovery caches and starts nothing; getting, reading, subscribing and
//! completing start the server when it is not running.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResult,
    Prompt, ReadResourceRequestParams, ReadResourceResult, Reference, Resource, ResourceTemplate,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use toolmux_upstream::{Relayed, UpstreamError, UpstreamSource, Upstreams};

/// JSON-RPC's "resource not found", which MCP prescribes for an unknown URI.
const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);

/// The upstream servers as one MCP server's clients see them.
pub(crate) struct Relay<'a> {
    pub(crate) upstreams: &'a Upstreams,
    /// In pass-through mode, the one server whose items are served, under their own names.
    pub(crate) pass_through: Option<&'a str>,
}

impl Relay<'_> {
    fn serves(&self, server: &str) -> bool {
        self.pass_through.is_none_or(|only| only == server)
    }

    /// Listed items under the names they are served as; an item renamed keeps its own name as
    /// its title (when it has none), so a person still sees what the server calls it.
    fn served<T>(
        &self,
        listed: Vec<Relayed<T>>,
        names: fn(&mut T) -> (&mut String, &mut Option<String>),
    ) -> Vec<T> {
        listed
            .into_iter()
            .filter_map(|relayed| {
                let mut item = relayed.item;
                let (own, title) = names(&mut item);
                let served = match self.pass_through {
                    None => relayed.name,
                    Some(only) if only == relayed.server => own.clone(),
                    Some(_) => return None,
                };
                if title.is_none() && served != *own {
                    *title = Some(own.clone());
                }
                *own = served;
                Some(item)
            })
            .collect()
    }

    pub(crate) fn prompts(&self) -> Vec<Prompt> {
        self.served(self.upstreams.prompts(), |p| (&mut p.name, &mut p.title))
    }

    pub(crate) fn resources(&self) -> Vec<Resource> {
        self.served(self.upstreams.resources(), |r| (&mut r.name, &mut r.title))
    }

    pub(crate) fn resource_templates(&self) -> Vec<ResourceTemplate> {
        self.served(self.upstreams.resource_templates(), |t| {
            (&mut t.name, &mut t.title)
        })
    }

    /// The server and own name of a served prompt name.
    fn prompt(&self, served: &str) -> Option<(UpstreamSource, String)> {
        self.upstreams.prompt(served, self.pass_through)
    }

    /// The server a resource URI belongs to.
    fn resource_server(&self, uri: &str) -> Result<UpstreamSource, McpError> {
        self.upstreams
            .server_for_uri(uri)
            .filter(|source| self.serves(source.name()))
            .ok_or_else(|| {
                McpError::new(
                    RESOURCE_NOT_FOUND,
                    format!("no MCP server behind toolmux lists the resource `{uri}`"),
                    Some(json!({ "uri": uri })),
                )
            })
    }

    pub(crate) async fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, McpError> {
        let Some((source, own)) = self.prompt(&request.name) else {
            return Err(McpError::invalid_params(
                format!("unknown prompt `{}`", request.name),
                Some(json!({ "prompt": request.name })),
            ));
        };
        request.name = own;
        source.get_prompt(request).await.map_err(wire_error)
    }

    pub(crate) async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, McpError> {
        let source = self.resource_server(&request.uri)?;
        source.read_resource(request).await.map_err(wire_error)
    }

    pub(crate) async fn complete(
        &self,
        mut request: CompleteRequestParams,
    ) -> Result<CompleteResult, McpError> {
        let source = match &mut request.r#ref {
            Reference::Prompt(prompt) => match self.prompt(&prompt.name) {
                Some((source, own)) => {
                    prompt.name = own;
                    source
                }
                None => {
                    return Err(McpError::invalid_params(
                        format!("unknown prompt `{}`", prompt.name),
                        None,
                    ));
                }
            },
            Reference::Resource(template) => self
                .upstreams
                .server_for_template(&template.uri)
                .filter(|source| self.serves(source.name()))
                .ok_or_else(|| {
                    McpError::new(
                        RESOURCE_NOT_FOUND,
                        format!("no MCP server behind toolmux lists `{}`", template.uri),
                        Some(json!({ "uri": template.uri })),
                    )
                })?,
            other => {
                return Err(McpError::invalid_params(
                    format!("cannot complete arguments of {other:?}"),
                    None,
                ));
            }
        };
        if !source.offers().completions {
            // Nothing to offer is an empty completion, not an error: the client just shows none.
            return Ok(CompleteResult::default());
        }
        source.complete(request).await.map_err(wire_error)
    }
}

/// An upstream failure as the JSON-RPC error the client gets; the server's own error passes
/// through with its code.
fn wire_error(error: UpstreamError) -> McpError {
    match error {
        UpstreamError::Answered { code, message, .. } => {
            McpError::new(ErrorCode(code), message, None)
        }
        UpstreamError::NotFound(message) => McpError::invalid_params(message, None),
        other => McpError::internal_error(other.to_string(), None),
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
        let source = relay.resource_server(&uri)?;
        if !source.offers().subscribe {
            return Err(McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "MCP server `{}` does not offer resource subscriptions",
                    source.name()
                ),
                None,
            ));
        }
        // Listen before subscribing, so that no change notice falls in between.
        let updates = source.resource_updates();
        source.subscribe(&uri).await.map_err(wire_error)?;
        let stop = session_end.child_token();
        if let Some(replaced) = self.lock().insert(uri.clone(), stop.clone()) {
            replaced.cancel(); // a concurrent subscribe to the same URI: keep one
        }
        tokio::spawn(forward_updates(source, uri, updates, peer, stop));
        Ok(())
    }

    pub(crate) fn unsubscribe(&self, uri: &str) -> Result<(), McpError> {
        match self.lock().remove(uri) {
            Some(stop) => {
                stop.cancel();
                Ok(())
            }
            None => Err(McpError::invalid_params(
                format!("this session does not subscribe to `{uri}`"),
                None,
            )),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Passes `notifications/resources/updated` for `uri` on to the client until `stop`, then
/// releases the upstream subscription.
async fn forward_updates(
    source: UpstreamSource,
    uri: String,
    mut updates: tokio::sync::broadcast::Receiver<String>,
    peer: Peer<RoleServer>,
    stop: CancellationToken,
) {
    loop {
        let updated = tokio::select! {
            () = stop.cancelled() => break,
            updated = updates.recv() => updated,
        };
        match updated {
            Ok(changed) if changed == uri => {
                let notice = ResourceUpdatedNotificationParam::new(uri.clone());
                if peer.notify_resource_updated(notice).await.is_err() {
                    break; // the client is gone
                }
            }
            Ok(_) => {}
            // Missed notices still mean "it changed": tell the client once.
            Err(RecvError::Lagged(_)) => {
                let notice = ResourceUpdatedNotificationParam::new(uri.clone());
                if peer.notify_resource_updated(notice).await.is_err() {
                    break;
                }
            }
            Err(RecvError::Closed) => break,
        }
    }
    if let Err(e) = source.unsubscribe(&uri).await {
        tracing::debug!(error = %e, uri, "could not unsubscribe upstream");
    }
}
