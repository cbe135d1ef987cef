//! Script tools: user-defined tools backed by a command. A call runs the command with the
//! arguments as JSON on stdin; a JSON object on stdout becomes structured content, anything
//! else text; a non-zero exit is an error result with the end of stderr. Each call runs in a
//! cgroup of its own where the system allows it (else a process group, with a mark and the
//! subreaper), and everything in it is killed when the call ends, times out or is cancelled,
//! so no descendant outlives its call ([`child`]). A command gets an allowlist of toolmux's environment plus its
//! configured `env` ([`child`]), unless it is configured to inherit the whole environment.

mod cgroup;
pub mod child;
pub mod environ;
mod run;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use toolmux_config::{ScriptTool, ToolName};
use toolmux_core::{
    RateLimit, Source, SourceCall, SourceError, SourceKind, ToolDescriptor, ToolResult,
};

pub use run::{MAX_STDERR_TAIL, MAX_STDOUT_BYTES};

/// The source id of script tools; defined by the configuration that declares them.
pub const SOURCE_ID: &str = toolmux_config::SCRIPT_SOURCE_ID;

/// The script tools of a configuration.
#[derive(Debug)]
pub struct ScriptSource {
    tools: Vec<Script>,
}

#[derive(Debug)]
struct Script {
    descriptor: ToolDescriptor,
    program: String,
    args: Vec<String>,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    inherit_env: bool,
}

impl ScriptSource {
    /// The tools of `tools`, with relative working directories taken from `root`. Each gets
    /// the allowlisted environment ([`child::spawn`]) plus its own `env`, or the
    /// whole of toolmux's with `inheritEnv`.
    pub fn new<'a>(
        tools: impl IntoIterator<Item = (&'a ToolName, &'a ScriptTool)>,
        root: &Path,
    ) -> Self {
        let tools = tools
            .into_iter()
            .map(|(name, tool)| Script::new(name.as_str(), tool, root))
            .collect();
        Self { tools }
    }
}

impl Script {
    fn new(name: &str, tool: &ScriptTool, root: &Path) -> Self {
        let mut descriptor = ToolDescriptor::new(
            SOURCE_ID,
            name,
            tool.description.clone(),
            tool.input_schema.clone(),
        );
        descriptor.output_schema = tool.output_schema.clone().map(Arc::new);
        descriptor.parallel = tool.parallel;
        descriptor.timeout = tool.timeout_ms.map(|ms| Duration::from_millis(ms.get()));
        descriptor.policy = tool.policy;
        descriptor.internal = tool.internal;
        descriptor.rate_limit = tool.rate_limit.as_ref().map(|r| RateLimit {
            requests: r.requests.get(),
            period: r.period.duration(),
        });
        let cwd = match &tool.cwd {
            Some(dir) => root.join(dir),
            None => root.to_path_buf(),
        };
        let (program, args) = match tool.command.split_first() {
            Some((program, args)) => (program.clone(), args.to_vec()),
            None => (String::new(), Vec::new()),
        };
        Self {
            descriptor,
            program,
            args,
            cwd,
            env: tool
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            inherit_env: tool.inherit_env,
        }
    }
}

#[async_trait]
impl Source for ScriptSource {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Script
    }

    fn description(&self) -> Option<String> {
        Some("The project's own commands, written for this project: prefer them for the project's routine jobs.".to_string())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.tools.iter().map(|t| t.descriptor.clone()).collect()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let script = self
            .tools
            .iter()
            .find(|t| t.descriptor.original_name == call.tool.original_name)
            .ok_or_else(|| {
                SourceError::Failed(format!(
                    "script tool `{}` is no longer configured",
                    call.tool.name
                ))
            })?;
        let input = serde_json::Value::Object(call.arguments).to_string();
        run::run(
            &run::Command {
                program: &script.program,
                args: &script.args,
                cwd: &script.cwd,
                env: &script.env,
                inherit_env: script.inherit_env,
            },
            input.as_bytes(),
        )
        .await
    }
}
