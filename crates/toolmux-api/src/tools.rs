//! `/api/tools`: the catalog (read from the hub's snapshot, never starting anything) and calls
//! through the pipeline.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolmux_core::{
    CallContext, CallError, Catalog, Channel, Content, NamePattern, Policy, ToolEntry, ToolResult,
};
use toolmux_http::{ApiJson, ApiPath, ApiQuery, Caller, OpenApiRouter, routes};
use utoipa::{IntoParams, ToSchema};

use crate::ApiState;
use crate::config_shapes::ScriptToolDefinition;
use crate::error::{ApiError, CallFailures, ErrorBody};
use crate::registry::{Edit, Section};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list, register))
        .routes(routes!(show, replace, remove, patch))
        .routes(routes!(call))
}

/// Filters of a listing. Every one that is set must match.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct ToolFilter {
    /// Only tools of this source (`workspace`, an upstream server's name).
    pub source: Option<String>,
    /// Only tools whose name matches this pattern (`github__*`, `file_?ead`).
    pub pattern: Option<String>,
    /// Only tools with this effective policy.
    pub policy: Option<PolicyName>,
    /// Include internal tools; needs the owner's credential (or an admin scope).
    #[serde(default)]
    pub include_internal: bool,
    /// Also list the tools switched off by configuration (by name or by source), with
    /// `"enabled": false`, after the others: what a person may switch on again.
    #[serde(default)]
    pub disabled: bool,
    /// Only the tools the named endpoint (`endpoints.<name>` in the configuration) lists
    /// over MCP: with `codeMode`, its `run_code` and `search_tools`.
    pub endpoint: Option<String>,
}

/// Which endpoint a call goes through.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct CallThrough {
    /// Call through the named endpoint (`endpoints.<name>` in the configuration): a tool
    /// outside it is refused (`403`, `not_served`), as over its MCP door.
    pub endpoint: Option<String>,
}

/// What the request's caller may do, when a configured principal's rights narrow it: a
/// credential that is not the owner's, once principals or roles are configured (one matched by
/// no principal gets nothing). The owner's credentials are not narrowed.
pub(crate) fn caller_rights(
    caller: Caller,
    catalog: &Catalog,
) -> Option<Arc<toolmux_core::Rights>> {
    if caller.owner || !caller.authenticated {
        return None;
    }
    let principal = toolmux_http::Principal::current().and_then(|p| p.name);
    catalog.principals().rights_of(principal.as_deref())
}

/// The REST API's own scope without `?endpoint=`: the whole catalog.
fn whole_api() -> toolmux_core::ToolScope {
    toolmux_core::ToolScope {
        served_by: "the REST API".to_string(),
        ..toolmux_core::ToolScope::default()
    }
}

/// The scope of a REST call or listing through `endpoint` (`None`: the whole catalog) for a
/// caller with `rights`; `None` when nothing narrows it. 404 for an unknown endpoint.
fn caller_scope(
    catalog: &Catalog,
    endpoint: Option<&str>,
    rights: Option<Arc<toolmux_core::Rights>>,
) -> Result<Option<Arc<toolmux_core::ToolScope>>, ApiError> {
    let scope = endpoint.map(|name| scope_in(catalog, name)).transpose()?;
    let Some(rights) = rights else {
        return Ok(scope);
    };
    let base = scope.unwrap_or_else(|| Arc::new(whole_api()));
    Ok(Some(Arc::new(
        base.for_caller(rights, endpoint.unwrap_or_default()),
    )))
}

/// The scope of the endpoint `name` in `catalog`; 404 `unknown_endpoint` naming the
/// configured ones when there is none.
fn scope_in(catalog: &Catalog, name: &str) -> Result<Arc<toolmux_core::ToolScope>, ApiError> {
    match catalog.endpoint(name) {
        Ok(endpoint) => Ok(Arc::clone(&endpoint.scope)),
        Err(unknown) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_endpoint",
            unknown,
        )),
    }
}

/// A policy: `allow` runs a call, `ask` asks a person first, `deny` never runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PolicyName {
    /// Run without asking.
    Allow,
    /// Ask a person first.
    Ask,
    /// Never run.
    Deny,
}

impl From<PolicyName> for Policy {
    fn from(name: PolicyName) -> Self {
        match name {
            PolicyName::Allow => Policy::Allow,
            PolicyName::Ask => Policy::Ask,
            PolicyName::Deny => Policy::Deny,
        }
    }
}

/// The catalog at one version.
#[derive(Serialize, ToSchema)]
pub struct ToolList {
    /// The catalog version the listing was read from; it grows with every change.
    pub version: u64,
    /// The tools, in catalog order.
    #[schema(value_type = Vec<ToolView>)]
    pub tools: Vec<Arc<ToolEntry>>,
}

/// One tool as listings show it ([`toolmux_core::ToolView`], which the handlers serialise):
/// its descriptor plus its effective policy and limits.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // documents the serialization of `ToolEntry` for the OpenAPI document
pub struct ToolView {
    /// The registry name, the one to call it by.
    name: String,
    /// The source's own name for it.
    original_name: String,
    /// Its source.
    source: String,
    /// A display title.
    title: Option<String>,
    /// What it does.
    description: String,
    /// JSON Schema of its arguments.
    #[schema(value_type = Object)]
    input_schema: Value,
    /// JSON Schema of its structured result, when it declares one.
    #[schema(value_type = Option<Object>)]
    output_schema: Option<Value>,
    /// MCP tool annotations (`readOnlyHint`, `destructiveHint`, ...).
    #[schema(value_type = Option<Object>)]
    annotations: Option<Value>,
    /// Internal tools serve the host and are never shown to a model.
    internal: bool,
    /// It may run concurrently with other parallel tools.
    parallel: bool,
    /// The source's own time limit, in milliseconds.
    timeout_ms: Option<u64>,
    /// The effective policy.
    policy: PolicyName,
    /// Which rule decided the policy.
    policy_origin: String,
    /// The effective time limit, in milliseconds.
    effective_timeout_ms: u64,
    /// The effective rate limit.
    #[schema(value_type = Option<Object>)]
    rate_limit: Option<Value>,
    /// `false` for a tool switched off by configuration (listed only with `disabled=true`).
    enabled: bool,
    /// The family of its source.
    source_kind: SourceKindName,
    /// Where its source's tool list stands: always `success` for built-in and script tools.
    discovery_status: DiscoveryStatusName,
    /// When its source last tried to discover tools (an upstream server's), successfully or not.
    last_discovered: Option<String>,
}

/// The family of a tool's source.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)] // documents the serialization of `SourceKind` for the OpenAPI document
pub enum SourceKindName {
    /// A pack compiled into toolmux.
    Builtin,
    /// A script tool of the configuration (or of a seed registry).
    Script,
    /// An upstream MCP server.
    Mcp,
}

/// Where a source's tool list stands.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)] // documents the serialization of `SourceState` for the OpenAPI document
pub enum DiscoveryStatusName {
    /// Never discovered.
    Never,
    /// Discovery is running.
    Discovering,
    /// The tool list is known.
    Success,
    /// The last discovery failed; the tools shown are from an earlier success, if any.
    Failed,
}

/// The outcome of a call: the same result the MCP channel returns for it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallResponse {
    /// `success`, or `error` when the tool reported an error (the content says what).
    pub status: CallStatus,
    /// The content blocks (text, image, audio, resource link, embedded resource), in MCP's shape.
    #[schema(value_type = Vec<Object>)]
    pub content: Vec<Content>,
    /// The structured result, when the tool returned one.
    #[schema(value_type = Option<Object>)]
    pub structured_content: Option<Value>,
    /// The error text, when `status` is `error`.
    pub error: Option<String>,
    /// The call's id in the execution log.
    pub call_id: uuid::Uuid,
    /// Wall time of the pipeline, in milliseconds.
    pub duration_ms: f64,
}

/// Whether the tool succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CallStatus {
    /// The tool returned a result.
    Success,
    /// The tool returned an error result.
    Error,
}

impl CallResponse {
    pub(crate) fn new(
        result: ToolResult,
        call_id: uuid::Uuid,
        duration: std::time::Duration,
    ) -> Self {
        let (status, error) = if result.is_error {
            (CallStatus::Error, Some(result.text_content()))
        } else {
            (CallStatus::Success, None)
        };
        Self {
            status,
            content: result.content,
            structured_content: result.structured_content,
            error,
            call_id,
            duration_ms: duration.as_secs_f64() * 1000.0,
        }
    }
}

/// Lists the catalog.
#[utoipa::path(
    get, path = "/api/tools", tag = "tools",
    params(ToolFilter),
    responses(
        (status = 200, description = "The catalog", body = ToolList),
        (status = 400, description = "A bad filter", body = ErrorBody),
        (status = 404, description = "`endpoint` names no configured endpoint (`unknown_endpoint`)", body = ErrorBody),
        (status = 401, description = "`includeInternal` without a valid key", body = ErrorBody),
        (status = 403, description = "`includeInternal` with an access token without an admin scope", body = ErrorBody),
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(filter): ApiQuery<ToolFilter>,
) -> Result<Response, ApiError> {
    if filter.include_internal && !caller.authenticated {
        return Err(ApiError::unauthorized(
            "`includeInternal=true` needs a valid API key",
        ));
    }
    if filter.include_internal && !caller.owner {
        return Err(ApiError::forbidden(
            "`includeInternal=true` needs the owner's credential or an access token with one of \
             `server.adminScopes`",
        ));
    }
    let pattern = filter
        .pattern
        .as_deref()
        .map(NamePattern::new)
        .transpose()
        .map_err(|e| ApiError::malformed(format!("bad `pattern`: {e}")))?;
    let rendered = state.rendered_catalog();
    let rights = caller_rights(caller, &rendered.catalog);
    let served = rendered.served_by(filter.endpoint.as_deref(), rights)?;
    let mut body = Vec::with_capacity(rendered.bytes + 64);
    body.extend_from_slice(format!("{{\"version\":{},\"tools\":[", rendered.version).as_bytes());
    let mut first = true;
    let switched_off: &[(Arc<ToolEntry>, Vec<u8>)] = if filter.disabled {
        &rendered.switched_off[..]
    } else {
        &[]
    };
    for (index, (entry, json)) in rendered.tools.iter().chain(switched_off).enumerate() {
        let wanted = (filter.include_internal || !entry.descriptor.internal)
            && filter
                .source
                .as_ref()
                .is_none_or(|s| *s == entry.descriptor.source)
            && filter
                .policy
                .is_none_or(|p| Policy::from(p) == entry.policy)
            && pattern
                .as_ref()
                .is_none_or(|p| p.matches(&entry.descriptor.name))
            && served
                .as_ref()
                .is_none_or(|served| served.get(index).copied().unwrap_or(false));
        if wanted {
            if !first {
                body.push(b',');
            }
            first = false;
            body.extend_from_slice(json);
        }
    }
    body.extend_from_slice(b"]}");
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// The catalog's tools, each serialized once per catalog version: listing 1,000 tools is then
/// a filter and a copy, not 1,000 serializations.
pub(crate) struct RenderedCatalog {
    /// The catalog they were rendered from (its endpoints are read from it, never from a newer
    /// one).
    catalog: Arc<Catalog>,
    version: u64,
    tools: Vec<(Arc<ToolEntry>, Vec<u8>)>,
    /// The tools switched off, rendered with `"enabled": false`.
    switched_off: Vec<(Arc<ToolEntry>, Vec<u8>)>,
    bytes: usize,
    /// Which of `tools`, then `switched_off`, each endpoint serves, worked out the first time
    /// it is asked for in this version: a listing through an endpoint is then a lookup per
    /// tool, as a plain one is (its scope's patterns matched per tool per request made it 58%
    /// slower at 1,000 tools). At most one entry per configured endpoint.
    served: std::sync::Mutex<HashMap<String, Arc<[bool]>>>,
}

/// The most endpoint and caller combinations [`RenderedCatalog::served_by`] keeps per catalog
/// version before it starts again: one per endpoint and principal would be unbounded in
/// their product.
const MAX_SERVED_VIEWS: usize = 4096;

impl RenderedCatalog {
    /// Which tools the endpoint `name` (`None`: no endpoint) serves to a caller with
    /// `rights`, in listing order; `None` when nothing narrows the listing, 404 when there is
    /// no such endpoint.
    fn served_by(
        &self,
        name: Option<&str>,
        rights: Option<Arc<toolmux_core::Rights>>,
    ) -> Result<Option<Arc<[bool]>>, ApiError> {
        // Neither an endpoint's nor a principal's name holds a `/`.
        let key = match &rights {
            Some(rights) => format!("{}/{}", name.unwrap_or_default(), rights.principal),
            None => name.unwrap_or_default().to_string(),
        };
        let mut served = self
            .served
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(known) = served.get(&key) {
            return Ok(Some(Arc::clone(known)));
        }
        let Some(scope) = caller_scope(&self.catalog, name, rights)? else {
            return Ok(None);
        };
        let admitted: Arc<[bool]> = self
            .tools
            .iter()
            .chain(&self.switched_off)
            .map(|(entry, _)| scope.served_name(&entry.descriptor).is_some())
            .collect();
        if served.len() >= MAX_SERVED_VIEWS {
            served.clear();
        }
        served.insert(key, Arc::clone(&admitted));
        Ok(Some(admitted))
    }
}

impl ApiState {
    fn rendered_catalog(&self) -> Arc<RenderedCatalog> {
        let catalog = self.inner.hub.catalog();
        let mut cached = self
            .inner
            .rendered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(rendered) = cached.as_ref()
            && rendered.version == catalog.version()
        {
            return Arc::clone(rendered);
        }
        let render = |entries: Vec<&Arc<ToolEntry>>,
                      enabled: bool|
         -> Vec<(Arc<ToolEntry>, Vec<u8>)> {
            entries
                .into_iter()
                .filter_map(|e| match serde_json::to_vec(&catalog.tool_view(e, enabled)) {
                    Ok(json) => Some((Arc::clone(e), json)),
                    Err(error) => {
                        tracing::warn!(tool = %e.descriptor.name, %error, "tool left out of the listing: it cannot be serialized");
                        None
                    }
                })
                .collect()
        };
        let tools = render(catalog.all_tools().collect(), true);
        let switched_off = render(catalog.switched_off().iter().collect(), false);
        let rendered = Arc::new(RenderedCatalog {
            served: std::sync::Mutex::new(HashMap::new()),
            version: catalog.version(),
            bytes: tools
                .iter()
                .chain(&switched_off)
                .map(|(_, j)| j.len() + 1)
                .sum(),
            tools,
            switched_off,
            catalog,
        });
        *cached = Some(Arc::clone(&rendered));
        rendered
    }
}

/// One tool.
#[utoipa::path(
    get, path = "/api/tools/{name}", tag = "tools",
    params(("name" = String, Path, description = "The registry name")),
    responses(
        (status = 200, description = "The tool", body = ToolView),
        (status = 404, description = "No such tool (`details.suggestion` may name a close one), \
            or one switched off by configuration, or internal and the request has no valid key", body = ErrorBody),
    )
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<toolmux_core::ToolView>, ApiError> {
    let catalog = state.inner.hub.catalog();
    match catalog.resolve(&name, &state.context(caller)) {
        Ok(entry) => Ok(Json(catalog.tool_view(entry, true))),
        Err(refused) => Err(lookup_refusal(refused)),
    }
}

/// Why a tool cannot be shown, in the core's words ([`Catalog::resolve`] decides it for every
/// channel), with the status of a lookup: 404 whatever the reason, where a call to the same
/// tool answers 403 for a disabled one. A lookup reports what exists for this caller; a
/// refusal of something attempted is a call's answer. The code and details stay the core's, so
/// a client can still tell `disabled` from `not_found`.
///
/// [`Catalog::resolve`]: toolmux_core::Catalog::resolve
fn lookup_refusal(refused: CallError) -> ApiError {
    let mapped = ApiError::from(refused.clone());
    let mut lookup = ApiError::new(StatusCode::NOT_FOUND, refused.code(), refused.to_string());
    if let Some(details) = mapped.details() {
        lookup = lookup.with_details(details.clone());
    }
    lookup
}

/// Calls a tool through the pipeline; the body is the arguments object. A call with policy
/// `ask` waits in `GET /api/approvals` until it is answered or the approval times out.
#[utoipa::path(
    post, path = "/api/tools/{name}/call", tag = "tools",
    params(("name" = String, Path, description = "The registry name"), CallThrough),
    request_body(content = Object, description = "The arguments (an empty body is `{}`)"),
    responses(
        (status = 200, description = "The tool ran (its result may be an error result)", body = CallResponse),
        CallFailures,
    )
)]
pub(crate) async fn call(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(name): ApiPath<String>,
    ApiQuery(through): ApiQuery<CallThrough>,
    // Any JSON, not only an object: whether arguments that are not an object are acceptable is
    // the pipeline's rule, so that REST answers them as every other channel does (422 with the
    // violation), not with a 400 of its own.
    ApiJson(arguments): ApiJson<Value>,
) -> Result<Json<CallResponse>, ApiError> {
    // The context is narrowed by the caller's rights already; through an endpoint, by both.
    let mut context = state.context(caller);
    if let Some(endpoint) = through.endpoint.as_deref() {
        let catalog = state.inner.hub.catalog();
        let rights = caller_rights(caller, &catalog);
        if let Some(scope) = caller_scope(&catalog, Some(endpoint), rights)? {
            context = context.with_scope(scope);
        }
    }
    let report = state
        .inner
        .hub
        .call_reported(&name, arguments, &context)
        .await;
    let result = report.result?;
    Ok(Json(CallResponse::new(result, report.id, report.duration)))
}

impl ApiState {
    /// The context of a call made through the API: the REST channel, the approval queue as
    /// approver, trusted (internal tools) only when the credential is the owner's — an access
    /// token without an admin scope is authenticated, not trusted (D27).
    pub(crate) fn context(&self, caller: Caller) -> CallContext {
        let mut context =
            CallContext::new(Channel::Rest).with_approver(self.inner.approvals.clone());
        if caller.owner {
            context = context.trusted();
        }
        // A request authenticated by an access token or a principal's key is its call.
        context.caller = toolmux_http::Principal::current().map(|p| p.caller());
        // Every call made through the API is narrowed by its caller's rights, as a listing is.
        if let Some(rights) = caller_rights(caller, &self.inner.hub.catalog()) {
            context = context.with_scope(Arc::new(whole_api().for_caller(rights, "")));
        }
        context
    }
}

/// The tool as the catalog shows it after a change: as listed, or, when the change left it out
/// of the catalog, its name and why.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Current {
    Listed(toolmux_core::ToolView),
    Hidden {
        name: String,
        hidden: Option<String>,
    },
}

fn current(state: &ApiState, name: &str) -> Current {
    let catalog = state.inner.hub.catalog();
    match catalog.get(name) {
        Some(entry) => Current::Listed(catalog.tool_view(entry, true)),
        None => Current::Hidden {
            name: name.to_string(),
            hidden: catalog.hidden_reason(name).map(ToString::to_string),
        },
    }
}

/// Registers a script tool: written to the configuration and live at once.
#[utoipa::path(
    post, path = "/api/tools", tag = "tools",
    request_body = ScriptToolDefinition,
    responses(
        (status = 201, description = "Registered; the tool as listed", body = ToolView),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
        (status = 422, description = "The definition does not pass the configuration's checks", body = ErrorBody),
    )
)]
pub(crate) async fn register(
    State(state): State<ApiState>,
    ApiJson(definition): ApiJson<Map<String, Value>>,
) -> Result<(StatusCode, Json<Current>), ApiError> {
    let name = state
        .write_config(Edit::add(Section::ScriptTools, definition)?)
        .await?;
    Ok((StatusCode::CREATED, Json(current(&state, &name))))
}

/// Replaces a script tool's definition.
#[utoipa::path(
    put, path = "/api/tools/{name}", tag = "tools",
    params(("name" = String, Path, description = "The registry name")),
    request_body = ScriptToolDefinition,
    responses(
        (status = 200, description = "Replaced; the tool as listed", body = ToolView),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such script tool", body = ErrorBody),
        (status = 409, description = "Not a script tool", body = ErrorBody),
        (status = 422, description = "The definition does not pass the configuration's checks", body = ErrorBody),
    )
)]
pub(crate) async fn replace(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(definition): ApiJson<Map<String, Value>>,
) -> Result<Json<Current>, ApiError> {
    let name = state
        .write_config(Edit::replace(Section::ScriptTools, name, definition)?)
        .await?;
    Ok(Json(current(&state, &name)))
}

/// Removes a script tool.
#[utoipa::path(
    delete, path = "/api/tools/{name}", tag = "tools",
    params(("name" = String, Path, description = "The registry name")),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such script tool", body = ErrorBody),
        (status = 409, description = "Not a script tool", body = ErrorBody),
    )
)]
pub(crate) async fn remove(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    state
        .write_config(Edit::remove(Section::ScriptTools, name))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `PATCH /api/tools/{name}`: what to change of one tool. A field left out stays as it is.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolPatch {
    /// `false` switches the tool off (no channel lists or calls it), `true` on again.
    pub enabled: Option<bool>,
    /// The tool's own policy: `allow`, `ask` or `deny`; `null` removes it, so the tool's other
    /// rules (patterns, its source, its annotations) decide.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, nullable)]
    pub policy: Option<Option<Policy>>,
}

/// Tells a field sent as `null` (`Some(None)`) from one left out (`None`, by `default`).
fn present<'de, D>(deserializer: D) -> Result<Option<Option<Policy>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Option::<Policy>::deserialize(deserializer).map(Some)
}

/// Switches a tool on or off, or sets its own policy: written to the project's configuration
/// (`toolSettings`, `policies.tools`) through the one writer, and live at once. Works for every
/// tool, whatever its source.
#[utoipa::path(
    patch, path = "/api/tools/{name}", tag = "tools",
    params(("name" = String, Path, description = "The registry name")),
    request_body = ToolPatch,
    responses(
        (status = 200, description = "Changed; the tool as listed now, or `{name, hidden}` when it is switched off", body = Object),
        (status = 400, description = "The body is not a JSON object of `enabled` and `policy`", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such tool", body = ErrorBody),
        (status = 422, description = "Nothing to change", body = ErrorBody),
    )
)]
pub(crate) async fn patch(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(change): ApiJson<ToolPatch>,
) -> Result<Json<Current>, ApiError> {
    if change.enabled.is_none() && change.policy.is_none() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "nothing_to_change",
            "nothing to change: send `enabled` (true or false) or `policy` (allow, ask, deny or null)",
        ));
    }
    let name = state
        .write_config(Edit::tool_state(name, change.enabled, change.policy))
        .await?;
    Ok(Json(current(&state, &name)))
}
