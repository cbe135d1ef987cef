//! Prompts, resources, resource templates, subscriptions and completions of the upstream MCP
//! servers, served to this server's clients. Prompts are named like tools (`PREFIX__prompt`,
//! or the server's own name in pass-through mode); resources keep their URIs, which already say
//! where they come from; every request goes to the server that listed the item.
//!
//! Listing reads the discovery caches and starts nothing; getting, reading, subscribing and
//! completing start the server when it is not running.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

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

use crate::options::ServeOptions;

/// JSON-RPC's "resource not found", which MCP prescribes for an unknown URI.
const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);

/// The upstream servers as one MCP server's clients see them: the serve-time filters
/// (`--tools`, `--exclude`, `--code-mode`) apply to prompts, resources and templates by their
/// registry names as they do to tools, and pass-through mode serves one server's items under
/// their own names.
pub(crate) struct Relay<'a> {
    pub(crate) upstreams: &'a Arc<Upstreams>,
    pub(crate) options: &'a ServeOptions,
}

impl Relay<'_> {
    /// Whether these options serve the item `name` (a registry name) of `server`.
    fn serves(&self, server: &str, name: &str) -> bool {
        self.options
            .pass_through
            .as_deref()
            .is_none_or(|only| only == server)
            && self.options.admits(name)
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
            .filter(|relayed| self.serves(&relayed.server, &relayed.name))
            .map(|relayed| {
                let mut item = relayed.item;
                let (own, title) = names(&mut item);
                let served = match self.options.pass_through {
                    None => relayed.name,
                    Some(_) => own.clone(),
                };
                if title.is_none() && served != *own {
                    *title = Some(own.clone());
                }
                *own = served;
                item
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
        let (source, relayed) = self
            .upstreams
            .prompt(served, self.options.pass_through.as_deref())?;
        self.serves(&relayed.server, &relayed.name)
            .then_some((source, relayed.item.name))
    }

    /// The server a resource URI (or, with `template`, a URI template) belongs to, when these
    /// options serve it.
    fn resource_server(&self, uri: &str, template: bool) -> Result<UpstreamSource, McpError> {
        let located = if template {
            self.upstreams.locate_template(uri)
        } else {
            self.upstreams.locate_uri(uri)
        };
        located
            .filter(|(source, name)| self.serves(source.name(), name))
            .map(|(source, _)| source)
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
        let source = self.resource_server(&request.uri, false)?;
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
            Reference::Resource(template) => self.resource_server(&template.uri, true)?,
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
        let source = relay.resource_server(&uri, false)?;
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
        let follow = Follow {
            upstreams: Arc::clone(relay.upstreams),
            options: relay.options.clone(),
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

/// Where a subscription goes when its server is replaced: the URI's server now, if these
/// options serve it.
struct Follow {
    upstreams: Arc<Upstreams>,
    options: ServeOptions,
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
                let relay = Relay { upstreams: &follow.upstreams, options: &follow.options };
                let next = relay
                    .resource_server(&uri, false)
                    .ok()
                    .filter(|s| s.offers().subscribe);
                let Some(next) = next else { return };
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
