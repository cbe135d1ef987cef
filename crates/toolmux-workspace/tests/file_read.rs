//! `file_read`: windows of lines, caps, and refusals, on real files.

mod results;
mod support;

use results::{error_text, ok_text, structured};
use serde_json::{Value, json};
use support::{call, limits_with, pack, pack_limited, pack_with};
use toolmux_core::ToolResult;
use toolmux_testkit::fifo::mkfifo;
use toolmux_testkit::project::write_file;
use toolmux_workspace::{WorkspaceLimits, WorkspacePack};

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i:03}\n")).collect()
}

/// `file_read` of `pack` with `arguments`.
async fn read(pack: &WorkspacePack, arguments: Value) -> ToolResult {
    call(pack, "file_read", arguments).await
}

/// `file_read` of `pack` with `arguments` fails with exactly `expected`.
async fn assert_read_refused(pack: &WorkspacePack, arguments: Value, expected: &str) {
    let asked = arguments.to_string();
    assert_eq!(
        error_text(&read(pack, arguments).await),
        expected,
        "{asked}"
    );
}

/// A project holding `s.txt`: 10,000 numbered lines, then a hole up to `len` bytes.
fn sparse_project(len: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "s.txt", numbered(10_000));
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("s.txt"))
        .unwrap()
        .set_len(len)
        .unwrap();
    dir
}

/// `file_read` with `arguments`, in a fresh project holding only `path` with `contents`.
async fn read_in_project(path: &str, contents: impl AsRef<[u8]>, arguments: Value) -> ToolResult {
    read_in_project_with(WorkspaceLimits::default(), path, contents, arguments).await
}

/// `file_read` with `arguments` under `limits`, in a fresh project holding only `path` with
/// `contents`.
async fn read_in_project_with(
    limits: WorkspaceLimits,
    path: &str,
    contents: impl AsRef<[u8]>,
    arguments: Value,
) -> ToolResult {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), path, contents);
    call(&pack_with(dir.path(), limits), "file_read", arguments).await
}

#[tokio::test]
async fn file_read_returns_numbered_lines_and_the_exact_content() {
    let result = read_in_project(
        "src/lib.rs",
        "pub fn a() {}\r\n\n// end",
        json!({"path": "src/lib.rs"}),
    )
    .await;
    assert_eq!(ok_text(&result), "1\tpub fn a() {}\n2\t\n3\t// end\n");
    assert_eq!(
        structured(&result),
        &json!({
            "path": "src/lib.rs",
            "startLine": 1,
            "endLine": 3,
            "totalLines": 3,
            "totalLinesExact": true,
            "truncated": false,
            "content": "pub fn a() {}\r\n\n// end"
        })
    );
}

#[tokio::test]
async fn file_read_window_with_offset_and_limit_says_how_to_continue() {
    let result = read_in_project(
        "a.txt",
        numbered(12),
        json!({"path": "a.txt", "offset": 9, "limit": 2}),
    )
    .await;
    assert_eq!(
        ok_text(&result),
        " 9\tline 009\n10\tline 010\n[showing lines 9-10 of 12; use offset=11 to continue]\n"
    );
    let s = structured(&result);
    assert_eq!(s["startLine"], 9);
    assert_eq!(s["endLine"], 10);
    assert_eq!(s["totalLines"], 12);
    assert_eq!(s["truncated"], false);
    assert_eq!(s["content"], "line 009\nline 010\n");
}

#[tokio::test]
async fn file_read_default_limit_is_2000_lines() {
    let result = read_in_project("big.txt", "x\n".repeat(2500), json!({"path": "big.txt"})).await;
    let text = ok_text(&result);
    assert!(text.ends_with("[showing lines 1-2000 of 2500; use offset=2001 to continue]\n"));
    assert_eq!(structured(&result)["endLine"], 2000);
}

#[tokio::test]
async fn file_read_stops_at_the_byte_cap_and_says_where_to_continue() {
    let dir = tempfile::tempdir().unwrap();
    // 20000 lines of 9 bytes; a 256 KiB cap holds 29127 of them... so use a smaller cap.
    write_file(
        dir.path(),
        "log.txt",
        numbered(20_000).replace("line ", "l"),
    );
    let pack = pack_limited(dir.path(), |l| l.max_read_bytes = 1024);
    let result = read(&pack, json!({"path": "log.txt", "limit": 20000})).await;
    let text = ok_text(&result);
    // Lines `lNNN\n` are 5 bytes for 1..=999 (the format pads to 3 digits): 204 fit in 1 KiB.
    assert!(
        text.ends_with(
            "[truncated: showing lines 1-204 of 20000; 1 KiB cap; use offset=205 to continue]\n"
        ),
        "{}",
        &text[text.len() - 120..]
    );
    let s = structured(&result);
    assert_eq!(s["truncated"], true);
    assert_eq!(s["endLine"], 204);
    assert_eq!(s["totalLines"], 20000);
    assert!(s["content"].as_str().unwrap().len() <= 1024);

    let next = read(&pack, json!({"path": "log.txt", "offset": 205, "limit": 1})).await;
    assert_eq!(structured(&next)["content"], "l205\n");
}

#[tokio::test]
async fn file_read_default_cap_is_256_kib() {
    let dir = tempfile::tempdir().unwrap();
    // 100-byte lines: 2621 whole lines fit in 256 KiB.
    let line = format!("{}\n", "y".repeat(99));
    write_file(dir.path(), "wide.txt", line.repeat(3000));
    let result = read(
        &pack(dir.path()),
        json!({"path": "wide.txt", "limit": 3000}),
    )
    .await;
    assert!(ok_text(&result).ends_with(
        "[truncated: showing lines 1-2621 of 3000; 256 KiB cap; use offset=2622 to continue]\n"
    ));
}

#[tokio::test]
async fn file_read_cuts_a_single_line_longer_than_the_cap() {
    let result = read_in_project_with(
        limits_with(|l| l.max_read_bytes = 51),
        "min.js",
        format!("{}\nnext\n", "é".repeat(100)),
        json!({"path": "min.js"}),
    )
    .await;
    let text = ok_text(&result);
    // 51 bytes would split a two-byte character: 25 characters (50 bytes) are shown.
    assert_eq!(
        text,
        format!(
            "1\t{}\n[truncated: line 1 is longer than the 51 bytes cap and is cut; use offset=2 to continue]\n",
            "é".repeat(25)
        )
    );
    let s = structured(&result);
    assert_eq!(s["truncated"], true);
    assert_eq!(s["totalLines"], 2);
}

#[tokio::test]
async fn file_read_output_cap_applies_when_smaller_than_the_read_cap() {
    let result = read_in_project_with(
        limits_with(|l| l.max_output_bytes = 2048),
        "a.txt",
        "0123456789\n".repeat(1000),
        json!({"path": "a.txt"}),
    )
    .await;
    let text = ok_text(&result);
    assert!(
        text.ends_with("; output capped at 2 KiB; use offset=62 to continue]\n"),
        "{text}"
    );
    let total = text.len() + structured(&result).to_string().len();
    assert!(total <= 2048, "{total}");
}

#[tokio::test]
async fn file_read_refuses_a_binary_file_naming_it_and_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.resize(14_540, 7);
    write_file(dir.path(), "img/logo.png", png);
    let result = read(&pack(dir.path()), json!({"path": "img/logo.png"})).await;
    assert_eq!(
        error_text(&result),
        "`img/logo.png` is a binary file (14.2 KiB); file_read reads text files only"
    );
}

#[tokio::test]
async fn file_read_refuses_a_file_that_is_not_utf8() {
    let result = read_in_project(
        "latin1.txt",
        b"caf\xe9 cr\xe8me\n",
        json!({"path": "latin1.txt"}),
    )
    .await;
    assert_eq!(
        error_text(&result),
        "`latin1.txt` is not UTF-8 text (11 bytes); file_read reads text files only"
    );
}

#[tokio::test]
async fn file_read_refuses_invalid_utf8_found_past_the_first_8_kib() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = "ok\n".repeat(4000).into_bytes();
    bytes.extend_from_slice(b"bad \xff\n");
    write_file(dir.path(), "late.txt", &bytes);
    let pack = pack(dir.path());
    assert_read_refused(
        &pack,
        json!({"path": "late.txt", "offset": 4001}),
        "`late.txt` is not UTF-8 text (11.7 KiB); file_read reads text files only",
    )
    .await;
    // The valid part before it still reads.
    let early = read(&pack, json!({"path": "late.txt", "limit": 2})).await;
    assert_eq!(structured(&early)["content"], "ok\nok\n");
}

#[tokio::test]
async fn file_read_refuses_a_directory_and_points_to_directory_list() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "src/a.rs", "");
    let pack = pack(dir.path());
    assert_read_refused(
        &pack,
        json!({"path": "src/"}),
        "`src` is a directory; use directory_list",
    )
    .await;
    assert_read_refused(
        &pack,
        json!({"path": "."}),
        "`.` is a directory; use directory_list",
    )
    .await;
}

#[tokio::test]
async fn file_read_refuses_a_fifo_instead_of_hanging() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("pipe"));
    let result = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        read(&pack(dir.path()), json!({"path": "pipe"})),
    )
    .await
    .expect("file_read of a FIFO returns");
    assert_eq!(
        error_text(&result),
        "`pipe` is not a regular file (a device, socket or pipe); file_read reads text files only"
    );
}

#[tokio::test]
async fn file_read_of_an_empty_file_says_so() {
    let result = read_in_project("empty.txt", "", json!({"path": "empty.txt"})).await;
    assert_eq!(ok_text(&result), "(`empty.txt` is empty)\n");
    assert_eq!(
        structured(&result),
        &json!({"path": "empty.txt", "startLine": 1, "endLine": 0, "totalLines": 0, "totalLinesExact": true, "truncated": false, "content": ""})
    );
}

#[tokio::test]
async fn file_read_of_a_missing_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let result = read(&pack(dir.path()), json!({"path": "nope/x.rs"})).await;
    assert_eq!(error_text(&result), "`nope/x.rs` does not exist");
}

/// Arguments `file_read` refuses, each with the message that names what is wrong (the
/// failure names the arguments of the case).
#[tokio::test]
async fn file_read_without_a_path_with_odd_values_or_past_the_end_gives_a_tool_error() {
    let dir = tempfile::tempdir().unwrap();
    write_file(dir.path(), "a.txt", "one\ntwo\n");
    write_file(dir.path(), "one.txt", "one");
    let pack = pack(dir.path());
    for (arguments, expected) in [
        (json!({}), "missing required argument `path`"),
        (
            json!({"path": "a", "offset": 0}),
            "`offset` must be an integer of at least 1 (got 0)",
        ),
        (
            json!({"path": "a", "lines": 3}),
            "unknown argument `lines`; this tool takes `path`, `offset`, `limit`",
        ),
        (
            json!({"path": "a.txt", "offset": 3}),
            "offset 3 is past the end of `a.txt`, which has 2 lines",
        ),
        (
            json!({"path": "one.txt", "offset": 2}),
            "offset 2 is past the end of `one.txt`, which has 1 line",
        ),
    ] {
        assert_read_refused(&pack, arguments, expected).await;
    }
}

#[tokio::test]
async fn d11_file_read_stops_counting_lines_in_a_huge_sparse_file() {
    // Text well past the 8 KiB sniffed for binary data, then a hole of nearly 20 GB: counting
    // the file's lines to its end took minutes.
    let dir = sparse_project(20 << 30);
    let pack = pack(dir.path());
    let result = read(&pack, json!({"path": "s.txt", "limit": 2})).await;
    let text = ok_text(&result);
    assert!(
        text.starts_with("1\tline 001\n2\tline 002\n[showing lines 1-2 of at least "),
        "{text}"
    );
    let s = structured(&result);
    assert_eq!(s["content"], "line 001\nline 002\n");
    assert_eq!(s["totalLinesExact"], false);
    assert!(s["totalLines"].as_u64().unwrap() >= 10_000, "{s}");
    // Skipping to an offset in the hole stops at its first NUL byte.
    assert_read_refused(
        &pack,
        json!({"path": "s.txt", "offset": 20_000}),
        "`s.txt` holds binary data (a NUL byte) before line 20000; file_read reads text files only",
    )
    .await;
}

#[tokio::test]
async fn d11_a_line_that_runs_into_a_huge_hole_is_not_skipped_to_its_end() {
    // Text past the 8 KiB sniff, then a hole of 64 GiB with no newline: one "line" that the
    // window reaches. Skipping the rest of it (to count the lines after it) read the whole
    // hole, minutes of a thread after the caller had its answer or had given up.
    let dir = sparse_project(64 << 30);
    let pack = pack(dir.path());
    let timed = |arguments| {
        let pack = pack.clone();
        async move {
            tokio::time::timeout(
                std::time::Duration::from_secs(5),
                call(&pack, "file_read", arguments),
            )
            .await
            .expect("file_read answers without reading the hole to its end")
        }
    };
    // The hole is cut by the cap while the window still has room: it is counted, not shown.
    let result = timed(json!({"path": "s.txt", "offset": 9_999, "limit": 5})).await;
    let s = structured(&result);
    assert_eq!(s["content"], "line 9999\nline 10000\n", "{s}");
    assert_eq!(s["totalLinesExact"], false);
    assert_eq!(s["totalLines"], 10_001);
    assert!(
        ok_text(&result).ends_with("[truncated: showing lines 9999-10000 of at least 10001; 256 KiB cap; use offset=10001 to continue]\n"),
        "{}",
        ok_text(&result)
    );
    // The hole as the first line of the window: NUL bytes, so binary, said at once.
    let result = timed(json!({"path": "s.txt", "offset": 10_001, "limit": 1})).await;
    assert_eq!(
        error_text(&result),
        "`s.txt` holds binary data (a NUL byte) at line 10001; file_read reads text files only"
    );
}

#[tokio::test]
async fn d17_a_huge_limit_is_too_large_not_too_small() {
    let result = read_in_project("a.txt", "a\n", json!({"path": "a.txt", "limit": 1e26})).await;
    assert_eq!(
        error_text(&result),
        format!(
            "`limit` is too large (got 1e+26); it must be an integer from 1 to {}",
            usize::MAX
        )
    );
}
