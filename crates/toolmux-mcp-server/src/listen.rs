//! Where a client hears that something changed: the `list_changed` notices for tools, prompts
//! and resources, and `notifications/resources/updated` for what it subscribed to. A session of
//! the handshake era hears them on its session (after `notifications/initialized`, and for
//! each `resources/subscribe`); a client of 2026-07-28 opens a `subscriptions/listen` request
//! and hears on that request's stream only what its filter asked for and rmcp accepted, each
//! notice tagged with the subscription's id by rmcp's `SubscriptionSink`. One watcher serves
//! both.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::StreamExt;
use rmcp::ErrorData as McpError;
use rmcp::model::{ResourceUpdatedNotificationParam, SubscriptionFilter};
use rmcp::service::{
    Peer, RoleServer, SubscriptionContext, SubscriptionSendError, SubscriptionSink,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolmux_core::Catalog;

use crate::convert::View;
use crate::relay::Subscriptions;
use crate::server::{RelayedListings, Shared};

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

/// The most resources one `subscriptions/listen` request may name: each is followed by a task
/// (and, for an upstream's resource, a subscription on its server) for the stream's life.
pub(crate) const MAX_LISTEN_RESOURCES: usize = 100;

/// How many of a stream's resources are subscribed to at once: enough that a slow upstream does
/// not hold the others up, few enough that one request cannot flood the upstreams.
const CONCURRENT_SUBSCRIBES: usize = 8;

/// What a client's filter is granted: everything asked for that the server announces (rmcp
/// takes out the rest), but no resource at all from a request naming more than
/// [`MAX_LISTEN_RESOURCES`], which [`listen_stream`] then refuses — so the acknowledgment never
/// claims resources that are not followed.
pub(crate) fn accepted_filter(requested: &SubscriptionFilter) -> SubscriptionFilter {
    let mut accepted = requested.clone();
    if over_the_cap(requested).is_some() {
        accepted.resource_subscriptions = None;
    }
    accepted
}

/// How many resources `requested` names, when that is more than [`MAX_LISTEN_RESOURCES`].
fn over_the_cap(requested: &SubscriptionFilter) -> Option<usize> {
    let named = requested
        .resource_subscriptions
        .as_ref()
        .map_or(0, Vec::len);
    (named > MAX_LISTEN_RESOURCES).then_some(named)
}

/// Serves one `subscriptions/listen` stream until the client cancels it or the session ends:
/// what it is told is compared with what was served when the request came — taken before its
/// resources are subscribed to, so a change while subscribing is told, not lost — and its
/// resources are subscribed to a few at a time. A request naming more than
/// [`MAX_LISTEN_RESOURCES`] is refused with invalid params.
pub(crate) async fn listen_stream(
    shared: Arc<Shared>,
    session_end: &CancellationToken,
    context: SubscriptionContext,
) -> Result<(), McpError> {
    if let Some(named) = over_the_cap(context.requested()) {
        return Err(McpError::invalid_params(
            format!(
                "subscriptions/listen follows at most {MAX_LISTEN_RESOURCES} resources in one \
                 request; this one names {named}"
            ),
            None,
        ));
    }
    let baseline = Baseline::now(&shared).await;
    let listener = Listener::Stream(context.sink().clone());
    let stop = session_end.child_token();
    let _stop_on_return = stop.clone().drop_guard();
    // Subscriptions of this stream alone, released when it ends.
    let subscriptions = Subscriptions::default();
    let uris: BTreeSet<String> = context
        .accepted()
        .resource_subscriptions
        .iter()
        .flatten()
        .cloned()
        .collect();
    if let Some(relay) = shared.relay() {
        let subscribing = futures::stream::iter(uris)
            .map(|uri| {
                let follow = subscriptions.subscribe(&relay, uri.clone(), listener.clone(), &stop);
                async move { (uri, follow.await) }
            })
            .buffer_unordered(CONCURRENT_SUBSCRIBES)
            .for_each(|(uri, followed)| async move {
                if let Err(e) = followed {
                    // The stream stays open for the others.
                    tracing::info!(uri, error = %e.message, "cannot follow a resource for subscriptions/listen");
                }
            });
        // A client that cancels while its resources are being subscribed to stops the work
        // there; what was subscribed is released with `subscriptions` and `stop`.
        tokio::select! {
            () = context.cancelled() => return Ok(()),
            () = subscribing => {}
        }
    }
    tokio::select! {
        () = context.cancelled() => {}
        () = follow_changes(Arc::clone(&shared), baseline, listener, stop.clone()) => {}
    }
    Ok(())
}

/// What a listener was last told about: the catalog, the built-in providers' generation, the
/// tools served and the relayed listings, as they are when it starts listening.
struct Baseline {
    catalogs: watch::Receiver<Arc<Catalog>>,
    builtin: watch::Receiver<u64>,
    shown: Arc<View>,
    relayed: Option<Arc<RelayedListings>>,
}

impl Baseline {
    async fn now(shared: &Shared) -> Self {
        let mut catalogs = shared.hub.subscribe();
        catalogs.borrow_and_update();
        let mut builtin = shared.options.resources.changes();
        builtin.borrow_and_update();
        Self {
            catalogs,
            builtin,
            shown: shared.view(),
            relayed: shared.relayed_listings().await,
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
    let baseline = Baseline::now(&shared).await;
    follow_changes(shared, baseline, listener, stop).await;
}

/// [`announce_changes`] from `baseline`.
async fn follow_changes(
    shared: Arc<Shared>,
    baseline: Baseline,
    listener: Listener,
    stop: CancellationToken,
) {
    let Baseline {
        mut catalogs,
        mut builtin,
        mut shown,
        mut relayed,
    } = baseline;
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
