//! `toolmux tools list --json` from a cold start (a new process) with a warm discovery cache:
//! 20 configured MCP servers with 50 cached tools each. Every server's command is a path that
//! does not exist, so a listing that tried to start one would fail loudly.
//!
//! Run: `cargo bench -p toolmux --bench upstream_cold_start` (optional: `COLD_START_RUNS=100`).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use toolmux_core::ToolAnnotations;
use toolmux_upstream::{CachedTool, DiscoveryRecord, DiscoveryStatus, ServerPaths, config_hash};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let runs: usize = std::env::var("COLD_START_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let dir = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("home");
    let state = toolmux_upstream::state_dir(dir.path());
    let mut servers = Map::new();
    for s in 0..20 {
        let name = format!("server{s:02}");
        let entry = json!({"command": "/nonexistent/mcp-server", "args": [format!("--id={s}")]});
        let mut record = DiscoveryRecord::never(&name, &config_hash(&entry));
        record.discovery_status = DiscoveryStatus::Success;
        record.tools = (0..50)
            .map(|i| CachedTool {
                name: format!("tool_{i}"),
                title: None,
                description: format!("Does thing {i}. ").repeat(4),
                input_schema: json!({"type": "object", "properties": {
                    "a": {"type": "string", "description": "the first argument"},
                    "b": {"type": "integer", "description": "the second argument"}}}),
                output_schema: None,
                annotations: ToolAnnotations::default(),
                note: None,
                internal: false,
                findings: Vec::new(),
            })
            .collect();
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

    let run = || {
        Command::new(env!("CARGO_BIN_EXE_toolmux"))
            .args(["tools", "list", "--json"])
            .current_dir(dir.path())
            .env("HOME", home.path())
            .env_remove("TOOLMUX_PROJECT")
            .output()
            .expect("run toolmux")
    };
    let first = run();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let listed: Value = serde_json::from_slice(&first.stdout).expect("json");
    let upstream = listed.as_array().map_or(0, |a| {
        a.iter().filter(|t| t["source"] != "workspace").count()
    });
    assert!(upstream >= 1000, "only {upstream} upstream tools listed");

    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let out = run();
        samples.push(started.elapsed());
        assert!(out.status.success());
    }
    samples.sort();
    println!(
        "toolmux tools list --json, 1,000 cached tools   p50 {:.1} ms   p90 {:.1} ms   ({runs} runs)",
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.9).as_secs_f64() * 1e3,
    );
}
