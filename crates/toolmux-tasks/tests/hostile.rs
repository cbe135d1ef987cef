//! The task list against callers that try to grow it without end (finding D34): `task_create`
//! is allowed by default on every channel, and the list is read and rewritten whole on every
//! change. Every call goes through a real hub (input and output schemas checked) onto a real
//! `tasks.json` in a temporary project.

use std::path::Path;
use std::sync::Arc;

use chrono::Utc;
use serde_json::{Value, json};
use toolmux_core::{CallContext, Channel, Hub, HubSettings, NullSink};
use toolmux_tasks::{
    DEFAULT_PAGE, MAX_DOCUMENT_BYTES, MAX_NOTE_BYTES, MAX_NOTES_PER_TASK, MAX_TASKS,
    MAX_TITLE_BYTES, Note, Status, Task, TaskBook, TasksPack, tasks_file,
};

fn hub(project: &Path) -> Hub {
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    hub.add_source(Arc::new(TasksPack::for_project(project)));
    hub
}

/// Calls a tool: its structured result, or the error text.
async fn call(hub: &Hub, tool: &str, arguments: Value) -> Result<Value, String> {
    let context = CallContext::new(Channel::Cli);
    let result = hub
        .call(tool, arguments, &context)
        .await
        .map_err(|e| e.to_string())?;
    if result.is_error {
        Err(result.text_content())
    } else {
        Ok(result.structured_content.expect("a structured result"))
    }
}

fn task(id: u64, title: &str) -> Task {
    let now = Utc::now();
    Task {
        id,
        title: title.into(),
        description: None,
        status: Status::Pending,
        parent: None,
        notes: Vec::new(),
        created_at: now,
        updated_at: now,
        completed_at: None,
    }
}

/// Writes a task list as the pack stores it (a quicker way to a full list than thousands of
/// calls, each rewriting the file).
fn store(project: &Path, tasks: Vec<Task>) -> u64 {
    let book = TaskBook {
        version: 1,
        next_id: tasks.len() as u64 + 1,
        tasks,
    };
    let bytes = book.to_bytes();
    let file = tasks_file(project);
    std::fs::create_dir_all(file.parent().expect("a state folder")).expect("state folder");
    std::fs::write(&file, &bytes).expect("write tasks.json");
    bytes.len() as u64
}

fn file_size(project: &Path) -> u64 {
    std::fs::metadata(tasks_file(project)).map_or(0, |m| m.len())
}

#[tokio::test]
async fn a_title_of_megabytes_is_refused_and_the_list_does_not_grow() {
    let dir = tempfile::tempdir().expect("temp project");
    let hub = hub(dir.path());
    call(&hub, "task_create", json!({"title": "a real task"}))
        .await
        .expect("an ordinary task");
    let before = file_size(dir.path());
    // The finding's payload: a 1.9 MB title, sixty times.
    let huge = "T".repeat(1_900_000);
    for _ in 0..60 {
        let err = call(&hub, "task_create", json!({"title": huge}))
            .await
            .expect_err("refused");
        assert!(
            err.contains("a task title may be at most 4 KiB; this one is 1.8 MiB"),
            "{err}"
        );
    }
    assert_eq!(file_size(dir.path()), before);
    // The same bound on every way a title, a description or a note gets in.
    let err = call(&hub, "task_update", json!({"id": 1, "title": huge}))
        .await
        .expect_err("refused");
    assert!(err.contains("a task title may be at most"), "{err}");
    let err = call(&hub, "task_update", json!({"id": 1, "description": huge}))
        .await
        .expect_err("refused");
    assert!(
        err.contains("a task description may be at most 64 KiB"),
        "{err}"
    );
    let err = call(
        &hub,
        "task_add_note",
        json!({"id": 1, "text": "n".repeat(MAX_NOTE_BYTES + 1)}),
    )
    .await
    .expect_err("refused");
    assert!(err.contains("a note may be at most 64 KiB"), "{err}");
    assert_eq!(file_size(dir.path()), before);
    // At the limit is fine.
    call(
        &hub,
        "task_create",
        json!({"title": "t".repeat(MAX_TITLE_BYTES)}),
    )
    .await
    .expect("a title of exactly the limit");
}

#[tokio::test]
async fn the_task_after_the_last_allowed_one_is_refused() {
    let dir = tempfile::tempdir().expect("temp project");
    store(
        dir.path(),
        (1..=MAX_TASKS as u64).map(|id| task(id, "t")).collect(),
    );
    let hub = hub(dir.path());
    let before = file_size(dir.path());
    let err = call(&hub, "task_create", json!({"title": "one more"}))
        .await
        .expect_err("refused");
    assert!(
        err.contains("the task list already holds 10000 tasks, as many as it may"),
        "{err}"
    );
    assert_eq!(file_size(dir.path()), before);
    // Deleting one makes room again.
    call(&hub, "task_delete", json!({"id": 1}))
        .await
        .expect("delete");
    call(&hub, "task_create", json!({"title": "one more"}))
        .await
        .expect("room again");
}

#[tokio::test]
async fn the_note_after_the_last_allowed_one_is_refused() {
    let dir = tempfile::tempdir().expect("temp project");
    let mut full = task(1, "noted");
    full.notes = (0..MAX_NOTES_PER_TASK)
        .map(|i| Note {
            at: Utc::now(),
            text: format!("note {i}"),
        })
        .collect();
    store(dir.path(), vec![full]);
    let hub = hub(dir.path());
    let err = call(&hub, "task_add_note", json!({"id": 1, "text": "one more"}))
        .await
        .expect_err("refused");
    assert!(err.contains("task 1 already has 500 notes"), "{err}");
}

#[tokio::test]
async fn a_change_that_would_pass_the_document_cap_is_refused_whole() {
    let dir = tempfile::tempdir().expect("temp project");
    // Tasks with descriptions as long as allowed, filling the list to within two of them of
    // its cap.
    let description = "d".repeat(64 * 1024);
    let long = |id: u64| {
        let mut next = task(id, "long");
        next.description = Some(description.clone());
        next
    };
    let size = |tasks: Vec<Task>| {
        TaskBook {
            version: 1,
            next_id: 1,
            tasks,
        }
        .to_bytes()
        .len()
    };
    let empty = size(Vec::new());
    let each = size(vec![long(1)]) - empty;
    let count = (MAX_DOCUMENT_BYTES - empty) / each - 1;
    let stored = store(dir.path(), (1..=count as u64).map(long).collect());
    assert!(stored <= MAX_DOCUMENT_BYTES as u64);
    let hub = hub(dir.path());
    // Notes as long as allowed, until one no longer fits: refused, and nothing written.
    let note = "n".repeat(MAX_NOTE_BYTES);
    let mut refused = None;
    for _ in 0..4 {
        let before = file_size(dir.path());
        match call(&hub, "task_add_note", json!({"id": 1, "text": note})).await {
            Ok(_) => assert!(file_size(dir.path()) <= MAX_DOCUMENT_BYTES as u64),
            Err(err) => {
                assert_eq!(file_size(dir.path()), before);
                refused = Some(err);
                break;
            }
        }
    }
    let err = refused.expect("a note past the cap is refused");
    assert!(
        err.contains("more than the 8 MiB it may be; nothing was changed"),
        "{err}"
    );
    // A file past the cap (written by something else) is not read whole.
    std::fs::write(tasks_file(dir.path()), vec![b' '; MAX_DOCUMENT_BYTES + 1])
        .expect("an oversized file");
    let err = call(&hub, "task_list", json!({}))
        .await
        .expect_err("refused");
    assert!(
        err.contains("larger than the 8 MiB a state document may be"),
        "{err}"
    );
}

#[tokio::test]
async fn task_list_answers_a_page_at_a_time() {
    let dir = tempfile::tempdir().expect("temp project");
    store(
        dir.path(),
        (1..=250).map(|id| task(id, &format!("t{id}"))).collect(),
    );
    let hub = hub(dir.path());
    let first = call(&hub, "task_list", json!({}))
        .await
        .expect("first page");
    assert_eq!(first["tasks"].as_array().map(Vec::len), Some(DEFAULT_PAGE));
    assert_eq!(first["total"], 250);
    assert_eq!(first["counts"]["pending"], 250);
    assert_eq!(first["nextOffset"], 100);
    let last = call(&hub, "task_list", json!({"offset": 200, "limit": 100}))
        .await
        .expect("last page");
    let titles: Vec<&str> = last["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|t| t["title"].as_str())
        .collect();
    assert_eq!(titles.len(), 50);
    assert_eq!(titles.first(), Some(&"t201"));
    assert!(last.get("nextOffset").is_none(), "{last}");
    let err = call(&hub, "task_list", json!({"limit": 100_000}))
        .await
        .expect_err("a page has a maximum");
    assert_eq!(
        err,
        limit_error("100000 is greater than the maximum of 1000")
    );
}

/// The hub's answer to arguments that break `task_list`'s input schema at `/limit`.
fn limit_error(why: &str) -> String {
    format!("invalid arguments for `task_list`: /limit: {why}")
}

/// Pages past the edges, as a caller may ask for them over any channel: each is refused with
/// its reason, or answered as an empty page, never read as another page.
#[tokio::test]
async fn task_list_pages_past_the_edges_are_refused_or_empty() {
    let dir = tempfile::tempdir().expect("temp project");
    store(
        dir.path(),
        (1..=3).map(|id| task(id, &format!("t{id}"))).collect(),
    );
    let hub = hub(dir.path());
    for (args, error) in [
        (
            json!({"limit": 0}),
            limit_error("0 is less than the minimum of 1"),
        ),
        (
            json!({"limit": -1}),
            limit_error("-1 is less than the minimum of 1"),
        ),
        (
            json!({"limit": u64::MAX}),
            limit_error("18446744073709551615 is greater than the maximum of 1000"),
        ),
        (
            json!({"offset": -1}),
            "invalid arguments for `task_list`: /offset: -1 is less than the minimum of 0"
                .to_string(),
        ),
        // A schema's `integer` takes these; the pack refuses them rather than read them as
        // absent (which gave the first page).
        (
            json!({"offset": 1e30}),
            "`offset` must be a whole number from 0 to 18446744073709551615, not 1e+30".to_string(),
        ),
        (
            serde_json::from_str(r#"{"offset": 18446744073709551616}"#).expect("json"),
            "`offset` must be a whole number from 0 to 18446744073709551615, not \
             1.8446744073709552e+19"
                .to_string(),
        ),
        (
            json!({"limit": 2.0}),
            "`limit` must be a whole number from 1 to 1000, not 2.0".to_string(),
        ),
    ] {
        let err = call(&hub, "task_list", args.clone())
            .await
            .expect_err("refused");
        assert_eq!(err, error, "{args}");
    }
    // Past the end (and at the very end of the numbers): an empty page with the real total.
    for offset in [3, 4, u64::MAX] {
        let page = call(&hub, "task_list", json!({"offset": offset, "limit": 1000}))
            .await
            .expect("an empty page");
        assert_eq!(
            page,
            json!({"tasks": [], "counts": {"pending": 3, "in_progress": 0, "completed": 0},
                "total": 3, "offset": offset, "limit": 1000})
        );
    }
    // The last page names no next one, however large the limit.
    let last = call(&hub, "task_list", json!({"offset": 2, "limit": 1000}))
        .await
        .expect("the last page");
    assert_eq!(last["tasks"][0]["title"], "t3");
    assert!(last.get("nextOffset").is_none(), "{last}");
}

#[tokio::test]
async fn a_chain_of_steps_as_long_as_the_list_is_listed_without_recursion() {
    let dir = tempfile::tempdir().expect("temp project");
    let chain: Vec<Task> = (1..=MAX_TASKS as u64)
        .map(|id| {
            let mut step = task(id, "step");
            step.parent = (id > 1).then_some(id - 1);
            step
        })
        .collect();
    store(dir.path(), chain);
    let hub = hub(dir.path());
    let page = call(&hub, "task_list", json!({"parent": 1, "offset": 9_990}))
        .await
        .expect("the deepest steps");
    assert_eq!(page["total"], MAX_TASKS - 1);
    assert_eq!(page["tasks"][0]["id"], 9_992);
}

/// Issue 28 (rule 1), found in review: `tasks.json` was opened as it came, so a cloned project
/// shipping a FIFO there held every `task_list` until someone wrote to it. It is refused at
/// once, unread (the writer waiting on the FIFO's other end is never heard).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_as_the_task_list_is_refused_without_waiting() {
    let dir = tempfile::tempdir().expect("dir");
    let file = tasks_file(dir.path());
    std::fs::create_dir_all(file.parent().expect("a state folder")).expect("state folder");
    toolmux_testkit::fifo::mkfifo(&file);
    let hub = hub(dir.path());
    let listed = toolmux_testkit::fifo::read_with_a_writer(&file, b"planted", || {
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(call(&hub, "task_list", json!({})))
        })
    });
    assert_eq!(
        listed,
        Err(format!(
            "cannot read `{}`: it is a FIFO, not a regular file",
            file.display()
        ))
    );
}
