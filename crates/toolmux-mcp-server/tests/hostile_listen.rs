//! Hostile and racing `subscriptions/listen` requests (2026-07-28) from the real Python MCP
//! client: a request naming more resources than one stream follows is refused with invalid
//! params, and a change made while a stream's resources are being subscribed to is told on it,
//! never lost.

#[allow(dead_code)] // each test binary uses a part of the shared helpers
mod common;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use common::{HttpServer, TestSource, hub};
use serde_json::json;
use toolmux_core::{
    BuiltinResources, ResourceContents, ResourceError, ResourceInfo, ResourceProvider,
};
use toolmux_mcp_server::ServeOptions;
use toolmux_testkit::python_client::PythonClient;

/// `note://…` resources, read through the fixture's `echo`. Reading `note://gated` says so on
/// `reading` and then waits until the test sends on `release`; every other note reads at once.
struct Notes {
    reading: Mutex<mpsc::Sender<()>>,
    release: Mutex<mpsc::Receiver<()>>,
}

impl ResourceProvider for Notes {
    fn source(&self) -> &str {
        "test"
    }

    fn scheme(&self) -> &str {
        "note"
    }

    fn read_tool(&self) -> &str {
        "echo"
    }

    fn resources(&self) -> Result<Vec<ResourceInfo>, ResourceError> {
        Ok(vec![ResourceInfo {
            uri: "note://gated".into(),
            name: "gated".into(),
            title: None,
            description: None,
            mime_type: Some("text/plain".into()),
            size: None,
        }])
    }

    fn read(&self, uri: &str) -> Result<Vec<ResourceContents>, ResourceError> {
        if uri == "note://gated" {
            self.reading
                .lock()
                .expect("lock")
                .send(())
                .map_err(|e| ResourceError::Failed(e.to_string()))?;
            self.release
                .lock()
                .expect("lock")
                .recv()
                .map_err(|e| ResourceError::Failed(e.to_string()))?;
        }
        Ok(vec![ResourceContents {
            uri: uri.to_string(),
            mime_type: Some("text/plain".into()),
            text: "a note".into(),
        }])
    }

    fn version(&self) -> Result<u64, ResourceError> {
        Ok(0)
    }
}

/// The MCP server over HTTP with the notes, and the ends of the gate on `note://gated`.
async fn server_with_notes() -> (
    HttpServer,
    mpsc::Receiver<()>,
    mpsc::Sender<()>,
    toolmux_core::Hub,
) {
    let (reading, read_started) = mpsc::channel();
    let (release, released) = mpsc::channel();
    let notes = Notes {
        reading: Mutex::new(reading),
        release: Mutex::new(released),
    };
    let hub = hub();
    let options = ServeOptions {
        resources: BuiltinResources::new(vec![Arc::new(notes)]),
        ..ServeOptions::default()
    };
    let server = HttpServer::start(hub.clone(), options).await;
    (server, read_started, release, hub)
}

/// Found in review of issue 28: the number of resources one `subscriptions/listen` names was
/// uncapped, and each was followed (a task, a subscription upstream) for the stream's life. A
/// request naming more than 100 is refused with invalid params naming the cap, after an
/// acknowledgment that grants it no resource; one naming 100 is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_naming_more_resources_than_the_cap_is_refused_with_invalid_params() {
    let (server, _read_started, _release, _hub) = server_with_notes().await;
    let uris = |n: usize| (0..n).map(|i| format!("note://n{i}")).collect::<Vec<_>>();
    let mut client = PythonClient::start(json!({
        "transport": "http",
        "url": server.url,
        "mode": "auto",
        "steps": [
            {"op": "listen", "timeout": 0.1, "resources": uris(1_000)},
            {"op": "listen", "timeout": 0.1, "resources": uris(100)},
        ]
    }));
    let connected = client.next().await;
    assert_eq!(connected["connected"]["protocolVersion"], "2026-07-28");
    assert_eq!(
        client.next().await,
        json!({"listening": {"toolsListChanged": true}})
    );
    assert_eq!(
        client.next().await,
        json!({"error": {
            "code": -32602,
            "message": "subscriptions/listen follows at most 100 resources in one request; this \
                        one names 1000"
        }})
    );
    assert_eq!(
        client.next().await,
        json!({"listening": {"toolsListChanged": true, "resourceSubscriptions": uris(100)}})
    );
    assert_eq!(client.next().await, json!({"event": null}));
    client.finish().await;
}

/// Found in review of issue 28: a listen stream took what it compares changes with only after
/// it had subscribed to its resources, so a tool added while a resource was being subscribed to
/// was already in that baseline and never told. It is taken when the request comes: the tool
/// added while `note://gated` is read is told on the stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_added_while_a_listen_subscribes_is_told_on_the_stream() {
    let (server, read_started, release, hub) = server_with_notes().await;
    let mut client = PythonClient::start(json!({
        "transport": "http",
        "url": server.url,
        "mode": "auto",
        "steps": [{"op": "listen", "timeout": 10, "resources": ["note://gated"]}]
    }));
    let connected = client.next().await;
    assert_eq!(connected["connected"]["protocolVersion"], "2026-07-28");
    assert_eq!(
        client.next().await,
        json!({"listening": {"toolsListChanged": true, "resourceSubscriptions": ["note://gated"]}})
    );
    tokio::task::spawn_blocking(move || read_started.recv())
        .await
        .expect("joined")
        .expect("the subscription reads the note");
    hub.add_source(Arc::new(TestSource::namespaced("github", "create_issue")));
    release.send(()).expect("the read waits");
    assert_eq!(client.next().await, json!({"event": "ToolsListChanged"}));
    client.finish().await;
}
