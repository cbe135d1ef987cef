//! Hostile input to shaping: ids that try to leave the store, windows past every bound, and
//! projections that would loop, explode or read the environment.

mod support;

use serde_json::json;
use toolmux_core::{CallError, Channel, ResourceError, ResourceProvider, ToolResult};
use toolmux_shaping::{MAX_OUTPUTS, Projection};

use support::{big_json, context, rig, text_of};

#[tokio::test]
async fn ids_that_are_not_ours_name_no_file() {
    let rig = rig(ToolResult::text("x"), None, None);
    // A file beside the store that a path could reach.
    std::fs::write(rig.store_dir().join("../secret.json"), "{}").unwrap();
    for id in [
        "../secret",
        "../../etc/passwd",
        "0123456789abcdef0123456789ABCDEF",
        "",
        "a/b",
    ] {
        let result = rig
            .hub
            .call("result_read", json!({"id": id}), &context(Channel::Mcp))
            .await;
        match (id, result) {
            ("", Err(CallError::InvalidArguments { violations, .. })) => {
                assert_eq!(violations[0].pointer, "/id");
            }
            (_, Ok(result)) => {
                assert!(result.is_error);
                assert_eq!(
                    text_of(&result),
                    format!("`{id}` is not a result id (32 lowercase hex digits)")
                );
            }
            (_, other) => panic!("{id}: {other:?}"),
        }
        assert_eq!(
            rig.pack.read(&format!("toolmux://results/{id}")),
            Err(ResourceError::NotFound(format!(
                "`{id}` is not a result id (32 lowercase hex digits)"
            )))
        );
    }
    assert_eq!(
        rig.store.read("../secret").unwrap_err().to_string(),
        "`../secret` is not a result id (32 lowercase hex digits)"
    );
    let unknown = "0123456789abcdef0123456789abcdef";
    let result = rig
        .hub
        .call(
            "result_read",
            json!({"id": unknown}),
            &context(Channel::Mcp),
        )
        .await
        .unwrap();
    assert_eq!(
        text_of(&result),
        format!("no kept result `{unknown}`: it expired or never existed")
    );
}

#[tokio::test]
async fn a_window_past_every_bound_is_refused_or_empty() {
    let rig = rig(
        ToolResult::structured(big_json(300 * 1024)),
        None,
        Some(json!({"maxBytes": 1000})),
    );
    let cut = rig
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .unwrap();
    let id = text_of(&cut).split("toolmux://results/").nth(1).unwrap()[..32].to_string();
    let err = rig
        .hub
        .call(
            "result_read",
            json!({"id": id, "limit": 1_000_000_000u64}),
            &context(Channel::Mcp),
        )
        .await
        .unwrap_err();
    let CallError::InvalidArguments { violations, .. } = err else {
        panic!("{err:?}")
    };
    assert_eq!(violations[0].pointer, "/limit");
    // Far past the end: an empty page that says how many lines there are.
    let page = rig
        .hub
        .call(
            "result_read",
            json!({"id": id, "offset": u64::MAX}),
            &context(Channel::Mcp),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&page), "");
    let meta = page.structured_content.unwrap();
    assert_eq!(meta["lines"], 0);
    assert_eq!(meta.get("nextOffset"), None);
    // The most a page holds, however many lines are asked for.
    let page = rig
        .hub
        .call(
            "result_read",
            json!({"id": id, "limit": 5000}),
            &context(Channel::Mcp),
        )
        .await
        .unwrap();
    assert!(text_of(&page).len() <= toolmux_shaping::MAX_PAGE_BYTES);
    assert!(
        page.structured_content.unwrap()["nextOffset"]
            .as_u64()
            .is_some()
    );
}

#[test]
fn projections_that_could_loop_or_explode_are_refused() {
    for (expression, reason) in [
        (
            "def f: f; f",
            "`def` may make unbounded work, which a projection may not",
        ),
        (
            "repeat(1)",
            "`repeat` may make unbounded work, which a projection may not",
        ),
        (
            "[range(1e18)]",
            "`range` may make unbounded work, which a projection may not",
        ),
        (
            "last(range(0; infinite))",
            "`range` may make unbounded work, which a projection may not",
        ),
        (
            "reduce .[] as $x (.; . + .)",
            "`reduce` may make unbounded work, which a projection may not",
        ),
        (
            "[.[] | \"\\(until(false; .))\"]",
            "`until` may make unbounded work, which a projection may not",
        ),
        (
            ".name * .count",
            "`*` may build values as large as the result says",
        ),
        (
            ".s | fromjson",
            "`fromjson` may make unbounded work, which a projection may not",
        ),
        ("$ENV", "`$ENV` would show toolmux's environment"),
        (
            "env",
            "`env` may make unbounded work, which a projection may not",
        ),
    ] {
        assert_eq!(
            Projection::new(expression).unwrap_err().to_string(),
            format!("the jq expression `{expression}` is refused: {reason}"),
        );
    }
    let deep = format!("{}.{}", "(".repeat(65), ")".repeat(65));
    assert!(
        Projection::new(&deep)
            .unwrap_err()
            .to_string()
            .ends_with("is refused: its brackets nest deeper than 64")
    );
    let long = ".a | ".repeat(1000) + ".";
    assert!(
        Projection::new(&long)
            .unwrap_err()
            .to_string()
            .ends_with("is refused: it is longer than 4096 bytes")
    );
}

#[tokio::test]
async fn a_projection_that_streams_too_much_stops_and_the_result_stays_whole() {
    let many: Vec<u64> = (0..(MAX_OUTPUTS as u64 + 1)).collect();
    let rig = rig(
        ToolResult::structured(json!({"n": many})),
        None,
        Some(json!({"projection": ".n[]"})),
    );
    let result = rig
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .unwrap();
    assert_eq!(result.structured_content, Some(json!({"n": many})));
    assert_eq!(
        result.content.last().and_then(|c| c.as_text()),
        Some(
            "[toolmux: the projection `.n[]` was not applied: the projection stopped: it gave more than 10000 values; this is the whole result]"
        )
    );
    drop(rig.shaper);
}

/// The output cap is on all of a projection's outputs together: nine copies of an 8 MiB string
/// each fit under it, their sum does not.
#[tokio::test]
async fn outputs_that_each_fit_but_together_pass_the_cap_stop_the_projection() {
    let long = "x".repeat(8 * 1024 * 1024);
    let rig = rig(
        ToolResult::structured(json!({"s": long})),
        None,
        Some(json!({"projection": ".s, .s, .s, .s, .s, .s, .s, .s, .s"})),
    );
    let result = rig
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .unwrap();
    assert_eq!(result.structured_content, Some(json!({"s": long})));
    assert_eq!(
        result.content.last().and_then(|c| c.as_text()),
        Some(
            "[toolmux: the projection `.s, .s, .s, .s, .s, .s, .s, .s, .s` was not applied: the projection stopped: its output is larger than 67108864 bytes; this is the whole result]"
        )
    );
    drop(rig.shaper);
}

#[tokio::test]
async fn a_deeply_nested_text_result_is_not_projected_and_nothing_recurses_on_it() {
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let rig = rig(
        ToolResult::text(deep.clone()),
        None,
        Some(json!({"projection": ".[0]", "maxBytes": 100})),
    );
    let result = rig
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .unwrap();
    let text = text_of(&result);
    assert!(text.starts_with(&"[".repeat(100)), "{text:.300}");
    assert!(
        text.contains("[toolmux: the projection `.[0]` was not applied: this result is not JSON]"),
        "{text:.300}"
    );
    assert!(text.contains("[toolmux: result cut to its first 100 bytes"));
}
