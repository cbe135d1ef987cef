//! The corpora: descriptions taken from the real MCP servers the tests install
//! (`corpus/benign.jsonl`, extracted from their code, each with its source file) and ones
//! written from the published tool-poisoning attack categories (`corpus/poisoned.jsonl`).
//! Every poisoned one is caught (a medium or high finding) and no benign one has a
//! high-severity finding. `cargo test -p toolmux-trust --test hostile_corpus -- --nocapture` prints
//! the recall and the false-positive rates.

use serde_json::Value;
use toolmux_trust::{Severity, scan};

fn corpus(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a corpus line is JSON"))
        .collect()
}

fn worst(description: &str) -> Option<Severity> {
    scan(description).iter().map(|f| f.severity).max()
}

#[test]
fn every_poisoned_description_is_caught() {
    let poisoned = corpus(include_str!("../corpus/poisoned.jsonl"));
    assert!(poisoned.len() >= 60, "{} poisoned", poisoned.len());
    let missed: Vec<&str> = poisoned
        .iter()
        .map(|p| p["description"].as_str().unwrap_or_default())
        .filter(|d| worst(d) < Some(Severity::Medium))
        .collect();
    let high = poisoned
        .iter()
        .filter(|p| worst(p["description"].as_str().unwrap_or_default()) == Some(Severity::High))
        .count();
    println!(
        "recall (medium or high): {}/{}; caught with a high finding: {high}/{}",
        poisoned.len() - missed.len(),
        poisoned.len(),
        poisoned.len()
    );
    assert_eq!(missed, Vec::<&str>::new());
}

#[test]
fn no_benign_description_has_a_high_finding() {
    let benign = corpus(include_str!("../corpus/benign.jsonl"));
    assert!(benign.len() >= 60, "{} benign", benign.len());
    let mut high = Vec::new();
    let mut medium = Vec::new();
    for entry in &benign {
        let description = entry["description"].as_str().unwrap_or_default();
        match worst(description) {
            Some(Severity::High) => high.push(description),
            Some(Severity::Medium) => medium.push((entry["source"].clone(), scan(description))),
            _ => {}
        }
    }
    println!(
        "false positives of {} benign: high {} ({:.1}%), medium {} ({:.1}%)",
        benign.len(),
        high.len(),
        100.0 * high.len() as f64 / benign.len() as f64,
        medium.len(),
        100.0 * medium.len() as f64 / benign.len() as f64
    );
    for (source, findings) in &medium {
        for f in findings.iter().filter(|f| f.severity == Severity::Medium) {
            println!("  medium in {source}: {:?} {:?}", f.kind, f.text);
        }
    }
    assert_eq!(high, Vec::<&str>::new());
}
