//! Prompts, resources, resource templates, subscriptions and completions of the upstream MCP
//! servers, and toolmux's own resources (`spec://…`), served to this server's clients: an
//! adapter over `toolmux_upstream`'s one relay, which merges, names, routes and sorts
//! failures; here the serve-time filters become its scope and its errors become JSON-RPC
//! errors. Subscriptions, which only MCP has, are held per session: a relayed resource's by the
//! server that lists it, one of toolmux's own by the shared poll of its provider.
//!
//! Every request names its session ([`Relay::session`]), so a server served per client
//! (`serve --pass-through`, `sessionMode: "per-client"`) answers it on that session's own
//! upstream connection, and the session's [`SessionLink`] gives those servers the way back to
//! this client for what they send outside its calls. `logging/setLevel` is passed on too: to the
//! session's own upstream session, or, for a shared server, as the most verbose level any
//! session asked for, each session's deliveries filtered by its own level.

// rmcp marks MCP logging deprecated (SEP-2577); the revisions toolmux serves still define
// `logging/setLevel`, which this relays.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResult,
    LoggingLevel, Prompt, ReadResourceRequestParams, ReadResourceResult, Resource,
    ResourceTemplate, ResultType,
};
use rmcp::service::{Peer, RoleServer};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use toolmux_core::{Backchannel, BuiltinResources, Hub, ToolScope};
use toolmux_upstream::{RelayError, Relayed, Unknown, UpstreamSource, Upstreams};

use crate::listen::Listener;

/// JSON-RPC's "resource not found", which MCP prescribes for an unknown URI.
const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);

/// The upstream servers and toolmux's own resources as one MCP server's clients see them:
/// through the server's scope (its serve-time filters `--tools`, `--exclude`, `--code-mode`,
/// and pass-through's one server), the one built for its calls.
pub(crate) struct Relay<'a> {
    pub(crate) upstreams: Option<&'a Arc<Upstreams>>,
    pub(crate) scope: Arc<ToolScope>,
    pub(crate) resources: &'a BuiltinResources,
    /// Whose catalog says whether the tool that reads a built-in resource is offered.
    pub(crate) hub: &'a Hub,
    /// The calling session, for the servers served per client; `None` for listings.
    pub(crate) session: Option<String>,
}

impl Relay<'_> {
    fn relay(&self) -> toolmux_upstream::Relay<'_> {
        let relay =
            toolmux_upstream::Relay::new(self.upstreams.map(Arc::as_ref), Some(&self.scope))
                .with_builtin(self.resources, self.hub.catalog());
        match &self.session {
            Some(session) => relay.in_session(session),
            None => relay,
        }
    }

    /// Passes the session's log level on to the servers it reaches. The client's request
    /// succeeds whatever they answer (its own messages and toolmux's are filtered by it
    /// anyway); a server that refused is noted in toolmux's log.
    pub(crate) async fn set_level(&self, level: LoggingLevel) {
        let level = toolmux_upstream::wire::log_level_from_wire(level);
        for (server, error) in self.relay().set_level(level).await {
            tracing::info!(server, %error, "an upstream server did not take logging/setLevel");
        }
    }

    pub(crate) async fn prompts(&self) -> Vec<Prompt> {
        items(self.relay().prompts().await)
    }

    pub(crate) async fn resources(&self) -> Vec<Resource> {
        items(self.relay().resources().await)
    }

    pub(crate) fn resource_templates(&self) -> Vec<ResourceTemplate> {
        items(self.relay().resource_templates())
    }

    pub(crate) async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, McpError> {
        let mut result = self.relay().get_prompt(request).await.map_err(wire_error)?;
        completed(&mut result.result_type);
        Ok(result)
    }

    pub(crate) async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, McpError> {
        let mut result = self
            .relay()
            .read_resource(request)
            .await
            .map_err(wire_error)?;
        completed(&mut result.result_type);
        Ok(result)
    }

    pub(crate) async fn complete(
        &self,
        request: CompleteRequestParams,
    ) -> Result<CompleteResult, McpError> {
        let mut result = self.relay().complete(request).await.map_err(wire_error)?;
        completed(&mut result.result_type);
        Ok(result)
    }
}

/// Marks a relayed answer complete: a server of the handshake era sends no `resultType`, which
/// 2026-07-28 requires on every result (rmcp takes a `complete` one off again for clients of the
/// handshake era, so they get the answer as the server sent it).
fn completed(result_type: &mut Option<ResultType>) {
    result_type.get_or_insert(ResultType::COMPLETE);
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
        RelayError::NotFound(
            Unknown::Resource(uri) | Unknown::Template(uri) | Unknown::Builtin { uri, .. },
        ) => McpError::new(RESOURCE_NOT_FOUND, message, Some(json!({ "uri": uri }))),
        RelayError::NotFound(Unknown::Reported(_)) | RelayError::Invalid(_) => {
            McpError::invalid_params(message, None)
        }
        RelayError::NoSubscriptions { .. } => {
            McpError::new(ErrorCode::METHOD_NOT_FOUND, message, None)
        }
        RelayError::Answered { code, message, .. } => McpError::new(ErrorCode(code), message, None),
        RelayError::Failed(_)
        | RelayError::Unavailable(_)
        | RelayError::Timeout { .. }
        | RelayError::Unreadable(_) => McpError::internal_error(message, None),
    }
}

/// One session's resource subscriptions (or one `subscriptions/listen` stream's): each forwards
/// the server's change notices to the client until it is unsubscribed or the session (the
/// stream) ends, and then releases its upstream subscription.
#[derive(Default)]
pub(crate) struct Subscriptions {
    held: Mutex<HashMap<String, CancellationToken>>,
}

impl Subscriptions {
    pub(crate) async fn subscribe(
        &self,
        relay: &Relay<'_>,
        uri: String,
        listener: Listener,
        session_end: &CancellationToken,
    ) -> Result<(), McpError> {
        if self.lock().contains_key(&uri) {
            return Ok(()); // subscribing twice is one subscription
        }
        if relay.relay().builtin_owner(&uri).is_some() {
            // Listen before reading, so that no change falls in between; the first read
            // refuses an unknown URI and is what later reads are compared with.
            let changes = relay.resources.changes();
            let read = relay
                .read_resource(ReadResourceRequestParams::new(uri.clone()))
                .await?;
            let stop = self.hold(&uri, session_end);
            let follow = Follow::of(relay);
            tokio::spawn(follow_builtin(follow, uri, read, changes, listener, stop));
            return Ok(());
        }
        let source = relay
            .relay()
            .subscription_server(&uri)
            .map_err(wire_error)?;
        // Listen before subscribing, so that no change notice falls in between.
        let updates = source.resource_updates();
        source
            .subscribe(relay.session.as_deref(), &uri)
            .await
            .map_err(|e| wire_error(e.into()))?;
        let stop = self.hold(&uri, session_end);
        let follow = Follow::of(relay);
        tokio::spawn(forward_updates(
            follow, source, uri, updates, listener, stop,
        ));
        Ok(())
    }

    /// Records the subscription to `uri`, returning what ends it.
    fn hold(&self, uri: &str, session_end: &CancellationToken) -> CancellationToken {
        let stop = session_end.child_token();
        if let Some(replaced) = self.lock().insert(uri.to_string(), stop.clone()) {
            replaced.cancel(); // a concurrent subscribe to the same URI: keep one
        }
        stop
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

/// What a subscription reads the relay through after the request that made it: the URI's
/// server now (when its server is replaced), or its provider's current contents; for the
/// session that subscribed.
struct Follow {
    upstreams: Option<Arc<Upstreams>>,
    scope: Arc<ToolScope>,
    resources: BuiltinResources,
    hub: Hub,
    session: Option<String>,
}

impl Follow {
    fn of(relay: &Relay<'_>) -> Self {
        Self {
            upstreams: relay.upstreams.cloned(),
            scope: Arc::clone(&relay.scope),
            resources: relay.resources.clone(),
            hub: relay.hub.clone(),
            session: relay.session.clone(),
        }
    }

    fn relay(&self) -> Relay<'_> {
        Relay {
            upstreams: self.upstreams.as_ref(),
            scope: Arc::clone(&self.scope),
            resources: &self.resources,
            hub: &self.hub,
            session: self.session.clone(),
        }
    }
}

/// One MCP session's link to the upstream servers served per client: the way back to its
/// client that their connections for this session use outside its calls (made on the
/// session's first request, when its peer is known), given to every such server on each
/// request so that a server added by a reload gets it too.
#[derive(Default)]
pub(crate) struct SessionLink {
    way_back: OnceLock<Arc<dyn Backchannel>>,
}

impl SessionLink {
    /// Attaches `session` to the per-client servers among `upstreams`.
    pub(crate) fn attach(
        &self,
        upstreams: Option<&Arc<Upstreams>>,
        session: &str,
        peer: &Peer<RoleServer>,
        log_level: &Arc<Mutex<Option<LoggingLevel>>>,
    ) {
        let Some(upstreams) = upstreams else { return };
        let way_back = self
            .way_back
            .get_or_init(|| crate::backchannel::for_session(peer.clone(), Arc::clone(log_level)));
        for source in upstreams.servers() {
            if source.is_per_client() {
                source.attach_session(session, Arc::clone(way_back));
            }
        }
    }
}

/// Sends `notifications/resources/updated` for one of toolmux's own resources whenever the
/// provider's poll saw a change and the resource now reads differently (a spec's file was
/// edited, or the spec is gone), until `stop`.
async fn follow_builtin(
    follow: Follow,
    uri: String,
    mut read: ReadResourceResult,
    mut changes: tokio::sync::watch::Receiver<u64>,
    listener: Listener,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return; // the server is gone
                }
            }
        }
        let request = ReadResourceRequestParams::new(uri.clone());
        let now = match follow.relay().read_resource(request).await {
            Ok(now) => now,
            // Gone (or no longer served, or unreadable now): that is a change, told once.
            Err(e) => {
                tracing::debug!(uri, error = %e, "a subscribed resource cannot be read");
                ReadResourceResult::new(Vec::new())
            }
        };
        if now == read {
            continue;
        }
        read = now;
        if !listener.resource_updated(&uri).await {
            return; // the client is gone
        }
    }
}

/// Passes `notifications/resources/updated` for `uri` on to the client until `stop`, then
/// releases the upstream subscription. When a configuration change replaces or removes the
/// server, the client is told the resource changed (what it reads now comes from elsewhere, or
/// nowhere) and the subscription moves to the URI's new server, if any offers it.
async fn forward_updates(
    follow: Follow,
    mut source: UpstreamSource,
    uri: String,
    mut updates: tokio::sync::broadcast::Receiver<toolmux_upstream::ResourceUpdate>,
    listener: Listener,
    stop: CancellationToken,
) {
    let session = follow.session.clone();
    loop {
        let retired = source.retirement();
        let updated = tokio::select! {
            () = stop.cancelled() => break,
            () = retired.cancelled() => {
                if !listener.resource_updated(&uri).await {
                    return; // the client is gone
                }
                let Ok(next) = follow.relay().relay().subscription_server(&uri) else { return };
                updates = next.resource_updates();
                if let Err(e) = next.subscribe(session.as_deref(), &uri).await {
                    tracing::debug!(error = %e, uri, "cannot move a subscription to the new server");
                    return;
                }
                source = next;
                continue;
            }
            updated = updates.recv() => updated,
        };
        let changed = match updated {
            // Another session's news (on its own upstream connection) is not this one's.
            Ok(changed) => changed.is_for(session.as_deref(), &uri),
            // Missed notices still mean "it changed": tell the client once.
            Err(RecvError::Lagged(_)) => true,
            Err(RecvError::Closed) => break,
        };
        if changed && !listener.resource_updated(&uri).await {
            break; // the client is gone
        }
    }
    if let Err(e) = source.unsubscribe(session.as_deref(), &uri).await {
        tracing::debug!(error = %e, uri, "could not unsubscribe upstream");
    }
}
