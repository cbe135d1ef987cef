//! Listing a catalog of many cached upstream tools: 20 configured servers with 50 tools each
//! (1,000 tools, schemas like real servers'), read from warm discovery caches. Measures loading
//! the caches (what every `toolmux` command does at start) and publishing a catalog snapshot
//! from them (what every change does), and checks that no server process was started: every
//! server's command is a path that does not exist.
//!
//! Run: `cargo bench -p toolmux-upstream --bench catalog` (optional: `CATALOG_BENCH_RUNS=2000`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use toolmux_core::{Hub, HubSettings, NullSink, ToolAnnotations};
use toolmux_upstream::{
    CachedTool, DiscoveryRecord, DiscoveryStatus, ServerPaths, Upstreams, config_hash,
};

const SERVERS: usize = 20;
const TOOLS_PER_SERVER: usize = 50;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{label:<48} p50 {:>9.3} ms   p90 {:>9.3} ms   p99 {:>9.3} ms   ({} runs)",
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.9).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3,
        samples.len()
    );
}

fn tool(server: usize, i: usize) -> CachedTool {
    let mut properties = Map::new();
    for p in 0..6_usize {
        properties.insert(
            format!("param_{p}"),
            json!({"type": if p.is_multiple_of(2) { "string" } else { "integer" },
                   "description": format!("Parameter {p} of tool {i} on server {server}: what it means and its unit.")}),
        );
    }
    CachedTool {
        name: format!("tool_{i}"),
        title: Some(format!("Tool {i}")),
        description: format!("Does thing {i} on server {server}. ").repeat(4),
        input_schema: json!({"type": "object", "properties": properties, "required": ["param_0"]}),
        output_schema: None,
        annotations: if i.is_multiple_of(3) {
            ToolAnnotations::read_only()
        } else {
            ToolAnnotations::default()
        },
        note: None,
        internal: false,
        findings: Vec::new(),
    }
}

fn main() {
    let runs: usize = std::env::var("CATALOG_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let dir = tempfile::tempdir().expect("tempdir");
    let state = toolmux_upstream::state_dir(dir.path());
    let mut servers = Map::new();
    for s in 0..SERVERS {
        let name = format!("server{s:02}");
        let entry = json!({"command": "/nonexistent/mcp-server", "args": [format!("--id={s}")],
                           "env": {"TOKEN": "${BENCH_TOKEN:-x}"}});
        let mut record = DiscoveryRecord::never(&name, &config_hash(&entry));
        record.discovery_status = DiscoveryStatus::Success;
        record.last_discovery = Some(chrono::Utc::now());
        record.tools = (0..TOOLS_PER_SERVER).map(|i| tool(s, i)).collect();
        record
            .write(&ServerPaths::new(&state, &name).cache)
            .expect("write cache");
        servers.insert(name, entry);
    }
    let config = toolmux_config::project_config_path(dir.path());
    std::fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &config,
        json!({"mcpServers": Value::Object(servers)}).to_string(),
    )
    .expect("config");
    let loaded = toolmux_config::load(dir.path(), None).expect("loads");

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut load = Vec::with_capacity(runs / 10);
        for _ in 0..(runs / 10).max(10) {
            let started = Instant::now();
            let upstreams = Upstreams::new(&loaded, &state);
            load.push(started.elapsed());
            drop(upstreams);
        }
        report("load 20 caches (1,000 tools) from disk", load);

        let upstreams = Upstreams::new(&loaded, &state);
        let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
        for source in upstreams.sources() {
            hub.add_source(source);
        }
        assert_eq!(hub.catalog().tools().count(), SERVERS * TOOLS_PER_SERVER);
        let mut rebuild = Vec::with_capacity(runs);
        for _ in 0..runs {
            let started = Instant::now();
            hub.refresh();
            let catalog = hub.catalog();
            rebuild.push(started.elapsed());
            assert_eq!(catalog.tools().count(), SERVERS * TOOLS_PER_SERVER);
        }
        report("publish a catalog snapshot of 1,000 tools", rebuild);

        let mut list = Vec::with_capacity(runs);
        for _ in 0..runs {
            let started = Instant::now();
            let names: usize = hub.catalog().tools().map(|e| e.descriptor.name.len()).sum();
            list.push(started.elapsed());
            assert!(names > 0);
        }
        report("list the current snapshot (1,000 names)", list);

        for server in upstreams.servers() {
            assert!(!server.is_running().await, "a server was started");
        }
        println!("no server process was started");
    });
}
