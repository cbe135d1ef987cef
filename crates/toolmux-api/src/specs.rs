//! `/api/specs`: the spec pack (LeanSpec's `specs/NNN-name/README.md` files) as a resource.
//! Each route is a call of its `spec_*` tool through the pipeline, so policy (writes ask by
//! default: the request waits in `GET /api/approvals`), validation, approvals and the log apply
//! unchanged, and it answers with the tool's structured result; the tool's refusals map by
//! their kind (no such spec 404, a stale `expectedContentHash` 409, a refused request 422) as
//! on every route that stands for a tool.
//!
//! Every query string and body is the tool's own arguments ([`ToolRoute`]): documented from the
//! tool's input schema and checked by the pipeline against it, so a bad value (a status, a
//! link type) is the pipeline's 422 with the violation, as on every other channel. Adding or
//! removing a link is `spec_relationships` with its `action` given by the route.

use axum::http::StatusCode;
use toolmux_http::OpenApiRouter;

use crate::ApiState;
use crate::error::ApiError;
use crate::tool_routes::{Takes, ToolRoute, Verb};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    crate::tool_routes::router(TOOL_ROUTES)
}

/// The routes whose query or body is a spec tool's arguments: the document derives each from
/// the tool's input schema ([`ToolRoute`]), and the pipeline checks the arguments against it.
pub(crate) const TOOL_ROUTES: &[ToolRoute] = &[
    spec_route(
        Verb::Get,
        "/api/specs",
        "spec_list",
        Takes::Query,
        "Lists the specs in number order (the `spec_list` tool); specs whose frontmatter cannot \
         be read are listed under `errors`.",
        "`spec_list`'s structured result: `count`, `specs`, `errors`",
    ),
    spec_route(
        Verb::Post,
        "/api/specs",
        "spec_create",
        Takes::Body,
        "Creates a spec with the next number (the `spec_create` tool). A write: with the \
         default policy `ask`, the request waits in `GET /api/approvals` for a person's answer.",
        "Created: `spec_create`'s structured result (`id`, `number`, `file`, `contentHash`, \
         ...); `Location` names the new spec",
    )
    .creates("/id", "/api/specs/"),
    spec_route(
        Verb::Get,
        "/api/specs/board",
        "spec_board",
        Takes::Query,
        "The board: specs grouped by status, priority, assignee, tag or parent (the \
         `spec_board` tool).",
        "`spec_board`'s structured result: `groupBy`, `total`, `groups`",
    ),
    spec_route(
        Verb::Get,
        "/api/specs/search",
        "spec_search",
        Takes::Query,
        "Searches the specs with LeanSpec's query syntax and scoring, best first (the \
         `spec_search` tool).",
        "`spec_search`'s structured result: `query`, `count`, `results`",
    ),
    spec_route(
        Verb::Get,
        "/api/specs/stats",
        "spec_stats",
        Takes::Query,
        "Counts over every spec: by status, priority and tag, completion, dependencies (the \
         `spec_stats` tool).",
        "`spec_stats`'s structured result",
    ),
    spec_route(
        Verb::Get,
        "/api/specs/tokens",
        "spec_tokens",
        Takes::Query,
        "Counts cl100k tokens of one spec, a file, or every spec, with LeanSpec's ratings (the \
         `spec_tokens` tool).",
        "`spec_tokens`'s structured result: `encoding`, `total`, `items`, `thresholds`",
    ),
    spec_route(
        Verb::Get,
        "/api/specs/validation",
        "spec_validate",
        Takes::Query,
        "Checks one spec, or all, against LeanSpec's rules: errors and warnings with line \
         numbers (the `spec_validate` tool). Findings are the answer, so a spec with errors is \
         still a 200.",
        "`spec_validate`'s structured result: `valid`, `errors`, `warnings`, `specs`",
    ),
    spec_route(
        Verb::Get,
        "/api/specs/{spec}",
        "spec_view",
        Takes::Query,
        "One spec: frontmatter, body, sub-spec files, parent, children, dependencies and \
         dependents, and the `contentHash` to send back as `expectedContentHash` (the \
         `spec_view` tool).",
        "`spec_view`'s structured result",
    )
    .path_gives(&["spec"]),
    spec_route(
        Verb::Patch,
        "/api/specs/{spec}",
        "spec_update",
        Takes::Body,
        "Changes a spec: status, priority, assignee, tags, text, sections, checklist items or \
         the whole body (the `spec_update` tool). Send `expectedContentHash` so that a \
         concurrent change is refused (409) rather than overwritten. A write: with the default \
         policy `ask`, the request waits in `GET /api/approvals` for a person's answer.",
        "`spec_update`'s structured result: `changed`, `previousContentHash`, `contentHash`, ...",
    )
    .path_gives(&["spec"]),
    spec_route(
        Verb::Post,
        "/api/specs/{spec}/relationships",
        "spec_relationships",
        Takes::Body,
        "Adds a parent, child or `depends_on` link (the `spec_relationships` tool); one that \
         would make a cycle is refused (422). A write: with the default policy `ask`, the \
         request waits in `GET /api/approvals`. The spec's links are in `GET /api/specs/{spec}`.",
        RELATIONSHIP_CHANGED,
    )
    .path_gives(&["spec"])
    .fixing(&[("action", "add")])
    .requiring(&["type", "target"]),
    spec_route(
        Verb::Delete,
        "/api/specs/{spec}/relationships",
        "spec_relationships",
        Takes::Query,
        "Removes a parent, child or `depends_on` link (the `spec_relationships` tool). A write: \
         with the default policy `ask`, the request waits in `GET /api/approvals`.",
        RELATIONSHIP_CHANGED,
    )
    .path_gives(&["spec"])
    .fixing(&[("action", "remove")])
    .requiring(&["type", "target"]),
];

/// What adding or removing a link answers.
const RELATIONSHIP_CHANGED: &str = "`spec_relationships`'s structured result: `id`, `type`, \
     `target`, `edited` (the file changed)";

/// A route of a spec tool: the tool reports conflicts (a stale `expectedContentHash`, an
/// ambiguous name), and its pack may be absent.
const fn spec_route(
    verb: Verb,
    path: &'static str,
    tool: &'static str,
    takes: Takes,
    summary: &'static str,
    answer: &'static str,
) -> ToolRoute {
    ToolRoute::new(verb, path, tool, takes, "specs", summary, answer)
        .with_conflicts()
        .when_absent(no_specs_directory)
}

/// The source id of the spec pack (`toolmux_specs`), whose tools these routes call.
const SPECS_SOURCE: &str = "specs";

/// The answer of a spec route when the pack is not in the catalog: it is there only when the
/// project has a specs directory (looked for when the server starts). A spec tool switched
/// off by configuration is not absent: the pipeline answers it (403 `disabled`) as for any
/// tool.
fn no_specs_directory(tool: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no_specs_directory",
        "this project has no specs directory, so there are no specs to serve: create \
         `specs/` in the project (or name another directory as `specsDir` in \
         `.lean-spec/config.json`) and restart `toolmux serve`",
    )
    .with_details(serde_json::json!({ "source": SPECS_SOURCE, "tool": tool }))
}
