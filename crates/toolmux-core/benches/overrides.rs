//! What overrides cost when a catalog snapshot is built: 1,000 upstream tools over 20 sources
//! (six-property schemas), built plain and with an override on every tool (a new name, an
//! appended description, annotations, a hidden fixed argument, a default and a renamed
//! argument) plus 100 derived tools. A snapshot is built on every discovery and every
//! configuration change, never per call. Run: `cargo bench -p toolmux-core --bench overrides`.

use std::sync::Arc;

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, json};
use toolmux_core::{
    ArgumentOverride, DerivedTool, DescriptionChange, Hub, HubSettings, NullSink, Presentation,
    Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor, ToolOverride,
    ToolResult,
};

const TOOLS: usize = 1000;
const SOURCES: usize = 20;

/// One upstream's cached tool list, as an upstream source lists it (a clone per listing).
struct Upstream {
    id: String,
    tools: Vec<ToolDescriptor>,
}

#[async_trait]
impl Source for Upstream {
    fn id(&self) -> &str {
        &self.id
    }
    fn kind(&self) -> SourceKind {
        SourceKind::Mcp
    }
    fn tools(&self) -> Vec<ToolDescriptor> {
        self.tools.clone()
    }
    async fn call(&self, _call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        Err(SourceError::Failed("the bench never calls".into()))
    }
}

fn name(i: usize) -> String {
    format!("server{}__list_items_{i}", i % SOURCES)
}

fn upstreams() -> Vec<Upstream> {
    (0..SOURCES)
        .map(|s| Upstream {
            id: format!("server{s}"),
            tools: (0..TOOLS)
                .filter(|i| i % SOURCES == s)
                .map(|i| {
                    let mut properties = Map::new();
                    for p in ["repo", "query", "state", "page", "owner", "sort"] {
                        properties.insert(
                            p.to_string(),
                            json!({"type": "string", "description": format!("The {p} of the listing.")}),
                        );
                    }
                    let mut tool = ToolDescriptor::new(
                        format!("server{s}"),
                        name(i),
                        format!("Lists the items of collection {i}, filtered and paged."),
                        json!({"type": "object", "properties": properties, "required": ["repo", "query"]}),
                    );
                    tool.original_name = format!("list_items_{i}");
                    tool
                })
                .collect(),
        })
        .collect()
}

fn overridden() -> HubSettings {
    let mut settings = HubSettings::default();
    for i in 0..TOOLS {
        let presentation = Presentation {
            name: Some(format!("items_{i}")),
            title: None,
            description: Some(DescriptionChange::Append("Only org/x.".into())),
            annotations: Some(ToolAnnotations::read_only()),
            arguments: [
                (
                    "repo".to_string(),
                    ArgumentOverride {
                        value: Some(json!("org/x")),
                        hidden: true,
                        ..ArgumentOverride::default()
                    },
                ),
                (
                    "state".to_string(),
                    ArgumentOverride {
                        default: Some(json!("open")),
                        ..ArgumentOverride::default()
                    },
                ),
                (
                    "query".to_string(),
                    ArgumentOverride {
                        rename: Some("q".into()),
                        ..ArgumentOverride::default()
                    },
                ),
            ]
            .into(),
        };
        let setting = ToolOverride {
            presentation,
            ..ToolOverride::default()
        };
        settings.overrides.insert(name(i), setting);
    }
    settings.derived = (0..TOOLS / 10)
        .map(|i| DerivedTool {
            name: format!("open_items_{i}"),
            from: name(i),
            title: None,
            description: format!("The open items of collection {i}."),
            arguments: [("state".to_string(), json!("open"))].into_iter().collect(),
        })
        .collect();
    settings
}

fn hub(settings: HubSettings) -> Hub {
    let hub = Hub::new(settings, Arc::new(NullSink));
    for upstream in upstreams() {
        hub.add_source(Arc::new(upstream));
    }
    hub
}

fn bench(c: &mut Criterion) {
    let plain = hub(HubSettings::default());
    assert_eq!(plain.catalog().tools().count(), TOOLS);
    let with_overrides = hub(overridden());
    let catalog = with_overrides.catalog();
    assert_eq!(catalog.tools().count(), TOOLS + TOOLS / 10);
    assert!(catalog.stale_overrides().is_empty());
    let mut group = c.benchmark_group("catalog build, 1,000 upstream tools");
    group.bench_function("plain", |b| b.iter(|| plain.refresh()));
    group.bench_function("every tool overridden, 100 derived", |b| {
        b.iter(|| with_overrides.refresh())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
