//! Task pages past the edges through every channel of the real binary (issue 28, D34's paging,
//! found in review): a limit of 0, a negative one, one past the total, one past `u64::MAX`,
//! an offset past the end or too large for any number the tool reads. Each is refused with its
//! reason or answered as an empty page with the real total, the same on the command line, over
//! REST and over MCP — never read as another page.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served, config_with_key};

/// The empty page past the end of the three tasks, at `offset`.
fn empty_page(offset: u64, limit: u64) -> Value {
    json!({"tasks": [], "counts": {"pending": 3, "in_progress": 0, "completed": 0},
        "total": 3, "offset": offset, "limit": limit})
}

#[test]
fn task_pages_past_the_edges_are_refused_or_empty_on_every_channel() {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    for title in ["one", "two", "three"] {
        project.run_keyed(&["tasks", "add", title]).ok();
    }

    // The command line: clap refuses what is not a u64 before anything runs; the tool refuses
    // a limit of 0.
    let zero = project.run_keyed(&["tasks", "list", "--limit", "0"]);
    assert_eq!(
        (zero.code(), zero.stderr().trim_end()),
        (
            4,
            "toolmux: invalid arguments for `task_list`: /limit: 0 is less than the minimum of 1"
        )
    );
    let negative = project.run_keyed(&["tasks", "list", "--limit=-1"]);
    assert_eq!(
        (negative.code(), negative.stderr()),
        (
            2,
            "error: invalid value '-1' for '--limit <LIMIT>': invalid digit found in string\n\n\
             For more information, try '--help'.\n"
                .to_string()
        )
    );
    let past_u64 = project.run_keyed(&["tasks", "list", "--offset", "18446744073709551616"]);
    assert_eq!(
        (past_u64.code(), past_u64.stderr()),
        (
            2,
            "error: invalid value '18446744073709551616' for '--offset <OFFSET>': number too \
             large to fit in target type\n\nFor more information, try '--help'.\n"
                .to_string()
        )
    );
    let huge = project.run_keyed(&["tasks", "list", "--limit", "18446744073709551615"]);
    assert_eq!(
        (huge.code(), huge.stderr().trim_end()),
        (
            4,
            "toolmux: invalid arguments for `task_list`: /limit: 18446744073709551615 is greater than the maximum of 1000"
        )
    );
    let last = project
        .run_keyed(&[
            "tasks",
            "list",
            "--offset",
            "18446744073709551615",
            "--limit",
            "1000",
            "--json",
        ])
        .json();
    assert_eq!(last, empty_page(u64::MAX, 1000));

    // REST: the query is parsed as the tool's types, the rest is the tool's answer.
    let served = Served::start(&project, &[]);
    let rest = |query: &str| served.get(&format!("/api/tasks?{query}"));
    let refused = rest("limit=0");
    assert_eq!(
        (refused.status, refused.json()),
        (
            422,
            json!({"error": {"code": "invalid_arguments",
                "message": "invalid arguments for `task_list`: /limit: 0 is less than the minimum of 1",
                "details": {"violations": [
                    {"pointer": "/limit", "message": "0 is less than the minimum of 1"}]}}})
        ),
        "{}",
        refused.body
    );
    let negative = rest("limit=-1");
    assert_eq!(
        (negative.status, negative.json()),
        (
            422,
            json!({"error": {"code": "invalid_arguments",
                "message": "invalid arguments for `task_list`: /limit: -1 is less than the minimum of 1",
                "details": {"violations": [
                    {"pointer": "/limit", "message": "-1 is less than the minimum of 1"}]}}})
        ),
        "{}",
        negative.body
    );
    let past_u64 = rest("offset=18446744073709551616");
    assert_eq!(
        (past_u64.status, past_u64.json()),
        (
            400,
            json!({"error": {"code": "malformed",
                "message": "bad query string: `offset` is too large (18446744073709551616)",
                "details": {}}})
        ),
        "{}",
        past_u64.body
    );
    let last = rest("offset=18446744073709551615&limit=1000");
    assert_eq!(
        (last.status, last.json()),
        (200, empty_page(u64::MAX, 1000))
    );
    let past_total = rest("offset=3&limit=1000");
    assert_eq!(past_total.json(), empty_page(3, 1000));

    // MCP: what JSON can say and a query cannot — a float, a number past u64::MAX.
    let outcomes = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [
            {"op": "call", "name": "task_list", "arguments": {"limit": 0}},
            {"op": "call", "name": "task_list", "arguments": {"offset": 1e30}},
            {"op": "call", "name": "task_list", "arguments": {"limit": 2.0}},
            {"op": "call", "name": "task_list", "arguments": {"offset": 18_446_744_073_709_551_615_u64, "limit": 1000}},
        ],
    }));
    let text = |i: usize| outcomes[i]["result"]["content"][0]["text"].clone();
    for (i, expected) in [
        "invalid arguments for `task_list`: /limit: 0 is less than the minimum of 1",
        "`offset` must be a whole number from 0 to 18446744073709551615, not 1e+30",
        "`limit` must be a whole number from 1 to 1000, not 2.0",
    ]
    .into_iter()
    .enumerate()
    {
        assert_eq!(outcomes[i]["result"]["isError"], true, "{}", outcomes[i]);
        assert_eq!(text(i), expected, "{}", outcomes[i]);
    }
    assert_eq!(
        outcomes[3]["result"]["structuredContent"],
        empty_page(u64::MAX, 1000),
        "{}",
        outcomes[3]
    );
    served.stop();
}
