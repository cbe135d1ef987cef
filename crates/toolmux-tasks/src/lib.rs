//! The tasks pack (source `tasks`): a per-project task list an agent keeps across turns and
//! conversations — `task_create`, `task_list`, `task_view`, `task_update`, `task_complete`,
//! `task_add_note`, `task_delete` (seed 002's `task_*`, plus delete). Tasks have a status
//! (`pending`, `in_progress`, `completed`), an order (the plan's), an optional parent and notes.
//!
//! The list is one JSON document, `.toolmux/state/tasks.json`, behind the narrow
//! [`StateStore`] interface: every change reads, changes and writes it atomically under the
//! store's lock, so concurrent callers (several MCP clients, the CLI, REST) are serialised and
//! none loses another's change. The tools only touch toolmux's own state, so they ask for the
//! `allow` policy (a configured rule still wins). Because any caller may add to it and it is
//! rewritten whole on every change, the list is bounded: titles, descriptions and notes by size,
//! tasks and notes per task by count, the whole document by [`MAX_DOCUMENT_BYTES`]; `task_list`
//! answers a page at a time.

mod book;
mod storage;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use serde_json::{Map, Value, json};
use toolmux_core::{
    Page, Policy, Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor,
    ToolErrorKind, ToolResult,
};

pub use book::{
    BookError, Changes, MAX_DESCRIPTION_BYTES, MAX_NOTE_BYTES, MAX_NOTES_PER_TASK, MAX_TASKS,
    MAX_TITLE_BYTES, NewTask, Note, Status, Task, TaskBook,
};
pub use storage::{Change, JsonFile, MAX_DOCUMENT_BYTES, StateStore, StorageError};

/// How many tasks `task_list` answers with when no `limit` is given.
pub const DEFAULT_PAGE: usize = 100;
/// The most tasks one `task_list` answer holds.
pub const MAX_PAGE: usize = 1_000;

/// The source id.
pub const SOURCE_ID: &str = "tasks";

/// The file the task list is kept in.
pub fn tasks_file(project_dir: &Path) -> std::path::PathBuf {
    toolmux_files::state_dir(project_dir).join("tasks.json")
}

/// The tasks pack over a store.
pub struct TasksPack {
    store: Arc<dyn StateStore>,
    tools: Vec<ToolDescriptor>,
}

impl TasksPack {
    /// The pack of a project, on `.toolmux/state/tasks.json`.
    pub fn for_project(project_dir: &Path) -> Self {
        Self::new(Arc::new(JsonFile::new(tasks_file(project_dir))))
    }

    /// The pack on any store.
    pub fn new(store: Arc<dyn StateStore>) -> Self {
        Self {
            store,
            tools: descriptors(),
        }
    }
}

fn task_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "title": {"type": "string"},
            "description": {"type": "string"},
            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
            "parent": {"type": "integer"},
            "notes": {"type": "array", "items": {"type": "object", "properties": {
                "at": {"type": "string"}, "text": {"type": "string"}}, "required": ["at", "text"]}},
            "createdAt": {"type": "string"},
            "updatedAt": {"type": "string"},
            "completedAt": {"type": "string"}
        },
        "required": ["id", "title", "status", "notes", "createdAt", "updatedAt"]
    })
}

fn descriptors() -> Vec<ToolDescriptor> {
    let status = json!({"type": "string", "enum": ["pending", "in_progress", "completed"]});
    let id = json!({"type": "integer", "minimum": 1, "description": "The task's id"});
    let position = json!({"type": "integer", "minimum": 0,
        "description": "Where among its siblings: 0 is first; the end when omitted"});
    let one =
        json!({"type": "object", "properties": {"task": task_schema()}, "required": ["task"]});
    let object = |properties: Value, required: &[&str]| {
        json!({"type": "object", "properties": properties, "required": required,
            "additionalProperties": false})
    };
    let reads = ToolAnnotations::read_only();
    let writes = ToolAnnotations {
        read_only_hint: Some(false),
        destructive_hint: Some(false),
        idempotent_hint: Some(false),
        open_world_hint: Some(false),
    };
    let tool = |name: &str,
                description: &str,
                input: Value,
                output: &Value,
                annotations: &ToolAnnotations| {
        let mut d = ToolDescriptor::new(SOURCE_ID, name, description, input);
        d.output_schema = Some(Arc::new(output.clone()));
        d.annotations = annotations.clone();
        d.parallel = annotations.read_only_hint == Some(true);
        d.policy = Some(Policy::Allow);
        d
    };
    let list = json!({"type": "object", "properties": {
        "tasks": {"type": "array", "items": task_schema()},
        "counts": {"type": "object", "properties": {
            "pending": {"type": "integer"}, "in_progress": {"type": "integer"},
            "completed": {"type": "integer"}}, "required": ["pending", "in_progress", "completed"]},
        "total": {"type": "integer", "description": "How many tasks match, on every page"},
        "offset": {"type": "integer"},
        "limit": {"type": "integer"},
        "nextOffset": {"type": "integer", "description": "The offset of the next page; absent on the last"}
    }, "required": ["tasks", "counts", "total", "offset", "limit"]});
    let limit = json!({"type": "integer", "minimum": 1, "maximum": MAX_PAGE,
        "description": format!("How many tasks to answer with ({DEFAULT_PAGE} when omitted)")});
    let offset = json!({"type": "integer", "minimum": 0,
        "description": "How many matching tasks to skip, in plan order (a page's `nextOffset`)"});
    let deleted = json!({"type": "object", "properties": {
        "deleted": {"type": "array", "items": {"type": "integer"}}}, "required": ["deleted"]});
    vec![
        tool(
            "task_create",
            "Add a task to the project's task list (your work plan, kept across conversations). \
             Give a parent to make it a step of another task.",
            object(
                json!({"title": {"type": "string", "minLength": 1}, "description": {"type": "string"},
                "status": status, "parent": id, "position": position}),
                &["title"],
            ),
            &one,
            &writes,
        ),
        tool(
            "task_list",
            "The project's tasks in plan order (each task followed by its steps), with counts by status, a page at a time: `nextOffset` is where the next page starts.",
            object(
                json!({"status": status, "parent": id, "limit": limit, "offset": offset}),
                &[],
            ),
            &list,
            &reads,
        ),
        tool(
            "task_view",
            "One task with its notes.",
            object(json!({"id": id}), &["id"]),
            &one,
            &reads,
        ),
        tool(
            "task_update",
            "Change a task: title, description, status, parent (null for top level) or position.",
            object(
                json!({"id": id, "title": {"type": "string", "minLength": 1},
                "description": {"type": ["string", "null"]}, "status": status,
                "parent": {"type": ["integer", "null"], "minimum": 1}, "position": position}),
                &["id"],
            ),
            &one,
            &writes,
        ),
        tool(
            "task_complete",
            "Mark a task completed.",
            object(json!({"id": id}), &["id"]),
            &one,
            &writes,
        ),
        tool(
            "task_add_note",
            "Add a note to a task (a finding, a decision, what is left).",
            object(
                json!({"id": id, "text": {"type": "string", "minLength": 1}}),
                &["id", "text"],
            ),
            &one,
            &writes,
        ),
        tool(
            "task_delete",
            "Remove a task and its steps.",
            object(json!({"id": id}), &["id"]),
            &deleted,
            &writes,
        ),
    ]
}

/// What a tool call makes of the book: a change or just a read, then the answer.
fn run(store: &dyn StateStore, tool: &str, args: &Map<String, Value>) -> ToolResult {
    let id = args.get("id").and_then(Value::as_u64).unwrap_or_default();
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
    let status = |key: &str| text(key).as_deref().and_then(Status::parse);
    let position = args
        .get("position")
        .and_then(Value::as_u64)
        .and_then(|p| usize::try_from(p).ok());
    let now = Utc::now();
    // Reads take no lock: the file is replaced whole, so a reader sees one version or the
    // next.
    if matches!(tool, "task_list" | "task_view") {
        let book = match store.read().map(|b| TaskBook::from_bytes(b.as_deref())) {
            Ok(Ok(book)) => book,
            Ok(Err(e)) => return ToolResult::error(format!("the task list is damaged: {e}")),
            Err(e) => return ToolResult::error(e.to_string()),
        };
        return if tool == "task_list" {
            let page = match Page::from_arguments(args, DEFAULT_PAGE, MAX_PAGE) {
                Ok(page) => page,
                Err(e) => return ToolResult::kind_error(ToolErrorKind::Invalid, e),
            };
            list(
                &book,
                status("status"),
                args.get("parent").and_then(Value::as_u64),
                page,
            )
        } else {
            match book.get(id) {
                Ok(task) => ToolResult::structured(json!({ "task": task })),
                Err(e) => refusal(&e),
            }
        };
    }
    let mut answer = None;
    let outcome = store.update(&mut |bytes| {
        let mut book = match TaskBook::from_bytes(bytes) {
            Ok(book) => book,
            Err(e) => {
                answer = Some(ToolResult::error(format!("the task list is damaged: {e}")));
                return None;
            }
        };
        let changed = match tool {
            "task_create" => book
                .create(
                    NewTask {
                        title: text("title").unwrap_or_default(),
                        description: text("description"),
                        status: status("status"),
                        parent: args.get("parent").and_then(Value::as_u64),
                        position,
                    },
                    now,
                )
                .map(Some),
            "task_update" => {
                let changes = Changes {
                    title: text("title"),
                    description: args
                        .get("description")
                        .map(|d| d.as_str().map(str::to_string)),
                    status: status("status"),
                    parent: args.get("parent").map(Value::as_u64),
                    position,
                };
                book.update(id, changes, now).map(|()| Some(id))
            }
            "task_complete" => {
                let done = Changes {
                    status: Some(Status::Completed),
                    ..Changes::default()
                };
                book.update(id, done, now).map(|()| Some(id))
            }
            "task_add_note" => book
                .add_note(id, text("text").unwrap_or_default(), now)
                .map(|()| Some(id)),
            "task_delete" => book.delete(id).map(|gone| {
                answer = Some(ToolResult::structured(json!({ "deleted": gone })));
                None
            }),
            other => {
                answer = Some(ToolResult::error(format!(
                    "the tasks pack has no tool `{other}`"
                )));
                return None;
            }
        };
        match changed {
            Ok(Some(id)) => {
                if let Ok(task) = book.get(id) {
                    answer = Some(ToolResult::structured(json!({ "task": task })));
                }
            }
            Ok(None) => {}
            Err(e) => {
                answer = Some(refusal(&e));
                return None;
            }
        }
        let bytes = book.to_bytes();
        if bytes.len() > MAX_DOCUMENT_BYTES {
            answer = Some(ToolResult::kind_error(
                ToolErrorKind::Invalid,
                format!(
                    "the task list would be {}, more than the {} it may be; nothing was changed (delete finished tasks, shorten notes)",
                    toolmux_core::human_bytes(bytes.len() as u64),
                    toolmux_core::human_bytes(MAX_DOCUMENT_BYTES as u64)
                ),
            ));
            return None;
        }
        Some(bytes)
    });
    match outcome {
        Ok(()) => answer.unwrap_or_else(|| ToolResult::error("the change gave no answer")),
        Err(e) => ToolResult::error(e.to_string()),
    }
}

fn refusal(e: &BookError) -> ToolResult {
    let kind = match e {
        BookError::NotFound(_) => ToolErrorKind::NotFound,
        BookError::Invalid(_) => ToolErrorKind::Invalid,
    };
    ToolResult::kind_error(kind, e.to_string())
}

fn list(book: &TaskBook, status: Option<Status>, parent: Option<u64>, page: Page) -> ToolResult {
    let all = book.ordered();
    let count = |s: Status| all.iter().filter(|t| t.status == s).count();
    let counts = json!({
        "pending": count(Status::Pending),
        "in_progress": count(Status::InProgress),
        "completed": count(Status::Completed),
    });
    let under: Option<std::collections::HashSet<u64>> =
        parent.map(|p| book.descendants(p).into_iter().collect());
    let matching: Vec<&Task> = all
        .into_iter()
        .filter(|t| status.is_none_or(|s| t.status == s))
        .filter(|t| under.as_ref().is_none_or(|ids| ids.contains(&t.id)))
        .collect();
    let total = matching.len();
    let tasks: Vec<&Task> = matching
        .into_iter()
        .skip(page.skip())
        .take(page.limit)
        .collect();
    let mut answer = json!({
        "tasks": tasks,
        "counts": counts,
        "total": total,
        "offset": page.offset,
        "limit": page.limit,
    });
    let next = page.offset.saturating_add(page.limit as u64);
    if next < total as u64 {
        answer["nextOffset"] = json!(next);
    }
    ToolResult::structured(answer)
}

#[async_trait]
impl Source for TasksPack {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some("The project's task list, kept across turns and conversations: plan work, track it, note progress.".to_string())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.tools.clone()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let store = self.store.clone();
        let tool = call.tool.original_name.clone();
        let args = call.arguments;
        // File work and a lock that may wait: off the async workers.
        toolmux_core::run_blocking(SOURCE_ID, &call.tool.name, move || {
            Some(run(store.as_ref(), &tool, &args))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_creates_lose_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn StateStore> = Arc::new(JsonFile::new(dir.path().join("tasks.json")));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for j in 0..5 {
                        let args = json!({"title": format!("t{i}-{j}")});
                        let result = run(
                            store.as_ref(),
                            "task_create",
                            args.as_object().expect("object"),
                        );
                        assert!(!result.is_error, "{}", result.text_content());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        let result = run(store.as_ref(), "task_list", &Map::new());
        let tasks = result.structured_content.expect("structured")["tasks"]
            .as_array()
            .expect("tasks")
            .len();
        assert_eq!(tasks, 40);
    }
}
