//! Code mode as ordinary tools: `run_code` and `search_tools`, in the source `codemode`; and
//! discovery mode's `describe_tool` and `call_tool`, entry points a channel in discovery mode
//! offers beside `search_tools` in place of a catalog too big to send.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolmux_core::{
    Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor, ToolResult,
    WeakHub, input_schema, parse_arguments,
};

use crate::capabilities::CODEMODE_SOURCE;
use crate::sandbox::{Limits, Sandbox};
use crate::search::search;

/// Code mode's and discovery mode's tools, named where every channel's scope names its entry
/// points.
pub use toolmux_core::{CALL_TOOL, DESCRIBE_TOOL, RUN_CODE, SEARCH_TOOLS};

/// The most tools one `describe_tool` call describes.
const MOST_DESCRIBED: usize = 20;

const RUN_CODE_DESCRIPTION: &str = "Run a TypeScript script that calls tools as typed functions \
and returns only what you ask for, so intermediate results never enter the conversation. Import \
a source's tools with `import { workspace } from '@capabilities/workspace'` (each tool is a method \
named in camelCase, e.g. `workspace.fileRead({ path })`, returning a Promise of its structured \
result); use search_tools to find tools and their exact types. The script is the body of an async \
function: use top-level `await`, and `return` the result (it must be JSON). `Promise.all` runs \
calls concurrently. A failed call throws a `ToolError` with `code` and `tool`. Globals: `console` \
(output is returned as logs), `JSON`, `csv.parse/format`, `hash.sha256/sha512/sha1/md5`, \
`base64.encode/decode/decodeBytes`, `time.now/format/parse`. There is no file, network, process or \
timer access except through tools, and every call is subject to the same policies and approvals as \
a direct call.";

const SEARCH_TOOLS_DESCRIPTION: &str = "Find tools by what they do (for run_code scripts, or to \
call with call_tool). Returns the best matches ranked, each with its name, description, the \
module to import and its TypeScript declaration (input and output types). An empty query lists \
tools.";

const DESCRIBE_TOOL_DESCRIPTION: &str = "Get the full definitions of tools found with \
search_tools: name, description, JSON Schema of the input (and of the output, when declared), \
annotations. Call it before call_tool to learn a tool's exact arguments.";

const CALL_TOOL_DESCRIPTION: &str = "Call a tool found with search_tools by its name, with its \
arguments as described by describe_tool. The call is subject to the same policies and approvals \
as a direct call, and returns the tool's own result.";

/// The `codemode` source. Holds the hub weakly (through its sandbox), so the hub can own it.
#[derive(Clone, Debug)]
pub struct CodeModeSource {
    sandbox: Arc<Sandbox>,
}

/// `run_code`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunCodeArgs {
    /// The TypeScript script.
    code: String,
}

/// `search_tools`' arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchToolsArgs {
    /// Words describing the task, e.g. `search files for text`.
    query: String,
    /// How many tools to return.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 50))]
    limit: u64,
}

fn default_limit() -> u64 {
    8
}

/// `describe_tool`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DescribeToolArgs {
    /// The names of the tools, as search_tools returned them.
    #[schemars(length(min = 1, max = 20))]
    names: Vec<String>,
}

/// `call_tool`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CallToolArgs {
    /// The tool's name, as search_tools returned it.
    name: String,
    /// The tool's arguments.
    #[serde(default)]
    arguments: serde_json::Map<String, Value>,
}

impl CodeModeSource {
    /// A source whose scripts call the tools of `hub` within `limits`. Add it to the same hub:
    /// `hub.add_source(Arc::new(CodeModeSource::new(hub.downgrade(), Limits::default())))`.
    pub fn new(hub: WeakHub, limits: Limits) -> Self {
        Self {
            sandbox: Arc::new(Sandbox::new(hub, limits)),
        }
    }

    /// The sandbox the source runs scripts in.
    pub fn sandbox(&self) -> &Arc<Sandbox> {
        &self.sandbox
    }

    fn descriptors(&self) -> Vec<ToolDescriptor> {
        let mut run = ToolDescriptor::new(
            CODEMODE_SOURCE,
            RUN_CODE,
            RUN_CODE_DESCRIPTION,
            input_schema::<RunCodeArgs>(),
        );
        run.title = Some("Run a TypeScript script".to_string());
        run.output_schema = Some(Arc::new(json!({
            "type": "object",
            "properties": {
                "result": {"description": "What the script returned."},
                "logs": {"type": "array", "items": {"type": "object", "properties": {
                    "level": {"type": "string"}, "message": {"type": "string"}
                }, "required": ["level", "message"]}},
                "calls": {"type": "integer", "description": "Tool calls the script made."}
            },
            "required": ["result", "logs", "calls"]
        })));
        // The script's own calls are each checked against their policies; the wall-clock limit
        // pauses while a person approves one, so the pipeline's limit for the script itself has
        // to leave room for that.
        run.timeout = Some(self.sandbox.limits().wall_time + Duration::from_secs(30 * 60));
        run.annotations = ToolAnnotations {
            open_world_hint: Some(true),
            ..ToolAnnotations::default()
        };

        let mut find = ToolDescriptor::new(
            CODEMODE_SOURCE,
            SEARCH_TOOLS,
            SEARCH_TOOLS_DESCRIPTION,
            input_schema::<SearchToolsArgs>(),
        );
        find.title = Some("Find tools and their TypeScript declarations".to_string());
        find.annotations = ToolAnnotations::read_only();
        find.parallel = true;

        let mut describe = ToolDescriptor::new(
            CODEMODE_SOURCE,
            DESCRIBE_TOOL,
            DESCRIBE_TOOL_DESCRIPTION,
            input_schema::<DescribeToolArgs>(),
        );
        describe.title = Some("Describe tools".to_string());
        describe.annotations = ToolAnnotations::read_only();
        describe.parallel = true;
        describe.entry_point = true;

        let mut call = ToolDescriptor::new(
            CODEMODE_SOURCE,
            CALL_TOOL,
            CALL_TOOL_DESCRIPTION,
            input_schema::<CallToolArgs>(),
        );
        call.title = Some("Call a tool by name".to_string());
        call.entry_point = true;
        // The tool it calls may wait for a person's approval under the pipeline's own limit;
        // `call_tool`'s limit has to leave room for that, as `run_code`'s does.
        call.timeout = run.timeout;
        call.annotations = run.annotations.clone();
        vec![run, find, describe, call]
    }

    /// `describe_tool`: the definitions of the named tools the caller may reach.
    fn describe_tool(&self, call: &SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let DescribeToolArgs { names } = match parse_arguments(&call.arguments) {
            Ok(args) => args,
            Err(e) => return Ok(ToolResult::error(e)),
        };
        if names.len() > MOST_DESCRIBED {
            return Ok(ToolResult::error(format!(
                "describe_tool describes at most {MOST_DESCRIBED} tools at once, not {}",
                names.len()
            )));
        }
        let hub = self
            .sandbox
            .hub()
            .map_err(|e| SourceError::Unavailable(e.to_string()))?;
        let catalog = hub.catalog();
        let described: Vec<Value> = names
            .iter()
            .map(|name| match catalog.resolve(name, call.context) {
                Ok(entry) if entry.descriptor.source != CODEMODE_SOURCE => {
                    let tool = &entry.descriptor;
                    json!({
                        "name": tool.name,
                        "title": tool.title,
                        "description": tool.description,
                        "inputSchema": *tool.input_schema,
                        "outputSchema": tool.output_schema.as_deref(),
                        "annotations": tool.annotations,
                    })
                }
                Ok(_) => json!({"name": name, "error": format!("`{name}` is one of discovery mode's own tools")}),
                Err(refused) => json!({"name": name, "error": refused.to_string()}),
            })
            .collect();
        let structured = json!({ "tools": described });
        let text = serde_json::to_string_pretty(&structured).unwrap_or_default();
        Ok(ToolResult::structured_with_text(structured, text))
    }

    /// `call_tool`: the named tool, called through the hub's whole pipeline with the caller's
    /// context (its scope, approver and session), as a call of its own whose parent is this one.
    async fn call_tool(&self, call: &SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let CallToolArgs { name, arguments } = match parse_arguments(&call.arguments) {
            Ok(args) => args,
            Err(e) => return Ok(ToolResult::error(e)),
        };
        let hub = self
            .sandbox
            .hub()
            .map_err(|e| SourceError::Unavailable(e.to_string()))?;
        // Code mode's and discovery mode's own tools are reached directly, never through here:
        // a call_tool of call_tool would only nest.
        let own = hub
            .catalog()
            .get(&name)
            .is_some_and(|entry| entry.descriptor.source == CODEMODE_SOURCE);
        if own {
            return Ok(ToolResult::error(format!(
                "`{name}` cannot be called through call_tool; call it directly"
            )));
        }
        let context = toolmux_core::CallContext {
            parent: call.context.call,
            ..call.context.clone()
        };
        match hub.call(&name, Value::Object(arguments), &context).await {
            Ok(result) => Ok(result),
            Err(refused) => Ok(ToolResult::error(refused.to_string())),
        }
    }

    async fn run_code(&self, call: &SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let RunCodeArgs { code } = match parse_arguments(&call.arguments) {
            Ok(args) => args,
            Err(e) => return Ok(ToolResult::error(e)),
        };
        let output = self.sandbox.run(&code, call.context).await;
        let logs = serde_json::to_value(&output.logs).unwrap_or(Value::Null);
        match output.result {
            Ok(result) => Ok(ToolResult::structured(json!({
                "result": result,
                "logs": logs,
                "calls": output.calls,
            }))),
            Err(error) => {
                let mut text = error.to_string();
                if !output.logs.is_empty() {
                    text.push_str("\n\nconsole output before the error:");
                    for line in &output.logs {
                        text.push_str(&format!("\n[{}] {}", line.level, line.message));
                    }
                }
                Ok(ToolResult::error(text))
            }
        }
    }

    fn search_tools(&self, call: &SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let SearchToolsArgs { query, limit } = match parse_arguments(&call.arguments) {
            Ok(args) => args,
            Err(e) => return Ok(ToolResult::error(e)),
        };
        let query = query.as_str();
        let limit = limit.clamp(1, 50) as usize;
        // Only what the caller's channel serves: a tool filtered out of it is not advertised here.
        let capabilities = self
            .sandbox
            .capabilities_for(call.context)
            .map_err(|e| SourceError::Unavailable(e.to_string()))?;
        let hits = search(&capabilities, query, limit);
        if hits.is_empty() {
            return Ok(ToolResult::structured_with_text(
                json!({"matches": []}),
                format!(
                    "No tool matches `{query}`. Try other words, or an empty query to list tools."
                ),
            ));
        }
        let text = hits
            .iter()
            .map(|h| h.declaration.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let structured = json!({ "matches": hits });
        Ok(ToolResult::structured_with_text(structured, text))
    }
}

#[async_trait]
impl Source for CodeModeSource {
    fn id(&self) -> &str {
        CODEMODE_SOURCE
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some("Runs a TypeScript script that calls many tools in one step, and searches the tools by what they do.".to_string())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.descriptors()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        match call.tool.original_name.as_str() {
            RUN_CODE => self.run_code(&call).await,
            SEARCH_TOOLS => self.search_tools(&call),
            DESCRIBE_TOOL => self.describe_tool(&call),
            CALL_TOOL => self.call_tool(&call).await,
            other => Err(SourceError::Failed(format!(
                "the codemode source has no tool `{other}`"
            ))),
        }
    }
}
