//! The pack as a `Source`: its descriptors, its errors, and its results going through the
//! real hub pipeline (input validation and output-schema validation included).

mod support;

use std::sync::Arc;

use serde_json::{Value, json};
use support::pack;
use toolmux_core::{
    CallContext, Channel, Hub, HubSettings, NullSink, Source, SourceCall, SourceError, SourceKind,
    ToolAnnotations,
};
use toolmux_testkit::project::write_file;
use toolmux_workspace::{PathError, WorkspaceError, WorkspaceLimits, WorkspacePack};

#[test]
fn pack_lists_four_read_only_parallel_tools_and_three_destructive_ones_with_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let pack = pack(dir.path());
    assert_eq!(pack.id(), "workspace");
    assert_eq!(pack.kind(), SourceKind::Builtin);
    assert_eq!(pack.root(), dir.path().canonicalize().unwrap());
    let tools = pack.tools();
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "file_read",
            "file_search",
            "grep",
            "directory_list",
            "file_write",
            "file_edit",
            "apply_patch"
        ]
    );
    for tool in &tools {
        assert_eq!(tool.source, "workspace");
        assert_eq!(tool.original_name, tool.name);
        let writes = ["file_write", "file_edit", "apply_patch"].contains(&tool.name.as_str());
        if writes {
            // Destructive: policy asks by default; never run beside another call of a batch.
            assert_eq!(tool.annotations.destructive_hint, Some(true));
            assert_eq!(tool.annotations.read_only_hint, Some(false));
            assert!(!tool.parallel, "{}", tool.name);
        } else {
            assert_eq!(tool.annotations, ToolAnnotations::read_only());
            assert!(tool.parallel, "{}", tool.name);
        }
        assert!(!tool.internal);
        assert!(tool.title.is_some());
        let input = &*tool.input_schema;
        assert_eq!(input["type"], "object");
        assert_eq!(input["additionalProperties"], false, "{}", tool.name);
        for (name, property) in input["properties"].as_object().unwrap() {
            assert!(
                property["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty()),
                "{}.{name} has no description",
                tool.name
            );
            if property.get("default").is_some() {
                let described = property["description"].as_str().unwrap();
                assert!(
                    described.contains("Default"),
                    "{}.{name}: {described}",
                    tool.name
                );
            }
        }
        let output = tool.output_schema.as_deref().expect("output schema");
        assert_eq!(output["type"], "object");
        assert_eq!(output["additionalProperties"], false);
    }
}

#[test]
fn result_limits_show_in_the_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let pack = WorkspacePack::new(
        dir.path(),
        WorkspaceLimits {
            max_results: 50,
            ..WorkspaceLimits::default()
        },
    )
    .unwrap();
    let grep = pack.tools().into_iter().find(|t| t.name == "grep").unwrap();
    assert_eq!(grep.input_schema["properties"]["limit"]["maximum"], 50);
    assert_eq!(grep.input_schema["properties"]["limit"]["default"], 50);
}

#[test]
fn new_refuses_a_missing_root_a_file_root_and_zero_limits() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let err = WorkspacePack::new(&missing, WorkspaceLimits::default()).unwrap_err();
    assert!(
        matches!(err, WorkspaceError::Root(PathError::Root { .. })),
        "{err:?}"
    );
    assert!(err.to_string().starts_with(&format!(
        "project root `{}` cannot be opened: ",
        missing.display()
    )));

    write_file(dir.path(), "file", "");
    let err = WorkspacePack::new(dir.path().join("file"), WorkspaceLimits::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "project root `{}` is not a directory",
            dir.path().join("file").display()
        )
    );

    let err = WorkspacePack::new(
        dir.path(),
        WorkspaceLimits {
            max_results: 0,
            ..WorkspaceLimits::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "workspace limit `max_results` must be at least 1"
    );
}

#[tokio::test]
async fn an_unknown_tool_is_a_source_failure_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let pack = pack(dir.path());
    let mut descriptor = pack.tools().remove(0);
    descriptor.original_name = "file_delete".into();
    let context = CallContext::new(Channel::Cli);
    let err = pack
        .call(SourceCall {
            tool: &descriptor,
            arguments: Default::default(),
            context: &context,
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SourceError::Failed(m) if m == "the workspace pack has no tool `file_delete`"),
        "{err:?}"
    );
}

#[tokio::test]
async fn results_match_their_output_schemas_through_the_hub() {
    let dir = tempfile::tempdir().unwrap();
    write_file(
        dir.path(),
        "src/main.rs",
        "fn main() {\n    println!(\"hi\");\n}\n",
    );
    write_file(dir.path(), "empty.txt", "");
    std::os::unix::fs::symlink("src", dir.path().join("link")).unwrap();
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    hub.add_source(Arc::new(pack(dir.path())));
    let context = CallContext::new(Channel::Cli);
    let calls: Vec<(&str, Value)> = vec![
        (
            "file_read",
            json!({"path": "src/main.rs", "offset": 2, "limit": 1}),
        ),
        ("file_read", json!({"path": "empty.txt"})),
        ("file_search", json!({"pattern": "**/*.rs"})),
        ("file_search", json!({"pattern": "*.none"})),
        ("grep", json!({"pattern": "println", "context": 1})),
        (
            "grep",
            json!({"pattern": "main", "literal": true, "caseSensitive": false, "glob": "*.rs", "limit": 1}),
        ),
        ("grep", json!({"pattern": "absent"})),
        (
            "directory_list",
            json!({"depth": 3, "includeIgnored": true}),
        ),
    ];
    for (tool, arguments) in calls {
        let result = hub
            .call(tool, arguments.clone(), &context)
            .await
            .unwrap_or_else(|e| panic!("{tool} {arguments}: {e}"));
        assert!(!result.is_error, "{tool}: {}", result.text_content());
    }
    // The pipeline's schema check catches what the tools would also refuse.
    let err = hub
        .call("grep", json!({"pattern": "x", "context": 11}), &context)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "invalid_arguments");
    // A tool-level error is a result the model can read, not a pipeline failure.
    let result = hub
        .call("file_read", json!({"path": "../etc/passwd"}), &context)
        .await
        .unwrap();
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "path `../etc/passwd` leaves the project root"
    );
}

#[tokio::test]
async fn toolmux_state_is_never_read_or_searched() {
    let dir = tempfile::tempdir().expect("temp dir");
    let state = dir.path().join(".toolmux/state/logs");
    std::fs::create_dir_all(&state).expect("state dir");
    std::fs::write(state.join("calls.jsonl"), "needle-in-state\n").expect("write");
    std::fs::write(dir.path().join("visible.txt"), "needle-visible\n").expect("write");
    let pack = toolmux_workspace::WorkspacePack::new(dir.path(), Default::default()).expect("pack");
    let hub = toolmux_core::Hub::new(
        Default::default(),
        std::sync::Arc::new(toolmux_core::NullSink),
    );
    hub.add_source(std::sync::Arc::new(pack));
    let ctx = toolmux_core::CallContext::new(toolmux_core::Channel::Cli);
    let grep = hub
        .call("grep", serde_json::json!({"pattern": "needle"}), &ctx)
        .await
        .expect("grep runs");
    let text = grep.text_content();
    assert!(text.contains("visible.txt"), "{text}");
    assert!(!text.contains("needle-in-state"), "{text}");
    let search = hub
        .call(
            "file_search",
            serde_json::json!({"pattern": "**/*.jsonl"}),
            &ctx,
        )
        .await
        .expect("search runs");
    assert!(!search.text_content().contains("calls.jsonl"));
    let listing = hub
        .call(
            "directory_list",
            serde_json::json!({"path": ".toolmux", "depth": 3}),
            &ctx,
        )
        .await
        .expect("list runs");
    assert!(
        !listing.text_content().contains("calls.jsonl"),
        "{}",
        listing.text_content()
    );
    let read = hub
        .call(
            "file_read",
            serde_json::json!({"path": ".toolmux/state/logs/calls.jsonl"}),
            &ctx,
        )
        .await
        .expect("a tool error, not a call error");
    assert!(read.is_error);
    assert_eq!(
        read.text_content(),
        "`.toolmux/state/logs/calls.jsonl` is inside `.toolmux/state`, toolmux's own state, which the workspace tools do not read"
    );
}

/// Threads of this process whose name is `name` (`/proc/self/task/*/comm`).
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

#[test]
fn d5_a_fan_out_of_calls_takes_at_most_a_few_blocking_threads() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..500 {
        write_file(dir.path(), &format!("many/f{i:04}.txt"), "x\n");
    }
    let limits = WorkspaceLimits {
        max_concurrent_calls: 2,
        ..WorkspaceLimits::default()
    };
    let pack = WorkspacePack::new(dir.path(), limits).unwrap();
    // A current-thread runtime: its only threads with this name are its blocking pool's,
    // which stay alive (idle) for seconds after their last call.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .thread_name("d5-fan-out")
        .enable_all()
        .build()
        .unwrap();
    let results = runtime.block_on(async {
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..64 {
            let pack = pack.clone();
            calls.spawn(async move {
                support::call(&pack, "directory_list", json!({"path": "many"})).await
            });
        }
        calls.join_all().await
    });
    assert!(results.iter().all(|r| !r.is_error));
    let threads = threads_named("d5-fan-out");
    drop(runtime);
    // Two calls at a time. A call gives its turn back on its blocking thread, just before that
    // thread goes idle, so the next call may find no idle thread and start one: on a loaded
    // machine that race is won now and then (5 threads were seen on 2 busy cores). Without the
    // limit the 64 calls take 64 threads, so a bound of four times the limit still tells the
    // two apart without depending on the scheduler.
    assert!(
        (1..=8).contains(&threads),
        "64 calls took {threads} blocking threads"
    );
}
