//! A real in-process source for code-mode tests: a handful of tools with realistic schemas,
//! registered in a real hub, so every call goes through the whole pipeline.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolmux_core::{
    ExecutionRecord, ExecutionSink, Hub, HubSettings, NamePattern, Policy, PolicyRules, Source,
    SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor, ToolResult,
};

/// The `notes` source: `add` (structured output), `echo` (text), `slow` (sleeps),
/// `delete_note` (destructive, so `ask`), `wipe` (denied by configuration), `fail` (tool error).
pub struct Notes;

fn tool(name: &str, description: &str, input: Value, output: Option<Value>) -> ToolDescriptor {
    let mut d = ToolDescriptor::new("notes", name, description, input);
    d.output_schema = output.map(Arc::new);
    d.annotations = ToolAnnotations::read_only();
    d
}

#[async_trait]
impl Source for Notes {
    fn id(&self) -> &str {
        "notes"
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        let mut delete = tool(
            "delete_note",
            "Deletes a note.",
            json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
            None,
        );
        delete.annotations = ToolAnnotations {
            destructive_hint: Some(true),
            ..ToolAnnotations::default()
        };
        vec![
            tool(
                "add",
                "Adds two numbers.",
                json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
                Some(
                    json!({"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}),
                ),
            ),
            tool(
                "echo",
                "Returns its text.",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
                None,
            ),
            tool(
                "slow",
                "Sleeps, then answers.",
                json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
                None,
            ),
            tool(
                "fail",
                "Always reports an error.",
                json!({"type": "object"}),
                None,
            ),
            tool("wipe", "Wipes everything.", json!({"type": "object"}), None),
            delete,
        ]
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let args = &call.arguments;
        match call.tool.original_name.as_str() {
            "add" => {
                let a = args.get("a").and_then(Value::as_f64).unwrap_or_default();
                let b = args.get("b").and_then(Value::as_f64).unwrap_or_default();
                Ok(ToolResult::structured(json!({"sum": a + b})))
            }
            "echo" => Ok(ToolResult::text(
                args.get("text").and_then(Value::as_str).unwrap_or_default(),
            )),
            "slow" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or_default();
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(ToolResult::text("done"))
            }
            "fail" => Ok(ToolResult::error("the disk is on fire")),
            "delete_note" => Ok(ToolResult::text("deleted")),
            other => Err(SourceError::Failed(format!("no tool {other}"))),
        }
    }
}

/// Keeps every execution record.
#[derive(Default)]
pub struct Records(pub Mutex<Vec<ExecutionRecord>>);

impl ExecutionSink for Records {
    fn record(&self, record: ExecutionRecord) {
        self.0.lock().expect("records lock").push(record);
    }
}

/// A hub with the `notes` source; `wipe` is denied by configuration.
pub fn hub_with_notes() -> (Hub, Arc<Records>) {
    let records = Arc::new(Records::default());
    let settings = HubSettings {
        policies: PolicyRules {
            tools: vec![(NamePattern::new("wipe").expect("pattern"), Policy::Deny)],
            ..PolicyRules::default()
        },
        ..HubSettings::default()
    };
    let hub = Hub::new(settings, records.clone());
    hub.add_source(Arc::new(Notes));
    (hub, records)
}
