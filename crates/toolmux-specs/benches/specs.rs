//! `spec_list`, `spec_search` and `spec_stats` over 1,000 generated specs, cold (a new pack:
//! every README parsed) and warm (the cached snapshot). Targets: warm list and stats ≤ 5 ms,
//! warm search ≤ 20 ms. Run: `cargo bench -p toolmux-specs --bench specs`.

use std::fs;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use toolmux_specs::SpecsSource;

const WORDS: [&str; 12] = [
    "auth", "cache", "search", "index", "token", "gateway", "schema", "latency", "audit",
    "webhook", "parser", "session",
];

fn generate(root: &Path, n: usize) {
    for i in 1..=n {
        let a = WORDS[i % 12];
        let b = WORDS[(i * 7 + 3) % 12];
        let dir = root.join(format!("specs/{i:04}-{a}-{b}"));
        fs::create_dir_all(&dir).unwrap();
        let mut text = format!(
            "---\nstatus: {}\ncreated: '2025-{:02}-{:02}'\npriority: {}\ntags: [{a}, {b}]\n---\n\n# {a} {b} {i}\n\n## Overview\n\n",
            ["planned", "in-progress", "complete", "draft"][i % 4],
            i % 12 + 1,
            i % 28 + 1,
            ["low", "medium", "high", "critical"][i % 4],
        );
        for line in 0..40 {
            text.push_str(&format!(
                "The {a} work touches {b} and {} on line {line}.\n",
                WORDS[(i + line) % 12]
            ));
        }
        text.push_str("\n## Plan\n\n- [ ] do it\n- [x] plan it\n");
        fs::write(dir.join("README.md"), text).unwrap();
    }
}

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), 1000);
    // A file or folder modified in the last 2 s is read again on every call (its time could
    // still hide a change made in the same clock tick); warm means a project at rest.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let pack = SpecsSource::open_with(dir.path(), None).unwrap().unwrap();
    let list = args(json!({}));
    let search =
        args(json!({"query": "auth AND cache OR \"token work\" NOT tag:audit", "limit": 20}));
    let stats = args(json!({}));
    let check = |tool: &str, a: &Map<String, Value>| {
        let r = pack.run(tool, a).unwrap();
        assert!(!r.is_error, "{}", r.text_content());
    };
    check("spec_list", &list);
    c.bench_function("warm/spec_list", |b| b.iter(|| check("spec_list", &list)));
    c.bench_function("warm/spec_search", |b| {
        b.iter(|| check("spec_search", &search))
    });
    c.bench_function("warm/spec_stats", |b| {
        b.iter(|| check("spec_stats", &stats))
    });
    let mut group = c.benchmark_group("cold");
    group.sample_size(10);
    for (tool, a) in [
        ("spec_list", &list),
        ("spec_search", &search),
        ("spec_stats", &stats),
    ] {
        group.bench_function(tool, |b| {
            b.iter(|| {
                let cold = SpecsSource::open_with(dir.path(), None).unwrap().unwrap();
                let r = cold.run(tool, a).unwrap();
                assert!(!r.is_error);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
