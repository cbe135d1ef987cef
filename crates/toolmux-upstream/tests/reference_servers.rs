//! The upstream client against the reference MCP servers from npm: `server-everything` in its
//! three transports (stdio, legacy SSE, streamable HTTP), `server-filesystem` and
//! `server-memory`; and the MCP conformance suite's TypeScript reference server
//! (`tests/peers/reference`). After every test, no process of a server is left.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Project, call};
use toolmux_core::{
    Backchannel, CallContext, Channel, ContentBody, LogMessage, Progress, Source, SourceState,
};
use toolmux_testkit::peers::{node_peer, start_reference_server};
use toolmux_testkit::processes::{Background, assert_group_gone, free_port};

/// A caller that keeps the progress relayed to it.
#[derive(Default)]
struct ProgressRecorder(Mutex<Vec<Progress>>);

impl Backchannel for ProgressRecorder {
    fn progress(&self, update: Progress) {
        self.0.lock().expect("not poisoned").push(update);
    }
    fn log(&self, _message: LogMessage) {}
}

/// Checks the everything server's tools through one transport: discovery, a call, a result
/// with structured content, and names.
async fn exercise_everything(project: &Project) {
    let upstreams = project.upstreams();
    let hub = project.hub(&upstreams);
    let server = upstreams.get("everything").expect("configured");
    let outcome = server.discover().await.expect("discovers");
    assert!(outcome.listed >= 10, "{outcome:?}");
    assert_eq!(server.status().state, SourceState::Success);
    let catalog = hub.catalog();
    let echo = catalog.get("everything__echo").expect("echo");
    assert_eq!(echo.descriptor.original_name, "echo");
    // The dialect the server declares is kept (SEP-1613); its `$id`s and remote `$ref`s are not.
    assert_eq!(
        echo.descriptor.input_schema["$schema"],
        "http://json-schema.org/draft-07/schema#"
    );

    let result = call(&hub, "everything__echo", json!({"message": "hello"}))
        .await
        .expect("echo works");
    assert!(result.text_content().contains("hello"), "{result:?}");

    let sum = call(&hub, "everything__get-sum", json!({"a": 2, "b": 3}))
        .await
        .expect("get-sum works");
    assert!(sum.text_content().contains('5'), "{sum:?}");

    let image = call(&hub, "everything__get-tiny-image", json!({}))
        .await
        .expect("image works");
    assert!(
        image.content.iter().any(
            |c| matches!(&c.body, ContentBody::Image { mime_type, .. } if mime_type == "image/png")
        ),
        "{image:?}"
    );

    // The server's progress reaches the caller, in order and before the result.
    let recorder = Arc::new(ProgressRecorder::default());
    let context = CallContext::new(Channel::Mcp).with_backchannel(recorder.clone());
    let done = hub
        .call(
            "everything__trigger-long-running-operation",
            json!({"duration": 0.3, "steps": 3}),
            &context,
        )
        .await
        .expect("the long-running operation works");
    assert!(
        done.text_content()
            .contains("Long running operation completed"),
        "{done:?}"
    );
    let progress = recorder.0.lock().expect("not poisoned").clone();
    let steps: Vec<(f64, Option<f64>)> = progress.iter().map(|p| (p.progress, p.total)).collect();
    assert_eq!(
        steps,
        [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))],
        "{progress:?}"
    );

    let pgid = server.pid().await;
    upstreams.shutdown().await;
    if let Some(pgid) = pgid {
        assert_group_gone(pgid);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_over_stdio() {
    let project = Project::new(&json!({"mcpServers": {
        "everything": {"command": node_peer("upstream", "mcp-server-everything")}
    }}));
    exercise_everything(&project).await;
}

/// The everything server serving `transport` on a free port, once it listens, and the port.
fn start_everything(transport: &str) -> (Background, u16) {
    let port = free_port();
    let mut server = Background::start(
        node_peer("upstream", "mcp-server-everything"),
        &[transport],
        &[("PORT", port.to_string())],
    );
    server.wait_for_port(port);
    (server, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_over_legacy_sse() {
    let (_server, port) = start_everything("sse");
    let project = Project::new(&json!({"mcpServers": {
        "everything": {"type": "sse", "url": format!("http://127.0.0.1:{port}/sse")}
    }}));
    exercise_everything(&project).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_over_streamable_http() {
    let (_server, port) = start_everything("streamableHttp");
    let project = Project::new(&json!({"mcpServers": {
        "everything": {"url": format!("http://127.0.0.1:{port}/mcp")}
    }}));
    exercise_everything(&project).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_and_memory_servers_work_side_by_side() {
    let files = tempfile::tempdir().expect("tempdir");
    std::fs::write(files.path().join("notes.txt"), "alpha\nbeta\n").expect("write");
    let root = files.path().canonicalize().expect("canonical");
    let project = Project::new(&json!({"mcpServers": {
        "fs": {"command": node_peer("upstream", "mcp-server-filesystem"), "args": [root]},
        "memory": {"command": node_peer("upstream", "mcp-server-memory"),
                   "env": {"MEMORY_FILE_PATH": files.path().join("memory.jsonl")}}
    }}));
    let upstreams = project.upstreams();
    let hub = project.hub(&upstreams);
    for server in upstreams.servers() {
        server.discover().await.expect("discovers");
    }
    let read = call(
        &hub,
        "fs__read_text_file",
        json!({"path": root.join("notes.txt")}),
    )
    .await
    .expect("reads");
    assert!(read.text_content().contains("beta"), "{read:?}");

    let created = call(
        &hub,
        "memory__create_entities",
        json!({"entities": [{"name": "toolmux", "entityType": "project", "observations": ["aggregates tools"]}]}),
    )
    .await
    .expect("creates");
    assert!(!created.is_error, "{created:?}");
    let graph = call(&hub, "memory__read_graph", json!({}))
        .await
        .expect("reads graph");
    let text: Value = graph
        .structured_content
        .clone()
        .unwrap_or_else(|| serde_json::from_str(&graph.text_content()).unwrap_or_default());
    assert!(text.to_string().contains("aggregates tools"), "{graph:?}");

    let mut pgids = Vec::new();
    for server in upstreams.servers() {
        pgids.extend(server.pid().await);
    }
    assert_eq!(pgids.len(), 2);
    upstreams.shutdown().await;
    pgids.into_iter().for_each(assert_group_gone);
}

/// The conformance reference server's `test_reconnection` closes the response stream of the
/// call after a priming event (an event id and `retry: 5000`, SEP-1699) and answers 100 ms
/// later. The call must wait the server's delay — the spec says a client MUST — then resume
/// with `Last-Event-ID` and get the answer there. (Its SDK before 1.32 dropped an answer made
/// while the stream was closed, so no client that honours `retry` could get it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_stream_the_server_closes_is_resumed_after_its_retry_delay() {
    let port = free_port();
    let mut server = start_reference_server(port);
    let project = Project::new(&json!({"mcpServers": {
        "ref": {"url": format!("http://127.0.0.1:{port}/mcp"), "toolTimeoutMs": 30_000}
    }}));
    let upstreams = project.upstreams();
    let hub = project.hub(&upstreams);
    let source = upstreams.get("ref").expect("configured");
    source.discover().await.expect("discovers");

    for _ in 0..2 {
        let started = Instant::now();
        let result = call(&hub, "ref__test_reconnection", json!({}))
            .await
            .expect("the call is answered after the stream closed");
        let took = started.elapsed();
        assert!(
            result
                .text_content()
                .contains("the client properly reconnected"),
            "{result:?}"
        );
        // The server said `retry: 5000`: reconnecting sooner would break the spec's MUST.
        assert!(took >= Duration::from_millis(4_900), "{took:?}");
        assert!(took < Duration::from_secs(20), "{took:?}");
    }
    upstreams.shutdown().await;
    server.stop();
}
