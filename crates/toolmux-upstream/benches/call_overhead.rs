//! The latency toolmux adds to a call of a stdio upstream: the same `echo` of the reference
//! `server-everything`, called directly with an rmcp client, and through toolmux's hub (resolve,
//! policy, schema validation, timeout, the upstream source, result conversion). Reports both and
//! the difference of their medians.
//!
//! Needs the npm peers: `TOOLMUX_PEERS=<repo>/tests/peers` after `npm ci` in
//! `tests/peers/upstream`. Run: `cargo bench -p toolmux-upstream --bench call_overhead`
//! (optional: `CALL_BENCH_CALLS=5000`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use toolmux_core::{CallContext, Channel, Hub, HubSettings, NullSink};
use toolmux_upstream::Upstreams;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn summary(label: &str, samples: &mut [Duration]) -> Duration {
    samples.sort();
    let p50 = percentile(samples, 0.5);
    println!(
        "{label:<28} p50 {:>8.3} ms   p90 {:>8.3} ms   p99 {:>8.3} ms   ({} calls)",
        p50.as_secs_f64() * 1e3,
        percentile(samples, 0.9).as_secs_f64() * 1e3,
        percentile(samples, 0.99).as_secs_f64() * 1e3,
        samples.len()
    );
    p50
}

fn main() {
    let peers = std::env::var_os("TOOLMUX_PEERS").map(PathBuf::from).unwrap_or_else(|| {
        panic!("TOOLMUX_PEERS is not set: point it at <repo>/tests/peers after `npm ci` in tests/peers/upstream")
    });
    let server = peers.join("upstream/node_modules/.bin/mcp-server-everything");
    assert!(
        server.exists(),
        "{} is missing: run `npm ci` in tests/peers/upstream",
        server.display()
    );
    let calls: usize = std::env::var("CALL_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let warmup = calls / 10;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        // Directly.
        let process = TokioChildProcess::new(tokio::process::Command::new(&server)).expect("spawn");
        let client = ().serve(process).await.expect("handshake");
        let mut direct = Vec::with_capacity(calls);
        for i in 0..warmup + calls {
            let arguments = json!({"message": "ping"})
                .as_object()
                .cloned()
                .unwrap_or_default();
            let params = CallToolRequestParams::new("echo").with_arguments(arguments);
            let started = Instant::now();
            client.call_tool(params).await.expect("direct call");
            if i >= warmup {
                direct.push(started.elapsed());
            }
        }
        client.cancel().await.expect("close");

        // Through toolmux.
        let dir = tempfile::tempdir().expect("tempdir");
        let config = toolmux_config::project_config_path(dir.path());
        std::fs::create_dir_all(config.parent().expect("parent")).expect("mkdir");
        std::fs::write(
            &config,
            json!({"mcpServers": {"everything": {"command": server}}}).to_string(),
        )
        .expect("config");
        let loaded = toolmux_config::load(dir.path(), None).expect("loads");
        let upstreams = Upstreams::new(&loaded, &toolmux_upstream::state_dir(dir.path()));
        let source = upstreams.get("everything").expect("configured");
        source.discover().await.expect("discovers");
        let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
        for source in upstreams.sources() {
            hub.add_source(source);
        }
        let context = CallContext::new(Channel::Cli);
        let mut through = Vec::with_capacity(calls);
        for i in 0..warmup + calls {
            let started = Instant::now();
            hub.call("everything__echo", json!({"message": "ping"}), &context)
                .await
                .expect("call through toolmux");
            if i >= warmup {
                through.push(started.elapsed());
            }
        }
        upstreams.shutdown().await;

        let a = summary("direct (rmcp client)", &mut direct);
        let b = summary("through toolmux (hub)", &mut through);
        println!(
            "added latency, p50: {:.3} ms",
            (b.as_secs_f64() - a.as_secs_f64()) * 1e3
        );
    });
}
