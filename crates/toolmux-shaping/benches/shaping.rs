//! Shaping a 5 MB JSON result: a projection, the MCP default cap (20,000 cl100k tokens) and the
//! whole result kept aside, and the cap and keep alone.
//! Run: `cargo bench -p toolmux-shaping --bench shaping`.

use std::collections::HashMap;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolmux_core::{Channel, ShapedCall, ToolResult};
use toolmux_shaping::{OutputSettings, Shaper, ShapingRules, SpillSettings, SpillStore};

fn five_mb() -> Value {
    let items: Vec<Value> = (0..30_000)
        .map(|id| {
            json!({"id": id, "title": format!("item {id}"), "state": "open",
                "body": "lorem ipsum dolor sit amet, consectetur adipiscing elit ".repeat(2)})
        })
        .collect();
    json!({"items": items, "total": 30_000})
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = Arc::new(SpillStore::new(
        dir.path().join("results"),
        SpillSettings::default(),
    ));
    let document = five_mb();
    let result = ToolResult::structured(document);
    eprintln!(
        "result: {} bytes of text",
        result.content[0].as_text().map_or(0, str::len)
    );
    let projected: OutputSettings =
        serde_json::from_value(json!({"projection": ".items | map({id, title, state})"}))
            .expect("valid settings");
    let shaper = Shaper::new(
        ShapingRules::with_defaults(HashMap::from([("big".to_string(), projected)]), 32 * 1024),
        Arc::clone(&store),
    );
    let call = |tool| ShapedCall {
        tool,
        id: uuid::Uuid::nil(),
        channel: Channel::Mcp,
        output_schema: false,
    };
    let mut group = c.benchmark_group("shape 5 MB JSON");
    group.sample_size(10);
    group.bench_function("projection + 20k-token cap + keep", |b| {
        b.iter(|| shaper.shape_now(call("big"), result.clone()))
    });
    group.bench_function("20k-token cap + keep", |b| {
        b.iter(|| shaper.shape_now(call("other"), result.clone()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
