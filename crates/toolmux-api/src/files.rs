//! `/api/files`: the workspace tools over GET. Each route is a call of its tool through the
//! pipeline (policy, validation, limits, root confinement and the log apply unchanged), and
//! answers with the tool's structured result ([`ApiState::run_tool`](crate::ApiState)). Each
//! query string is its tool's arguments, read by the tool's input schema ([`ToolRoute`]):
//! `grep`'s parameters are `grep`'s arguments, with their names.

use toolmux_http::OpenApiRouter;

use crate::ApiState;
use crate::tool_routes::{Takes, ToolRoute, Verb};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    crate::tool_routes::router(TOOL_ROUTES)
}

/// The routes of this module, each its tool's arguments as its query.
pub(crate) const TOOL_ROUTES: &[ToolRoute] = &[LIST, CONTENT, SEARCH, GREP];

const LIST: ToolRoute = files(
    "/api/files",
    "directory_list",
    "Lists a directory (the `directory_list` tool).",
    "`directory_list`'s structured result",
);
const CONTENT: ToolRoute = files(
    "/api/files/content",
    "file_read",
    "Reads a file (the `file_read` tool).",
    "`file_read`'s structured result",
);
const SEARCH: ToolRoute = files(
    "/api/files/search",
    "file_search",
    "Finds files by glob (the `file_search` tool).",
    "`file_search`'s structured result",
);
const GREP: ToolRoute = files(
    "/api/files/grep",
    "grep",
    "Searches file contents (the `grep` tool).",
    "`grep`'s structured result",
);

/// `GET path`: `tool`'s arguments as the query, its structured result as the answer.
const fn files(
    path: &'static str,
    tool: &'static str,
    summary: &'static str,
    answer: &'static str,
) -> ToolRoute {
    ToolRoute::new(
        Verb::Get,
        path,
        tool,
        Takes::Query,
        "files",
        summary,
        answer,
    )
}
