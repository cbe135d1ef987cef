//! Sandbox figures. Run: `cargo bench -p toolmux-codemode --bench sandbox`.
//! - a fresh sandbox running a trivial TypeScript script, TypeScript stripping included
//!   (target: p50 ≤ 1 ms);
//! - host calls per second from one script to an in-process tool through the whole pipeline
//!   (target: ≥ 50,000/s).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use toolmux_codemode::{Limits, Sandbox};
use toolmux_core::{
    CallContext, Channel, Hub, HubSettings, NullSink, Source, SourceCall, SourceError, SourceKind,
    ToolAnnotations, ToolDescriptor, ToolResult,
};

/// One in-process tool, `add`, with a structured result.
struct Math;

#[async_trait]
impl Source for Math {
    fn id(&self) -> &str {
        "math"
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        let mut add = ToolDescriptor::new(
            "math",
            "add",
            "Adds two numbers.",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        );
        add.annotations = ToolAnnotations::read_only();
        vec![add]
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let a = call
            .arguments
            .get("a")
            .and_then(Value::as_f64)
            .unwrap_or_default();
        let b = call
            .arguments
            .get("b")
            .and_then(Value::as_f64)
            .unwrap_or_default();
        Ok(ToolResult::structured(json!({"sum": a + b})))
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    hub.add_source(Arc::new(Math));
    let sandbox = Sandbox::new(hub.downgrade(), Limits::default());
    let context = CallContext::new(Channel::Cli);

    let trivial = "const greeting: string = 'hi';\nreturn greeting.length + 1;";
    for _ in 0..50 {
        sandbox
            .run(trivial, &context)
            .await
            .result
            .expect("warm-up");
    }
    let mut samples = Vec::with_capacity(2000);
    for _ in 0..2000 {
        let started = Instant::now();
        let out = sandbox.run(trivial, &context).await;
        samples.push(started.elapsed());
        assert_eq!(out.result.expect("runs"), json!(3));
    }
    samples.sort();
    println!(
        "fresh sandbox + trivial TypeScript script: p50 {:?}, p90 {:?}, p99 {:?} (2000 runs)",
        percentile(&samples, 0.5),
        percentile(&samples, 0.9),
        percentile(&samples, 0.99)
    );

    for (label, calls, script) in [
        (
            "Promise.all in batches of 5,000",
            50_000,
            "import { math } from '@capabilities/math';\nlet n = 0;\nfor (let batch = 0; batch < 10; batch++) {\n  const r = await Promise.all(Array.from({ length: 5000 }, (_, i) => math.add({ a: i, b: 1 })));\n  n += r.length;\n}\nreturn n;",
        ),
        (
            "sequential await",
            20_000,
            "import { math } from '@capabilities/math';\nlet n = 0;\nfor (let i = 0; i < 20000; i++) { n += (await math.add({ a: i, b: 1 }) as { sum: number }).sum; }\nreturn n > 0 ? 20000 : 0;",
        ),
    ] {
        let mut rates = Vec::new();
        for _ in 0..5 {
            let started = Instant::now();
            let out = sandbox.run(script, &context).await;
            let elapsed = started.elapsed();
            assert_eq!(out.result.expect("runs"), json!(calls));
            rates.push(calls as f64 / elapsed.as_secs_f64());
        }
        rates.sort_by(f64::total_cmp);
        println!(
            "host calls from one script ({label}, {calls} calls through Hub::call): median {:.0} calls/s",
            rates[rates.len() / 2]
        );
    }
}
