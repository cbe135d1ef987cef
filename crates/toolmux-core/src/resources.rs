//! toolmux's own resources: what a built-in pack offers to be read by URI beside its tools
//! (the spec pack's `spec://NNN-name`), served on every channel next to the upstream servers'
//! resources.
//!
//! A pack implements [`ResourceProvider`]; the assembly gathers the providers in one
//! [`BuiltinResources`], which channels hand to the one relay (`toolmux_upstream::Relay`),
//! where they are merged with the relayed resources and scoped like them. The types are in
//! MCP's JSON shape (camelCase, absent fields left out), so a channel converts them with serde
//! or a field-for-field copy and no wire type appears here.
//!
//! Providers do file work, so their methods block; [`BuiltinResources`] runs them on tokio's
//! blocking pool. Change notices come from one poll of the providers' versions, running only
//! while someone listens ([`BuiltinResources::changes`]): a poll rather than a file watcher
//! because a provider already knows cheaply whether anything changed (the spec pack's cached
//! walk is a `stat` per folder and file), a poll needs no inotify watch per folder, survives
//! the directory being removed and re-created, and costs nothing while no session is open.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// How often the providers' versions are read while someone listens for changes: quick
/// enough for a person who just saved a file, cheap enough to run for a whole session.
pub const RESOURCE_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// One resource as MCP's `resources/list` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    /// Its URI, the one to read it by (`spec://042-search-index`).
    pub uri: String,
    /// Its programmatic name.
    pub name: String,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// What reading a resource gives: MCP's text resource contents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The URI read.
    pub uri: String,
    /// Its media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
}

/// Why a built-in resource could not be listed or read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// Nothing answers to the URI (MCP's "resource not found", REST's 404). The message says
    /// what was looked for.
    #[error("{0}")]
    NotFound(String),
    /// It exists but cannot be read now (a file that cannot be read, a directory gone).
    #[error("{0}")]
    Failed(String),
}

/// A built-in pack's resources. Methods may block on file work: call them through
/// [`BuiltinResources`], which keeps them off the async workers.
pub trait ResourceProvider: Send + Sync {
    /// The source whose tools work on the same things (`specs`): a channel that stands in for
    /// one other source (pass-through) serves none of these resources.
    fn source(&self) -> &str;

    /// The URI scheme it owns (`spec`): every `scheme://…` URI is its to answer, found or not.
    fn scheme(&self) -> &str;

    /// The tool that reads what these resources hold (`spec_view`). A channel serves the
    /// resources only while that tool is in the catalog and offered (a `deny` policy hides
    /// them), and where it would serve a relayed item of that name (`ToolScope::serves_item`:
    /// filters by name, pass-through by source; in code mode only when `--tools` names it): a
    /// resource is one more door to the same capability.
    fn read_tool(&self) -> &str;

    /// Every resource now, in a stable order.
    fn resources(&self) -> Result<Vec<ResourceInfo>, ResourceError>;

    /// Reads one resource by URI (one of [`ResourceProvider::scheme`]'s).
    fn read(&self, uri: &str) -> Result<Vec<ResourceContents>, ResourceError>;

    /// A number that changes whenever what [`ResourceProvider::resources`] lists or what a
    /// resource holds may have changed. It must be cheap: it is polled while anyone listens.
    fn version(&self) -> Result<u64, ResourceError>;

    /// The prompts the pack offers beside its resources (the skills pack's `skill__NAME`),
    /// under the names they are served by, in a stable order; served where its resources are.
    /// [`ResourceProvider::version`] changes with them too. None by default.
    fn prompts(&self) -> Result<Vec<PromptInfo>, ResourceError> {
        Ok(Vec::new())
    }

    /// One of [`ResourceProvider::prompts`] by name; `Ok(None)` for a name that is not this
    /// pack's, so that the next provider (or an upstream server) can answer it.
    fn prompt(&self, name: &str) -> Result<Option<PromptContents>, ResourceError> {
        let _ = name;
        Ok(None)
    }
}

/// One prompt of a built-in pack as MCP's `prompts/list` shows it (no arguments: a pack's
/// prompts are texts to start from).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptInfo {
    /// The name to get it by (`skill__csv-summary`).
    pub name: String,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What getting a built-in pack's prompt gives: one user message of text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptContents {
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The message's text.
    pub text: String,
}

/// Every built-in resource provider of a process. Cheap to clone; clones share one change
/// poll.
#[derive(Clone, Default)]
pub struct BuiltinResources {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    providers: Vec<Arc<dyn ResourceProvider>>,
    /// A generation counter, bumped on every change the poll sees.
    changes: watch::Sender<u64>,
    /// A poll task is running.
    polling: AtomicBool,
}

impl std::fmt::Debug for BuiltinResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let schemes: Vec<&str> = self.inner.providers.iter().map(|p| p.scheme()).collect();
        f.debug_struct("BuiltinResources")
            .field("schemes", &schemes)
            .finish()
    }
}

impl BuiltinResources {
    /// The given providers, in the order their resources are listed.
    pub fn new(providers: Vec<Arc<dyn ResourceProvider>>) -> Self {
        Self {
            inner: Arc::new(Inner {
                providers,
                ..Inner::default()
            }),
        }
    }

    /// Whether there is no provider at all.
    pub fn is_empty(&self) -> bool {
        self.inner.providers.is_empty()
    }

    /// The providers, in listing order.
    pub fn providers(&self) -> &[Arc<dyn ResourceProvider>] {
        &self.inner.providers
    }

    /// The provider that owns `uri` by its scheme, if any.
    pub fn owner(&self, uri: &str) -> Option<&Arc<dyn ResourceProvider>> {
        self.inner.providers.iter().find(|p| owns(p.as_ref(), uri))
    }

    /// `provider`'s resources, read on the blocking pool. A provider that cannot list now
    /// lists nothing, with a warning: the other resources are still served.
    pub async fn list(provider: &Arc<dyn ResourceProvider>) -> Vec<ResourceInfo> {
        let listing = Arc::clone(provider);
        match blocking(move || listing.resources()).await {
            Ok(resources) => resources,
            Err(e) => {
                tracing::warn!(source = provider.source(), error = %e, "cannot list resources");
                Vec::new()
            }
        }
    }

    /// `provider`'s prompts, read on the blocking pool; like [`BuiltinResources::list`], a
    /// provider that cannot list now lists nothing, with a warning.
    pub async fn list_prompts(provider: &Arc<dyn ResourceProvider>) -> Vec<PromptInfo> {
        let listing = Arc::clone(provider);
        match blocking(move || listing.prompts()).await {
            Ok(prompts) => prompts,
            Err(e) => {
                tracing::warn!(source = provider.source(), error = %e, "cannot list prompts");
                Vec::new()
            }
        }
    }

    /// Gets the prompt `name` from `provider`, on the blocking pool (`None`: not its prompt).
    pub async fn prompt(
        provider: &Arc<dyn ResourceProvider>,
        name: &str,
    ) -> Result<Option<PromptContents>, ResourceError> {
        let provider = Arc::clone(provider);
        let name = name.to_string();
        blocking(move || provider.prompt(&name)).await
    }

    /// Reads `uri` from `provider`, on the blocking pool.
    pub async fn read(
        provider: &Arc<dyn ResourceProvider>,
        uri: &str,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        let provider = Arc::clone(provider);
        let uri = uri.to_string();
        blocking(move || provider.read(&uri)).await
    }

    /// How many changes the poll has seen so far: with the catalog's version, what a cached
    /// listing of the resources is current for.
    pub fn generation(&self) -> u64 {
        *self.inner.changes.borrow()
    }

    /// A receiver that wakes whenever any provider's version changes. The first call starts
    /// one poll of the versions every [`RESOURCE_POLL_INTERVAL`], shared by every receiver; it
    /// stops by itself once no receiver is left (or the providers are gone), so an idle
    /// server polls nothing. A provider that cannot tell its version (its directory was
    /// removed) counts as changed once, then waits at the same pace for it to come back.
    /// Needs a tokio runtime.
    pub fn changes(&self) -> watch::Receiver<u64> {
        let receiver = self.inner.changes.subscribe();
        if !self.is_empty() && !self.inner.polling.swap(true, Ordering::SeqCst) {
            tokio::spawn(poll(Arc::downgrade(&self.inner), RESOURCE_POLL_INTERVAL));
        }
        receiver
    }
}

/// Whether `uri` is of `provider`'s scheme.
fn owns(provider: &dyn ResourceProvider, uri: &str) -> bool {
    uri.strip_prefix(provider.scheme())
        .is_some_and(|rest| rest.starts_with("://"))
}

/// Runs provider work on the blocking pool; a provider that panicked is a failure to read.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ResourceError> + Send + 'static,
) -> Result<T, ResourceError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(ResourceError::Failed(format!(
            "the resource read crashed: {e}"
        )))
    })
}

/// Polls the providers' versions every `every` while anyone listens, bumping the generation on
/// each change.
async fn poll(inner: Weak<Inner>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last: Option<Vec<Option<u64>>> = None;
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        if inner.changes.receiver_count() == 0 {
            inner.polling.store(false, Ordering::SeqCst);
            // A receiver that arrived between the count and the store found a poll running
            // and started none: keep polling for it, unless it started one after all.
            if inner.changes.receiver_count() == 0 || inner.polling.swap(true, Ordering::SeqCst) {
                return;
            }
        }
        let providers = inner.providers.clone();
        let versions = tokio::task::spawn_blocking(move || {
            providers
                .iter()
                .map(|p| match p.version() {
                    Ok(version) => Some(version),
                    Err(e) => {
                        tracing::debug!(source = p.source(), error = %e, "cannot read the resources' version");
                        None
                    }
                })
                .collect::<Vec<_>>()
        })
        .await;
        let Ok(versions) = versions else { continue };
        if last.as_ref().is_some_and(|last| *last != versions) {
            inner.changes.send_modify(|generation| *generation += 1);
        }
        last = Some(versions);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::AtomicU64;

    use serde_json::json;

    use super::*;

    /// A provider whose listing and version the test sets.
    #[derive(Default)]
    struct Notes {
        version: AtomicU64,
        names: Mutex<Vec<String>>,
        broken: AtomicBool,
    }

    impl ResourceProvider for Notes {
        fn source(&self) -> &str {
            "notes"
        }
        fn scheme(&self) -> &str {
            "note"
        }
        fn read_tool(&self) -> &str {
            "note_view"
        }
        fn resources(&self) -> Result<Vec<ResourceInfo>, ResourceError> {
            if self.broken.load(Ordering::SeqCst) {
                return Err(ResourceError::Failed("the notes are gone".into()));
            }
            let names = self.names.lock().expect("names");
            Ok(names
                .iter()
                .map(|n| ResourceInfo {
                    uri: format!("note://{n}"),
                    name: n.clone(),
                    title: None,
                    description: None,
                    mime_type: Some("text/plain".into()),
                    size: None,
                })
                .collect())
        }
        fn read(&self, uri: &str) -> Result<Vec<ResourceContents>, ResourceError> {
            Err(ResourceError::NotFound(format!("no note `{uri}`")))
        }
        fn version(&self) -> Result<u64, ResourceError> {
            if self.broken.load(Ordering::SeqCst) {
                return Err(ResourceError::Failed("the notes are gone".into()));
            }
            Ok(self.version.load(Ordering::SeqCst))
        }
    }

    #[test]
    fn resources_are_in_mcps_json_shape() {
        let info = ResourceInfo {
            uri: "spec://001-a".into(),
            name: "001-a".into(),
            title: Some("A".into()),
            description: None,
            mime_type: Some("text/markdown".into()),
            size: Some(12),
        };
        assert_eq!(
            serde_json::to_value(&info).expect("serialises"),
            json!({"uri": "spec://001-a", "name": "001-a", "title": "A",
                   "mimeType": "text/markdown", "size": 12})
        );
        let contents = ResourceContents {
            uri: "spec://001-a".into(),
            mime_type: Some("text/markdown".into()),
            text: "# A".into(),
        };
        assert_eq!(
            serde_json::to_value(&contents).expect("serialises"),
            json!({"uri": "spec://001-a", "mimeType": "text/markdown", "text": "# A"})
        );
    }

    #[test]
    fn a_provider_owns_exactly_its_scheme() {
        let resources = BuiltinResources::new(vec![Arc::new(Notes::default())]);
        assert!(resources.owner("note://x").is_some());
        assert!(resources.owner("note://").is_some());
        assert!(resources.owner("notes://x").is_none());
        assert!(resources.owner("note:x").is_none());
        assert!(resources.owner("file:///note://x").is_none());
    }

    #[tokio::test]
    async fn a_provider_that_cannot_list_lists_nothing() {
        let notes = Arc::new(Notes::default());
        notes.names.lock().expect("names").push("a".into());
        let provider: Arc<dyn ResourceProvider> = notes.clone();
        assert_eq!(BuiltinResources::list(&provider).await.len(), 1);
        notes.broken.store(true, Ordering::SeqCst);
        assert!(BuiltinResources::list(&provider).await.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn the_poll_reports_version_changes_and_stops_when_nobody_listens() {
        let notes = Arc::new(Notes::default());
        let resources = BuiltinResources::new(vec![notes.clone()]);
        let mut changes = resources.changes();
        let second = resources.changes();
        // The first tick takes the baseline; nothing changed yet.
        tokio::time::sleep(RESOURCE_POLL_INTERVAL * 3).await;
        assert!(!changes.has_changed().expect("the sender lives"));

        notes.version.store(1, Ordering::SeqCst);
        tokio::time::timeout(RESOURCE_POLL_INTERVAL * 3, changes.changed())
            .await
            .expect("a change within a few polls")
            .expect("the sender lives");
        assert!(second.has_changed().expect("the sender lives"));
        assert!(resources.inner.polling.load(Ordering::SeqCst));

        drop(changes);
        drop(second);
        tokio::time::sleep(RESOURCE_POLL_INTERVAL * 3).await;
        assert!(
            !resources.inner.polling.load(Ordering::SeqCst),
            "the poll ran on with nobody listening"
        );

        // A new listener starts it again.
        let mut again = resources.changes();
        tokio::time::sleep(RESOURCE_POLL_INTERVAL * 2).await;
        notes.version.store(2, Ordering::SeqCst);
        tokio::time::timeout(RESOURCE_POLL_INTERVAL * 3, again.changed())
            .await
            .expect("a change within a few polls")
            .expect("the sender lives");

        // A provider that cannot tell its version (its directory was removed) is one change,
        // not one per poll.
        notes.broken.store(true, Ordering::SeqCst);
        tokio::time::timeout(RESOURCE_POLL_INTERVAL * 3, again.changed())
            .await
            .expect("the loss is a change")
            .expect("the sender lives");
        let generation = *again.borrow_and_update();
        tokio::time::sleep(RESOURCE_POLL_INTERVAL * 5).await;
        assert_eq!(
            *again.borrow(),
            generation,
            "a missing provider kept changing"
        );
    }
}
