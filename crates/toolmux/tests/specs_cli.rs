//! `toolmux specs …`, driven as a user would drive it, on scratch projects that keep LeanSpec
//! specs: human output and JSON, writes through the pipeline's policies, exit codes.

mod support;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::project::TestProject;

const AUTH: &str = "---\nstatus: planned\ncreated: '2025-01-02'\npriority: high\ntags:\n  - api\n  - auth\n---\n\n# Auth refresh\n\n## Overview\n\nRefresh tokens before they expire.\n\n## Plan\n\n- [ ] write tests\n- [ ] ship it\n";
const LEGACY: &str = "---\nstatus: in-progress\ncreated: '2025-01-05'\npriority: low\ntags: [auth]\ndepends_on:\n  - 001-auth-refresh\n---\n\n# Legacy login\n\nKeep the legacy auth flow working.\n";
const LIMITS: &str = "---\nstatus: complete\ncreated: '2025-02-01'\ntags: [api]\n---\n\n# Rate limits\n\nLimit requests per key.\n";

/// A project with three specs under `specs/`.
fn specs_project() -> TestProject {
    let project = toolmux_project();
    project.write("specs/001-auth-refresh/README.md", AUTH);
    project.write("specs/002-legacy-login/README.md", LEGACY);
    project.write("specs/003-rate-limits/README.md", LIMITS);
    project
}

/// The same project with the spec tools' writes allowed, the documented way to let a script
/// (or a test, which has no terminal) write.
fn writable_project() -> TestProject {
    let project = specs_project();
    project.config(r#"{"policies": {"sources": {"specs": "allow"}}}"#);
    project
}

fn ids(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap_or_else(|| panic!("no `{key}` in {list}"))
        .iter()
        .map(|s| s["id"].as_str().expect("an id").to_string())
        .collect()
}

/// The table rows (after the header) whose first column is each id, in order.
fn first_column(table: &str) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

fn read(project: &TestProject, relative: &str) -> String {
    std::fs::read_to_string(project.path().join(relative)).expect("read the spec")
}

#[test]
fn list_prints_an_aligned_table_and_the_tools_own_json() {
    let project = specs_project();
    let table = project.run(&["specs", "list"]).ok();
    let mut lines = table.lines();
    let header = lines.next().expect("a header");
    for column in ["ID", "STATUS", "PRIORITY", "TITLE", "TAGS"] {
        assert!(header.contains(column), "{header}");
    }
    assert_eq!(
        first_column(&table),
        ["001-auth-refresh", "002-legacy-login", "003-rate-limits"]
    );
    // Aligned: every row's title starts in the header's TITLE column.
    let title_at = header.find("TITLE").expect("TITLE");
    for (row, title) in lines.zip(["Auth refresh", "Legacy login", "Rate limits"]) {
        assert_eq!(row.find(title), Some(title_at), "{table}");
    }
    assert!(table.contains("api, auth"), "{table}");

    // --json is the tool's structured result, the same as calling the tool by hand.
    let json = project.run(&["specs", "list", "--json"]).json();
    let by_hand = project
        .run(&["tools", "call", "spec_list", "--json"])
        .json();
    assert_eq!(json, by_hand["structuredContent"]);
    assert_eq!(json["count"], 3);
    assert_eq!(json["specs"][0]["priority"], "high");
}

#[test]
fn list_filters_by_status_tag_and_priority() {
    let project = specs_project();
    let api = project
        .run(&["specs", "list", "--tag", "api", "--json"])
        .json();
    assert_eq!(ids(&api, "specs"), ["001-auth-refresh", "003-rate-limits"]);
    let planned = project
        .run(&[
            "specs",
            "list",
            "--status",
            "planned",
            "--tag",
            "auth",
            "--priority",
            "high",
        ])
        .ok();
    assert_eq!(first_column(&planned), ["001-auth-refresh"]);
    let none = project
        .run(&["specs", "list", "-s", "complete", "-p", "high"])
        .ok();
    assert_eq!(none.trim(), "no specs");
    // clap knows the values, so a typo is a usage error that lists them.
    let typo = project.run(&["specs", "list", "--status", "planed"]);
    assert_eq!(typo.code(), 2);
    assert!(typo.stderr().contains("in-progress"), "{}", typo.stderr());
}

#[test]
fn view_prints_metadata_then_content_and_json_carries_the_hash() {
    let project = specs_project();
    let text = project.run(&["specs", "view", "2"]).ok();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("002-legacy-login — Legacy login"));
    assert_eq!(
        lines.next(),
        Some("status: in-progress  priority: low  created: 2025-01-05")
    );
    assert!(text.contains("\ndepends on: 001-auth-refresh\n"), "{text}");
    assert!(
        text.contains("\nfile: 002-legacy-login/README.md\n"),
        "{text}"
    );
    assert!(
        text.trim_end()
            .ends_with("# Legacy login\n\nKeep the legacy auth flow working."),
        "{text}"
    );

    let json = project.run(&["specs", "view", "001", "--json"]).json();
    assert_eq!(json["id"], "001-auth-refresh");
    assert_eq!(json["requiredBy"], json!(["002-legacy-login"]));
    let hash = json["contentHash"].as_str().expect("a hash");
    assert_eq!(hash.len(), 64, "{json}");
    assert!(
        project
            .run(&["specs", "view", "auth-refresh"])
            .ok()
            .contains(&format!("contentHash: {hash}"))
    );
}

#[test]
fn an_unknown_spec_is_refused_with_exit_code_4() {
    let project = specs_project();
    for args in [
        vec!["specs", "view", "999"],
        vec!["specs", "view", "999", "--json"],
    ] {
        let run = project.run(&args);
        assert_eq!(run.code(), 4, "{}", run.stderr());
        assert_eq!(run.stderr().trim(), "toolmux: spec not found: `999`");
        assert_eq!(run.stdout(), "");
    }
    // A fragment two specs share is a conflict (ambiguous), refused the same way.
    let run = project.run(&["specs", "view", "l"]);
    assert_eq!(run.code(), 4);
    assert!(
        run.stderr().contains("`l` is ambiguous: it matches "),
        "{}",
        run.stderr()
    );
}

#[test]
fn search_ranks_with_leanspec_syntax() {
    let project = specs_project();
    let table = project.run(&["specs", "search", "auth NOT legacy"]).ok();
    assert!(table.lines().next().is_some_and(|h| h.contains("SCORE")));
    let hits: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(hits, ["001-auth-refresh"], "{table}");
    // Words given unquoted are one query; --json is the tool's result.
    let json = project.run(&["specs", "search", "auth", "--json"]).json();
    assert_eq!(json["query"], "auth");
    assert_eq!(
        ids(&json, "results"),
        ["001-auth-refresh", "002-legacy-login"]
    );
    let limited = project
        .run(&["specs", "search", "auth", "--limit", "1", "--json"])
        .json();
    assert_eq!(limited["count"], 1);
    let nothing = project.run(&["specs", "search", "zebra"]).ok();
    assert_eq!(nothing.trim(), "no specs match \"zebra\"");
    // A query that does not parse is the tool refusing it as invalid.
    let bad = project.run(&["specs", "search", "auth AND"]);
    assert_eq!(bad.code(), 4, "{}", bad.stderr());
    assert_eq!(
        bad.stderr().trim(),
        "toolmux: invalid search query: Query ends with an operator"
    );
}

#[test]
fn a_write_without_a_terminal_is_denied_until_the_policy_allows_it() {
    let project = specs_project();
    let before = read(&project, "specs/001-auth-refresh/README.md");
    // Tests have no terminal: nobody can answer the `ask` that writes get by default.
    let run = project.run(&["specs", "update", "1", "--status", "in-progress"]);
    assert_eq!(run.code(), 4);
    assert_eq!(
        run.stderr().trim(),
        "toolmux: tool `spec_update` was denied: its policy is `ask` (tool annotations) and \
         there is no one to ask on the cli channel; to run it without asking, set \"policies\": \
         {\"tools\": {\"spec_update\": \"allow\"}} in .toolmux/config.json"
    );
    assert_eq!(read(&project, "specs/001-auth-refresh/README.md"), before);
    let create = project.run(&["specs", "create", "new-thing"]);
    assert_eq!(create.code(), 4);
    assert!(!project.path().join("specs/004-new-thing").exists());

    // What the message says to do works.
    project.config(r#"{"policies": {"tools": {"spec_update": "allow"}}}"#);
    let out = project
        .run(&["specs", "update", "1", "--status", "in-progress"])
        .ok();
    assert!(out.starts_with("updated 001-auth-refresh: status"), "{out}");
    let after = read(&project, "specs/001-auth-refresh/README.md");
    assert!(after.contains("status: in-progress\n"), "{after}");
    assert!(after.contains("transitions:"), "{after}");
    // Only the frontmatter changed.
    assert_eq!(
        after.split("\n---\n").nth(1),
        before.split("\n---\n").nth(1)
    );

    // Both calls went through the pipeline and its log, on the CLI channel.
    let logged: Vec<Value> = project
        .run(&["logs", "--tool", "spec_update", "--json"])
        .ok()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let outcomes: Vec<&str> = logged
        .iter()
        .map(|e| e["outcome"].as_str().expect("outcome"))
        .collect();
    assert_eq!(outcomes, ["denied", "ok"]);
    assert!(logged.iter().all(|e| e["channel"] == "cli"));
}

#[test]
fn create_then_view_the_new_spec() {
    let project = writable_project();
    let out = project
        .run(&[
            "specs",
            "create",
            "my-feature",
            "--title",
            "My feature",
            "--priority",
            "high",
            "--tag",
            "x",
            "--tags",
            "y,z",
            "--depends-on",
            "1",
        ])
        .ok();
    assert_eq!(
        out.trim(),
        "created 004-my-feature/README.md (004-my-feature, planned, high)"
    );
    let spec = project.run(&["specs", "view", "4", "--json"]).json();
    assert_eq!(spec["title"], "My feature");
    assert_eq!(spec["priority"], "high");
    assert_eq!(spec["tags"], json!(["x", "y", "z"]));
    assert_eq!(spec["dependsOn"], json!(["001-auth-refresh"]));
    let text = project.run(&["specs", "view", "my-feature"]).ok();
    assert!(text.starts_with("004-my-feature — My feature\n"), "{text}");

    // A body from a file, and the JSON of a create.
    project.write("body.md", "# From a file\n\nWritten elsewhere.\n");
    let created = project
        .run(&["specs", "create", "from-file", "-f", "body.md", "--json"])
        .json();
    assert_eq!(created["id"], "005-from-file");
    assert!(read(&project, "specs/005-from-file/README.md").contains("Written elsewhere."));
}

#[test]
fn update_toggles_checklist_items_tags_and_text_guarded_by_the_hash() {
    let project = writable_project();
    let hash = project.run(&["specs", "view", "1", "--json"]).json()["contentHash"]
        .as_str()
        .expect("hash")
        .to_string();
    let updated = project
        .run(&[
            "specs",
            "update",
            "1",
            "--check",
            "write tests",
            "--add-tag",
            "security",
            "--remove-tag",
            "api",
            "--replace",
            "before they expire",
            "ahead of expiry",
            "--section",
            "Overview",
            "--append",
            "More to say.",
            "--expected-hash",
            &hash,
            "--json",
        ])
        .json();
    assert_eq!(updated["previousContentHash"], hash.as_str());
    let file = read(&project, "specs/001-auth-refresh/README.md");
    assert!(file.contains("- [x] write tests\n- [ ] ship it"), "{file}");
    assert!(file.contains("Refresh tokens ahead of expiry."), "{file}");
    assert!(file.contains("More to say."), "{file}");
    let spec = project.run(&["specs", "view", "1", "--json"]).json();
    assert_eq!(spec["tags"], json!(["auth", "security"]));

    // The hash read before is stale now: the update is refused and nothing is written.
    let stale = project.run(&[
        "specs",
        "update",
        "1",
        "--uncheck",
        "write tests",
        "--expected-hash",
        &hash,
    ]);
    assert_eq!(stale.code(), 4);
    assert!(
        stale.stderr().contains("content hash mismatch"),
        "{}",
        stale.stderr()
    );
    assert_eq!(read(&project, "specs/001-auth-refresh/README.md"), file);

    // Completing with an unchecked item is refused unless forced.
    let refused = project.run(&["specs", "update", "1", "--status", "complete"]);
    assert_eq!(refused.code(), 4, "{}", refused.stderr());
    project
        .run(&["specs", "update", "1", "--status", "complete", "--force"])
        .ok();
    assert_eq!(
        project.run(&["specs", "view", "1", "--json"]).json()["status"],
        "complete"
    );
    // A section edit needs its section.
    let usage = project.run(&["specs", "update", "1", "--append", "x"]);
    assert_eq!(usage.code(), 2);
}

#[test]
fn validate_exits_1_on_an_error_like_a_linter() {
    let project = specs_project();
    let clean = project.run(&["specs", "validate"]);
    assert_eq!(clean.code(), 0, "{}", clean.stderr());
    assert!(
        clean
            .stdout()
            .trim_end()
            .ends_with("3 specs checked: 0 errors, 0 warnings"),
        "{}",
        clean.stdout()
    );

    project.write(
        "specs/004-no-title/README.md",
        "---\nstatus: planned\ncreated: 'last tuesday'\n---\n\nNo heading here.\n",
    );
    let dirty = project.run(&["specs", "validate"]);
    assert_eq!(dirty.code(), 1);
    let out = dirty.stdout();
    assert!(
        out.lines()
            .any(|l| l.starts_with("004-no-title/README.md:") && l.contains(": error: ")),
        "{out}"
    );
    let json = project.run(&["specs", "validate", "4", "--json"]);
    assert_eq!(json.code(), 1);
    let report: Value = serde_json::from_str(&json.stdout()).expect("JSON");
    assert_eq!(report["valid"], false);
    assert_eq!(ids(&report, "specs"), ["004-no-title"]);
    // One spec at a time: the clean one passes.
    assert_eq!(project.run(&["specs", "validate", "1"]).code(), 0);
}

#[test]
fn board_groups_specs_in_a_table() {
    let project = specs_project();
    let table = project
        .run(&["specs", "board", "--group-by", "priority"])
        .ok();
    let header = table.lines().next().expect("header");
    assert!(header.starts_with("GROUP  "), "{table}");
    let groups: Vec<&str> = table
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split("  ").next().expect("a group").trim())
        .collect();
    assert_eq!(groups, ["low (1)", "high (1)", "(none) (1)"], "{table}");
    let json = project
        .run(&["specs", "board", "-g", "tags", "--json"])
        .json();
    assert_eq!(json["groupBy"], "tags");
    let names: Vec<&str> = json["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["api", "auth"]);
    let filtered = project
        .run(&["specs", "board", "--status", "planned", "--json"])
        .json();
    assert_eq!(filtered["total"], 1);
}

#[test]
fn stats_and_tokens_summarise_the_specs() {
    let project = specs_project();
    let stats = project.run(&["specs", "stats"]).ok();
    assert!(
        stats
            .lines()
            .any(|l| l.contains("total") && l.contains("3 specs")),
        "{stats}"
    );
    assert!(
        stats
            .lines()
            .any(|l| l.contains("by status") && l.contains("planned 1, in-progress 1, complete 1")),
        "{stats}"
    );
    let json = project.run(&["specs", "stats", "--json"]).json();
    assert_eq!(json["total"], 3);
    assert_eq!(json["completionPercentage"], 33.3);

    let tokens = project.run(&["specs", "tokens"]).ok();
    assert!(tokens.starts_with("TOKENS  FILE"), "{tokens}");
    assert!(tokens.contains("003-rate-limits/README.md"), "{tokens}");
    let one = project.run(&["specs", "tokens", "1", "--json"]).json();
    assert_eq!(one["items"].as_array().map(Vec::len), Some(1));
    assert!(one["total"].as_u64().is_some_and(|n| n > 10));
}

#[test]
fn link_deps_and_unlink_edit_relationships() {
    let project = writable_project();
    let out = project
        .run(&["specs", "link", "3", "--depends-on", "2"])
        .ok();
    assert_eq!(
        out.trim(),
        "linked 003-rate-limits depends_on 002-legacy-login"
    );
    let deps = project.run(&["specs", "deps", "2"]).ok();
    assert!(deps.starts_with("002-legacy-login\n"), "{deps}");
    assert!(
        deps.lines()
            .any(|l| l.contains("required by") && l.contains("003-rate-limits")),
        "{deps}"
    );
    // A cycle is refused.
    let cycle = project.run(&["specs", "link", "1", "--depends-on", "3"]);
    assert_eq!(cycle.code(), 4, "{}", cycle.stderr());
    project
        .run(&["specs", "unlink", "3", "--depends-on", "2"])
        .ok();
    let json = project.run(&["specs", "deps", "3", "--json"]).json();
    assert_eq!(json["dependsOn"], json!([]));
    // Exactly one kind of link.
    assert_eq!(project.run(&["specs", "link", "3"]).code(), 2);
}

#[test]
fn a_project_without_specs_is_told_where_toolmux_looked() {
    let project = toolmux_project();
    let run = project.run(&["specs", "list"]);
    assert_eq!(run.code(), 4);
    let message = run.stderr();
    assert!(
        message.starts_with("toolmux: no specs directory in "),
        "{message}"
    );
    for place in [
        "`specs`",
        "`.lean-spec/specs`",
        "`doc/specs`",
        "`docs/specs`",
        "specsDir",
    ] {
        assert!(message.contains(place), "{place} missing from {message}");
    }
    assert_eq!(run.stdout(), "");

    // LeanSpec's config can put them elsewhere.
    project.write(".lean-spec/config.json", r#"{"specsDir": "planning"}"#);
    project.write("planning/001-elsewhere/README.md", LIMITS);
    let found = project.run(&["specs", "list", "--json"]).json();
    assert_eq!(ids(&found, "specs"), ["001-elsewhere"]);
    // A LeanSpec config that does not parse is a configuration error, named with its file.
    project.write(".lean-spec/config.json", "{not json");
    let broken = project.run(&["specs", "list"]);
    assert_eq!(broken.code(), 3);
    assert!(
        broken
            .stderr()
            .contains("toolmux: invalid configuration: the spec tools are not available: ")
            && broken.stderr().contains(".lean-spec/config.json"),
        "{}",
        broken.stderr()
    );
}

/// A child that is killed if the test fails while it runs, so that none outlives the test.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// At a terminal, a write is put to the person first and their answer decides. `script`
/// (util-linux) gives the command a pseudo-terminal, as a person's shell would; the answer is
/// typed once the question is on the screen.
#[test]
fn a_write_at_a_terminal_asks_first_and_the_answer_decides() {
    let project = specs_project();
    let command = format!(
        "'{}' specs update 1 --status in-progress",
        env!("CARGO_BIN_EXE_toolmux")
    );
    for (answer, code, status) in [("n", 4, "planned"), ("y", 0, "in-progress")] {
        let mut child = Running(
            Command::new("script")
                .args(["--quiet", "--return", "--command", &command, "/dev/null"])
                .current_dir(project.path())
                .env("HOME", project.home())
                .env("XDG_CONFIG_HOME", project.home().join(".config"))
                .env_remove("TOOLMUX_PROJECT")
                .env_remove("TOOLMUX_LOG")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("start `script` (util-linux)"),
        );
        let screen = Arc::new(Mutex::new(String::new()));
        let mut out = child.0.stdout.take().expect("stdout");
        let shown = screen.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                shown
                    .lock()
                    .expect("screen")
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let on_screen = || screen.lock().expect("screen").clone();
        wait_until("the approval question", || on_screen().contains("Run it?"));
        assert!(on_screen().contains("spec_update"), "{}", on_screen());
        let mut stdin = child.0.stdin.take().expect("stdin");
        stdin.write_all(answer.as_bytes()).expect("type the answer");
        stdin.flush().expect("flush");
        let mut exit = None;
        wait_until("the command to end", || {
            exit = child.0.try_wait().expect("wait");
            exit.is_some()
        });
        drop(stdin);
        reader.join().expect("reader");
        assert_eq!(
            exit.and_then(|e| e.code()),
            Some(code),
            "answer {answer}:\n{}",
            on_screen()
        );
        let spec = project.run(&["specs", "view", "1", "--json"]).json();
        assert_eq!(spec["status"], status, "answer {answer}:\n{}", on_screen());
    }
}

#[test]
fn several_tags_match_all_of_them_unless_any_tag_is_given() {
    let project = specs_project();
    let all = project
        .run(&["specs", "list", "--tag", "api", "--tag", "auth", "--json"])
        .json();
    assert_eq!(ids(&all, "specs"), ["001-auth-refresh"]);
    let any = project
        .run(&["specs", "list", "--tag", "api,auth", "--any-tag", "--json"])
        .json();
    assert_eq!(
        ids(&any, "specs"),
        ["001-auth-refresh", "002-legacy-login", "003-rate-limits"]
    );
}
