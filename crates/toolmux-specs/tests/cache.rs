//! The warm cache never hides a change: after a settled call (every folder and file older
//! than the 2 s the pack waits before trusting a modification time), an edited file, an added,
//! removed or renamed spec, a sub-spec and a nested spec are all seen by the next call; and a
//! change made within the same clock tick as the last read (same size, same time) is seen
//! while the time is not yet settled.

mod support;

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use support::{call, open};
use toolmux_specs::SpecsSource;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Sets the modification time of `path` (a file or a folder).
fn set_mtime(path: &Path, time: SystemTime) {
    let file = if path.is_dir() {
        fs::File::open(path).unwrap()
    } else {
        fs::File::options().write(true).open(path).unwrap()
    };
    file.set_modified(time).unwrap();
}

fn mtime(path: &Path) -> SystemTime {
    fs::metadata(path).unwrap().modified().unwrap()
}

/// Makes every file and folder under `dir` an hour old, so the pack trusts their times.
fn settle(dir: &Path) {
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            settle(&path);
        }
        set_mtime(&path, an_hour_ago);
    }
    set_mtime(dir, an_hour_ago);
}

fn spec(title: &str) -> String {
    format!("---\nstatus: planned\ncreated: '2025-01-02'\n---\n\n# {title}\n\nbody\n")
}

fn ids(pack: &SpecsSource) -> Vec<String> {
    let list = call(pack, "spec_list", json!({}));
    let specs = list["specs"].as_array().unwrap();
    assert_eq!(list["count"], specs.len());
    specs
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

/// A call after which the cache holds settled listings and parses, and the next call reuses
/// the snapshot as it is.
fn settled_call(dir: &Path, pack: &SpecsSource) -> u64 {
    settle(&dir.join("specs"));
    let snap = pack.snapshot().unwrap();
    assert!(
        Arc::ptr_eq(&snap, &pack.snapshot().unwrap()),
        "an unchanged, settled directory gives back the same snapshot"
    );
    snap.version
}

#[test]
fn every_change_is_seen_after_a_settled_call() {
    let dir = tempfile::tempdir().unwrap();
    let specs = dir.path().join("specs");
    write(&specs.join("001-alpha/README.md"), &spec("Alpha"));
    write(&specs.join("002-beta/README.md"), &spec("Beta"));
    let pack = open(dir.path());
    assert_eq!(ids(&pack), ["001-alpha", "002-beta"]);

    // A file edited in place (same size: only its time tells).
    let v = settled_call(dir.path(), &pack);
    write(&specs.join("002-beta/README.md"), &spec("Bxta"));
    assert!(pack.version().unwrap() > v);
    assert_eq!(
        call(&pack, "spec_view", json!({"spec": "2"}))["title"],
        "Bxta"
    );
    assert_eq!(call(&pack, "spec_stats", json!({}))["total"], 2);

    // A spec added.
    let v = settled_call(dir.path(), &pack);
    write(&specs.join("003-gamma/README.md"), &spec("Gamma"));
    assert!(pack.version().unwrap() > v);
    assert_eq!(ids(&pack), ["001-alpha", "002-beta", "003-gamma"]);
    assert_eq!(call(&pack, "spec_stats", json!({}))["total"], 3);

    // A spec removed.
    settled_call(dir.path(), &pack);
    fs::remove_dir_all(specs.join("001-alpha")).unwrap();
    assert_eq!(ids(&pack), ["002-beta", "003-gamma"]);
    let found = call(&pack, "spec_search", json!({"query": "alpha"}));
    assert_eq!(found["count"], 0);

    // A spec renamed.
    settled_call(dir.path(), &pack);
    fs::rename(specs.join("002-beta"), specs.join("004-delta")).unwrap();
    assert_eq!(ids(&pack), ["003-gamma", "004-delta"]);
    assert_eq!(
        call(&pack, "spec_view", json!({"spec": "4"}))["file"],
        "004-delta/README.md"
    );

    // A sub-spec added, then edited (a new size).
    settled_call(dir.path(), &pack);
    write(&specs.join("004-delta/DESIGN.md"), "# Design\n");
    assert_eq!(
        call(&pack, "spec_view", json!({"spec": "4"}))["subSpecs"],
        json!([{"name": "DESIGN.md", "size": 9}])
    );
    settled_call(dir.path(), &pack);
    write(&specs.join("004-delta/DESIGN.md"), "# Design\n\nmore\n");
    assert_eq!(
        call(&pack, "spec_view", json!({"spec": "4"}))["subSpecs"],
        json!([{"name": "DESIGN.md", "size": 15}])
    );
    assert_eq!(call(&pack, "spec_stats", json!({}))["subSpecs"], 1);
    // ... and edited keeping its size: only its time tells, and the version still moves (a
    // subscriber to the spec's resources must hear of it).
    let v = settled_call(dir.path(), &pack);
    write(&specs.join("004-delta/DESIGN.md"), "# Design\n\nMORE\n");
    assert!(pack.version().unwrap() > v);
    let tokens = call(&pack, "spec_tokens", json!({"spec": "4"}));
    assert_eq!(tokens["items"][0]["subSpecs"][0]["name"], "DESIGN.md");

    // A spec nested in another's folder.
    settled_call(dir.path(), &pack);
    write(&specs.join("004-delta/005-inner/README.md"), &spec("Inner"));
    assert_eq!(ids(&pack), ["003-gamma", "004-delta", "005-inner"]);

    // A folder replaced by another whose time is the same: its parent changed, so it is
    // listed afresh.
    settled_call(dir.path(), &pack);
    let old_time = mtime(&specs.join("003-gamma"));
    fs::remove_dir_all(specs.join("003-gamma")).unwrap();
    write(&specs.join("003-gamma/README.md"), &spec("Gamma"));
    write(&specs.join("003-gamma/NOTES.md"), "n\n");
    set_mtime(&specs.join("003-gamma/README.md"), old_time);
    set_mtime(&specs.join("003-gamma"), old_time);
    assert_eq!(
        call(&pack, "spec_view", json!({"spec": "3"}))["subSpecs"],
        json!([{"name": "NOTES.md", "size": 2}])
    );
}

#[test]
fn a_change_within_the_same_tick_is_seen_while_times_are_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let specs = dir.path().join("specs");
    write(&specs.join("001-alpha/README.md"), &spec("Alpha"));
    let pack = open(dir.path());
    let v = pack.version().unwrap();
    assert_eq!(
        pack.version().unwrap(),
        v,
        "re-reading an unchanged file keeps the version"
    );

    // Same size, and the time put back as it was: as if written in the same clock tick.
    let readme = specs.join("001-alpha/README.md");
    let before = mtime(&readme);
    write(&readme, &spec("Alfa!"));
    set_mtime(&readme, before);
    assert_eq!(
        call(&pack, "spec_view", json!({"spec": "1"}))["title"],
        "Alfa!"
    );
    assert!(pack.version().unwrap() > v);

    // A sub-spec added, the folder's time put back.
    let folder = specs.join("001-alpha");
    let before = mtime(&folder);
    write(&folder.join("DESIGN.md"), "d\n");
    set_mtime(&folder, before);
    let view: Value = call(&pack, "spec_view", json!({"spec": "1"}));
    assert_eq!(view["subSpecs"], json!([{"name": "DESIGN.md", "size": 2}]));
}
