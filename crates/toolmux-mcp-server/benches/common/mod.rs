//! Shared by the benchmarks: the hub they serve, and latency statistics.

#![allow(dead_code)] // each bench binary uses a different part of this module

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolmux_core::{
    Hub, HubSettings, NullSink, Source, SourceCall, SourceError, SourceKind, ToolAnnotations,
    ToolDescriptor, ToolResult,
};
use toolmux_workspace::{WorkspaceLimits, WorkspacePack};

/// The file the benchmarks read with the built-in `file_read`.
pub const READ_FILE: &str = "notes.txt";

/// A source standing in for a large upstream catalog: `count` tools with realistic descriptors
/// (a sentence or two of description, a schema with a few typed properties).
pub struct ManyTools {
    tools: Vec<ToolDescriptor>,
}

impl ManyTools {
    pub fn new(count: usize) -> Self {
        let tools = (0..count)
            .map(|i| {
                let mut d = ToolDescriptor::new(
                    "bulk",
                    format!("bulk__tool_{i:04}"),
                    format!(
                        "Tool number {i} of a large upstream server. Looks up records by id and \
                         returns them with their history; use `limit` to cap the output."
                    ),
                    json!({
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "The record id."},
                            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                            "verbose": {"type": "boolean"}
                        },
                        "required": ["id"]
                    }),
                );
                d.original_name = format!("tool_{i:04}");
                d.title = Some(format!("Tool {i}"));
                if i % 2 == 0 {
                    d.annotations = ToolAnnotations::read_only();
                }
                d
            })
            .collect();
        Self { tools }
    }
}

#[async_trait]
impl Source for ManyTools {
    fn id(&self) -> &str {
        "bulk"
    }
    fn kind(&self) -> SourceKind {
        SourceKind::Mcp
    }
    fn tools(&self) -> Vec<ToolDescriptor> {
        self.tools.clone()
    }
    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        Ok(ToolResult::structured(Value::Object(call.arguments)))
    }
}

/// A hub with the built-in workspace pack on `root` and `extra_tools` synthetic tools.
pub fn hub(root: &Path, extra_tools: usize) -> Hub {
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    let workspace =
        WorkspacePack::new(root, WorkspaceLimits::default()).expect("open the workspace root");
    hub.add_source(Arc::new(workspace));
    if extra_tools > 0 {
        hub.add_source(Arc::new(ManyTools::new(extra_tools)));
    }
    hub
}

/// Writes the small file the benchmarks read: 40 lines of prose.
pub fn write_project(root: &Path) {
    let text: String = (1..=40)
        .map(|i| format!("line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect();
    std::fs::write(root.join(READ_FILE), text).expect("write the benchmark file");
}

/// p50, p99, mean and max of a set of latencies.
pub fn summary(samples: &mut [Duration]) -> String {
    samples.sort_unstable();
    let pick = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    format!(
        "n={} p50={:?} p99={:?} mean={:?} max={:?}",
        samples.len(),
        pick(0.50),
        pick(0.99),
        mean,
        samples[samples.len() - 1]
    )
}

/// The median of a set of latencies.
pub fn p50(samples: &mut [Duration]) -> Duration {
    samples.sort_unstable();
    samples[(samples.len() - 1) / 2]
}

/// Reports a figure against its target.
pub fn verdict(met: bool) -> &'static str {
    if met { "target met" } else { "TARGET MISSED" }
}
