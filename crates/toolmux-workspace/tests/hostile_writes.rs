//! Hostile writes: findings D30 (an approval's pin evicted by other pending previews, or
//! replaced by an identical call, so the approved call wrote what nobody saw) and D20 (the
//! write tools rewrote `.toolmux/config.json` and the registries: the files that define what
//! toolmux runs and how it sandboxes it). Real hub, real approval queue, real pack.

mod results;
mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use results::{error_text, ok_text, structured};
use serde_json::{Value, json};
use support::{call, fingerprint, pack};
use toolmux_core::{
    Approval, ApprovalQueue, CallContext, Channel, Hub, HubSettings, NullSink, PendingApproval,
    ToolErrorKind, ToolResult,
};
use toolmux_testkit::project::write_file;
use toolmux_workspace::{ProtectedKind, ProtectedPaths, WorkspacePack};

/// A hub serving the pack over `root`, and a REST-like context whose `ask` calls wait in
/// `queue` until the test answers them.
fn hub_over(root: &Path) -> (Hub, Arc<ApprovalQueue>, CallContext) {
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    hub.add_source(Arc::new(pack(root)));
    let queue = Arc::new(ApprovalQueue::new());
    let context = CallContext::new(Channel::Rest).with_approver(queue.clone());
    (hub, queue, context)
}

/// Starts an `ask` call in the background.
fn start(
    hub: &Hub,
    context: &CallContext,
    tool: &str,
    arguments: Value,
) -> tokio::task::JoinHandle<ToolResult> {
    let (hub, context, tool) = (hub.clone(), context.clone(), tool.to_string());
    tokio::spawn(async move {
        hub.call(&tool, arguments, &context)
            .await
            .unwrap_or_else(|e| panic!("{tool} was not run: {e}"))
    })
}

/// The approvals waiting, once there are `count` of them (oldest first).
async fn waiting(queue: &ApprovalQueue, count: usize) -> Vec<PendingApproval> {
    // Polled, not timed: the bound only turns a hang into a failure.
    for _ in 0..20_000 {
        let pending = queue.pending(None);
        if pending.len() >= count {
            return pending;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!(
        "{count} approvals never waited (only {})",
        queue.pending(None).len()
    );
}

fn assert_conflict(result: &ToolResult) {
    assert!(
        result.is_error,
        "expected a conflict: {}",
        result.text_content()
    );
    assert_eq!(result.error_kind(), Some(ToolErrorKind::Conflict));
    assert!(
        result
            .text_content()
            .starts_with("`t.txt` changed after the approval showed this call's diff"),
        "{}",
        result.text_content()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d30_sixty_four_other_pending_write_previews_do_not_evict_an_approvals_pin() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "t.txt", "line1\nAPPROVED\n");
    let (hub, queue, context) = hub_over(dir.path());
    let write = json!({"path": "t.txt", "content": "NEW\n", "overwrite": true});
    let first = start(&hub, &context, "file_write", write);
    let id = waiting(&queue, 1).await[0].id;
    let others: Vec<_> = (1..=64)
        .map(|i| {
            let arguments = json!({"path": format!("f{i}"), "content": "x"});
            start(&hub, &context, "file_write", arguments)
        })
        .collect();
    let pending = waiting(&queue, 65).await;

    // The file changes after the person was shown its diff; allowing that approval must not
    // write over content it never showed.
    write_file(dir.path(), "t.txt", "line1\nIMPORTANT-UNSEEN\n");
    queue.answer(id, Approval::Allow).expect("waiting");
    assert_conflict(&first.await.expect("joined"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("t.txt")).unwrap(),
        "line1\nIMPORTANT-UNSEEN\n"
    );

    // The 64 others kept their pins too: allowed, each writes what it showed.
    for other in pending.iter().filter(|p| p.id != id) {
        queue.answer(other.id, Approval::Allow).expect("waiting");
    }
    for other in others {
        ok_text(&other.await.expect("joined"));
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f64")).unwrap(),
        "x"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d30_an_identical_call_previewed_after_the_change_does_not_replace_the_first_pin() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "t.txt", "line1\nAPPROVED\n");
    let (hub, queue, context) = hub_over(dir.path());
    let write = json!({"path": "t.txt", "content": "NEW\n", "overwrite": true});
    let first = start(&hub, &context, "file_write", write.clone());
    let first_id = waiting(&queue, 1).await[0].id;
    write_file(dir.path(), "t.txt", "line1\nIMPORTANT-UNSEEN\n");
    // The same session, tool and arguments: under the old keying, this preview took the
    // first call's place.
    let second = start(&hub, &context, "file_write", write);
    let pending = waiting(&queue, 2).await;
    let second_approval = pending.iter().find(|p| p.id != first_id).expect("second");
    assert!(
        second_approval
            .request
            .message
            .contains("-IMPORTANT-UNSEEN"),
        "the second approval shows the file as it is now: {}",
        second_approval.request.message
    );

    queue.answer(first_id, Approval::Allow).expect("waiting");
    assert_conflict(&first.await.expect("joined"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("t.txt")).unwrap(),
        "line1\nIMPORTANT-UNSEEN\n"
    );
    // The second approval showed the change over the new content: allowed, it writes.
    queue
        .answer(second_approval.id, Approval::Allow)
        .expect("waiting");
    let written = second.await.expect("joined");
    assert_eq!(structured(&written)["files"][0]["operation"], "update");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("t.txt")).unwrap(),
        "NEW\n"
    );
}

/// A project with a configuration, a registry it names and a LeanSpec configuration, and a
/// pack over it with the protected paths `toolmux` computes for that configuration.
struct Project {
    dir: tempfile::TempDir,
    pack: WorkspacePack,
}

impl Project {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write_file(
            root,
            ".toolmux/config.json",
            r#"{"registries": ["backend/mcp.json"]}"#,
        );
        write_file(root, "backend/mcp.json", r#"{"mcpServers": {}}"#);
        write_file(root, ".lean-spec/config.json", r#"{"specsDir": "specs"}"#);
        write_file(root, "notes.txt", "hello\n");
        let pack = pack(root);
        pack.project_root().protect(ProtectedPaths::for_project(
            root,
            root,
            &registries(&["backend/mcp.json"]),
        ));
        Self { dir, pack }
    }

    fn path(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join(rel)
    }
}

fn registries(paths: &[&str]) -> toolmux_config::Config {
    toolmux_config::Config {
        registries: paths.iter().map(Into::into).collect(),
        ..Default::default()
    }
}

fn protected_message(path: &str, what: &str) -> String {
    format!(
        "`{path}` is {what}, which defines what toolmux runs and how it is sandboxed; the \
         workspace tools never write it (a person edits it, or `toolmux config set` does)"
    )
}

const IN_TOOLMUX: &str = "inside `.toolmux`, toolmux's own configuration";
const A_REGISTRY: &str = "a tool registry named in the configuration's `registries`";

#[tokio::test]
async fn d20_file_write_and_file_edit_refuse_the_configuration_and_the_registries() {
    let project = Project::new();
    let config = project.path(".toolmux/config.json");
    let registry = project.path("backend/mcp.json");
    let lean = project.path(".lean-spec/config.json");
    let before = [
        fingerprint(&config),
        fingerprint(&registry),
        fingerprint(&lean),
    ];
    let unsandboxed = r#"{"shell": {"sandbox": false, "network": true}}"#;

    let refused = call(
        &project.pack,
        "file_write",
        json!({"path": ".toolmux/config.json", "content": unsandboxed, "overwrite": true}),
    )
    .await;
    assert_eq!(
        error_text(&refused),
        protected_message(".toolmux/config.json", IN_TOOLMUX)
    );
    let refused = call(
        &project.pack,
        "file_write",
        json!({"path": "backend/mcp.json", "content": "{\"mcpServers\": {\"x\": {\"command\": \"sh\"}}}", "overwrite": true}),
    )
    .await;
    assert_eq!(
        error_text(&refused),
        protected_message("backend/mcp.json", A_REGISTRY)
    );
    let refused = call(
        &project.pack,
        "file_edit",
        json!({"path": "backend/./mcp.json", "oldString": "{}", "newString": "{\"x\": {}}"}),
    )
    .await;
    assert_eq!(
        error_text(&refused),
        protected_message("backend/./mcp.json", A_REGISTRY)
    );
    let refused = call(
        &project.pack,
        "file_edit",
        json!({"path": ".lean-spec/config.json", "oldString": "specs", "newString": ".toolmux"}),
    )
    .await;
    assert_eq!(
        error_text(&refused),
        protected_message(".lean-spec/config.json", "LeanSpec's configuration")
    );
    // New files anywhere under `.toolmux` (a skill, a second config), under any spelling, and
    // in a nested project's `.toolmux`.
    for path in [
        ".toolmux/skills/evil/SKILL.md",
        ".toolmux/config.jsonc",
        ".TOOLMUX/config.json",
        "notes/../.toolmux/x",
        "sub/.toolmux/config.json",
    ] {
        let refused = call(
            &project.pack,
            "file_write",
            json!({"path": path, "content": "{}"}),
        )
        .await;
        assert_eq!(error_text(&refused), protected_message(path, IN_TOOLMUX));
    }
    assert_eq!(
        [
            fingerprint(&config),
            fingerprint(&registry),
            fingerprint(&lean)
        ],
        before
    );
    assert!(!project.path(".toolmux/skills").exists());
    assert!(!project.path(".TOOLMUX").exists());
    assert!(!project.path("sub").exists());
}

#[tokio::test]
async fn d20_apply_patch_neither_moves_into_toolmux_nor_deletes_or_adds_a_protected_file() {
    let project = Project::new();
    let registry = project.path("backend/mcp.json");
    let before = (
        fingerprint(&project.path("notes.txt")),
        fingerprint(&registry),
    );
    let patches = [
        (
            "*** Begin Patch\n*** Update File: notes.txt\n*** Move to: .toolmux/config.json\n@@\n-hello\n+{\"shell\": {\"sandbox\": false}}\n*** End Patch",
            protected_message(".toolmux/config.json", IN_TOOLMUX),
        ),
        (
            "diff --git a/notes.txt b/.toolmux/tools.json\nsimilarity index 100%\nrename from notes.txt\nrename to .toolmux/tools.json\n",
            protected_message(".toolmux/tools.json", IN_TOOLMUX),
        ),
        (
            "*** Begin Patch\n*** Delete File: backend/mcp.json\n*** End Patch",
            protected_message("backend/mcp.json", A_REGISTRY),
        ),
        (
            "*** Begin Patch\n*** Update File: backend/mcp.json\n*** Move to: backend/old.json\n@@\n-{\"mcpServers\": {}}\n+{}\n*** End Patch",
            protected_message("backend/mcp.json", A_REGISTRY),
        ),
        (
            "*** Begin Patch\n*** Add File: .toolmux/config.local.json\n+{}\n*** End Patch",
            protected_message(".toolmux/config.local.json", IN_TOOLMUX),
        ),
    ];
    for (patch, message) in patches {
        let refused = call(&project.pack, "apply_patch", json!({"patch": patch})).await;
        let text = error_text(&refused);
        assert!(text.contains(&message), "{patch}\n{text}");
    }
    assert_eq!(
        (
            fingerprint(&project.path("notes.txt")),
            fingerprint(&registry)
        ),
        before
    );
    assert!(!project.path(".toolmux/tools.json").exists());
    assert!(!project.path(".toolmux/config.local.json").exists());
    assert!(!project.path("backend/old.json").exists());
}

#[tokio::test]
async fn d20_a_link_does_not_hide_a_protected_file_and_a_reload_reaches_every_clone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // `.toolmux` is a link to `conf` inside the root; the registry is a link to `shared`.
    write_file(root, "conf/config.json", "{}");
    std::os::unix::fs::symlink("conf", root.join(".toolmux")).unwrap();
    write_file(root, "shared/tools.json", "{}");
    std::fs::create_dir(root.join("backend")).unwrap();
    std::os::unix::fs::symlink("../shared/tools.json", root.join("backend/tools.json")).unwrap();
    let pack = pack(root);
    // Before the configuration is known, `.toolmux` is protected by its canonical path.
    let refused = call(
        &pack,
        "file_write",
        json!({"path": "conf/config.json", "content": "{}", "overwrite": true}),
    )
    .await;
    assert_eq!(
        error_text(&refused),
        protected_message("conf/config.json", IN_TOOLMUX)
    );
    // The registry is not known yet: a write goes through (and is put back below).
    ok_text(
        &call(
            &pack,
            "file_write",
            json!({"path": "shared/tools.json", "content": "{}", "overwrite": true}),
        )
        .await,
    );
    // A reload names it: the protected paths put in force through a clone of the root reach
    // the pack, by the name the configuration uses and by the file it leads to.
    let root_clone = pack.project_root().clone();
    root_clone.protect(ProtectedPaths::for_project(
        root,
        root,
        &registries(&["backend/tools.json"]),
    ));
    for path in ["shared/tools.json", "backend/tools.json"] {
        let refused = call(
            &pack,
            "file_write",
            json!({"path": path, "content": "{\"x\": {}}", "overwrite": true}),
        )
        .await;
        assert_eq!(error_text(&refused), protected_message(path, A_REGISTRY));
    }
    assert_eq!(
        std::fs::read_to_string(root.join("shared/tools.json")).unwrap(),
        "{}"
    );
    // The list a sandbox reads: canonical paths, each with its kind.
    let canonical = root.canonicalize().unwrap();
    let protected = pack.project_root().protected();
    // The user's configuration is protected too, wherever this machine's home puts it.
    let user: Vec<_> = protected
        .iter()
        .filter(|p| p.kind == ProtectedKind::UserConfig)
        .collect();
    assert_eq!(user.len(), 1, "{user:?}");
    let listed: Vec<(std::path::PathBuf, ProtectedKind)> = protected
        .iter()
        .filter(|p| p.kind != ProtectedKind::UserConfig)
        .map(|p| (p.path.clone(), p.kind))
        .collect();
    assert_eq!(
        listed,
        [
            (canonical.join(".toolmux"), ProtectedKind::ToolmuxDir),
            (canonical.join("conf"), ProtectedKind::ToolmuxDir),
            (
                canonical.join(".lean-spec/config.json"),
                ProtectedKind::LeanSpecConfig
            ),
            (
                canonical.join(".lean-spec/config.yaml"),
                ProtectedKind::LeanSpecConfig
            ),
            (
                canonical.join("backend/tools.json"),
                ProtectedKind::Registry
            ),
            (canonical.join("shared/tools.json"), ProtectedKind::Registry),
        ]
    );
}

#[tokio::test]
async fn d20_the_shared_writer_for_other_packs_refuses_protected_paths_too() {
    // `ProjectRoot::write_text` is what an ACP agent's `fs/write_text_file` goes through.
    let project = Project::new();
    let root = project.pack.project_root();
    for (path, what) in [
        (".toolmux/config.json", IN_TOOLMUX),
        ("backend/mcp.json", A_REGISTRY),
    ] {
        let refused = root.write_text(path, "{}").expect_err(path);
        assert_eq!(refused.to_string(), protected_message(path, what));
    }
    assert_eq!(
        std::fs::read_to_string(project.path("backend/mcp.json")).unwrap(),
        r#"{"mcpServers": {}}"#
    );
    // Reading them stays allowed: they hold references, not secrets.
    assert_eq!(
        root.read_text("backend/mcp.json", 1024).unwrap(),
        r#"{"mcpServers": {}}"#
    );
}
