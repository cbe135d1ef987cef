//! A hub with the shaping step and the results pack, and a source whose one tool answers what a
//! test gives it.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolmux_core::{
    CallContext, Channel, Hub, HubSettings, NullSink, Policy, Source, SourceCall, SourceError,
    SourceKind, ToolDescriptor, ToolResult,
};
use toolmux_shaping::{
    OutputSettings, ResultsPack, Shaper, ShapingRules, SpillSettings, SpillStore,
};

/// A source with one tool, `big`, that answers `result` (an output schema when given).
pub struct Answering {
    pub result: ToolResult,
    pub output_schema: Option<Value>,
}

#[async_trait]
impl Source for Answering {
    fn id(&self) -> &str {
        "answering"
    }
    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }
    fn tools(&self) -> Vec<ToolDescriptor> {
        let mut d = ToolDescriptor::new("answering", "big", "Answers.", json!({"type": "object"}));
        d.output_schema = self.output_schema.clone().map(Arc::new);
        d.policy = Some(Policy::Allow);
        vec![d]
    }
    async fn call(&self, _call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        Ok(self.result.clone())
    }
}

pub struct Rig {
    pub hub: Hub,
    pub shaper: Arc<Shaper>,
    pub store: Arc<SpillStore>,
    pub pack: Arc<ResultsPack>,
    _dir: tempfile::TempDir,
}

/// A hub serving `big` (answering `result`) with `big`'s output settings from `output` (JSON).
pub fn rig(result: ToolResult, output_schema: Option<Value>, output: Option<Value>) -> Rig {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = Arc::new(SpillStore::new(
        dir.path().join("results"),
        SpillSettings::default(),
    ));
    let mut tools = std::collections::HashMap::new();
    if let Some(output) = output {
        let settings: OutputSettings = serde_json::from_value(output).expect("valid settings");
        tools.insert("big".to_string(), settings);
    }
    let shaper = Arc::new(Shaper::new(
        ShapingRules::with_defaults(tools, 32 * 1024),
        Arc::clone(&store),
    ));
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    hub.set_shaper(Arc::clone(&shaper) as _);
    let pack = Arc::new(ResultsPack::new(Arc::clone(&store)));
    hub.add_source(Arc::clone(&pack) as _);
    hub.add_source(Arc::new(Answering {
        result,
        output_schema,
    }));
    Rig {
        hub,
        shaper,
        store,
        pack,
        _dir: dir,
    }
}

impl Rig {
    /// The folder results are kept in.
    pub fn store_dir(&self) -> std::path::PathBuf {
        let dir = self._dir.path().join("results");
        std::fs::create_dir_all(&dir).expect("the results folder");
        dir
    }
}

pub fn context(channel: Channel) -> CallContext {
    CallContext::new(channel)
}

/// A JSON document of about `bytes` bytes: `{"items": [{"id", "title", "body"}, …]}`.
pub fn big_json(bytes: usize) -> Value {
    let mut items = Vec::new();
    let mut size = 0;
    let mut id = 0;
    while size < bytes {
        let item = json!({"id": id, "title": format!("item {id}"), "body": "lorem ipsum dolor sit amet ".repeat(4)});
        size += item.to_string().len() + 1;
        items.push(item);
        id += 1;
    }
    json!({"items": items, "total": id})
}

/// The text of a result's text blocks, joined.
pub fn text_of(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}
