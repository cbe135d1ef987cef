//! The chat loop's own overhead per step, excluding the model and the tools: each step the
//! in-process model below answers at once with one call of a tool that does nothing, and the
//! loop does everything else for real — system prompt and tool list from the catalog (schemas
//! cleaned for the provider), the pipeline, the SQLite conversation store (WAL, on disk), the
//! event stream. Reported per step, as percentiles over many turns, for a catalog of the
//! workspace pack plus the no-op tool and for one with 500 more tools.
//!
//! The model is in process on purpose: a benchmark of the loop must not time a network hop.
//! Tests use aimock, the stand-in that speaks the providers' wire formats.
//!
//! Run: `cargo bench -p toolmux-chat --bench loop_overhead` (optional: `LOOP_BENCH_TURNS=500`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::json;
use toolmux_chat::{
    ChatEngine, ChatProvider, EngineSettings, Message, ModelRequest, ProviderError, ProviderEvent,
    ProviderStream, Providers, SamplingSettings, SqliteStore, ToolCall, TurnEvent, TurnRequest,
};
use toolmux_config::ProviderKind;
use toolmux_core::{
    ApprovalQueue, Hub, HubSettings, NullSink, Source, SourceCall, SourceError, SourceKind,
    ToolDescriptor, ToolResult,
};

/// Steps per turn: the model calls the tool this many times, then answers.
const STEPS: u32 = 10;

/// A model that calls `noop` until the conversation holds `STEPS` tool results, then answers.
struct InstantModel {
    requests: AtomicU32,
}

#[async_trait]
impl ChatProvider for InstantModel {
    fn name(&self) -> &str {
        "instant"
    }
    fn default_model(&self) -> Option<&str> {
        Some("instant")
    }
    async fn stream(&self, request: ModelRequest) -> Result<ProviderStream, ProviderError> {
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let results = request
            .messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User { .. }))
            .filter(|m| matches!(m, Message::Tool { .. }))
            .count() as u32;
        let events = if results < STEPS - 1 {
            vec![
                Ok(ProviderEvent::ToolCall(ToolCall {
                    id: format!("call_{n}"),
                    name: "noop".into(),
                    arguments: json!({"path": "x"}),
                    source: None,
                })),
                Ok(ProviderEvent::Finish {
                    reason: Some("tool_calls".into()),
                }),
            ]
        } else {
            vec![
                Ok(ProviderEvent::TextDelta("done".into())),
                Ok(ProviderEvent::Finish {
                    reason: Some("stop".into()),
                }),
            ]
        };
        Ok(futures::stream::iter(events).boxed())
    }
    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        Ok(vec!["instant".into()])
    }
}

/// A source of tools that do nothing: `noop`, plus `extra` more for a large catalog.
struct Noop {
    extra: usize,
}

#[async_trait]
impl Source for Noop {
    fn id(&self) -> &str {
        "bench"
    }
    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }
    fn tools(&self) -> Vec<ToolDescriptor> {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"path": {"type": "string"}, "tags": {"type": "array"}},
            "required": ["path"]
        });
        let mut tools = vec![ToolDescriptor::new(
            "bench",
            "noop",
            "does nothing",
            schema.clone(),
        )];
        for i in 0..self.extra {
            tools.push(ToolDescriptor::new(
                "bench",
                format!("extra_{i}"),
                "another tool that does nothing",
                schema.clone(),
            ));
        }
        for t in &mut tools {
            t.annotations = toolmux_core::ToolAnnotations::read_only();
        }
        tools
    }
    async fn call(&self, _call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        Ok(ToolResult::text("ok"))
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn measure(label: &str, extra_tools: usize, turns: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let per_step = runtime.block_on(async {
        let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
        hub.add_source(Arc::new(
            toolmux_workspace::WorkspacePack::new(dir.path(), Default::default())
                .expect("workspace"),
        ));
        hub.add_source(Arc::new(Noop { extra: extra_tools }));
        let mut providers = Providers::default();
        providers.insert(
            "instant",
            ProviderKind::Openai,
            Arc::new(InstantModel {
                requests: AtomicU32::new(0),
            }),
        );
        let store = Arc::new(SqliteStore::open(&dir.path().join("toolmux.db")).expect("store"));
        let engine = Arc::new(ChatEngine::new(
            hub,
            providers,
            store,
            Arc::new(ApprovalQueue::new()),
            EngineSettings {
                max_steps: STEPS + 1,
                project_name: "bench".into(),
                sampling: SamplingSettings::default(),
            },
        ));
        let mut per_step = Vec::with_capacity(turns);
        for turn in 0..turns + 10 {
            let started = Instant::now();
            let (_, mut events, _) = engine
                .start_turn(TurnRequest {
                    text: "go".into(),
                    ..Default::default()
                })
                .await
                .expect("turn starts");
            let mut steps = 0;
            while let Some(event) = events.recv().await {
                if let TurnEvent::Finished { steps: s, .. } = event {
                    steps = s;
                }
            }
            assert_eq!(steps, STEPS, "every turn makes {STEPS} model calls");
            // The first turns warm caches (schemas, SQLite pages); they are not counted.
            if turn >= 10 {
                per_step.push(started.elapsed() / STEPS);
            }
        }
        per_step
    });
    let mut sorted = per_step;
    sorted.sort_unstable();
    println!(
        "{label:<34} per step  p50 {:>9.1?}  p90 {:>9.1?}  p99 {:>9.1?}  ({turns} turns of {STEPS} steps)",
        percentile(&sorted, 0.50),
        percentile(&sorted, 0.90),
        percentile(&sorted, 0.99),
    );
}

fn main() {
    let turns = std::env::var("LOOP_BENCH_TURNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    measure("5 tools (workspace + noop)", 0, turns);
    measure("505 tools (+500 in one source)", 500, turns / 4);
}
