//! Start-to-end time of `true` through the child recipe (`child::spawn`, wait, then the guard's
//! sweep), which is what every script call, stdio server and session pays for its containment.
//! Run with `cargo bench -p toolmux-scripts --bench child_spawn`; prints percentiles.

use std::ffi::OsStr;
use std::time::{Duration, Instant};

use toolmux_scripts::child;

const RUNS: usize = 300;
const WARM_UP: usize = 20;

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut times = runtime.block_on(async {
        let mut times = Vec::with_capacity(RUNS);
        for i in 0..RUNS + WARM_UP {
            let started = Instant::now();
            let (mut process, mut guard) = child::spawn(
                OsStr::new("true"),
                &[],
                dir.path(),
                std::iter::empty::<(&str, &str)>(),
                false,
            )
            .expect("spawn true");
            let status = process.wait().await.expect("wait");
            guard.sweep().await;
            let elapsed = started.elapsed();
            assert!(status.success());
            if i >= WARM_UP {
                times.push(elapsed);
            }
        }
        times
    });
    // As the binary does on exit: removes this process's cgroups.
    child::sweep_escaped();
    times.sort_unstable();
    let at = |p: usize| times[(times.len() * p / 100).min(times.len() - 1)];
    let mean = times.iter().sum::<Duration>() / u32::try_from(times.len()).unwrap_or(1);
    println!(
        "child::spawn + wait + sweep of `true`, {RUNS} runs: mean {mean:?}, p50 {:?}, p90 {:?}, p99 {:?}",
        at(50),
        at(90),
        at(99)
    );
}
