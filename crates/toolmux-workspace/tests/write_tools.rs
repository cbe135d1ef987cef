//! `file_write`, `file_edit` and `apply_patch`: exact results, files changed all or none,
//! line endings and permissions kept, and the rule that a file is replaced only by a caller
//! who has read it.

mod results;
mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use results::{error_text, ok_text, structured};
use serde_json::{Value, json};
use support::{call, call_in_context, fingerprint, pack, preview_in_context};
use toolmux_core::{CallContext, Channel, Source, ToolErrorKind, ToolResult};
use toolmux_testkit::project::write_file;
use toolmux_workspace::WorkspacePack;
use uuid::Uuid;

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).expect("read back")
}

/// The message of a conflict (a file changed or not read): a tool error of kind `conflict`.
fn conflict_text(result: &ToolResult) -> String {
    assert!(
        result.is_error,
        "expected a refusal: {}",
        result.text_content()
    );
    assert_eq!(result.error_kind(), Some(ToolErrorKind::Conflict));
    result.text_content()
}

#[tokio::test]
async fn file_write_creates_a_file_and_its_directories_and_reports_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    let pack = pack(dir.path());
    let result = call(
        &pack,
        "file_write",
        json!({"path": "new/deep/hello.txt", "content": "one\ntwo\n"}),
    )
    .await;
    let diff = "--- /dev/null\n+++ b/new/deep/hello.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n";
    assert_eq!(
        structured(&result),
        &json!({
            "files": [{"path": "new/deep/hello.txt", "operation": "create", "added": 2, "removed": 0, "diff": diff}],
            "added": 2, "removed": 0, "diffTruncated": false
        })
    );
    assert_eq!(
        ok_text(&result),
        format!("create `new/deep/hello.txt` (+2 -0)\n{diff}")
    );
    assert_eq!(read(dir.path(), "new/deep/hello.txt"), "one\ntwo\n");
    // Nothing else is left beside it (no temporary file).
    let names: Vec<_> = std::fs::read_dir(dir.path().join("new/deep"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["hello.txt"]);
}

#[tokio::test]
async fn file_write_replaces_only_what_this_session_read_and_what_has_not_changed_since() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "a.txt", "old\n");
    let pack = pack(dir.path());
    let write = json!({"path": "a.txt", "content": "new\n"});

    // Not read in this session: refused, the file untouched.
    let refused = call_in(&pack, "s1", "file_write", write.clone()).await;
    assert_eq!(
        conflict_text(&refused),
        "`a.txt` exists and was not read in this session; read it with file_read first, or pass `overwrite: true` to replace it"
    );
    // Read in another session does not count.
    ok_text(&call_in(&pack, "s2", "file_read", json!({"path": "a.txt"})).await);
    conflict_text(&call_in(&pack, "s1", "file_write", write.clone()).await);
    assert_eq!(read(dir.path(), "a.txt"), "old\n");

    // Read, then changed on disk by someone else: refused.
    ok_text(&call_in(&pack, "s1", "file_read", json!({"path": "a.txt"})).await);
    std::fs::write(dir.path().join("a.txt"), "changed\n").unwrap();
    assert_eq!(
        conflict_text(&call_in(&pack, "s1", "file_write", write.clone()).await),
        "`a.txt` changed on disk since it was read in this session; read it again, or pass `overwrite: true` to replace it"
    );
    assert_eq!(read(dir.path(), "a.txt"), "changed\n");

    // Read again: allowed, and the session's own write counts as seen for the next one.
    ok_text(&call_in(&pack, "s1", "file_read", json!({"path": "a.txt"})).await);
    let written = call_in(&pack, "s1", "file_write", write.clone()).await;
    assert_eq!(
        structured(&written)["files"][0]["diff"],
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-changed\n+new\n"
    );
    ok_text(
        &call_in(
            &pack,
            "s1",
            "file_write",
            json!({"path": "a.txt", "content": "newer\n"}),
        )
        .await,
    );
    assert_eq!(read(dir.path(), "a.txt"), "newer\n");

    // `overwrite: true` replaces without a read.
    ok_text(
        &call_in(
            &pack,
            "s3",
            "file_write",
            json!({"path": "a.txt", "content": "forced\n", "overwrite": true}),
        )
        .await,
    );
    assert_eq!(read(dir.path(), "a.txt"), "forced\n");

    // A caller without a session (the command line) has read nothing.
    ok_text(&call(&pack, "file_read", json!({"path": "a.txt"})).await);
    assert_eq!(
        conflict_text(&call(&pack, "file_write", write).await),
        "`a.txt` exists, and this caller has no session in which it could have read it; pass `overwrite: true` to replace it"
    );
}

#[tokio::test]
async fn a_file_touched_but_not_changed_since_it_was_read_still_counts_as_read() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "a.txt", "same\n");
    let pack = pack(dir.path());
    ok_text(&call_in(&pack, "s", "file_read", json!({"path": "a.txt"})).await);
    // Rewritten with the same bytes (a new inode, new times): the content is what was read.
    std::fs::remove_file(dir.path().join("a.txt")).unwrap();
    std::fs::write(dir.path().join("a.txt"), "same\n").unwrap();
    ok_text(
        &call_in(
            &pack,
            "s",
            "file_write",
            json!({"path": "a.txt", "content": "other\n"}),
        )
        .await,
    );
}

#[tokio::test]
async fn crlf_files_stay_crlf_and_permissions_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(dir.path(), "win.txt", "alpha\r\nbeta\r\ngamma\r\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();
    let pack = pack(dir.path());
    // Edited with LF strings, as a model writes them.
    let edited = call(
        &pack,
        "file_edit",
        json!({"path": "win.txt", "oldString": "beta\ngamma", "newString": "BETA\nGAMMA\ndelta"}),
    )
    .await;
    ok_text(&edited);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"alpha\r\nBETA\r\nGAMMA\r\ndelta\r\n"
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o751
    );
    // Replaced whole with LF content: CRLF still.
    let written = call(
        &pack,
        "file_write",
        json!({"path": "win.txt", "content": "one\ntwo\n", "overwrite": true}),
    )
    .await;
    ok_text(&written);
    assert_eq!(std::fs::read(&path).unwrap(), b"one\r\ntwo\r\n");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o751
    );
    // A patch in LF applies to it too.
    let patched = call(
        &pack,
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Update File: win.txt\n@@\n one\n-two\n+three\n*** End Patch\n"}),
    )
    .await;
    ok_text(&patched);
    assert_eq!(std::fs::read(&path).unwrap(), b"one\r\nthree\r\n");
    // An LF file stays LF.
    write_file(dir.path(), "unix.txt", "a\nb\n");
    ok_text(
        &call(
            &pack,
            "file_edit",
            json!({"path": "unix.txt", "oldString": "b", "newString": "c"}),
        )
        .await,
    );
    assert_eq!(read(dir.path(), "unix.txt"), "a\nc\n");
}

#[tokio::test]
async fn file_edit_replaces_exactly_and_names_the_edit_that_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(
        dir.path(),
        "src/lib.rs",
        "fn a() {\n    x();\n}\n\nfn b() {\n    x();\n}\n",
    );
    let pack = pack(dir.path());
    let one = call(
        &pack,
        "file_edit",
        json!({"path": "src/lib.rs", "oldString": "fn a() {\n    x();", "newString": "fn a() {\n    y();"}),
    )
    .await;
    assert_eq!(
        structured(&one),
        &json!({
            "files": [{
                "path": "src/lib.rs", "operation": "update", "added": 1, "removed": 1,
                "diff": "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,5 +1,5 @@\n fn a() {\n-    x();\n+    y();\n }\n \n fn b() {\n"
            }],
            "added": 1, "removed": 1, "diffTruncated": false, "replacements": 1
        })
    );

    // Not unique: refused with the lines where it occurs.
    write_file(dir.path(), "src/lib.rs", "x\nx\ny\nx\n");
    let before = fingerprint(&path);
    let ambiguous = call(
        &pack,
        "file_edit",
        json!({"path": "src/lib.rs", "oldString": "x", "newString": "z"}),
    )
    .await;
    assert_eq!(
        error_text(&ambiguous),
        "`oldString` occurs 3 times in `src/lib.rs` (at lines 1, 2, 4); add surrounding lines to make it unique, or set `replaceAll`; the file was not changed"
    );
    // Several edits: the second fails, so none applies and the file is byte-identical.
    let failing = call(
        &pack,
        "file_edit",
        json!({"path": "src/lib.rs", "edits": [
            {"oldString": "y", "newString": "Y"},
            {"oldString": "nowhere", "newString": "w"},
            {"oldString": "x", "newString": "X", "replaceAll": true}
        ]}),
    )
    .await;
    assert_eq!(
        error_text(&failing),
        "edit 2 of 3: `oldString` was not found in `src/lib.rs` (after the edits before it); the file was not changed"
    );
    assert_eq!(fingerprint(&path), before);
    // The same edits that all apply: applied in order, counted.
    let all = call(
        &pack,
        "file_edit",
        json!({"path": "src/lib.rs", "edits": [
            {"oldString": "y", "newString": "Y"},
            {"oldString": "x", "newString": "X", "replaceAll": true}
        ]}),
    )
    .await;
    assert_eq!(structured(&all)["replacements"], 4);
    assert_eq!(read(dir.path(), "src/lib.rs"), "X\nX\nY\nX\n");
    // Odd requests.
    for (arguments, message) in [
        (
            json!({"path": "src/lib.rs", "oldString": "X", "newString": "X", "replaceAll": true}),
            "`oldString` and `newString` are the same; the file was not changed",
        ),
        (
            json!({"path": "src/lib.rs", "oldString": "", "newString": "a"}),
            "`oldString` is empty (use file_write to create a file); the file was not changed",
        ),
        (
            json!({"path": "missing.rs", "oldString": "a", "newString": "b"}),
            "`missing.rs` does not exist; use file_write to create it",
        ),
        (
            json!({"path": "src/lib.rs"}),
            "give `oldString` and `newString`, or `edits`",
        ),
        (
            json!({"path": "src", "oldString": "a", "newString": "b"}),
            "`src` is a directory, not a file",
        ),
    ] {
        assert_eq!(
            error_text(&call(&pack, "file_edit", arguments).await),
            message
        );
    }
}

#[tokio::test]
async fn apply_patch_applies_a_git_diff_to_all_its_files() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "keep.txt", "a\nb\nc\n");
    write_file(dir.path(), "gone.txt", "bye\n");
    write_file(dir.path(), "old/name.txt", "same\n");
    let pack = pack(dir.path());
    let patch = "\
diff --git a/keep.txt b/keep.txt
--- a/keep.txt
+++ b/keep.txt
@@ -1,3 +1,3 @@
 a
-b
+B
 c
diff --git a/added.txt b/added.txt
new file mode 100644
--- /dev/null
+++ b/added.txt
@@ -0,0 +1 @@
+hello
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/old/name.txt b/new/name.txt
similarity index 100%
rename from old/name.txt
rename to new/name.txt
";
    let result = call(&pack, "apply_patch", json!({"patch": patch})).await;
    let s = structured(&result);
    let files: Vec<(String, String)> = s["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["operation"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        files,
        [
            ("update".to_string(), "keep.txt".to_string()),
            ("create".to_string(), "added.txt".to_string()),
            ("delete".to_string(), "gone.txt".to_string()),
            ("move".to_string(), "new/name.txt".to_string()),
        ]
    );
    assert_eq!(s["files"][3]["movedFrom"], "old/name.txt");
    assert_eq!(
        (s["added"].clone(), s["removed"].clone()),
        (json!(2), json!(2))
    );
    assert_eq!(read(dir.path(), "keep.txt"), "a\nB\nc\n");
    assert_eq!(read(dir.path(), "added.txt"), "hello\n");
    assert!(!dir.path().join("gone.txt").exists());
    assert!(!dir.path().join("old/name.txt").exists());
    assert_eq!(read(dir.path(), "new/name.txt"), "same\n");
}

#[tokio::test]
async fn apply_patch_takes_the_codex_format_and_changes_all_files_or_none() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "src/main.py", "def main():\n    print('old')\n");
    write_file(dir.path(), "src/util.py", "X = 1\n");
    write_file(dir.path(), "docs/old.md", "# Old\n");
    let pack = pack(dir.path());
    let patch = "*** Begin Patch
*** Add File: src/new.py
+print('new')
*** Update File: src/main.py
@@ def main():
-    print('old')
+    print('new')
*** Delete File: src/util.py
*** Update File: docs/old.md
*** Move to: docs/new.md
@@
-# Old
+# New
*** End Patch";
    let result = call(&pack, "apply_patch", json!({"patch": patch})).await;
    assert_eq!(
        ok_text(&result)
            .lines()
            .filter(|l| !l.starts_with([' ', '+', '-', '@']))
            .collect::<Vec<_>>(),
        [
            "create `src/new.py` (+1 -0)",
            "update `src/main.py` (+1 -1)",
            "delete `src/util.py` (+0 -1)",
            "move `docs/old.md` -> `docs/new.md` (+1 -1)",
        ]
    );
    assert_eq!(read(dir.path(), "src/new.py"), "print('new')\n");
    assert_eq!(
        read(dir.path(), "src/main.py"),
        "def main():\n    print('new')\n"
    );
    assert!(!dir.path().join("src/util.py").exists());
    assert_eq!(read(dir.path(), "docs/new.md"), "# New\n");

    // The last file does not apply: nothing is written, nothing created or deleted.
    let before = fingerprint(&dir.path().join("src/main.py"));
    let broken = "*** Begin Patch
*** Add File: src/another.py
+x
*** Update File: src/main.py
@@
-    print('new')
+    print('newer')
*** Delete File: src/new.py
*** Update File: docs/new.md
@@
-# Not there
+# Never
*** End Patch";
    let refused = call(&pack, "apply_patch", json!({"patch": broken})).await;
    assert_eq!(
        error_text(&refused),
        "the lines to change were not found in `docs/new.md` (looking for `# Not there`)"
    );
    assert_eq!(fingerprint(&dir.path().join("src/main.py")), before);
    assert!(!dir.path().join("src/another.py").exists());
    assert!(dir.path().join("src/new.py").exists());

    // A hunk of a unified diff that does not apply names itself.
    let stale = "--- a/src/main.py\n+++ b/src/main.py\n@@ -1,2 +1,2 @@\n def main():\n-    print('gone')\n+    print('x')\n";
    assert_eq!(
        error_text(&call(&pack, "apply_patch", json!({"patch": stale})).await),
        "error applying hunk #1 of `src/main.py`: its context and removed lines are not in the file as they are now"
    );
    assert_eq!(
        error_text(&call(&pack, "apply_patch", json!({"patch": "just some text"})).await),
        "the patch is neither a unified diff (`--- a/path`, `+++ b/path`, `@@` hunks) nor starts with `*** Begin Patch`"
    );
}

#[tokio::test]
async fn the_approval_preview_is_the_diff_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "a.txt", "one\n");
    let pack = pack(dir.path());
    let preview = preview_in(
        &pack,
        "s",
        "file_edit",
        json!({"path": "a.txt", "oldString": "one", "newString": "two"}),
    )
    .await;
    assert_eq!(
        preview.as_deref(),
        Some("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n")
    );
    assert_eq!(read(dir.path(), "a.txt"), "one\n");
    let refused = preview_in(
        &pack,
        "s",
        "file_write",
        json!({"path": "a.txt", "content": "x"}),
    )
    .await;
    assert_eq!(
        refused.as_deref(),
        Some(
            "(the call would fail: `a.txt` exists and was not read in this session; read it with file_read first, or pass `overwrite: true` to replace it)"
        )
    );
    assert_eq!(
        preview_in(&pack, "s", "file_read", json!({"path": "a.txt"})).await,
        None
    );
}

#[tokio::test]
async fn a_write_carries_out_what_its_approval_showed_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "a.txt", "one\nkeep\n");
    let pack = pack(dir.path());
    let edit = json!({"path": "a.txt", "oldString": "one", "newString": "two"});

    // Previewed, then the file changes before the person's answer lets the call run: the
    // approved diff is not what would be written, so nothing is.
    let approval = Uuid::now_v7();
    let shown = preview_for(&pack, "s", Some(approval), "file_edit", edit.clone()).await;
    assert_eq!(
        shown.as_deref(),
        Some("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-one\n+two\n keep\n")
    );
    write_file(dir.path(), "a.txt", "one\nchanged by others\n");
    let refused = call_for(&pack, "s", Some(approval), "file_edit", edit.clone()).await;
    assert_eq!(
        conflict_text(&refused),
        "`a.txt` changed after the approval showed this call's diff, so nothing was written: \
         what was approved is not what would be written now. Read the file again and make the \
         call again to see (and approve) the new diff"
    );
    assert_eq!(read(dir.path(), "a.txt"), "one\nchanged by others\n");

    // The pin is used once; a new approval of the same call, previewed with nothing changing
    // in between, goes through.
    let again = Uuid::now_v7();
    preview_for(&pack, "s", Some(again), "file_edit", edit.clone()).await;
    let done = call_for(&pack, "s", Some(again), "file_edit", edit.clone()).await;
    assert!(!done.is_error, "{}", done.text_content());
    assert_eq!(read(dir.path(), "a.txt"), "two\nchanged by others\n");

    // A call asked about whose approval pinned nothing (the preview was another approval's)
    // is a conflict: nobody saw what it would write.
    write_file(dir.path(), "b.txt", "x\n");
    let other = json!({"path": "b.txt", "oldString": "x", "newString": "y"});
    preview_for(&pack, "s", Some(Uuid::now_v7()), "file_edit", other.clone()).await;
    let unpinned = call_for(&pack, "s", Some(Uuid::now_v7()), "file_edit", other.clone()).await;
    assert_eq!(
        conflict_text(&unpinned),
        "the approval of this call showed no diff that can be checked now (its preview was \
         refused or did not finish, or it showed a failure), so nothing was written: nobody saw \
         what would be written. Make the call again to see (and approve) the diff"
    );
    assert_eq!(read(dir.path(), "b.txt"), "x\n");

    // A call nobody was asked about (its policy is `allow`) is carried out as planned.
    let allowed = call_in(&pack, "s", "file_edit", other).await;
    assert!(!allowed.is_error, "{}", allowed.text_content());
    assert_eq!(read(dir.path(), "b.txt"), "y\n");
}

#[tokio::test]
async fn the_write_tools_are_destructive_and_declare_output_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let pack = pack(dir.path());
    for name in ["file_write", "file_edit", "apply_patch"] {
        let tool = pack.tools().into_iter().find(|t| t.name == name).unwrap();
        assert_eq!(tool.annotations.destructive_hint, Some(true), "{name}");
        assert_eq!(tool.annotations.read_only_hint, Some(false), "{name}");
        assert!(!tool.parallel, "{name}");
        assert!(tool.output_schema.is_some(), "{name}");
    }
}

/// Calls `tool` of `pack` with `arguments` in `session` (an MCP session or a chat
/// conversation), as the hub would for a call nobody was asked about.
async fn call_in(pack: &WorkspacePack, session: &str, tool: &str, arguments: Value) -> ToolResult {
    call_for(pack, session, None, tool, arguments).await
}

/// Calls `tool` as the hub does once the approval `approval` let it run.
async fn call_for(
    pack: &WorkspacePack,
    session: &str,
    approval: Option<Uuid>,
    tool: &str,
    arguments: Value,
) -> ToolResult {
    call_in_context(pack, tool, arguments, &mcp_context(session, approval)).await
}

/// What the pack would show a person asked to approve `tool` with `arguments` in `session`.
async fn preview_in(
    pack: &WorkspacePack,
    session: &str,
    tool: &str,
    arguments: Value,
) -> Option<String> {
    preview_for(pack, session, None, tool, arguments).await
}

/// What the pack shows for the approval `approval` (and pins under it).
async fn preview_for(
    pack: &WorkspacePack,
    session: &str,
    approval: Option<Uuid>,
    tool: &str,
    arguments: Value,
) -> Option<String> {
    preview_in_context(pack, tool, arguments, &mcp_context(session, approval)).await
}

/// The context of a call over MCP in `session`, let run by `approval`.
fn mcp_context(session: &str, approval: Option<Uuid>) -> CallContext {
    let mut context = CallContext::new(Channel::Mcp).with_session(session);
    context.approval = approval;
    context
}

/// Says yes, keeping the messages it was shown.
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<String>>);

#[async_trait::async_trait]
impl toolmux_core::Approver for Recorder {
    async fn approve(&self, request: &toolmux_core::ApprovalRequest) -> toolmux_core::Approval {
        self.0.lock().unwrap().push(request.message.clone());
        toolmux_core::Approval::Allow
    }
}

#[tokio::test]
async fn through_the_hub_the_person_asked_sees_the_diff_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "a.txt", "one\n");
    let hub = toolmux_core::Hub::new(
        toolmux_core::HubSettings::default(),
        std::sync::Arc::new(toolmux_core::NullSink),
    );
    hub.add_source(std::sync::Arc::new(pack(dir.path())));
    let recorder = std::sync::Arc::new(Recorder::default());
    let context = CallContext::new(Channel::Chat)
        .with_session("conversation-1")
        .with_approver(recorder.clone());
    let result = hub
        .call(
            "file_edit",
            json!({"path": "a.txt", "oldString": "one", "newString": "two"}),
            &context,
        )
        .await
        .expect("the call runs");
    ok_text(&result);
    assert_eq!(
        *recorder.0.lock().unwrap(),
        [
            "Allow `file_edit` from `workspace` to run with these arguments?\n\n\
          --- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n"
        ]
    );
    assert_eq!(read(dir.path(), "a.txt"), "two\n");
    // A read tool is allowed by default: nobody is asked.
    hub.call("file_read", json!({"path": "a.txt"}), &context)
        .await
        .expect("the read runs");
    assert_eq!(recorder.0.lock().unwrap().len(), 1);
}
