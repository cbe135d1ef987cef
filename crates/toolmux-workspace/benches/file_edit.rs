//! What one `file_edit` of a 10 MB file costs: one exact string replaced in a file of about
//! 170,000 lines, called through `WorkspacePack` as the hub would. A call reads the file,
//! hashes it (for the read record), finds the string, diffs old and new (similar's Myers, which
//! skips the common head and tail), writes a temporary file beside it, flushes it with
//! `fsync`, renames it over the file and flushes the directory. It prints the median and the
//! 90th percentile, and the same for the diff step alone, to show where the time goes.
//!
//! Run it with `cargo bench -p toolmux-workspace --bench file_edit`; `FILE_EDIT_MB` (default
//! 10) sets the file's size, `FILE_EDIT_CALLS` (default 30) how many calls are timed. Without
//! `--bench` (as `cargo test --benches` runs it) it makes a few calls of a 1 MB file.

mod common;
// The tests' support module, so that the benches call tools exactly as the tests do.
#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;

use common::{env_number, full_run, ms};
use support::call;

fn main() {
    let full = full_run();
    let mb = env_number("FILE_EDIT_MB", if full { 10 } else { 1 }).max(1);
    let calls = env_number("FILE_EDIT_CALLS", if full { 30 } else { 3 }).max(1);

    let dir = tempfile::tempdir().expect("temporary directory");
    let line = "    let value = compute(alpha, beta, gamma); // a line of code\n";
    let lines = mb * 1_000_000 / line.len();
    let mut text = String::with_capacity(mb * 1_000_000 + 64);
    for i in 0..lines {
        if i == lines / 2 {
            text.push_str("    let marker = 0; // the line the bench edits\n");
        } else {
            text.push_str(line);
        }
    }
    let path = dir.path().join("big.rs");
    std::fs::write(&path, &text).expect("write the file");
    eprintln!(
        "file_edit of one string in a {:.1} MB file of {lines} lines, {calls} calls",
        text.len() as f64 / 1e6
    );

    let pack = support::pack(dir.path());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mut times = Vec::with_capacity(calls);
    for i in 0..=calls {
        // Each call replaces the marker's value with the next one, so each changes the file.
        let arguments = json!({
            "path": "big.rs",
            "oldString": format!("let marker = {i};"),
            "newString": format!("let marker = {};", i + 1),
        });
        let start = Instant::now();
        let result = runtime.block_on(call(&pack, "file_edit", arguments));
        let took = start.elapsed();
        assert!(!result.is_error, "{}", result.text_content());
        let s = result.structured_content.expect("structured");
        assert_eq!(
            (s["added"].clone(), s["removed"].clone()),
            (json!(1), json!(1))
        );
        // The first call warms the page cache and the blocking pool.
        if i > 0 {
            times.push(took);
        }
    }
    report("file_edit (whole call)", &mut times);

    // The diff alone, on the same two texts, to show its share.
    let new = text.replacen("let marker = 0;", "let marker = 1;", 1);
    let mut diffs = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        let diff = similar::TextDiff::configure()
            .algorithm(similar::Algorithm::Myers)
            .timeout(Duration::from_millis(500))
            .diff_lines(text.as_str(), new.as_str());
        let unified = diff.unified_diff().context_radius(3).to_string();
        diffs.push(start.elapsed());
        assert!(unified.contains("+    let marker = 1;"));
    }
    report("diff alone", &mut diffs);
}

fn report(label: &str, times: &mut [Duration]) {
    times.sort();
    println!(
        "{label:<24} median {:>8}   p90 {:>8}   ({} calls)",
        ms(times[times.len() / 2]),
        ms(times[times.len() * 9 / 10]),
        times.len()
    );
}
