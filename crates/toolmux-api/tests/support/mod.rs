//! The REST API of this crate alone, on a loopback port: shared by its tests and its bench, so
//! that each serves it the same way.

use std::path::Path;
use std::sync::Arc;

use toolmux_api::{ApiOptions, ApiState, CallMetrics, api_router};
use toolmux_core::{ApprovalQueue, Hub, HubSettings, NullSink, Source};

/// The guard's options of a loopback server with `keys` as its API keys (reads need none).
pub fn options(keys: &[&str]) -> ApiOptions {
    ApiOptions {
        api_keys: keys.iter().map(|k| k.to_string()).collect(),
        allowed_hosts: vec!["127.0.0.1".to_string()],
        ..ApiOptions::default()
    }
}

/// Serves the API on a loopback port of `runtime`, over a hub of `sources`, with the execution
/// log under `root` and the guard's `options` ([`options`], perhaps with more); returns the
/// address and the hub.
pub fn serve(
    runtime: &tokio::runtime::Runtime,
    root: &Path,
    sources: Vec<Arc<dyn Source>>,
    options: ApiOptions,
) -> (String, Hub) {
    runtime.block_on(async {
        let metrics = Arc::new(CallMetrics::new(Arc::new(NullSink)));
        let hub = Hub::new(HubSettings::default(), metrics.clone());
        for source in sources {
            hub.add_source(source);
        }
        let state = ApiState::new(
            hub.clone(),
            Arc::new(ApprovalQueue::new()),
            metrics,
            root.join("logs"),
            options,
            None,
            None,
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        tokio::spawn(async move { axum::serve(listener, api_router(state)).await });
        (address, hub)
    })
}
