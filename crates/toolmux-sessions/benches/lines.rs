//! Log throughput: a (fake) runner prints 100,000 lines; every one must be in the session's log,
//! in order, and toolmux's memory must stay bounded (the lines go to disk through a bounded
//! channel, never into a growing buffer). Prints the time, the rate, and the process's peak
//! resident memory before and after (`VmHWM`). `cargo bench -p toolmux-sessions`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use toolmux_config::RunnerSettings;
use toolmux_sessions::{RunRequest, Sessions, Status, Stream};

const LINES: u64 = 100_000;

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or_default()
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let project = tempfile::tempdir().expect("temp");
        let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bin/claude");
        let mut runners = BTreeMap::new();
        runners.insert(
            "claude".to_string(),
            RunnerSettings {
                command: Some(fake.display().to_string()),
                ..Default::default()
            },
        );
        let sessions = Sessions::for_project(
            &toolmux_workspace::ProjectRoot::new(project.path()).expect("the project root"),
            &project.path().join(".toolmux/state"),
            &runners,
            None,
        )
        .expect("sessions");
        let before = peak_rss_kib();
        let plan = sessions
            .plan(&RunRequest {
                runner: "claude".into(),
                prompt: Some(format!("lines {LINES}")),
                ..Default::default()
            })
            .expect("plan");
        let started = Instant::now();
        let id = sessions.start(plan, None, None).await.expect("start").id;
        let record = sessions
            .wait(&id, Duration::from_secs(600))
            .await
            .expect("wait");
        let elapsed = started.elapsed();
        assert_eq!(record.status, Status::Completed, "{record:?}");
        let after = peak_rss_kib();
        // Every line, in order, read back a page at a time.
        let mut n = 0u64;
        let mut offset = 0;
        loop {
            let page = sessions.logs(&id, offset, 2000).expect("logs");
            for e in page.entries.iter().filter(|e| e.stream == Stream::Stdout) {
                n += 1;
                assert_eq!(e.text, format!("line {n}"), "out of order");
            }
            offset = page.next_offset;
            if !page.more {
                break;
            }
        }
        assert_eq!(n, LINES, "lines lost");
        let log = project
            .path()
            .join(".toolmux/state/sessions")
            .join(&id)
            .join("log.jsonl");
        let size = std::fs::metadata(&log).map(|m| m.len()).unwrap_or_default();
        println!(
            "sessions/lines: {LINES} lines in {:.2}s ({:.0} lines/s, runner included), all kept in order; log {:.1} MiB on disk; peak RSS {} KiB before, {} KiB after (+{} KiB)",
            elapsed.as_secs_f64(),
            LINES as f64 / elapsed.as_secs_f64(),
            size as f64 / (1024.0 * 1024.0),
            before,
            after,
            after.saturating_sub(before)
        );
    });
}
