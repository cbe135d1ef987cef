//! Routes that stand for one built-in tool and take its arguments as they are: as the query
//! string (`GET /api/files/grep?pattern=milk`) or as the JSON body (`POST /api/specs`), less
//! those the path names (`PATCH /api/specs/{spec}`). The tool's input schema is the one
//! definition: the document derives the route's parameters or body from it, a query string and
//! the path are read by it, and the pipeline checks the arguments against it, so the route
//! cannot offer a field the tool lacks or miss one it has. One handler serves them all
//! ([`router`]): a route is a [`ToolRoute`] value, not a function of its own.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, on};
use axum::{Extension, Json};
use serde_json::{Map, Value};
use toolmux_core::Catalog;
use toolmux_http::{ApiJson, ApiPath, ApiQuery, Caller, OpenApiRouter};
use utoipa::IntoResponses;
use utoipa::openapi::path::{
    HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItem, PathsBuilder,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::{ContentBuilder, Object, Required, ResponseBuilder, ResponsesBuilder, Type};

use crate::ApiState;
use crate::error::{ApiError, CallFailures, ToolConflict};

/// How a route takes its tool's arguments.
#[derive(Clone, Copy)]
pub(crate) enum Takes {
    /// As the query string, one parameter per argument.
    Query,
    /// As the JSON body, an object.
    Body,
}

/// The HTTP method of a route.
#[derive(Clone, Copy)]
pub(crate) enum Verb {
    Get,
    Post,
    Patch,
    Delete,
}

impl Verb {
    /// Lower case, as in the document.
    fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Post => "post",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
            Verb::Patch => MethodFilter::PATCH,
            Verb::Delete => MethodFilter::DELETE,
        }
    }

    fn http_method(self) -> HttpMethod {
        match self {
            Verb::Get => HttpMethod::Get,
            Verb::Post => HttpMethod::Post,
            Verb::Patch => HttpMethod::Patch,
            Verb::Delete => HttpMethod::Delete,
        }
    }
}

/// A route that stands for one built-in tool.
pub(crate) struct ToolRoute {
    /// The route's method.
    pub verb: Verb,
    /// The route's path as in the document (`/api/specs/{spec}`).
    pub path: &'static str,
    /// The tool the route calls.
    pub tool: &'static str,
    /// How the route takes the tool's arguments.
    pub takes: Takes,
    /// The arguments the path gives, left out of the query or body.
    pub from_path: &'static [&'static str],
    /// Arguments the route itself gives (`action: add` for the route that adds a link), left
    /// out of the query or body as the path's are.
    fixed: &'static [(&'static str, &'static str)],
    /// Arguments the tool takes as optional that this route needs (a link to add names its
    /// `type` and `target`): required in the route's document and refused when missing before
    /// the call, so such a request never waits for a person only to be refused.
    required: &'static [&'static str],
    /// The document's group of the route (`files`).
    tag: &'static str,
    /// What the route does: the operation's summary.
    summary: &'static str,
    /// What a success answers with: the description of its 200 (or 201).
    answer: &'static str,
    /// For a route that makes something: where its id is in the answer (a JSON pointer) and
    /// the path it is then served under; the answer is a 201 whose `Location` names it.
    created: Option<(&'static str, &'static str)>,
    /// Whether the tool reports conflicts (409), beside the failures of every call.
    conflicts: bool,
    /// The answer when the tool's whole source is not in the catalog (the spec pack without
    /// a specs directory), rather than "unknown tool", which names a tool the client never
    /// asked for. A tool switched off by configuration is not absent: the pipeline answers it.
    absent: Option<fn(&str) -> ApiError>,
}

impl ToolRoute {
    /// `verb path`, calling `tool` with the arguments the route `takes`; `summary` says what it
    /// does and `answer` what a success answers with, in the document's group `tag`.
    pub(crate) const fn new(
        verb: Verb,
        path: &'static str,
        tool: &'static str,
        takes: Takes,
        tag: &'static str,
        summary: &'static str,
        answer: &'static str,
    ) -> Self {
        Self {
            verb,
            path,
            tool,
            takes,
            from_path: &[],
            fixed: &[],
            required: &[],
            tag,
            summary,
            answer,
            created: None,
            conflicts: false,
            absent: None,
        }
    }

    /// The route with `names` given by its path, in their order there.
    pub(crate) const fn path_gives(mut self, names: &'static [&'static str]) -> Self {
        self.from_path = names;
        self
    }

    /// The route gives `arguments` itself, whatever the request says.
    pub(crate) const fn fixing(
        mut self,
        arguments: &'static [(&'static str, &'static str)],
    ) -> Self {
        self.fixed = arguments;
        self
    }

    /// The route needs `names`, which the tool takes as optional.
    pub(crate) const fn requiring(mut self, names: &'static [&'static str]) -> Self {
        self.required = names;
        self
    }

    /// Whether the path or the route gives the argument `name`.
    fn gives(&self, name: &str) -> bool {
        self.from_path.contains(&name) || self.fixed.iter().any(|(fixed, _)| *fixed == name)
    }

    /// The route makes something: a 201 whose `Location` is `under` followed by the value
    /// at `id_at` (a JSON pointer) in the tool's answer.
    pub(crate) const fn creates(mut self, id_at: &'static str, under: &'static str) -> Self {
        self.created = Some((id_at, under));
        self
    }

    /// The tool reports conflicts (409).
    pub(crate) const fn with_conflicts(mut self) -> Self {
        self.conflicts = true;
        self
    }

    /// The answer when the tool's source is not in the catalog.
    pub(crate) const fn when_absent(mut self, answer: fn(&str) -> ApiError) -> Self {
        self.absent = Some(answer);
        self
    }

    /// The tool's input schema without the path's arguments; `None` when the tool is not in
    /// `catalog` (the spec pack without a specs directory).
    fn schema(&self, catalog: &Catalog) -> Option<Value> {
        let mut schema = catalog
            .get(self.tool)?
            .descriptor
            .input_schema
            .as_ref()
            .clone();
        if let Some(properties) = schema["properties"].as_object_mut() {
            properties.retain(|name, _| !self.gives(name));
        }
        if let Some(required) = schema["required"].as_array_mut() {
            required.retain(|name| !name.as_str().is_some_and(|name| self.gives(name)));
            for name in self.required {
                if !required.iter().any(|r| r == name) {
                    required.push(Value::from(*name));
                }
            }
        }
        Some(schema)
    }

    /// The route's operation, as far as it is known without the catalog: its summary, group,
    /// path parameters, body and answers. [`ToolRoute::document`] adds what the tool's schema
    /// says once the catalog is there.
    fn paths(&self) -> utoipa::openapi::path::Paths {
        let success = ResponseBuilder::new()
            .description(self.answer)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Object::with_type(Type::Object)))
                    .build(),
            )
            .build();
        let status = if self.created.is_some() { "201" } else { "200" };
        let mut responses = ResponsesBuilder::new()
            .response(status, success)
            .responses_from_iter(CallFailures::responses());
        if self.conflicts {
            responses = responses.responses_from_iter(ToolConflict::responses());
        }
        let mut operation = OperationBuilder::new()
            .summary(Some(self.summary))
            .tag(self.tag)
            .responses(responses.build());
        for name in self.from_path {
            operation = operation.parameter(
                ParameterBuilder::new()
                    .name(*name)
                    .parameter_in(ParameterIn::Path)
                    .required(Required::True)
                    // Text until the tool's schema says more (`document`).
                    .schema(Some(Object::with_type(Type::String))),
            );
        }
        if let Takes::Body = self.takes {
            let given: Vec<String> = self
                .from_path
                .iter()
                .chain(self.fixed.iter().map(|(name, _)| name))
                .map(|name| format!("`{name}`"))
                .collect();
            let description = if given.is_empty() {
                format!(
                    "`{}`'s arguments (the `{}` component)",
                    self.tool,
                    self.body_component()
                )
            } else {
                format!(
                    "`{}`'s arguments but {}, which the path or the route gives (the `{}` \
                     component)",
                    self.tool,
                    given.join(", "),
                    self.body_component()
                )
            };
            operation = operation.request_body(Some(
                RequestBodyBuilder::new()
                    .description(Some(description))
                    .required(Some(Required::True))
                    .content(
                        "application/json",
                        ContentBuilder::new()
                            .schema(Some(Object::with_type(Type::Object)))
                            .build(),
                    )
                    .build(),
            ));
        }
        PathsBuilder::new()
            .path(
                self.path,
                PathItem::new(self.verb.http_method(), operation.build()),
            )
            .build()
    }

    /// The document's component a body route's body points at: the tool's input itself when
    /// the route takes all of it, `{tool}.body` when the path or the route gives some of it or
    /// it requires more (never the reduced schema under the input's own name, which
    /// `/api/tools/{name}/call` points at).
    fn body_component(&self) -> String {
        if self.from_path.is_empty() && self.fixed.is_empty() && self.required.is_empty() {
            crate::tool_input_component(self.tool)
        } else {
            format!("{}.body", self.tool)
        }
    }

    /// Writes what the tool's schema in `catalog` says of the route into `document` (a
    /// serialised OpenAPI document): each path parameter's description and schema; a body
    /// as a component the operation's JSON body points at (the tool's input itself when the
    /// path gives nothing, `{tool}.body` otherwise); a query as the operation's parameters
    /// after those of its path.
    pub(crate) fn document(&self, document: &mut Value, catalog: &Catalog) {
        let Some(input) = catalog.get(self.tool) else {
            return;
        };
        let properties = &input.descriptor.input_schema["properties"];
        let operation = &mut document["paths"][self.path][self.verb.as_str()];
        if !operation.is_object() {
            return;
        }
        // `get_mut`, not indexing: indexing a missing key would write it as `null`.
        if let Some(parameters) = operation
            .get_mut("parameters")
            .and_then(Value::as_array_mut)
        {
            for parameter in parameters.iter_mut().filter(|p| p["in"] == "path") {
                let Some(mut property) = parameter["name"]
                    .as_str()
                    .and_then(|name| properties.get(name))
                    .and_then(Value::as_object)
                    .cloned()
                else {
                    continue;
                };
                // Said once, by the parameter.
                if let Some(description) = property.remove("description") {
                    parameter["description"] = description;
                }
                parameter["schema"] = Value::Object(property);
            }
        }
        let Some(schema) = self.schema(catalog) else {
            return;
        };
        match self.takes {
            Takes::Body => {
                let component = self.body_component();
                let reference =
                    serde_json::json!({ "$ref": format!("#/components/schemas/{component}") });
                document["components"]["schemas"][&component] = schema;
                let body = &mut document["paths"][self.path][self.verb.as_str()]["requestBody"];
                if body.is_object() {
                    body["content"]["application/json"]["schema"] = reference;
                }
            }
            Takes::Query => {
                let operation = &mut document["paths"][self.path][self.verb.as_str()];
                let parameters = crate::openapi::query_parameters(&schema);
                let parameters = serde_json::to_value(parameters).unwrap_or(Value::Null);
                let mut all = operation
                    .get("parameters")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                all.extend(parameters.as_array().cloned().unwrap_or_default());
                if !all.is_empty() {
                    operation["parameters"] = Value::Array(all);
                }
            }
        }
    }

    /// A request's query string (its `name=value` pairs, decoded) as the tool's arguments,
    /// each value read as its property's type in the tool's input schema from `catalog`: a
    /// number, `true`/`false`, a comma-separated list, or text. A name the schema lacks is
    /// passed on as text, for the pipeline to refuse with the tool's own rule (422, naming
    /// it); a name given twice is a malformed request.
    fn query_arguments(
        &self,
        pairs: Vec<(String, String)>,
        values: Vec<Value>,
        catalog: &Catalog,
    ) -> Result<Map<String, Value>, ApiError> {
        // Borrowed, not copied per request: a name the path gives is refused by `with_path`
        // whatever its type here.
        let schema = input_schema(self.tool, catalog);
        let mut arguments = Map::new();
        for (name, text) in pairs {
            let value = read(&schema["properties"][&name], &name, &text, "query string")?;
            if arguments.insert(name.clone(), value).is_some() {
                return Err(ApiError::malformed(format!(
                    "bad query string: `{name}` is given more than once"
                )));
            }
        }
        self.with_path(arguments, values)
    }

    /// The path's parameters (`pairs`, by name) as the tool's arguments, in `from_path`'s
    /// order, each read as its property's type.
    fn path_values(
        &self,
        pairs: &[(String, String)],
        catalog: &Catalog,
    ) -> Result<Vec<Value>, ApiError> {
        let schema = input_schema(self.tool, catalog);
        self.from_path
            .iter()
            .map(|name| {
                let (_, text) = pairs
                    .iter()
                    .find(|(given, _)| given == name)
                    .ok_or_else(|| {
                        ApiError::internal(format!("the route {} has no `{{{name}}}`", self.path))
                    })?;
                read(&schema["properties"][*name], name, text, "path")
            })
            .collect()
    }

    /// `arguments` with the path's `values` and the route's fixed arguments put in. Arguments
    /// that name one of them themselves are refused: the path or the route says which.
    fn with_path(
        &self,
        mut arguments: Map<String, Value>,
        values: Vec<Value>,
    ) -> Result<Map<String, Value>, ApiError> {
        let given = self.from_path.iter().copied().zip(values).chain(
            self.fixed
                .iter()
                .map(|&(name, value)| (name, Value::from(value))),
        );
        for (name, value) in given {
            if arguments.contains_key(name) {
                let by = if self.from_path.contains(&name) {
                    "named by the path"
                } else {
                    "given by the route"
                };
                return Err(ApiError::malformed(format!(
                    "`{name}` is {by} ({}), not the {}",
                    self.path,
                    match self.takes {
                        Takes::Query => "query",
                        Takes::Body => "body",
                    }
                )));
            }
            arguments.insert(name.to_string(), value);
        }
        Ok(arguments)
    }

    /// Answers one request: the arguments read from the path and the query or body, the tool
    /// called through the pipeline, its structured result as the answer (a 201 naming what it
    /// made, for a route that makes something).
    async fn answer(
        &self,
        state: ApiState,
        caller: Caller,
        path: Vec<(String, String)>,
        given: Given,
    ) -> Result<Response, ApiError> {
        let arguments = {
            let catalog = state.inner.hub.catalog();
            if let Some(absent) = self.absent
                && catalog.get(self.tool).is_none()
                && catalog.hidden_reason(self.tool).is_none()
            {
                return Err(absent(self.tool));
            }
            let values = self.path_values(&path, &catalog)?;
            match given {
                Given::Query(pairs) => self.query_arguments(pairs, values, &catalog)?,
                Given::Body(body) => self.with_path(body, values)?,
            }
        };
        if let Some(missing) = self
            .required
            .iter()
            .find(|name| !arguments.contains_key(**name))
        {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_arguments",
                format!(
                    "`{missing}` is required by {} {}",
                    self.verb.as_str().to_uppercase(),
                    self.path
                ),
            ));
        }
        let answer = state.run_tool(caller, self.tool, arguments).await?;
        let Some((id_at, under)) = self.created else {
            return Ok(Json(answer).into_response());
        };
        let location = match answer.pointer(id_at) {
            Some(Value::String(id)) => Some(format!("{under}{id}")),
            Some(Value::Number(id)) => Some(format!("{under}{id}")),
            _ => None,
        }
        .and_then(|location| HeaderValue::from_str(&location).ok());
        let mut response = (StatusCode::CREATED, Json(answer)).into_response();
        if let Some(location) = location {
            response.headers_mut().insert(header::LOCATION, location);
        }
        Ok(response)
    }
}

/// Every route that stands for one tool, for the document.
pub(crate) fn every() -> impl Iterator<Item = &'static ToolRoute> {
    crate::files::TOOL_ROUTES
        .iter()
        .chain(crate::specs::TOOL_ROUTES)
        .chain(crate::tasks::TOOL_ROUTES)
        .chain(crate::sessions::TOOL_ROUTES)
        .chain(crate::runners::TOOL_ROUTES)
        .chain(crate::skills::TOOL_ROUTES)
}

/// What a request gives besides its path.
enum Given {
    Query(Vec<(String, String)>),
    Body(Map<String, Value>),
}

/// The routes `routes` stand for, each served by the one handler and documented from its
/// [`ToolRoute`].
pub(crate) fn router(routes: &'static [ToolRoute]) -> OpenApiRouter<ApiState> {
    routes.iter().fold(OpenApiRouter::new(), |router, route| {
        let method_router = match route.takes {
            Takes::Query => on(
                route.verb.filter(),
                move |State(state): State<ApiState>,
                      Extension(caller): Extension<Caller>,
                      ApiPath(path): ApiPath<Vec<(String, String)>>,
                      ApiQuery(pairs): ApiQuery<Vec<(String, String)>>| async move {
                    route.answer(state, caller, path, Given::Query(pairs)).await
                },
            ),
            Takes::Body => on(
                route.verb.filter(),
                move |State(state): State<ApiState>,
                      Extension(caller): Extension<Caller>,
                      ApiPath(path): ApiPath<Vec<(String, String)>>,
                      ApiJson(body): ApiJson<Map<String, Value>>| async move {
                    route.answer(state, caller, path, Given::Body(body)).await
                },
            ),
        };
        router.routes((Vec::new(), route.paths(), method_router))
    })
}

/// `tool`'s input schema in `catalog`, borrowed; `null` when it is not there (every value is
/// then read as text, for the pipeline to answer).
fn input_schema<'c>(tool: &str, catalog: &'c Catalog) -> &'c Value {
    catalog
        .get(tool)
        .map_or(&Value::Null, |e| e.descriptor.input_schema.as_ref())
}

/// `text`, given as `name` in the request's `part` (its query string, its path), as a value of
/// `property`'s type, or why it is not one.
fn read(property: &Value, name: &str, text: &str, part: &str) -> Result<Value, ApiError> {
    typed(property, text).ok_or_else(|| {
        let digits = text.strip_prefix('-').unwrap_or(text);
        let whole = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
        ApiError::malformed(if property["type"] == "integer" && whole {
            format!("bad {part}: `{name}` is too large ({text})")
        } else {
            format!(
                "bad {part}: `{name}` must be {}, not `{text}`",
                expected(property)
            )
        })
    })
}

/// `text` as a value of `property`'s type; `None` when it is not one. A property without a
/// single type (or unknown to the schema) takes the text as it is.
fn typed(property: &Value, text: &str) -> Option<Value> {
    match property["type"].as_str() {
        Some("integer") => text
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| text.parse::<u64>().map(Value::from))
            .ok(),
        Some("number") => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number),
        Some("boolean") => match text {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        Some("array") if text.is_empty() => Some(Value::Array(Vec::new())),
        Some("array") => text
            .split(',')
            .map(|item| typed(&property["items"], item))
            .collect::<Option<Vec<Value>>>()
            .map(Value::Array),
        _ => Some(Value::from(text)),
    }
}

/// What `property`'s type wants, for a refusal.
fn expected(property: &Value) -> String {
    match property["type"].as_str() {
        Some("integer") => "a whole number".into(),
        Some("number") => "a number".into(),
        Some("boolean") => "`true` or `false`".into(),
        Some("array") => format!(
            "a comma-separated list (each item {})",
            expected(&property["items"])
        ),
        _ => "text".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A route's path names exactly the arguments it says the path gives, in their order: a
    /// name in one and not the other would reach the tool empty or not at all.
    #[test]
    fn every_routes_path_names_what_it_gives() {
        for route in every() {
            let named: Vec<&str> = route
                .path
                .split('/')
                .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
                .collect();
            assert_eq!(
                named,
                route.from_path,
                "{} {}",
                route.verb.as_str(),
                route.path
            );
        }
    }

    #[test]
    fn a_query_value_is_read_as_its_propertys_type() {
        let integer = json!({"type": "integer"});
        assert_eq!(typed(&integer, "3"), Some(json!(3)));
        assert_eq!(typed(&integer, "-3"), Some(json!(-3)));
        assert_eq!(typed(&integer, "3.5"), None);
        assert_eq!(
            typed(&json!({"type": "boolean"}), "true"),
            Some(json!(true))
        );
        assert_eq!(typed(&json!({"type": "boolean"}), "yes"), None);
        let list = json!({"type": "array", "items": {"type": "integer"}});
        assert_eq!(typed(&list, "1,2"), Some(json!([1, 2])));
        assert_eq!(typed(&list, "1,x"), None);
        assert_eq!(
            expected(&list),
            "a comma-separated list (each item a whole number)"
        );
        assert_eq!(typed(&json!({"type": "string"}), "1"), Some(json!("1")));
        assert_eq!(typed(&Value::Null, "x"), Some(json!("x")));
    }
}
