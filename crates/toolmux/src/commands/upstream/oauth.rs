//! `toolmux mcp login | logout`, and what `toolmux mcp add` and `list` know about sign-in: the
//! command line's side of `toolmux_oauth`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolmux_upstream::UpstreamSource;
use toolmux_upstream::toolmux_oauth;

use super::{AddArgs, discover_all, unknown};
use crate::assembly::Assembly;
use crate::exit::{Failure, OK, TOOL_FAILED};
use crate::output::emit;

/// Signs in to one server and discovers its tools.
pub(super) async fn login(
    project: Option<&Path>,
    name: &str,
    wait: Duration,
) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    let Some(server) = project.upstreams.get(name) else {
        return Err(unknown(&project, name));
    };
    let target = target(&server)?;
    let pending = match toolmux_oauth::start_login(&target).await {
        Ok(pending) => pending,
        Err(e) => {
            eprintln!("toolmux: {e}");
            return Ok(TOOL_FAILED);
        }
    };
    if let Some(url) = pending.authorization_url() {
        emit(&format!(
            "To sign in to `{name}`, open this URL in a browser:\n\n  {url}\n"
        ))?;
        // Printing the URL is the fallback: a machine with no browser (or no opener) still
        // signs in by opening it elsewhere, as long as the redirect reaches this machine.
        if let Err(e) = toolmux_ui::open_in_browser(url) {
            tracing::debug!(error = %e, "no browser opened");
        }
        eprintln!(
            "toolmux: waiting for the browser to come back (at most {}s)…",
            wait.as_secs()
        );
    }
    if let Err(e) = pending.finish(wait).await {
        eprintln!("toolmux: {e}");
        return Ok(TOOL_FAILED);
    }
    emit(&format!("signed in to `{name}`"))?;
    let code = discover_all(&[server]).await;
    project.upstreams.shutdown().await;
    Ok(code)
}

/// Forgets one server's tokens.
pub(super) async fn logout(project: Option<&Path>, name: &str) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    let Some(server) = project.upstreams.get(name) else {
        return Err(unknown(&project, name));
    };
    let target = target(&server)?;
    match toolmux_oauth::logout(&target.project_dir, name).await {
        Ok(true) => emit(&format!("signed out of `{name}`: its tokens are forgotten"))?,
        Ok(false) => emit(&format!("toolmux was not signed in to `{name}`"))?,
        Err(e) => {
            eprintln!("toolmux: {e}");
            return Ok(TOOL_FAILED);
        }
    }
    Ok(OK)
}

fn target(server: &UpstreamSource) -> Result<toolmux_oauth::Target, Failure> {
    server.sign_in_target().ok_or_else(|| {
        Failure::Usage(format!(
            "MCP server `{}` is a stdio server; only HTTP and SSE servers sign in",
            server.name()
        ))
    })
}

/// The `oauth` object `toolmux mcp add`'s flags describe, if any.
pub(super) fn settings_from(args: &AddArgs) -> Option<Value> {
    let mut oauth = Map::new();
    if let Some(id) = &args.client_id {
        oauth.insert("clientId".into(), json!(id));
    }
    if let Some(secret) = &args.client_secret {
        oauth.insert("clientSecret".into(), json!(secret));
    }
    if let Some(url) = &args.client_metadata_url {
        oauth.insert("clientMetadataUrl".into(), json!(url));
    }
    if !args.scopes.is_empty() {
        oauth.insert("scopes".into(), json!(args.scopes));
    }
    if args.client_credentials {
        oauth.insert("grant".into(), json!("client_credentials"));
    }
    (!oauth.is_empty()).then_some(Value::Object(oauth))
}
