//! Scanning, cleaning and fingerprinting 1,000 upstream tools, what discovery does for every
//! listing: the corpora's descriptions (nine in ten benign, one in ten poisoned) with
//! six-property schemas, each tool scanned (`scan_tool`) and its description and schemas
//! cleaned (`visible`, `visible_value`); then each definition fingerprinted for pinning
//! (`pins::fingerprint`). Target for both together ≤ 20 ms. Beside them, what cleaning a tool's
//! result costs: a 1 MB text result through `visible`; and what `mcp audit` adds, classing
//! 1,000 tools for toxic flows (`flows::classify`, `flows::toxic_flow`). Run:
//! `cargo bench -p toolmux-trust --bench scan`.

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
    // What pinning adds at discovery: each definition fingerprinted.
    let definitions: Vec<serde_json::Value> = tools
        .iter()
        .map(|(title, description, schema)| {
            json!({"name": "tool", "title": title, "description": description, "inputSchema": schema})
        })
        .collect();
    c.bench_function("fingerprint 1,000 tools", |b| {
        b.iter(|| {
            definitions
                .iter()
                .map(toolmux_trust::pins::fingerprint)
                .count()
        })
    });
    // What `mcp audit` adds: each tool classed for toxic flows, then the flow of them all.
    let names: Vec<String> = (0..1000).map(|i| format!("server__tool_{i}")).collect();
    c.bench_function("classify 1,000 tools for toxic flows", |b| {
        b.iter(|| {
            let classes: Vec<toolmux_trust::flows::Classification> = tools
                .iter()
                .zip(&names)
                .map(|((_, description, _), name)| {
                    toolmux_trust::flows::classify(&toolmux_trust::flows::ToolTraits {
                        name,
                        description,
                        ..Default::default()
                    })
                })
                .collect();
            toolmux_trust::flows::toxic_flow(names.iter().map(String::as_str).zip(&classes))
                .is_some()
        })
    });
    // A megabyte of ordinary text with no invisible character: the common case, one pass.
    let result = "The quick brown fox jumps over the lazy dog. ".repeat(1024 * 1024 / 45);
    c.bench_function("clean a 1 MB tool result", |b| {
        b.iter(|| toolmux_trust::visible(std::hint::black_box(&result)).len())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
