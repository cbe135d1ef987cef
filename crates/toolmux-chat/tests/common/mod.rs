//! A real chat engine over a real hub with the workspace pack on a temporary project, its
//! provider pointed at aimock (from the test kit), and reading the events of a turn.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use toolmux_chat::{
    ChatEngine, EngineSettings, GenaiProvider, Providers, SamplingSettings, SqliteStore, TurnEvent,
    TurnRequest,
};
use toolmux_config::{ProviderKind, ProviderSettings};
use toolmux_core::{ApprovalQueue, Hub, HubSettings, HumanInputSource, NullSink};
use toolmux_testkit::aimock::Aimock;
use toolmux_testkit::project::write_file;

/// A provider setting pointed at aimock.
pub fn provider_settings(aimock: &Aimock, kind: ProviderKind) -> ProviderSettings {
    let base = match kind {
        ProviderKind::Openai | ProviderKind::Anthropic => format!("{}/v1/", aimock.url),
        ProviderKind::Gemini => format!("{}/v1beta/", aimock.url),
    };
    ProviderSettings {
        kind,
        base_url: Some(base),
        api_key: Some("test-key".into()),
        default_model: Some(match kind {
            ProviderKind::Openai => "gpt-4o".into(),
            ProviderKind::Anthropic => "claude-sonnet-4-5".into(),
            ProviderKind::Gemini => "gemini-2.5-flash".into(),
        }),
    }
}

/// A project, its hub and an engine talking to aimock.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub hub: Hub,
    pub engine: Arc<ChatEngine>,
}

impl Harness {
    pub fn new(aimock: &Aimock, settings: HubSettings, max_steps: u32) -> Self {
        let dir = tempfile::tempdir().expect("temp project");
        Self::in_dir(dir, aimock, settings, max_steps, ProviderKind::Openai)
    }

    pub fn in_dir(
        dir: tempfile::TempDir,
        aimock: &Aimock,
        settings: HubSettings,
        max_steps: u32,
        kind: ProviderKind,
    ) -> Self {
        let hub = Hub::new(settings, Arc::new(NullSink));
        let workspace =
            toolmux_workspace::WorkspacePack::new(dir.path(), Default::default()).expect("pack");
        hub.add_source(Arc::new(workspace));
        hub.add_source(Arc::new(HumanInputSource::new()));
        let mut providers = Providers::default();
        providers.insert(
            "mock",
            kind,
            Arc::new(
                GenaiProvider::new("mock", &provider_settings(aimock, kind)).expect("provider"),
            ),
        );
        let store = Arc::new(
            SqliteStore::open(&dir.path().join(toolmux_chat::DATABASE_PATH)).expect("store"),
        );
        let engine = Arc::new(ChatEngine::new(
            hub.clone(),
            providers,
            store,
            Arc::new(ApprovalQueue::new()),
            EngineSettings {
                max_steps,
                project_name: "test".into(),
                sampling: SamplingSettings::default(),
            },
        ));
        Self { dir, hub, engine }
    }

    /// A harness on a project whose `notes/release.md` names the release codename (what the
    /// fixture's grep-then-read conversation looks for).
    pub fn with_release_notes(aimock: &Aimock) -> Self {
        let harness = Self::new(aimock, HubSettings::default(), 25);
        write_file(
            harness.dir.path(),
            "notes/release.md",
            "# Release\nThe codename is Bluefin.\n",
        );
        harness
    }

    /// Runs one turn to its end, in `conversation` or a new one; returns the conversation id
    /// and every event.
    pub async fn turn(&self, conversation: Option<&str>, text: &str) -> (String, Vec<TurnEvent>) {
        let (id, events, _) = self
            .engine
            .start_turn(TurnRequest {
                conversation: conversation.map(str::to_string),
                text: text.into(),
                ..Default::default()
            })
            .await
            .expect("turn starts");
        (id, collect(events).await)
    }
}

/// Collects a turn's events until it ends, with a time limit.
pub async fn collect(mut events: mpsc::Receiver<TurnEvent>) -> Vec<TurnEvent> {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = events.recv().await {
            out.push(event);
        }
    })
    .await
    .expect("the turn ended within 30s");
    out
}

/// The answer text of a turn.
pub fn text(events: &[TurnEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::TextDelta(d) => Some(d.as_str()),
            _ => None,
        })
        .collect()
}

/// The tool outputs of a turn.
pub fn outputs(events: &[TurnEvent]) -> Vec<toolmux_chat::ToolOutput> {
    events
        .iter()
        .filter_map(|e| match e {
            TurnEvent::ToolOutput(o) => Some(o.clone()),
            _ => None,
        })
        .collect()
}

/// The last event, which ends every turn.
pub fn last(events: &[TurnEvent]) -> &TurnEvent {
    events.last().expect("the turn produced events")
}
