//! The upstream servers as the REST API shows them (`/api/mcp-servers`, `/api/prompts`,
//! `/api/resources`, `/api/completions`): the API crate knows no MCP client, so the assembly
//! hands it this implementation of [`toolmux_api::UpstreamServers`] over the one relay, which
//! also merges toolmux's own resources (`spec://…`) in, as it does for MCP.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolmux_api::{RelayError, Transport, UpstreamView as ServerView};
use toolmux_core::BuiltinResources;
use toolmux_upstream::{Relay, Relayed, UpstreamSource, Upstreams};

/// The upstream servers as the REST API shows them, with their prompts, resources and
/// completions relayed the way the MCP channel relays them: prompts under their served names
/// (`PREFIX__prompt`), resources under their own URIs, each request to the server that listed
/// the item; toolmux's own resources beside them.
pub struct UpstreamView {
    pub upstreams: Arc<Upstreams>,
    pub hub: toolmux_core::Hub,
    /// toolmux's own resources (the spec pack's).
    pub resources: BuiltinResources,
}

impl UpstreamView {
    fn view(&self, source: &UpstreamSource) -> ServerView {
        let mut discovery = serde_json::to_value(source.record()).unwrap_or_default();
        // The cached tool list is the catalog's business; show registry names instead.
        if let Some(record) = discovery.as_object_mut() {
            record.remove("tools");
            // The trust scanner's findings stay visible, by tool, with what they do.
            let findings = self.upstreams.findings(source.name()).unwrap_or_default();
            let findings = serde_json::to_value(findings).unwrap_or_default();
            record.insert("findings".into(), findings);
            // Tools held until a person accepts them, with what changed.
            let held = serde_json::to_value(source.held()).unwrap_or_default();
            record.insert("held".into(), held);
            // A call refused since the last discovery (a revoked token) counts too.
            if source.unavailable().is_some() {
                // Waiting for a variable or secret its entry names; `discoveryError` says which.
                record.insert("discoveryStatus".into(), json!("unavailable"));
            } else if source.needs_sign_in() {
                record.insert("discoveryStatus".into(), json!("needs-sign-in"));
            }
        }
        let tools: Vec<String> = self
            .hub
            .catalog()
            .all_tools()
            .filter(|e| e.descriptor.source == source.name())
            .map(|e| e.descriptor.name.clone())
            .collect();
        let server = source.server();
        let transport = match server.transport {
            toolmux_config::UpstreamTransport::Stdio { .. } => Transport::Stdio,
            toolmux_config::UpstreamTransport::Http { .. } => Transport::Http,
            toolmux_config::UpstreamTransport::Sse { .. } => Transport::Sse,
        };
        ServerView {
            name: source.name().to_string(),
            prefix: source.prefix().to_string(),
            transport,
            enabled: server.enabled,
            discovery,
            tools,
        }
    }
}

#[async_trait::async_trait]
impl toolmux_api::UpstreamServers for UpstreamView {
    fn list(&self) -> Vec<ServerView> {
        self.upstreams
            .servers()
            .iter()
            .map(|s| self.view(s))
            .collect()
    }

    fn get(&self, name: &str) -> Option<ServerView> {
        self.upstreams.get(name).map(|s| self.view(&s))
    }

    async fn stderr_tail(&self, name: &str) -> Option<Vec<String>> {
        Some(self.upstreams.get(name)?.stderr_tail().await)
    }

    async fn refresh(&self, name: &str) -> Option<Result<ServerView, String>> {
        let source = self.upstreams.get(name)?;
        Some(match source.discover().await {
            Ok(_) => Ok(self.view(&source)),
            Err(e) => Err(e.to_string()),
        })
    }

    async fn trust(&self, name: &str, tools: Vec<String>) -> Option<Result<ServerView, String>> {
        let source = self.upstreams.get(name)?;
        Some(match source.trust(&tools).await {
            Ok(_) => Ok(self.view(&source)),
            Err(e) => Err(e.to_string()),
        })
    }

    fn forget(&self, name: &str) -> Result<(), String> {
        self.upstreams.forget(name).map_err(|e| e.to_string())
    }

    async fn prompts(&self) -> Vec<Value> {
        served(self.relay().prompts().await)
    }

    async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, RelayError> {
        let request = from_json(json!({ "name": name, "arguments": arguments }))?;
        to_json(self.relay().get_prompt(request).await)
    }

    async fn resources(&self) -> Vec<Value> {
        served(self.relay().resources().await)
    }

    fn resource_templates(&self) -> Vec<Value> {
        served(self.relay().resource_templates())
    }

    async fn read_resource(&self, uri: &str) -> Result<Value, RelayError> {
        let request = from_json(json!({ "uri": uri }))?;
        to_json(self.relay().read_resource(request).await)
    }

    async fn complete(&self, request: Value) -> Result<Value, RelayError> {
        let reference = request
            .get("ref")
            .and_then(Value::as_object)
            .ok_or_else(|| RelayError::Invalid("`ref` must be an object".into()))?;
        if !matches!(
            reference.get("type").and_then(Value::as_str),
            Some("ref/prompt" | "ref/resource")
        ) {
            return Err(RelayError::Invalid(
                "`ref.type` must be `ref/prompt` or `ref/resource`".into(),
            ));
        }
        let request = from_json(request)?;
        to_json(self.relay().complete(request).await)
    }

    async fn login(&self, name: &str) -> Option<Result<Option<String>, toolmux_api::SignInError>> {
        let source = self.upstreams.get(name)?;
        Some(sign_in(source).await)
    }

    async fn logout(&self, name: &str) -> Option<Result<(), toolmux_api::SignInError>> {
        let source = self.upstreams.get(name)?;
        let Some(target) = source.sign_in_target() else {
            return Some(Err(stdio_has_no_sign_in(name)));
        };
        Some(
            toolmux_upstream::toolmux_oauth::logout(&target.project_dir, name)
                .await
                .map(|_| ())
                .map_err(|e| toolmux_api::SignInError::Failed(e.to_string())),
        )
    }
}

/// Starts signing in to `source` and lets the flow finish in the background: the browser's
/// redirect, the tokens kept, the tools discovered (which publishes a new catalog).
async fn sign_in(source: UpstreamSource) -> Result<Option<String>, toolmux_api::SignInError> {
    /// How long the loopback listener waits for the person.
    const WAIT: std::time::Duration = std::time::Duration::from_secs(600);
    let target = source
        .sign_in_target()
        .ok_or_else(|| stdio_has_no_sign_in(source.name()))?;
    let pending = toolmux_upstream::toolmux_oauth::start_login(&target)
        .await
        .map_err(|e| toolmux_api::SignInError::Failed(e.to_string()))?;
    let url = pending.authorization_url().map(str::to_string);
    let finish = async move {
        match pending.finish(WAIT).await {
            Ok(()) => {
                if let Err(e) = source.discover().await {
                    tracing::warn!(server = source.name(), error = %e, "discovery after sign-in failed");
                }
            }
            Err(e) => tracing::warn!(server = source.name(), error = %e, "sign-in did not finish"),
        }
    };
    if url.is_some() {
        tokio::spawn(finish);
    } else {
        // Nobody to wait for (client credentials): the tools are there when this answers.
        finish.await;
    }
    Ok(url)
}

fn stdio_has_no_sign_in(name: &str) -> toolmux_api::SignInError {
    toolmux_api::SignInError::NotHttp(format!(
        "MCP server `{name}` is a stdio server; only HTTP and SSE servers sign in"
    ))
}

impl UpstreamView {
    /// The one relay, serving everything under registry names: REST has no serve-time filters.
    fn relay(&self) -> Relay<'_> {
        Relay::new(Some(&self.upstreams), None).with_builtin(&self.resources, self.hub.catalog())
    }
}

/// Items the relay serves, as the REST API shows them: MCP's JSON, with their server (none for
/// toolmux's own).
pub(crate) fn served(relayed: Vec<Relayed<impl serde::Serialize>>) -> Vec<Value> {
    relayed
        .into_iter()
        .map(|Relayed { server, item }| {
            let mut value = serde_json::to_value(item).unwrap_or_else(|_| json!({}));
            if let (Some(fields), Some(server)) = (value.as_object_mut(), server) {
                fields.insert("server".into(), Value::String(server));
            }
            value
        })
        .collect()
}

/// MCP params from the JSON the API received; the API checked its shape, rmcp checks the rest.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, RelayError> {
    serde_json::from_value(value)
        .map_err(|e| RelayError::Invalid(format!("not a valid MCP request: {e}")))
}

/// The relay's answer as the API's JSON; its failure passes through as it is, the one relay
/// error the REST channel maps to a status.
pub(crate) fn to_json(
    answer: Result<impl serde::Serialize, RelayError>,
) -> Result<Value, RelayError> {
    serde_json::to_value(answer?)
        .map_err(|e| RelayError::Failed(format!("cannot render the server's answer: {e}")))
}
