//! `grep`: regex and literal search, context, case, caps, ignore rules and binary files.

mod results;
mod support;

use results::{error_text, ok_text, structured};
use serde_json::{Value, json};
use support::{call, pack, pack_limited, pack_with, project_of};
use toolmux_core::ToolResult;
use toolmux_testkit::project::write_file;
use toolmux_workspace::{WorkspaceLimits, WorkspacePack};

fn project() -> tempfile::TempDir {
    project_of(&[
        (
            "src/main.rs",
            "use std::io;\n\nfn main() {\n    helper(1);\n}\n\nfn helper(x: u8) {}\n",
        ),
        ("src/lib.rs", "pub fn Helper() {}\n// a.b(c)\n"),
        ("README.md", "call helper() first\n"),
    ])
}

/// `grep` of `pack` with `arguments`.
async fn grep(pack: &WorkspacePack, arguments: Value) -> ToolResult {
    call(pack, "grep", arguments).await
}

/// `grep` with `arguments` in a fresh [`project`].
async fn grep_project(arguments: Value) -> ToolResult {
    let dir = project();
    grep(&pack(dir.path()), arguments).await
}

#[tokio::test]
async fn grep_finds_regex_matches_sorted_by_path_and_line() {
    let result = grep_project(json!({"pattern": r"fn \w+\("})).await;
    assert_eq!(
        ok_text(&result),
        "src/lib.rs:1: pub fn Helper() {}\nsrc/main.rs:3: fn main() {\nsrc/main.rs:7: fn helper(x: u8) {}\n"
    );
    assert_eq!(
        structured(&result),
        &json!({
            "matches": [
                {"path": "src/lib.rs", "line": 1, "text": "pub fn Helper() {}"},
                {"path": "src/main.rs", "line": 3, "text": "fn main() {"},
                {"path": "src/main.rs", "line": 7, "text": "fn helper(x: u8) {}"}
            ],
            "truncated": false,
            "filesSearched": 3
        })
    );
}

#[tokio::test]
async fn grep_literal_treats_regex_characters_as_text() {
    let dir = project();
    let pack = pack(dir.path());
    let literal = grep(&pack, json!({"pattern": "a.b(c)", "literal": true})).await;
    assert_eq!(ok_text(&literal), "src/lib.rs:2: // a.b(c)\n");
    // As a regex, `(c)` is a group and `.` any character: `a.bc` would match, `a.b(c)` not.
    let regex = grep(&pack, json!({"pattern": "a.b(c)"})).await;
    assert_eq!(structured(&regex)["matches"], json!([]));
}

#[tokio::test]
async fn grep_is_case_sensitive_by_default_and_insensitive_on_request() {
    let dir = project();
    let pack = pack(dir.path());
    let exact = grep(&pack, json!({"pattern": "Helper"})).await;
    assert_eq!(ok_text(&exact), "src/lib.rs:1: pub fn Helper() {}\n");
    let blind = grep(&pack, json!({"pattern": "HELPER", "caseSensitive": false})).await;
    assert_eq!(
        ok_text(&blind),
        "README.md:1: call helper() first\nsrc/lib.rs:1: pub fn Helper() {}\n\
         src/main.rs:4:     helper(1);\nsrc/main.rs:7: fn helper(x: u8) {}\n"
    );
}

#[tokio::test]
async fn grep_context_lines_surround_each_match() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (1..=12).map(|i| format!("row {i}\n")).collect();
    write_file(
        dir.path(),
        "t.txt",
        body.replace("row 3\n", "row 3 hit\n")
            .replace("row 5\n", "row 5 hit\n")
            .replace("row 11\n", "row 11 hit\n"),
    );
    let result = grep(&pack(dir.path()), json!({"pattern": "hit", "context": 1})).await;
    assert_eq!(
        ok_text(&result),
        "t.txt-2- row 2\nt.txt:3: row 3 hit\nt.txt-4- row 4\nt.txt:5: row 5 hit\nt.txt-6- row 6\n\
         --\nt.txt-10- row 10\nt.txt:11: row 11 hit\nt.txt-12- row 12\n"
    );
    assert_eq!(
        structured(&result)["matches"],
        json!([
            {"path": "t.txt", "line": 3, "text": "row 3 hit", "before": ["row 2"], "after": ["row 4"]},
            {"path": "t.txt", "line": 5, "text": "row 5 hit", "before": ["row 4"], "after": ["row 6"]},
            {"path": "t.txt", "line": 11, "text": "row 11 hit", "before": ["row 10"], "after": ["row 12"]}
        ])
    );
}

#[tokio::test]
async fn grep_context_is_shorter_at_the_edges_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "t.txt", "hit\nb\nc\n");
    let result = grep(&pack(dir.path()), json!({"pattern": "hit", "context": 3})).await;
    assert_eq!(
        structured(&result)["matches"],
        json!([{"path": "t.txt", "line": 1, "text": "hit", "before": [], "after": ["b", "c"]}])
    );
}

#[tokio::test]
async fn grep_stops_at_the_result_limit_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    for f in 0..20 {
        write_file(dir.path(), &format!("f{f:02}.txt"), "needle\n".repeat(50));
    }
    let pack = pack(dir.path());
    let result = grep(&pack, json!({"pattern": "needle", "limit": 7})).await;
    let text = ok_text(&result);
    assert!(
        text.ends_with(
            "[stopped at 7 matches; there are more: narrow the search or raise limit (at most 1000)]\n"
        ),
        "{text}"
    );
    let s = structured(&result);
    assert_eq!(s["matches"].as_array().unwrap().len(), 7);
    assert_eq!(s["truncated"], true);
    // It stopped early rather than searching all 20 files.
    assert!(s["filesSearched"].as_u64().unwrap() < 20, "{s}");
    // Exactly as many matches as the limit is complete, not truncated.
    write_file(dir.path(), "f00.txt", "needle\n");
    let exact = grep(
        &pack,
        json!({"pattern": "needle", "path": "f00.txt", "limit": 1}),
    )
    .await;
    assert_eq!(structured(&exact)["truncated"], false);
}

#[tokio::test]
async fn grep_output_cap_says_it_was_capped() {
    let dir = tempfile::tempdir().unwrap();
    write_file(
        dir.path(),
        "a.txt",
        format!("{}\n", "needle".repeat(50)).repeat(100),
    );
    let pack = pack_limited(dir.path(), |l| l.max_output_bytes = 4096);
    let result = grep(&pack, json!({"pattern": "needle"})).await;
    let text = ok_text(&result);
    let s = structured(&result);
    let shown = s["matches"].as_array().unwrap().len();
    assert!(shown > 0 && shown < 100, "{shown}");
    assert!(text.ends_with(&format!(
        "[output capped at 4 KiB after {shown} matches; narrow the search]\n"
    )));
    assert_eq!(s["truncated"], true);
    assert!(text.len() + s.to_string().len() <= 4096);
}

#[tokio::test]
async fn grep_invalid_regex_quotes_the_regex_error() {
    let result = grep_project(json!({"pattern": "fn (main"})).await;
    let message = error_text(&result);
    assert!(
        message.starts_with("invalid regex `fn (main`: "),
        "{message}"
    );
    assert!(message.contains("unclosed group"), "{message}");
}

#[tokio::test]
async fn grep_glob_filters_files() {
    let dir = project();
    let pack = pack(dir.path());
    let rs = grep(&pack, json!({"pattern": "helper", "glob": "*.rs"})).await;
    assert_eq!(
        ok_text(&rs),
        "src/main.rs:4:     helper(1);\nsrc/main.rs:7: fn helper(x: u8) {}\n"
    );
    assert_eq!(structured(&rs)["filesSearched"], 2);
    let md = grep(&pack, json!({"pattern": "helper", "glob": "**/*.md"})).await;
    assert_eq!(ok_text(&md), "README.md:1: call helper() first\n");
    let bad = grep(&pack, json!({"pattern": "x", "glob": "{a"})).await;
    assert_eq!(
        error_text(&bad),
        "invalid glob `{a`: unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"
    );
}

#[tokio::test]
async fn grep_skips_binary_files() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "blob.bin", b"needle\0\x01\x02needle\n");
    write_file(dir.path(), "text.txt", "needle\n");
    let result = grep(&pack(dir.path()), json!({"pattern": "needle"})).await;
    assert_eq!(ok_text(&result), "text.txt:1: needle\n");
}

#[tokio::test]
async fn grep_honours_gitignore_outside_a_git_repo() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), ".gitignore", "build/\n");
    write_file(dir.path(), "build/out.txt", "needle\n");
    write_file(dir.path(), ".hidden/keep.txt", "needle\n");
    write_file(dir.path(), ".git/HEAD", "needle\n");
    let result = grep(&pack(dir.path()), json!({"pattern": "needle"})).await;
    assert_eq!(ok_text(&result), ".hidden/keep.txt:1: needle\n");
}

#[tokio::test]
async fn grep_shortens_long_lines_around_the_match() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!("{}needle{}", "a".repeat(2000), "b".repeat(2000));
    write_file(dir.path(), "min.js", format!("{line}\n"));
    let result = grep(&pack(dir.path()), json!({"pattern": "needle"})).await;
    let text = structured(&result)["matches"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        text,
        format!("…{}needle{}…", "a".repeat(100), "b".repeat(394))
    );
}

#[tokio::test]
async fn grep_reports_files_searched_when_nothing_matches() {
    let dir = project();
    let result = grep(
        &pack(dir.path()),
        json!({"pattern": "zebra", "path": "src"}),
    )
    .await;
    assert_eq!(
        ok_text(&result),
        "no matches for `zebra` under `src` (2 files searched)\n"
    );
    assert_eq!(
        structured(&result),
        &json!({"matches": [], "truncated": false, "filesSearched": 2})
    );
}

#[tokio::test]
async fn grep_searches_a_single_file_path() {
    let dir = project();
    let result = grep(
        &pack(dir.path()),
        json!({"pattern": "fn", "path": "src/main.rs"}),
    )
    .await;
    assert_eq!(
        ok_text(&result),
        "src/main.rs:3: fn main() {\nsrc/main.rs:7: fn helper(x: u8) {}\n"
    );
}

#[tokio::test]
async fn grep_rejects_context_above_ten() {
    let result = grep_project(json!({"pattern": "fn", "context": 11})).await;
    assert_eq!(
        error_text(&result),
        "`context` must be an integer from 0 to 10 (got 11)"
    );
}

#[tokio::test]
async fn d5_grep_skips_a_file_with_a_line_longer_than_the_heap_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // One line of 1 MiB before the needle: far over the 64 KiB limit below. Without a limit
    // the searcher holds the whole line (a 1 GB line cost 1.9 GB per call).
    let mut huge = "a".repeat(1 << 20);
    huge.push_str(" NEEDLE\nNEEDLE on a short line\n");
    write_file(root, "huge.txt", huge);
    write_file(root, "small.txt", "a NEEDLE here\n");
    let limits = WorkspaceLimits {
        max_line_bytes: 64 * 1024,
        ..WorkspaceLimits::default()
    };
    let result = grep(&pack_with(root, limits), json!({"pattern": "NEEDLE"})).await;
    let text = ok_text(&result);
    assert!(
        text.contains("[1 file not searched to the end: `huge.txt` (a line longer than 64 KiB)]"),
        "{text}"
    );
    assert_eq!(
        structured(&result),
        &json!({
            "matches": [{"path": "small.txt", "line": 1, "text": "a NEEDLE here"}],
            "truncated": false,
            "filesSearched": 2,
            "skipped": [{"path": "huge.txt", "reason": "a line longer than 64 KiB"}],
            "filesSkipped": 1
        })
    );
}

#[tokio::test]
async fn d5_a_zero_line_limit_is_refused_when_the_pack_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let limits = WorkspaceLimits {
        max_line_bytes: 0,
        ..WorkspaceLimits::default()
    };
    let err = toolmux_workspace::WorkspacePack::new(dir.path(), limits).unwrap_err();
    assert_eq!(
        err.to_string(),
        "workspace limit `max_line_bytes` must be at least 1"
    );
}

/// The glob of issue 12: `{a,` 5000 times, `b`, then 5000 `}`.
fn nested_alternates() -> String {
    format!("{}b{}", "{a,".repeat(5000), "}".repeat(5000))
}

#[tokio::test]
async fn d16_a_deeply_nested_glob_is_a_clean_error_not_a_panic() {
    let dir = project();
    let result = grep(
        &pack(dir.path()),
        json!({"pattern": "helper", "glob": nested_alternates()}),
    )
    .await;
    let message = error_text(&result);
    assert!(!message.contains("panicked"), "{message}");
    assert_eq!(
        message,
        "the glob is 20001 bytes long; at most 4096 are accepted"
    );
    // Under the length cap, the nesting cap answers.
    let glob = format!("{}b{}", "{a,".repeat(500), "}".repeat(500));
    let result = grep(
        &pack(dir.path()),
        json!({"pattern": "helper", "glob": glob}),
    )
    .await;
    assert_eq!(
        error_text(&result),
        "the glob nests `{…}` alternatives 500 deep; at most 16 levels are accepted"
    );
}
