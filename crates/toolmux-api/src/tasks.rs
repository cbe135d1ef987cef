//! `/api/tasks`: the tasks pack (the project's task list, `.toolmux/state/tasks.json`) as a
//! resource. Each route is a call of its `task_*` tool through the pipeline, so validation,
//! policy and the log apply unchanged and the state is the one MCP and the CLI see; it answers
//! with the tool's structured result, a missing task as 404 and a refused change (a parent
//! that would make a cycle) as 422 ([`ApiState::run_tool`]).

use toolmux_http::OpenApiRouter;

use crate::ApiState;
use crate::tool_routes::{Takes, ToolRoute, Verb};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    crate::tool_routes::router(TOOL_ROUTES)
}

/// The routes whose query or body is a task tool's arguments, read and checked by the tool's
/// input schema ([`ToolRoute`]); a task the path names is its `id`.
pub(crate) const TOOL_ROUTES: &[ToolRoute] = &[
    ToolRoute::new(
        Verb::Get,
        "/api/tasks",
        "task_list",
        Takes::Query,
        "tasks",
        "Lists the tasks in plan order (each followed by its steps), with counts by status, a \
         page at a time (the `task_list` tool).",
        "`task_list`'s structured result: `tasks` (one page), `counts`, `total`, `offset`, \
         `limit`, `nextOffset`",
    ),
    ToolRoute::new(
        Verb::Post,
        "/api/tasks",
        "task_create",
        Takes::Body,
        "tasks",
        "Adds a task (the `task_create` tool).",
        "Created: `task_create`'s structured result (`task`); `Location` names it",
    )
    .creates("/task/id", "/api/tasks/"),
    ToolRoute::new(
        Verb::Get,
        "/api/tasks/{id}",
        "task_view",
        Takes::Query,
        "tasks",
        "One task with its notes (the `task_view` tool).",
        "`task_view`'s structured result (`task`)",
    )
    .path_gives(&["id"]),
    ToolRoute::new(
        Verb::Patch,
        "/api/tasks/{id}",
        "task_update",
        Takes::Body,
        "tasks",
        "Changes a task: title, description, status, parent or position (the `task_update` \
         tool). What the body leaves out stays as it is; `parent` and `description` may be \
         `null` (top level; no description).",
        "`task_update`'s structured result (`task`)",
    )
    .path_gives(&["id"]),
    ToolRoute::new(
        Verb::Delete,
        "/api/tasks/{id}",
        "task_delete",
        Takes::Query,
        "tasks",
        "Removes a task and its steps (the `task_delete` tool).",
        "`task_delete`'s structured result: `deleted`, the ids removed",
    )
    .path_gives(&["id"]),
    ToolRoute::new(
        Verb::Post,
        "/api/tasks/{id}/notes",
        "task_add_note",
        Takes::Body,
        "tasks",
        "Adds a note to a task (the `task_add_note` tool).",
        "`task_add_note`'s structured result (`task`)",
    )
    .path_gives(&["id"]),
];
