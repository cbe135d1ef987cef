//! The pack against LeanSpec's own CLI (`@leanspec/cli-linux-x64` 0.3.0, installed by
//! `./scripts/test` into `tests/peers/specs`, found through `TOOLMUX_PEERS`): on the same
//! 70-spec corpus both must give the same ids, order, fields and counts for `list` (every
//! filter), the same ids, order and scores for 40 searches, the same boards and stats, and the
//! same view of a spec. When `TOOLMUX_PEERS` is set and the binary is missing, the test fails.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use support::{call, corpus, open};

/// LeanSpec's own CLI, installed by `./scripts/test` in `tests/peers/specs` (the test fails,
/// naming what to run, when it is not there).
fn leanspec() -> PathBuf {
    toolmux_testkit::peers::peer_file("specs/node_modules/@leanspec/cli-linux-x64/leanspec")
}

/// Runs `leanspec <args> -o json` in `root` and parses its output.
fn run(bin: &Path, root: &Path, args: &[&str]) -> Value {
    let out = Command::new(bin)
        .args(args)
        .args(["-o", "json"])
        .current_dir(root)
        .output()
        .expect("leanspec runs");
    assert!(
        out.status.success(),
        "leanspec {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "leanspec {args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn ids(rows: &Value) -> Vec<String> {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// The fields LeanSpec's list rows carry, from one of our summaries.
fn as_leanspec_row(s: &Value) -> Value {
    json!({
        "id": s["id"], "title": s["title"], "status": s["status"], "priority": s["priority"],
        "tags": s["tags"], "assignee": s["assignee"], "parent": s["parent"],
    })
}

#[test]
fn list_search_board_stats_and_view_agree_with_leanspec() {
    let bin = leanspec();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    corpus::write_corpus(root);
    let pack = open(root);

    // list, with each filter (and a few combinations and non-canonical values).
    let lists: Vec<(Vec<&str>, Value)> = vec![
        (vec![], json!({})),
        (vec!["-s", "draft"], json!({"status": "draft"})),
        (vec!["-s", "planned"], json!({"status": "planned"})),
        (vec!["-s", "in-progress"], json!({"status": "in-progress"})),
        (vec!["-s", "complete"], json!({"status": "complete"})),
        (vec!["-s", "archived"], json!({"status": "archived"})),
        (vec!["-s", "in_progress"], json!({"status": "in_progress"})),
        (vec!["-t", "api"], json!({"tags": ["api"]})),
        (
            // LeanSpec 0.3.0 lists a spec with any of several tags; the pack's default is
            // all of them, and `tagMatch: "any"` is LeanSpec's rule.
            vec!["-t", "api", "-t", "security"],
            json!({"tags": ["api", "security"], "tagMatch": "any"}),
        ),
        (
            vec!["-t", "user experience"],
            json!({"tags": ["user experience"]}),
        ),
        (vec!["-t", "API"], json!({"tags": ["API"]})),
        (vec!["-p", "low"], json!({"priority": "low"})),
        (vec!["-p", "medium"], json!({"priority": "medium"})),
        (vec!["-p", "high"], json!({"priority": "high"})),
        (vec!["-p", "critical"], json!({"priority": "critical"})),
        (vec!["-p", "med"], json!({"priority": "med"})),
        (vec!["-a", "alice"], json!({"assignee": "alice"})),
        (
            vec!["-a", "Carol Smith"],
            json!({"assignee": "Carol Smith"}),
        ),
        (
            vec!["-s", "planned", "-p", "critical"],
            json!({"status": "planned", "priority": "critical"}),
        ),
        (
            vec!["-s", "in-progress", "-t", "ui", "-a", "alice"],
            json!({"status": "in-progress", "tags": ["ui"], "assignee": "alice"}),
        ),
    ];
    for (args, ours) in &lists {
        let mut full = vec!["list"];
        full.extend(args);
        let theirs = run(&bin, root, &full);
        let mine = call(&pack, "spec_list", ours.clone());
        let mine_rows: Vec<Value> = mine["specs"]
            .as_array()
            .unwrap()
            .iter()
            .map(as_leanspec_row)
            .collect();
        assert_eq!(Value::Array(mine_rows), theirs, "list {args:?}");
        assert_eq!(
            mine["count"],
            theirs.as_array().unwrap().len(),
            "list {args:?}"
        );
    }
    // The unfiltered list is the corpus minus archived-status specs.
    assert_eq!(call(&pack, "spec_list", json!({}))["count"], 63);

    // search: every operator, field and fuzzy form; full result lists and the default limit.
    let queries = [
        "auth",
        "token refresh",
        "\"token refresh\"",
        "gateway",
        "gateway AND security",
        "cache OR webhook",
        "login NOT session",
        "NOT search",
        "search NOT tag:search",
        "status:archived",
        "status:in-progress",
        "status:planned cache",
        "tag:api",
        "tag:api OR tag:ui",
        "tag:user",
        "priority:critical",
        "priority:high OR priority:low",
        "title:search",
        "title:index status:complete",
        "created:>=2025-06",
        "created:<2024-06",
        "created:2025-03",
        "created:2024",
        "created:<=2025-01-15 AND tag:api",
        "auth~",
        "gatway~2",
        "latncy~1",
        "refresh~0",
        "\"session cookies\" OR prototype",
        "migration AND NOT \"data model\"",
        "index OR ranking OR audit",
        "parser tests",
        "webhook",
        "Search Ranking",
        "throttle NOT NOT throttle",
        "dashboard AND (widget",
        "security priority:critical status:in-progress",
        "nothing-matches-this",
        "a",
        "user experience",
    ];
    for query in queries {
        let theirs = run(&bin, root, &["search", query, "-l", "200"]);
        let mine = call(&pack, "spec_search", json!({"query": query, "limit": 200}));
        let pairs = |rows: &Value, key: &str| -> Vec<(String, f64)> {
            rows.as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r[key].as_str().unwrap().to_string(),
                        r["score"].as_f64().unwrap(),
                    )
                })
                .collect()
        };
        assert_eq!(
            pairs(&mine["results"], "id"),
            pairs(&theirs, "id"),
            "search {query:?}"
        );
    }
    for query in ["search", "cache OR webhook", "tag:api"] {
        let theirs = run(&bin, root, &["search", query]);
        let mine = call(&pack, "spec_search", json!({"query": query}));
        assert_eq!(
            ids(&mine["results"]),
            ids(&theirs),
            "search {query:?} (default limit)"
        );
        assert_eq!(mine["count"], 10);
    }
    // Queries LeanSpec cannot parse give it no results; the pack says why.
    for (query, message) in [
        (
            "auth AND",
            "invalid search query: Query ends with an operator",
        ),
        ("foo:bar", "invalid search query: Unknown field 'foo:'"),
        (
            "title:\"search index\"",
            "invalid search query: Missing value for field 'title:'",
        ),
    ] {
        assert_eq!(run(&bin, root, &["search", query]), json!([]));
        assert_eq!(
            support::try_call(&pack, "spec_search", json!({"query": query})).unwrap_err(),
            message
        );
    }

    // board, by each grouping, with and without a pre-filter.
    let boards: Vec<(Vec<&str>, Value)> = vec![
        (vec![], json!({})),
        (vec!["-g", "status"], json!({"groupBy": "status"})),
        (vec!["-g", "priority"], json!({"groupBy": "priority"})),
        (vec!["-g", "assignee"], json!({"groupBy": "assignee"})),
        (vec!["-g", "tags"], json!({"groupBy": "tag"})),
        (vec!["--by-parent"], json!({"groupBy": "parent"})),
        (
            vec!["-g", "status", "-s", "planned"],
            json!({"groupBy": "status", "status": "planned"}),
        ),
        (
            vec!["-g", "priority", "-t", "api"],
            json!({"groupBy": "priority", "tags": ["api"]}),
        ),
    ];
    for (args, ours) in &boards {
        let mut full = vec!["board"];
        full.extend(args);
        let theirs = run(&bin, root, &full);
        let mine = call(&pack, "spec_board", ours.clone());
        let shape = |board: &Value| -> Vec<(String, u64, Vec<String>)> {
            board["groups"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| {
                    (
                        g["name"].as_str().unwrap().to_string(),
                        g["count"].as_u64().unwrap(),
                        ids(&g["specs"]),
                    )
                })
                .collect()
        };
        assert_eq!(shape(&mine), shape(&theirs), "board {args:?}");
        assert_eq!(mine["total"], theirs["total"], "board {args:?}");
        assert_eq!(mine["groupBy"], theirs["group_by"], "board {args:?}");
    }

    // stats (`--detailed` adds parents, dependencies and tokens).
    let theirs = run(&bin, root, &["stats", "--detailed"]);
    let mine = call(&pack, "spec_stats", json!({}));
    assert_eq!(mine["total"], theirs["total"]);
    assert_eq!(mine["total"], 70);
    assert_eq!(mine["byStatus"], theirs["by_status"]);
    assert_eq!(mine["byPriority"], theirs["by_priority"]);
    assert_eq!(mine["noPriority"], theirs["no_priority"]);
    assert_eq!(mine["byTag"], theirs["by_tag"]);
    assert_eq!(mine["withParent"], theirs["with_parent"]);
    assert_eq!(mine["withDependencies"], theirs["with_depends_on"]);

    // view, by number, padded number, folder name and fragment.
    for (reference, id) in [
        ("13", "013-api-gateway-parser"),
        ("020", "020-rate-limiting-refresh"),
        ("068-unknown-keys", "068-unknown-keys"),
        ("nested-child", "061-nested-child-widget"),
        ("062", "062-old-search-prototype"),
    ] {
        let theirs = run(&bin, root, &["view", reference]);
        let mine = call(&pack, "spec_view", json!({"spec": reference}));
        assert_eq!(mine["id"], id);
        assert_eq!(theirs["id"], id, "view {reference}");
        assert_eq!(mine["title"], theirs["title"], "view {reference}");
        assert_eq!(
            mine["content"], theirs["fields"]["content"]["value"],
            "view {reference}"
        );
        assert_eq!(
            mine["status"], theirs["fields"]["status"]["value"],
            "view {reference}"
        );
        let links: Vec<Value> = theirs["links"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["link_type"] == "depends_on")
            .map(|l| l["target_id"].clone())
            .collect();
        assert_eq!(mine["dependsOn"], Value::Array(links), "view {reference}");
    }
}

#[test]
fn a_malformed_frontmatter_stops_leanspec_and_is_reported_by_the_pack() {
    let bin = leanspec();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    corpus::write_corpus(root);
    corpus::write_malformed(root);
    let out = Command::new(&bin)
        .args(["list", "-o", "json"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("071-broken-frontmatter/README.md")
            && stderr.contains("did not find expected ',' or ']' at line 5 column 1"),
        "{stderr}"
    );
    // The pack lists the 63 others and names the file and line of the broken one.
    let pack = open(root);
    let listed = call(&pack, "spec_list", json!({}));
    assert_eq!(listed["count"], 63);
    assert_eq!(listed["errors"].as_array().unwrap().len(), 1);
    assert_eq!(
        listed["errors"][0]["file"],
        "071-broken-frontmatter/README.md"
    );
    assert_eq!(listed["errors"][0]["line"], 5);
    let message = listed["errors"][0]["message"].as_str().unwrap();
    assert_eq!(
        message,
        "invalid YAML in frontmatter: did not find expected ',' or ']' at line 5 column 1, while \
         parsing a flow sequence at line 4 column 7"
    );
}
