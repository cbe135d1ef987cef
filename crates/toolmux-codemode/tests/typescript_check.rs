//! The generated declarations pass `tsc --strict --noEmit`, and a script written against them
//! type-checks and runs in the sandbox. Uses the real TypeScript compiler from the test peers
//! (`tests/peers/codemode`, installed by `./scripts/test`, found through `TOOLMUX_PEERS`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolmux_codemode::{Limits, Sandbox, build_capabilities};
use toolmux_core::{
    CallContext, Channel, Hub, Source, SourceCall, SourceError, SourceKind, ToolDescriptor,
    ToolResult,
};
use toolmux_testkit::peers::node_peer;
use toolmux_workspace::WorkspacePack;

/// The TypeScript compiler of the test peers; a clear failure when it is not installed.
fn tsc() -> PathBuf {
    node_peer("codemode", "tsc")
}

/// A source whose schemas use every construct the compiler handles, with awkward names.
struct Zoo;

fn zoo_tool(name: &str, input: Value, output: Option<Value>) -> ToolDescriptor {
    let mut d = ToolDescriptor::new("zoo-server", format!("zoo__{name}"), "", input);
    d.original_name = name.to_string();
    d.output_schema = output.map(Arc::new);
    d
}

#[async_trait]
impl Source for Zoo {
    fn id(&self) -> &str {
        "zoo-server"
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Mcp
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        vec![
            zoo_tool(
                "get_issue",
                json!({"type": "object", "description": "Which issue. */ not the end", "properties": {
                    "repo": {"type": "string"}, "number": {"type": "integer"},
                    "labels": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "color": {"type": ["string", "null"]}}, "required": ["name"]}},
                    "state": {"enum": ["open", "closed", null]},
                    "kind": {"const": "issue"},
                    "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "minItems": 2, "items": false},
                    "head": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
                    "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                    "target": {"oneOf": [
                        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                        {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
                    ]},
                    "both": {"allOf": [
                        {"type": "object", "properties": {"a": {"type": "string"}}},
                        {"type": "object", "properties": {"b": {"type": "number"}}}
                    ]},
                    "assignee": {"type": "string", "nullable": true},
                    "tree": {"$ref": "#/$defs/node"},
                    "owner": {"$ref": "#/definitions/user"},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                    "mixed": {"type": "object", "properties": {"n": {"type": "number"}, "o": {"type": "boolean"}}, "required": ["n"], "additionalProperties": {"type": "string"}},
                    "content-type": {"type": "string"},
                    "default": {"type": "boolean"},
                    "anything": {},
                    "never": false
                }, "required": ["repo", "number"],
                "$defs": {"node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
                "definitions": {"user": {"type": "object", "properties": {"login": {"type": "string"}}, "required": ["login"]}}}),
                Some(
                    json!({"type": "object", "properties": {"title": {"type": "string"}, "labels": {"type": "array", "items": {"type": "string"}}}, "required": ["title"]}),
                ),
            ),
            zoo_tool("delete", json!({"type": "object"}), None),
            zoo_tool(
                "2fa-check",
                json!({"type": "object", "properties": {"code": {"type": "string"}}}),
                Some(json!({"type": "boolean"})),
            ),
            zoo_tool("get-item", json!({}), None),
            zoo_tool("get_item", json!(true), None),
            zoo_tool(
                "class",
                json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}),
                None,
            ),
        ]
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        match call.tool.original_name.as_str() {
            "get_issue" => Ok(ToolResult::structured(
                json!({"title": format!("issue {}", call.arguments.get("number").unwrap_or(&Value::Null)), "labels": ["bug"]}),
            )),
            other => Err(SourceError::Failed(format!("{other} is not implemented"))),
        }
    }
}

const SCRIPT: &str = r#"import { workspace } from "@capabilities/workspace";
import { zooServer } from "@capabilities/zoo-server";
import { notes } from "@capabilities/notes";

interface Summary { file: string; lines: number; todos: number }

const found = await workspace.fileSearch({ pattern: "**/*.txt" });
const summaries: Summary[] = [];
for (const file of found.files) {
  const read = await workspace.fileRead({ path: file });
  const hits = await workspace.grep({ pattern: "TODO", path: file, literal: true });
  summaries.push({ file: read.path, lines: read.totalLines, todos: hits.matches.length });
}
const listing = await workspace.directoryList({ path: "sub" });
const kinds = listing.entries.map((e) => e.kind);
const issue = await zooServer.getIssue({ repo: "o/r", number: 7, state: "open", point: [1, 2], target: { path: "x" } });
const sum = await notes.add({ a: 1, b: 2 });
const digest: string = hash.sha256(summaries.map((s) => s.file).join(","));
console.log(`${summaries.length} files`, digest.length);
export default { summaries, kinds, title: issue.title, labels: issue.labels ?? [], sum: sum };
"#;

fn hub(root: &Path) -> Hub {
    let (hub, _) = common::hub_with_notes();
    hub.add_source(Arc::new(
        WorkspacePack::new(root, Default::default()).expect("workspace pack"),
    ));
    hub.add_source(Arc::new(Zoo));
    hub
}

#[tokio::test]
async fn generated_declarations_and_a_script_using_them_pass_tsc_strict() {
    let tsc = tsc();
    let project = tempfile::tempdir().expect("temp dir");
    std::fs::write(project.path().join("a.txt"), "one\nTODO two\nthree\n").expect("write");
    std::fs::create_dir(project.path().join("sub")).expect("mkdir");
    std::fs::write(project.path().join("sub/b.txt"), "TODO\nTODO\n").expect("write");
    let hub = hub(project.path());

    let out_dir = project.path().join(".toolmux/capabilities");
    let report = build_capabilities(&hub.catalog(), &out_dir).expect("builds");
    let sources: Vec<&str> = report.sources.iter().map(|s| s.source.as_str()).collect();
    assert_eq!(sources, vec!["notes", "workspace", "zoo-server"]);
    for folder in ["notes", "workspace", "zoo-server"] {
        for file in ["index.d.ts", "index.js", "schema.json"] {
            assert!(out_dir.join(folder).join(file).is_file(), "{folder}/{file}");
        }
    }

    let check = project.path().join("check");
    std::fs::create_dir(&check).expect("mkdir");
    std::fs::write(check.join("script.ts"), SCRIPT).expect("write");
    std::fs::write(
        check.join("tsconfig.json"),
        serde_json::to_string_pretty(&json!({
            "compilerOptions": {
                "strict": true, "noEmit": true, "target": "es2022", "module": "es2022",
                "moduleResolution": "bundler", "lib": ["es2022"], "types": [],
                "noUncheckedIndexedAccess": true, "exactOptionalPropertyTypes": false
            },
            "include": ["../.toolmux/capabilities/**/*.d.ts", "script.ts"]
        }))
        .expect("json"),
    )
    .expect("write");
    let output = Command::new(&tsc)
        .arg("-p")
        .arg(&check)
        .output()
        .expect("tsc runs");
    assert!(
        output.status.success(),
        "tsc --strict --noEmit failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    let sandbox = Sandbox::new(hub.downgrade(), Limits::default());
    let run = sandbox.run(SCRIPT, &CallContext::new(Channel::Cli)).await;
    assert_eq!(
        run.result.expect("the script runs"),
        json!({
            "summaries": [
                {"file": "a.txt", "lines": 3, "todos": 1},
                {"file": "sub/b.txt", "lines": 2, "todos": 2}
            ],
            "kinds": ["file"],
            "title": "issue 7",
            "labels": ["bug"],
            "sum": {"sum": 3}
        })
    );
    assert_eq!(run.logs.len(), 1);
    assert!(run.logs[0].message.starts_with("2 files 64"));
}

#[tokio::test]
async fn a_script_with_a_type_error_fails_tsc() {
    let tsc = tsc();
    let project = tempfile::tempdir().expect("temp dir");
    let hub = hub(project.path());
    let out_dir = project.path().join("caps");
    build_capabilities(&hub.catalog(), &out_dir).expect("builds");
    std::fs::write(
        project.path().join("bad.ts"),
        "import { workspace } from \"@capabilities/workspace\";\nconst r = await workspace.fileRead({ path: 1 });\nexport default r.nope;\n",
    )
    .expect("write");
    let output = Command::new(&tsc)
        .args([
            "--strict", "--noEmit", "--target", "es2022", "--module", "es2022", "--lib", "es2022",
        ])
        .arg(project.path().join("bad.ts"))
        .arg(out_dir.join("workspace/index.d.ts"))
        .arg(out_dir.join("globals.d.ts"))
        .output()
        .expect("tsc runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success());
    assert!(text.contains("bad.ts(2,38): error TS2322"), "{text}");
    assert!(
        text.contains("Property 'nope' does not exist on type 'FileReadOutput'"),
        "{text}"
    );
}
