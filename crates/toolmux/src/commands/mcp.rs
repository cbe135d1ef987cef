//! `toolmux mcp`: the registry as an MCP server on stdin and stdout, for an agent's MCP config.

use std::path::Path;

use toolmux_core::NamePattern;
use toolmux_mcp_server::ServeOptions;

use crate::cli::{McpArgs, ServeFilterArgs};
use crate::exit::{Failure, OK};
use crate::project::Project;

pub async fn run(project: Option<&Path>, args: McpArgs) -> Result<u8, Failure> {
    let project = Project::open(project)?;
    // Servers never discovered (or configured differently since) are discovered without
    // holding up start-up.
    project.upstreams.discover_stale_in_background();
    let options = serve_options(&args.filters, &project)?;
    let served = toolmux_mcp_server::serve_stdio(project.hub.clone(), options).await;
    // The client is gone: stop the servers, those a background discovery was still starting
    // included, before the runtime goes away under them; then whatever escaped their process
    // groups, so that nothing toolmux started outlives it.
    project.upstreams.shutdown().await;
    toolmux_scripts::child::sweep_escaped();
    // Calls are logged by a writer thread; make sure the last ones reach the file before exit.
    project.log.flush();
    served.map_err(|e| Failure::Runtime(e.into()))?;
    Ok(OK)
}

/// What `--code-mode` offers in place of the whole catalog.
const CODE_MODE_TOOLS: [&str; 2] = ["run_code", "search_tools"];

/// The serve-time filters as the server's options, relaying the project's upstream servers; the
/// HTTP fields stay at their defaults.
pub(crate) fn serve_options(
    args: &ServeFilterArgs,
    project: &Project,
) -> Result<ServeOptions, Failure> {
    let hub = &project.hub;
    let patterns = |list: &[String]| -> Result<Vec<NamePattern>, Failure> {
        list.iter()
            .map(|p| NamePattern::new(p).map_err(|e| Failure::Usage(e.to_string())))
            .collect()
    };
    if let Some(source) = &args.pass_through {
        let catalog = hub.catalog();
        if !catalog.sources().iter().any(|s| &s.id == source) {
            let known: Vec<&str> = catalog.sources().iter().map(|s| s.id.as_str()).collect();
            return Err(Failure::Usage(format!(
                "--pass-through: there is no source `{source}`; the sources are: {}",
                known.join(", ")
            )));
        }
    }
    Ok(ServeOptions {
        include: patterns(&args.tools)?,
        exclude: patterns(&args.exclude)?,
        pass_through: args.pass_through.clone(),
        // The model gets the two code-mode tools and writes scripts for everything else that
        // the filters let through.
        entry_points: if args.code_mode {
            CODE_MODE_TOOLS.map(String::from).to_vec()
        } else {
            Vec::new()
        },
        upstreams: Some(project.upstreams.clone()),
        ..ServeOptions::default()
    })
}
