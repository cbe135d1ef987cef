//! `toolmux mcp serve` (and the bare `toolmux mcp`): the registry as an MCP server on stdin and
//! stdout, for an agent's MCP config.

use std::path::Path;

use crate::assembly::Assembly;
use crate::cli::McpServeArgs;
use crate::exit::{Failure, OK};

pub async fn run(project: Option<&Path>, args: McpServeArgs) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    let filters = args.filters;
    if let Some(name) = &args.endpoint {
        project
            .hub
            .catalog()
            .endpoint(name)
            .map_err(|unknown| Failure::Usage(format!("--endpoint: {unknown}")))?;
    }
    // Sessions its client starts would end with this process: a running `serve` takes them.
    project.hand_sessions_to_serve();
    // Servers never discovered (or configured differently since) are discovered without
    // holding up start-up.
    project.upstreams.discover_stale_in_background();
    let mut options = project.mcp_options(
        &filters.tools,
        &filters.exclude,
        filters.pass_through.as_deref(),
        filters.code_mode,
        filters.discovery,
    )?;
    options.endpoint = args.endpoint;
    let served = toolmux_mcp_server::serve_stdio(project.hub.clone(), options).await;
    // The client is gone; coding sessions it started still run in this process.
    project.finish_sessions().await;
    // Stop the servers (those a background discovery was still starting included) before the
    // runtime goes away under them; `main` then stops whatever escaped their process groups.
    project.upstreams.shutdown().await;
    // Calls are logged by a writer thread; make sure the last ones reach the file before exit.
    project.log.flush();
    served.map_err(|e| Failure::Runtime(e.into()))?;
    Ok(OK)
}
