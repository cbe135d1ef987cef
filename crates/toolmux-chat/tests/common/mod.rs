//! What the chat tests share: aimock (the stand-in for hosted LLM APIs, speaking their exact
//! streaming formats) started from `tests/peers/chat`, and a real engine over a real hub with
//! the workspace pack on a temporary project.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use toolmux_chat::{
    ChatEngine, EngineSettings, GenaiProvider, HumanInputSource, HumanInputs, Providers,
    SamplingSettings, SqliteStore, TurnEvent, TurnRequest,
};
use toolmux_config::{ProviderKind, ProviderSettings};
use toolmux_core::{ApprovalQueue, Hub, HubSettings, NullSink};

/// The chat peers folder; fails with instructions when they are not installed.
pub fn peers() -> PathBuf {
    let peers = std::env::var_os("TOOLMUX_PEERS").unwrap_or_else(|| {
        panic!(
            "TOOLMUX_PEERS is not set. Run ./scripts/test, or install the peers by hand: \
             `(cd tests/peers/chat && npm ci)` and `export TOOLMUX_PEERS=$PWD/tests/peers`"
        )
    });
    let chat = PathBuf::from(peers).join("chat");
    let cli = chat.join("node_modules/@copilotkit/aimock/dist/cli.js");
    assert!(
        cli.is_file(),
        "aimock is not installed at {}: run `(cd tests/peers/chat && npm ci)`",
        cli.display()
    );
    chat
}

/// A running aimock server, stopped on drop.
pub struct Aimock {
    child: Child,
    pub url: String,
}

impl Aimock {
    /// Starts aimock on a free port with the chat fixtures.
    pub fn start() -> Self {
        let chat = peers();
        let mut child = Command::new("node")
            .arg(chat.join("node_modules/@copilotkit/aimock/dist/cli.js"))
            .args(["-p", "0", "--log-level", "info", "-f"])
            .arg(chat.join("fixtures/chat.json"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start aimock with node (Node 20 is required)");
        let stdout = child.stdout.take().expect("aimock stdout");
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("aimock exited before it listened")
                .expect("read aimock output");
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_string();
            }
        };
        // Keep draining its output so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Self { child, url }
    }

    /// The request journal: every request aimock received, newest last.
    pub fn journal(&self) -> serde_json::Value {
        let output = Command::new("curl")
            .args(["-s", &format!("{}/__aimock/journal?limit=1000", self.url)])
            .output()
            .expect("curl the journal");
        serde_json::from_slice(&output.stdout).expect("journal is JSON")
    }
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
        let inputs = Arc::new(HumanInputs::default());
        hub.add_source(Arc::new(HumanInputSource::new(inputs.clone())));
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
            inputs,
            EngineSettings {
                max_steps,
                max_tool_result_bytes: 32 * 1024,
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
        let notes = harness.dir.path().join("notes/release.md");
        std::fs::create_dir_all(notes.parent().expect("parent")).expect("mkdir");
        std::fs::write(notes, "# Release\nThe codename is Bluefin.\n").expect("write");
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
