//! Capability build for 1,000 tools (target: ≤ 1 s). Run: `cargo bench -p toolmux-codemode
//! --bench capabilities`. Prints the median of several runs, compiling in memory and writing to
//! a temporary folder.

use std::time::{Duration, Instant};

use serde_json::json;
use toolmux_codemode::{Capabilities, write_capabilities};
use toolmux_core::ToolDescriptor;

/// 1,000 tools over 20 sources, with schemas shaped like real MCP servers' (nested objects,
/// arrays of objects, enums, unions, `$defs`, descriptions).
fn tools() -> Vec<ToolDescriptor> {
    (0..1000)
        .map(|i| {
            let source = format!("server{}", i % 20);
            let mut d = ToolDescriptor::new(
                &source,
                format!("{source}__list_items_{i}"),
                format!("Lists the items of collection {i}, filtered and paged."),
                json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Free text."},
                        "state": {"enum": ["open", "closed", "all"], "default": "open"},
                        "page": {"type": "object", "properties": {
                            "size": {"type": "integer", "minimum": 1, "maximum": 100},
                            "cursor": {"type": ["string", "null"]}
                        }},
                        "labels": {"type": "array", "items": {"type": "object", "properties": {
                            "name": {"type": "string"}, "color": {"type": "string"}
                        }, "required": ["name"]}},
                        "owner": {"$ref": "#/$defs/user"},
                        "sort": {"anyOf": [{"const": "created"}, {"const": "updated"}, {"type": "null"}]}
                    },
                    "required": ["query"],
                    "$defs": {"user": {"type": "object", "properties": {"login": {"type": "string"}, "id": {"type": "integer"}}}}
                }),
            );
            d.original_name = format!("list_items_{i}");
            d.output_schema = Some(std::sync::Arc::new(json!({
                "type": "object",
                "properties": {
                    "items": {"type": "array", "items": {"type": "object", "properties": {
                        "id": {"type": "string"}, "title": {"type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}}
                    }, "required": ["id"]}},
                    "next": {"type": ["string", "null"]}
                },
                "required": ["items"]
            })));
            d
        })
        .collect()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let tools = tools();
    let out = tempfile::tempdir().expect("temp dir");
    let mut compile = Vec::new();
    let mut build = Vec::new();
    let mut declaration_bytes = 0;
    for _ in 0..15 {
        let started = Instant::now();
        let capabilities = Capabilities::from_tools(&tools);
        compile.push(started.elapsed());
        write_capabilities(&capabilities, out.path()).expect("writes");
        build.push(started.elapsed());
        declaration_bytes = capabilities.modules().map(|m| m.declarations.len()).sum();
    }
    println!(
        "capability build, 1000 tools in 20 sources: compile {:?} (median), compile + write {:?} (median); {} KiB of .d.ts",
        median(compile),
        median(build),
        declaration_bytes / 1024
    );
}
