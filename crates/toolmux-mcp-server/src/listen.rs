//! Where a client hears that something changed: the `list_changed` notices for tools, prompts
//! and resources, and `notifications/resources/updated` for what it subscribed to. A session of
//! the handshake era hears them on its session (after `notifications/initialized`, and for
//! each `resources/subscribe`); a client of 2026-07-28 opens a `subscriptions/listen` request
//! and hears on that request's stream only what its filter asked for and rmcp accepted, each
//! notice tagged with the subscription's id by rmcp's `SubscriptionSink`. One watcher serves
//! both.

use std::sync::Arc;

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, RoleServer, SubscriptionSendError, SubscriptionSink};
use tokio_util::sync::CancellationToken;

use crate::server::Shared;

/// One client's way to hear of changes.
#[derive(Clone)]
pub(crate) enum Listener {
    /// A session of the handshake era: every notice goes to its client.
    Session(Peer<RoleServer>),
    /// One `subscriptions/listen` stream: only what its accepted filter names.
    Stream(SubscriptionSink),
}

/// Which list changed.
#[derive(Clone, Copy)]
enum List {
    Tools,
    Prompts,
    Resources,
}

impl Listener {
    /// Whether this listener asked to hear about `list`.
    fn wants(&self, list: List) -> bool {
        let Listener::Stream(sink) = self else {
            return true;
        };
        let accepted = sink.accepted();
        let wanted = match list {
            List::Tools => accepted.tools_list_changed,
            List::Prompts => accepted.prompts_list_changed,
            List::Resources => accepted.resources_list_changed,
        };
        wanted == Some(true)
    }

    async fn list_changed(&self, list: List) -> Result<(), SubscriptionSendError> {
        if !self.wants(list) {
            return Ok(());
        }
        match (self, list) {
            (Listener::Session(peer), List::Tools) => Ok(peer.notify_tool_list_changed().await?),
            (Listener::Session(peer), List::Prompts) => {
                Ok(peer.notify_prompt_list_changed().await?)
            }
            (Listener::Session(peer), List::Resources) => {
                Ok(peer.notify_resource_list_changed().await?)
            }
            (Listener::Stream(sink), List::Tools) => sink.notify_tool_list_changed().await,
            (Listener::Stream(sink), List::Prompts) => sink.notify_prompt_list_changed().await,
            (Listener::Stream(sink), List::Resources) => sink.notify_resource_list_changed().await,
        }
    }

    /// Tells the client that the resource at `uri` changed. `false` when it can no longer
    /// be told anything (the session or the stream is gone).
    pub(crate) async fn resource_updated(&self, uri: &str) -> bool {
        let sent = match self {
            Listener::Session(peer) => peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.to_string()))
                .await
                .map_err(SubscriptionSendError::from),
            Listener::Stream(sink) => sink.notify_resource_updated(uri.to_string()).await,
        };
        match sent {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(error = %e, uri, "the MCP client can no longer hear of updates");
                false
            }
        }
    }
}

/// Tells `listener` whenever a new catalog changes the tools this server serves, and whenever a
/// new catalog or a change on disk that a built-in provider's poll saw changes the prompts or
/// resources it serves, until `stop` or until the listener is gone. The poll runs while
/// someone listens, so an idle server polls nothing.
pub(crate) async fn announce_changes(
    shared: Arc<Shared>,
    listener: Listener,
    stop: CancellationToken,
) {
    let mut catalogs = shared.hub.subscribe();
    catalogs.borrow_and_update();
    let mut builtin = shared.options.resources.changes();
    builtin.borrow_and_update();
    let mut shown = shared.view();
    let mut relayed = shared.relayed_listings().await;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            changed = catalogs.changed() => {
                if changed.is_err() {
                    return; // the hub is gone
                }
            }
            changed = builtin.changed(), if !shared.options.resources.is_empty() => {
                if changed.is_err() {
                    return; // the providers are gone, and the server with them
                }
            }
        }
        // A discovery publishes a new catalog also when only an upstream's prompts or
        // resources changed, and a catalog change can hide or show toolmux's own resources
        // (their read tool's policy), so every list is compared here.
        let listings = shared.relayed_listings().await;
        let prompts_changed =
            listings.as_ref().map(|l| &l.prompts) != relayed.as_ref().map(|l| &l.prompts);
        let resources_changed = listings.as_ref().map(|l| (&l.resources, &l.templates))
            != relayed.as_ref().map(|l| (&l.resources, &l.templates));
        relayed = listings;
        let view = shared.view();
        let tools_changed = view.tools != shown.tools;
        shown = view;
        let sent = async {
            if tools_changed {
                listener.list_changed(List::Tools).await?;
            }
            if prompts_changed {
                listener.list_changed(List::Prompts).await?;
            }
            if resources_changed {
                listener.list_changed(List::Resources).await?;
            }
            Ok::<_, SubscriptionSendError>(())
        };
        if let Err(e) = sent.await {
            tracing::debug!(error = %e, "the MCP client is gone; no more list_changed notifications");
            return;
        }
    }
}
