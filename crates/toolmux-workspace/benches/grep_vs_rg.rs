//! `grep` through `WorkspacePack` against the `rg` command on the same tree.
//!
//! Generates a large tree of text files in a temporary directory (default 20,000 files,
//! ~500 MB; scale down with `GREP_BENCH_FILES` and `GREP_BENCH_MB`), then times two searches
//! with few matches (a rare literal and a regex) through the pack and through `rg` with the
//! equivalent flags: one warm-up, then `GREP_BENCH_RUNS` (default 5) timed runs each, and
//! prints the medians and the ratio. Our target is to stay within 1.5x of `rg`.
//!
//! Run it with `cargo bench -p toolmux-workspace --bench grep_vs_rg`. Without `--bench` (as
//! `cargo test --benches` runs it) it uses a tiny tree, as a smoke test. When `rg` is not on
//! PATH it says so and times only ours.

mod common;
// The tests' support module, so that the benches call tools exactly as the tests do.
#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use toolmux_workspace::WorkspaceLimits;

use common::{env_number, full_run, ms};
use support::{call, pack_with};

/// Planted in a few files only.
const RARE_LITERAL: &str = "zqxjvbw_rare_token";
/// Matches planted `handle_<word>_<4 digits>(` calls only.
const RARE_REGEX: &str = r"handle_[a-z]+_\d{4}\(";

fn main() {
    let full = full_run();
    let files = env_number("GREP_BENCH_FILES", if full { 20_000 } else { 200 });
    let mb = env_number("GREP_BENCH_MB", if full { 500 } else { 2 });
    let runs = env_number("GREP_BENCH_RUNS", if full { 5 } else { 1 }).max(1);

    let dir = tempfile::tempdir().expect("temporary directory");
    let started = Instant::now();
    let (bytes, planted) = generate(dir.path(), files, mb * 1024 * 1024);
    eprintln!(
        "generated {files} files, {:.1} MB, in {:.1}s under {}",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        dir.path().display()
    );

    let pack = pack_with(
        dir.path(),
        WorkspaceLimits {
            max_results: 100_000,
            ..WorkspaceLimits::default()
        },
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rg = rg_version();
    match &rg {
        Some(version) => eprintln!("comparing with {version}"),
        None => eprintln!("`rg` is not on PATH (apt-get install -y ripgrep); timing ours only"),
    }
    eprintln!(
        "{} threads, {runs} timed runs after one warm-up",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    let queries = [
        ("rare literal", RARE_LITERAL, true, planted.literal),
        ("regex", RARE_REGEX, false, planted.regex),
    ];
    let mut worst: f64 = 0.0;
    for (label, pattern, literal, expected) in queries {
        let arguments = json!({"pattern": pattern, "literal": literal, "limit": 100_000});
        let ours = time(runs, || {
            let result = runtime.block_on(call(&pack, "grep", arguments.clone()));
            let found = result
                .structured_content
                .as_ref()
                .map_or(0, |s| s["matches"].as_array().map_or(0, Vec::len));
            assert_eq!(found, expected, "ours: {}", result.text_content());
        });
        print!("{label:<13} ours {:>9}", ms(ours));
        if rg.is_some() {
            let theirs = time(runs, || {
                let found = run_rg(dir.path(), pattern, literal);
                assert_eq!(found, expected, "rg found a different number of matches");
            });
            let ratio = ours.as_secs_f64() / theirs.as_secs_f64();
            worst = worst.max(ratio);
            print!("   rg {:>9}   ours/rg {ratio:.2}x", ms(theirs));
        }
        println!("   ({expected} matches)");
    }
    if rg.is_some() {
        println!(
            "worst ratio {worst:.2}x: {}",
            if worst <= 1.5 {
                "within the 1.5x target"
            } else {
                "OVER the 1.5x target"
            }
        );
    }
}

/// How many matches of each query were planted.
struct Planted {
    literal: usize,
    regex: usize,
}

/// Writes `files` files of about `total / files` bytes each, 100 to a directory, from a
/// deterministic pseudo-random vocabulary; plants the rare literal and regex matches.
fn generate(root: &Path, files: usize, total: usize) -> (u64, Planted) {
    let per_file = (total / files.max(1)).max(64);
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    // A pool of text to cut files from: generating every byte afresh would take longer than
    // the searches.
    let vocabulary: Vec<String> = (0..512)
        .map(|_| {
            let len = 2 + rng.below(9) as usize;
            (0..len)
                .map(|_| (b'a' + rng.below(26) as u8) as char)
                .collect()
        })
        .collect();
    let mut pool = String::with_capacity(8 << 20);
    while pool.len() < (8 << 20) {
        let mut line = String::new();
        let indent = rng.below(3) as usize * 4;
        line.push_str(&" ".repeat(indent));
        while line.len() < 40 + rng.below(40) as usize {
            line.push_str(&vocabulary[rng.below(vocabulary.len() as u64) as usize]);
            line.push(if rng.below(8) == 0 { '_' } else { ' ' });
        }
        line.push('\n');
        pool.push_str(&line);
    }
    let pool = pool.as_bytes();

    let mut planted = Planted {
        literal: 0,
        regex: 0,
    };
    let mut written = 0u64;
    for i in 0..files {
        let dir = root.join(format!("d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("create directory");
        }
        let start = rng.below((pool.len() - per_file - 1) as u64) as usize;
        // Start and end on line boundaries.
        let start = start + pool[start..].iter().position(|&b| b == b'\n').unwrap_or(0) + 1;
        let mut end = (start + per_file).min(pool.len());
        while end > start && pool[end - 1] != b'\n' {
            end -= 1;
        }
        let mut file =
            std::fs::File::create(dir.join(format!("f{i:05}.txt"))).expect("create file");
        let body = &pool[start..end];
        let middle = body.len() / 2;
        let middle = middle + body[middle..].iter().position(|&b| b == b'\n').unwrap_or(0) + 1;
        file.write_all(&body[..middle.min(body.len())])
            .expect("write");
        if i % 2000 == 7 {
            writeln!(file, "    let token = \"{RARE_LITERAL}\";").expect("write");
            planted.literal += 1;
        }
        if i % 1500 == 11 {
            writeln!(file, "    handle_request_{:04}(ctx);", i % 10_000).expect("write");
            planted.regex += 1;
        }
        file.write_all(&body[middle.min(body.len())..])
            .expect("write");
        written += file.metadata().map_or(0, |m| m.len());
    }
    (written, planted)
}

/// `rg` with the flags that match our grep: hidden files included, .gitignore honoured
/// without a git repository, line numbers, no config file, no colour.
fn run_rg(root: &Path, pattern: &str, literal: bool) -> usize {
    let mut command = Command::new("rg");
    command
        .current_dir(root)
        .args(["--no-config", "--hidden", "--no-require-git"])
        .args(["--line-number", "--no-heading", "--color", "never"])
        .args(["--glob", "!.git"]);
    if literal {
        command.arg("--fixed-strings");
    }
    let output = command
        .arg("--regexp")
        .arg(pattern)
        .arg(".")
        .output()
        .expect("run rg");
    assert!(
        output.status.success(),
        "rg failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout.iter().filter(|&&b| b == b'\n').count()
}

fn rg_version() -> Option<String> {
    let output = Command::new("rg").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    output
        .status
        .success()
        .then(|| text.lines().next().unwrap_or("rg").to_string())
}

/// One warm-up, then the median of `runs` timed runs.
fn time(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// A small deterministic generator, so every run searches the same tree.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}
