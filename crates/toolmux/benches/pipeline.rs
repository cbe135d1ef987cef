//! The pipeline's own overhead: a call to an in-process tool that does nothing, through
//! resolve → policy → input validation → rate-limit check → timeout → run → output validation →
//! execution log. Reports percentiles over many calls, with the real execution log writing to a
//! temporary directory and with a sink that keeps nothing.
//!
//! Run: `cargo bench -p toolmux --bench pipeline` (optional: `PIPELINE_BENCH_CALLS=500000`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::json;
use toolmux_core::{
    CallContext, Channel, ExecutionSink, Hub, HubSettings, NullSink, RateLimit, Source, SourceCall,
    SourceError, SourceKind, ToolDescriptor, ToolOverride, ToolResult,
};
use toolmux_execlog::{ExecutionLog, LogSettings};

struct Noop;

#[async_trait]
impl Source for Noop {
    fn id(&self) -> &str {
        "bench"
    }
    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }
    fn tools(&self) -> Vec<ToolDescriptor> {
        let mut tool = ToolDescriptor::new(
            "bench",
            "noop",
            "does nothing",
            json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
                "required": ["path"],
                "additionalProperties": false
            }),
        );
        tool.output_schema = Some(Arc::new(json!({
            "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]
        })));
        vec![tool]
    }
    async fn call(&self, _call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        Ok(ToolResult::structured(json!({"ok": true})))
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn measure(label: &str, sink: Arc<dyn ExecutionSink>, calls: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut settings = HubSettings::default();
    // A generous rate limit, so the limiter check is part of what is measured.
    settings.overrides.insert(
        "noop".into(),
        ToolOverride {
            rate_limit: Some(RateLimit {
                requests: u32::MAX,
                period: Duration::from_secs(1),
            }),
            ..Default::default()
        },
    );
    let hub = Hub::new(settings, sink);
    hub.add_source(Arc::new(Noop));
    let context = CallContext::new(Channel::Cli);
    let arguments = json!({"path": "src/main.rs", "limit": 10});
    let mut samples = Vec::with_capacity(calls);
    runtime.block_on(async {
        for _ in 0..calls / 10 {
            hub.call("noop", arguments.clone(), &context)
                .await
                .expect("warm-up call");
        }
        for _ in 0..calls {
            let args = arguments.clone();
            let started = Instant::now();
            let result = hub.call("noop", args, &context).await;
            samples.push(started.elapsed());
            assert!(result.is_ok(), "{result:?}");
        }
    });
    samples.sort();
    println!(
        "{label:<28} calls={calls}  p50={:>6.2}µs  p90={:>6.2}µs  p99={:>6.2}µs  p99.9={:>7.2}µs  max={:>8.2}µs",
        percentile(&samples, 0.50).as_secs_f64() * 1e6,
        percentile(&samples, 0.90).as_secs_f64() * 1e6,
        percentile(&samples, 0.99).as_secs_f64() * 1e6,
        percentile(&samples, 0.999).as_secs_f64() * 1e6,
        samples.last().copied().unwrap_or_default().as_secs_f64() * 1e6,
    );
}

fn main() {
    let calls = std::env::var("PIPELINE_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    measure("pipeline, null sink", Arc::new(NullSink), calls);
    let dir = tempfile::tempdir().expect("temp dir");
    let log = Arc::new(
        ExecutionLog::open(LogSettings {
            dir: dir.path().to_path_buf(),
            retention_days: 30,
            result_cap_bytes: 16 * 1024,
        })
        .expect("log"),
    );
    measure("pipeline, execution log", log.clone(), calls);
    log.flush();
}
