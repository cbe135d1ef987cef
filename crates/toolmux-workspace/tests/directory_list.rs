//! `directory_list`: depth, kinds, sizes, ignore rules and caps.

mod results;
mod support;

use std::os::unix::fs::symlink;

use results::{error_text, ok_text, structured};
use serde_json::json;
use support::{call, pack, pack_limited};
use toolmux_testkit::project::write_file;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(root, "Cargo.toml", "[package]\n");
    write_file(root, "src/main.rs", "fn main() {}\n");
    write_file(root, "src/deep/mod.rs", "x".repeat(2000));
    write_file(root, ".gitignore", "target/\n");
    write_file(root, "target/out", "");
    write_file(root, ".git/HEAD", "ref\n");
    symlink("src", root.join("src_link")).unwrap();
    symlink("/etc", root.join("etc_link")).unwrap();
    dir
}

#[tokio::test]
async fn directory_list_depth_one_shows_direct_children_with_kinds_and_sizes() {
    let dir = project();
    let result = call(&pack(dir.path()), "directory_list", json!({})).await;
    assert_eq!(
        ok_text(&result),
        ".gitignore  8 bytes\nCargo.toml  10 bytes\netc_link  [symlink]\nsrc/\nsrc_link  [symlink]\n"
    );
    assert_eq!(
        structured(&result),
        &json!({
            "path": ".",
            "entries": [
                {"path": ".gitignore", "kind": "file", "size": 8},
                {"path": "Cargo.toml", "kind": "file", "size": 10},
                {"path": "etc_link", "kind": "symlink"},
                {"path": "src", "kind": "dir"},
                {"path": "src_link", "kind": "symlink"}
            ],
            "truncated": false
        })
    );
}

#[tokio::test]
async fn directory_list_deeper_depth_lists_nested_entries_in_path_order() {
    let dir = project();
    let result = call(
        &pack(dir.path()),
        "directory_list",
        json!({"path": "src", "depth": 2}),
    )
    .await;
    assert_eq!(
        ok_text(&result),
        "src/deep/\nsrc/deep/mod.rs  2.0 KiB\nsrc/main.rs  13 bytes\n"
    );
    let shallow = call(&pack(dir.path()), "directory_list", json!({"path": "src"})).await;
    assert_eq!(ok_text(&shallow), "src/deep/\nsrc/main.rs  13 bytes\n");
}

#[tokio::test]
async fn directory_list_hides_ignored_entries_unless_asked() {
    let dir = project();
    let pack = pack(dir.path());
    let with = call(&pack, "directory_list", json!({"includeIgnored": true})).await;
    let paths: Vec<_> = structured(&with)["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        paths,
        [
            ".gitignore",
            "Cargo.toml",
            "etc_link",
            "src",
            "src_link",
            "target"
        ]
    );
}

#[tokio::test]
async fn directory_list_never_lists_dot_git_and_never_follows_links() {
    let dir = project();
    let result = call(
        &pack(dir.path()),
        "directory_list",
        json!({"depth": 10, "includeIgnored": true}),
    )
    .await;
    let text = ok_text(&result);
    assert!(!text.contains(".git/"), "{text}");
    assert!(!text.contains("src_link/"), "{text}");
    assert!(!text.contains("passwd"), "{text}");
}

#[tokio::test]
async fn directory_list_caps_entries_at_max_results() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..12 {
        write_file(dir.path(), &format!("f{i:02}"), "");
    }
    let pack = pack_limited(dir.path(), |l| l.max_results = 10);
    let result = call(&pack, "directory_list", json!({})).await;
    let text = ok_text(&result);
    assert!(text.starts_with("f00  0 bytes\n"));
    assert!(text.ends_with(
        "f09  0 bytes\n[showing the first 10 entries; there are more: list a subdirectory or use a smaller depth]\n"
    ));
    assert_eq!(structured(&result)["truncated"], true);
}

#[tokio::test]
async fn directory_list_output_is_capped_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..100 {
        write_file(dir.path(), &format!("{}{i:03}", "d".repeat(60)), "");
    }
    let pack = pack_limited(dir.path(), |l| l.max_output_bytes = 2048);
    let result = call(&pack, "directory_list", json!({})).await;
    let text = ok_text(&result);
    let s = structured(&result);
    let shown = s["entries"].as_array().unwrap().len();
    assert!(text.ends_with(&format!(
        "[output capped at 2 KiB after {shown} entries; list a subdirectory or use a smaller depth]\n"
    )));
    assert!(text.len() + s.to_string().len() <= 2048);
}

#[tokio::test]
async fn directory_list_of_a_file_is_refused() {
    let dir = project();
    let result = call(
        &pack(dir.path()),
        "directory_list",
        json!({"path": "Cargo.toml"}),
    )
    .await;
    assert_eq!(
        error_text(&result),
        "`Cargo.toml` is not a directory; use file_read"
    );
}

#[tokio::test]
async fn directory_list_of_an_empty_directory_says_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let result = call(
        &pack(dir.path()),
        "directory_list",
        json!({"path": "empty"}),
    )
    .await;
    assert_eq!(ok_text(&result), "`empty` has no entries to show\n");
}

#[tokio::test]
async fn directory_list_through_a_link_inside_the_root_lists_the_real_directory() {
    let dir = project();
    let result = call(
        &pack(dir.path()),
        "directory_list",
        json!({"path": "src_link"}),
    )
    .await;
    assert_eq!(structured(&result)["path"], "src");
}

#[tokio::test]
async fn directory_list_rejects_depth_above_ten() {
    let dir = project();
    let result = call(&pack(dir.path()), "directory_list", json!({"depth": 11})).await;
    assert_eq!(
        error_text(&result),
        "`depth` must be an integer from 1 to 10 (got 11)"
    );
}
