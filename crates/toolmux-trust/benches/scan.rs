//! Scanning and cleaning 1,000 upstream tools, what discovery does for every listing: the
//! corpora's descriptions (nine in ten benign, one in ten poisoned) with six-property schemas,
//! each tool scanned (`scan_tool`) and its description and schemas cleaned (`visible`,
//! `visible_value`). Target ≤ 20 ms. Run: `cargo bench -p toolmux-trust --bench scan`.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};

fn descriptions(corpus: &str) -> Vec<String> {
    corpus
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let entry: Value = serde_json::from_str(l).expect("a corpus line is JSON");
            entry["description"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

fn tools() -> Vec<(String, String, Value)> {
    let benign = descriptions(include_str!("../corpus/benign.jsonl"));
    let poisoned = descriptions(include_str!("../corpus/poisoned.jsonl"));
    (0..1000)
        .map(|i| {
            let description = if i % 10 == 9 {
                poisoned[i % poisoned.len()].clone()
            } else {
                benign[i % benign.len()].clone()
            };
            let mut properties = Map::new();
            for p in 0..6 {
                properties.insert(
                    format!("param_{p}"),
                    json!({"type": "string", "description": format!("Parameter {p} of tool {i}: what it means and its unit."), "enum": ["one", "two"]}),
                );
            }
            let schema = json!({"type": "object", "properties": properties, "required": ["param_0"]});
            (format!("Tool {i}"), description, schema)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let tools = tools();
    c.bench_function("scan and clean 1,000 tools", |b| {
        b.iter(|| {
            let mut findings = 0;
            for (title, description, schema) in &tools {
                findings +=
                    toolmux_trust::scan_tool("tool", Some(title), description, schema, None).len();
                let clean = toolmux_trust::visible(description);
                let schema = toolmux_trust::visible_value(schema);
                std::hint::black_box((clean, schema));
            }
            findings
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
