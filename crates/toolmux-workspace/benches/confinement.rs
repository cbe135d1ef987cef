//! What confinement costs per call: `file_read` of a small file four directories deep,
//! `directory_list` of a directory of 200 entries, and `grep` over a tree of small files,
//! each called through `WorkspacePack` as the hub would (on tokio's blocking pool).
//!
//! Every path goes through `ProjectRoot::resolve` and every file is opened beneath the root's
//! directory descriptor, so this is the bench to run before and after changing how paths are
//! checked or opened. It prints the median and the 90th percentile of each call.
//!
//! Last, it greps a file of one long line (`CONFINEMENT_LINE_MB`, default 256) and prints how
//! much the process's peak memory grew: with the line limit it stays near the limit (1 MiB by
//! default) instead of the line's size.
//!
//! Run it with `cargo bench -p toolmux-workspace --bench confinement`; `CONFINEMENT_CALLS`
//! (default 2000) sets how many calls of each kind are timed, `CONFINEMENT_FILES` (default
//! 2000) the size of the grep tree. Without `--bench` (as `cargo test --benches` runs it) it
//! makes a few calls only, as a smoke test.

mod common;
// The tests' support module, so that the benches call tools exactly as the tests do.
#[path = "../tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};

use common::{env_number, full_run, us};
use support::call;

fn main() {
    let full = full_run();
    let calls = env_number("CONFINEMENT_CALLS", if full { 2000 } else { 5 }).max(1);
    let files = env_number("CONFINEMENT_FILES", if full { 2000 } else { 20 }).max(1);
    let line_mb = env_number("CONFINEMENT_LINE_MB", if full { 256 } else { 2 });

    let dir = tempfile::tempdir().expect("temporary directory");
    let root = dir.path();
    write(root, "a/b/c/d/small.txt", &"a line of text\n".repeat(40));
    for i in 0..200 {
        write(root, &format!("list/entry{i:03}.txt"), "x\n");
    }
    for i in 0..files {
        let body = format!(
            "fn f{i}() {{}}\n{}",
            "let x = compute(1, 2, 3);\n".repeat(30)
        );
        write(root, &format!("tree/d{:02}/f{i:05}.rs", i / 100), &body);
    }
    write(root, "tree/d00/needle.rs", "let needle_7f3a = 1;\n");

    let pack = support::pack(root);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    eprintln!("{calls} calls each; grep over {files} files");

    let cases: [(&str, &str, Value, usize); 3] = [
        (
            "file_read",
            "file_read",
            json!({"path": "a/b/c/d/small.txt"}),
            calls,
        ),
        (
            "directory_list",
            "directory_list",
            json!({"path": "list"}),
            calls,
        ),
        (
            "grep (tree)",
            "grep",
            json!({"pattern": "needle_7f3a", "path": "tree", "literal": true}),
            (calls / 20).max(1),
        ),
    ];
    for (label, tool, arguments, n) in cases {
        let mut times = Vec::with_capacity(n);
        // One warm-up call fills the page cache and the blocking pool.
        let _ = runtime.block_on(call(&pack, tool, arguments.clone()));
        for _ in 0..n {
            let start = Instant::now();
            let result = runtime.block_on(call(&pack, tool, arguments.clone()));
            times.push(start.elapsed());
            assert!(!result.is_error, "{label}: {}", result.text_content());
        }
        times.sort();
        println!(
            "{label:<15} median {:>9}   p90 {:>9}   ({n} calls)",
            us(times[times.len() / 2]),
            us(times[times.len() * 9 / 10])
        );
    }

    // One line of `line_mb` MiB, then a match: the searcher would hold the whole line.
    let long = dir.path().join("long");
    std::fs::create_dir_all(&long).expect("create directory");
    {
        use std::io::Write;
        let mut file = std::fs::File::create(long.join("one-line.txt")).expect("create file");
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..line_mb {
            file.write_all(&chunk).expect("write");
        }
        file.write_all(b" needle_7f3a\n").expect("write");
    }
    let before = peak_rss_kib();
    let start = Instant::now();
    let result = runtime.block_on(call(
        &pack,
        "grep",
        json!({"pattern": "needle_7f3a", "path": "long", "literal": true}),
    ));
    let took = start.elapsed();
    assert!(!result.is_error, "{}", result.text_content());
    println!(
        "grep of a {line_mb} MiB line: {:.1} ms, peak RSS grew by {} KiB (from {} KiB)",
        took.as_secs_f64() * 1e3,
        peak_rss_kib().saturating_sub(before),
        before
    );
}

/// The process's peak resident memory (`VmHWM`), in KiB; 0 where /proc does not say.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn write(root: &Path, rel: &str, contents: &str) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create directories");
    }
    std::fs::write(path, contents).expect("write file");
}
