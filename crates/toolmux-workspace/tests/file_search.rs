//! `file_search`: globs over root-relative paths, ignore rules, caps.

mod results;
mod support;

use results::{error_text, ok_text, structured};
use serde_json::{Value, json};
use support::{call, pack, pack_limited, project_of};
use toolmux_core::ToolResult;
use toolmux_testkit::project::write_file;
use toolmux_workspace::WorkspacePack;

fn project() -> tempfile::TempDir {
    project_of(&[
        ("Cargo.toml", "[workspace]\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("src/lib.rs", "\n"),
        ("src/deep/mod.rs", "\n"),
        ("src/config.toml", "\n"),
        ("src/deep/nested.toml", "\n"),
        (".github/workflows/ci.yml", "\n"),
        (".git/config", "[core]\n"),
        (".git/hooks/x.rs", "\n"),
        (".gitignore", "target/\n*.log\n"),
        ("target/debug/build.rs", "\n"),
        ("run.log", "\n"),
    ])
}

/// `file_search` of `pack` with `arguments`.
async fn search(pack: &WorkspacePack, arguments: Value) -> ToolResult {
    call(pack, "file_search", arguments).await
}

/// `file_search` with `arguments` in a fresh [`project`].
async fn search_project(arguments: Value) -> ToolResult {
    let dir = project();
    search(&pack(dir.path()), arguments).await
}

#[tokio::test]
async fn file_search_matches_globs_against_root_relative_paths_sorted() {
    let result = search_project(json!({"pattern": "**/*.rs"})).await;
    assert_eq!(
        ok_text(&result),
        "src/deep/mod.rs\nsrc/lib.rs\nsrc/main.rs\n"
    );
    assert_eq!(
        structured(&result),
        &json!({"files": ["src/deep/mod.rs", "src/lib.rs", "src/main.rs"], "truncated": false})
    );
}

#[tokio::test]
async fn file_search_star_stays_within_one_directory() {
    let result = search_project(json!({"pattern": "src/*.toml"})).await;
    assert_eq!(structured(&result)["files"], json!(["src/config.toml"]));
}

#[tokio::test]
async fn file_search_without_a_slash_matches_names_at_any_depth() {
    let result = search_project(json!({"pattern": "*.toml"})).await;
    assert_eq!(
        structured(&result)["files"],
        json!(["Cargo.toml", "src/config.toml", "src/deep/nested.toml"])
    );
}

#[tokio::test]
async fn file_search_honours_gitignore_outside_a_git_repo() {
    let dir = project();
    // No `.git` directory at all: `.gitignore` must still apply.
    std::fs::remove_dir_all(dir.path().join(".git")).unwrap();
    let pack = pack(dir.path());
    let rs = search(&pack, json!({"pattern": "**/build.rs"})).await;
    assert_eq!(structured(&rs)["files"], json!([]));
    let logs = search(&pack, json!({"pattern": "*.log"})).await;
    assert_eq!(structured(&logs)["files"], json!([]));
}

#[tokio::test]
async fn file_search_includes_hidden_files_but_never_dot_git() {
    let dir = project();
    let pack = pack(dir.path());
    let hidden = search(&pack, json!({"pattern": "**/*.yml"})).await;
    assert_eq!(
        structured(&hidden)["files"],
        json!([".github/workflows/ci.yml"])
    );
    let git = search(&pack, json!({"pattern": ".git/**"})).await;
    assert_eq!(structured(&git)["files"], json!([]));
    let all = search(&pack, json!({"pattern": "**"})).await;
    assert_eq!(
        structured(&all)["files"],
        json!([
            ".github/workflows/ci.yml",
            ".gitignore",
            "Cargo.toml",
            "src/config.toml",
            "src/deep/mod.rs",
            "src/deep/nested.toml",
            "src/lib.rs",
            "src/main.rs"
        ])
    );
}

#[tokio::test]
async fn file_search_from_a_subdirectory_still_reports_root_relative_paths() {
    let dir = project();
    let result = search(
        &pack(dir.path()),
        json!({"pattern": "**/*.rs", "path": "src/deep"}),
    )
    .await;
    assert_eq!(structured(&result)["files"], json!(["src/deep/mod.rs"]));
    // The glob is matched against the root-relative path, not the one below `path`.
    let relative = search(
        &pack(dir.path()),
        json!({"pattern": "mod.rs", "path": "src"}),
    )
    .await;
    assert_eq!(structured(&relative)["files"], json!(["src/deep/mod.rs"]));
}

#[tokio::test]
async fn file_search_stops_at_the_limit_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..30 {
        write_file(dir.path(), &format!("f{i:02}.txt"), "");
    }
    let pack = pack_limited(dir.path(), |l| l.max_results = 20);
    let result = search(&pack, json!({"pattern": "*.txt", "limit": 5})).await;
    assert_eq!(
        ok_text(&result),
        "f00.txt\nf01.txt\nf02.txt\nf03.txt\nf04.txt\n\
         [showing the first 5 matching files; there are more: narrow the pattern or raise limit (at most 20)]\n"
    );
    assert_eq!(structured(&result)["truncated"], true);
    // The default limit is capped by `max_results`.
    let capped = search(&pack, json!({"pattern": "*.txt"})).await;
    assert!(
        ok_text(&capped).ends_with(
            "[showing the first 20 matching files; there are more: narrow the pattern]\n"
        )
    );
    // Exactly `limit` matches is not truncated.
    let exact = search(&pack, json!({"pattern": "f0*.txt", "limit": 10})).await;
    assert_eq!(structured(&exact)["truncated"], false);
    assert_eq!(structured(&exact)["files"].as_array().unwrap().len(), 10);
}

#[tokio::test]
async fn file_search_output_is_capped_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..200 {
        write_file(dir.path(), &format!("{}{i:03}.txt", "n".repeat(40)), "");
    }
    let pack = pack_limited(dir.path(), |l| l.max_output_bytes = 4096);
    let result = search(&pack, json!({"pattern": "*.txt"})).await;
    let text = ok_text(&result);
    // Each 47-byte path costs 98 bytes of the 3584 left after the reserve: 36 fit.
    assert!(
        text.ends_with(
            "[output capped at 4 KiB: showing the first 36 matching files; narrow the pattern]\n"
        ),
        "{text}"
    );
    assert_eq!(structured(&result)["truncated"], true);
    assert!(text.len() + structured(&result).to_string().len() <= 4096);
}

#[tokio::test]
async fn file_search_invalid_glob_is_a_tool_error() {
    let result = search_project(json!({"pattern": "src/[a"})).await;
    assert_eq!(
        error_text(&result),
        "invalid glob `src/[a`: unclosed character class; missing ']'"
    );
}

#[tokio::test]
async fn file_search_reports_when_nothing_matches() {
    let result = search_project(json!({"pattern": "*.py", "path": "src"})).await;
    assert_eq!(ok_text(&result), "no files match `*.py` under `src`\n");
    assert_eq!(
        structured(&result),
        &json!({"files": [], "truncated": false})
    );
}

#[tokio::test]
async fn d16_a_deeply_nested_glob_is_a_clean_error_not_a_panic() {
    let dir = project();
    let pattern = format!("{}b{}", "{a,".repeat(5000), "}".repeat(5000));
    let result = search(&pack(dir.path()), json!({"pattern": pattern})).await;
    let message = error_text(&result);
    assert!(!message.contains("panicked"), "{message}");
    assert_eq!(
        message,
        "the glob is 20001 bytes long; at most 4096 are accepted"
    );
    // Nesting up to the cap still works.
    let pattern = format!("{}main.rs{}", "{x,".repeat(16), "}".repeat(16));
    let result = search(&pack(dir.path()), json!({"pattern": pattern})).await;
    assert_eq!(ok_text(&result), "src/main.rs\n");
}
