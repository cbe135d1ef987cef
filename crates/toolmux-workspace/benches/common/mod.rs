//! What every bench of the crate reads and prints: its size knobs from the environment and
//! durations in one format, so the figures of the benches compare.

// Each bench uses part of this module.
#![allow(dead_code)]

use std::time::Duration;

/// Whether `cargo bench` runs the bench (it passes `--bench`) rather than `cargo test --benches`,
/// which wants only a quick smoke run.
pub fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// The number in the environment variable `name`, or `default` where it is unset or not a number.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `d` in milliseconds, one decimal.
pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// `d` in microseconds, one decimal.
pub fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}
