//! Shaping through the real pipeline: a hub with the shaping step, the results pack, and a tool
//! answering a 5 MB JSON document.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use toolmux_core::{CallError, Channel, ContentBody, ResourceProvider, ToolResult};
use toolmux_shaping::{OutputSettings, SpillSettings, SpillStore, check_id};

use support::{big_json, context, rig, text_of};

const FIVE_MB: usize = 5 * 1024 * 1024;

/// The id of the result a cut result links to.
fn kept_id(result: &ToolResult) -> String {
    let link = result
        .content
        .iter()
        .find_map(|c| match &c.body {
            ContentBody::ResourceLink { uri, .. } => Some(uri.clone()),
            _ => None,
        })
        .expect("a resource link");
    let id = link
        .strip_prefix("toolmux://results/")
        .expect("a results URI")
        .to_string();
    check_id(&id).expect("a well-formed id");
    id
}

#[tokio::test]
async fn a_result_over_its_cap_is_cut_with_a_note_kept_whole_and_read_back_by_pages() {
    let document = big_json(FIVE_MB);
    let rig = rig(
        ToolResult::structured(document.clone()),
        None,
        Some(json!({"maxTokens": 1000})),
    );
    let result = rig
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .expect("the call runs");
    let pretty = serde_json::to_string_pretty(&document).unwrap();
    let id = kept_id(&result);
    // The caller sees the head, exactly 1,000 tokens of it, and a note that says what was cut
    // and where the rest is.
    assert_eq!(result.structured_content, None);
    let text = result.content[0].as_text().expect("a text block");
    let (shown, note) = text.rsplit_once('\n').expect("a note");
    assert!(pretty.starts_with(shown));
    assert_eq!(toolmux_shaping::count_tokens(shown).unwrap(), 1000);
    let lines = pretty.lines().count();
    let next = shown.matches('\n').count() + 1;
    let kept = rig.store.read(&id).expect("kept");
    let expected = format!(
        "[toolmux: result cut to its first 1000 tokens: bytes 0–{} and lines 1–{next} of {} \
         bytes, {lines} lines. The whole result is kept as toolmux://results/{id} until {}: read \
         it with MCP resources/read, GET /api/results/{id}, or the result_read tool with \
         {{\"id\": \"{id}\", \"offset\": {next}}} for the lines from {next} on.]",
        shown.len(),
        pretty.len(),
        kept.expires
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    );
    assert_eq!(note, expected);
    // Kept privately.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(rig.store_dir().join(format!("{id}.json")))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // The whole, as the resource.
    let read = rig
        .pack
        .read(&format!("toolmux://results/{id}"))
        .expect("readable");
    assert_eq!(read[0].mime_type.as_deref(), Some("application/json"));
    assert_eq!(
        serde_json::from_str::<Value>(&read[0].text).unwrap(),
        document
    );
    // The whole, page by page through `result_read` on the same pipeline.
    let mut offset = 1;
    let mut whole = String::new();
    let mut pages = 0;
    loop {
        let page = rig
            .hub
            .call(
                "result_read",
                json!({"id": id, "offset": offset, "limit": 5000}),
                &context(Channel::Mcp),
            )
            .await
            .expect("a page");
        assert!(!page.is_error, "{page:?}");
        whole.push_str(&text_of(&page));
        pages += 1;
        let meta = page.structured_content.expect("page facts");
        assert_eq!(meta["totalLines"], lines);
        match meta.get("nextOffset") {
            Some(next) => offset = next.as_u64().unwrap() as usize,
            None => break,
        }
    }
    assert!(pages > 1);
    assert_eq!(whole, format!("{pretty}\n"));
    drop(rig.shaper);
}

#[tokio::test]
async fn mcp_clients_get_the_default_cap_and_rest_callers_the_whole_result() {
    let document = big_json(200 * 1024);
    let rig = rig(ToolResult::structured(document.clone()), None, None);
    let mcp = rig
        .hub
        .call("big", json!({}), &context(Channel::Mcp))
        .await
        .unwrap();
    let shown = text_of(&mcp);
    assert!(
        shown.contains("[toolmux: result cut to its first 20000 tokens"),
        "{shown:.200}"
    );
    kept_id(&mcp);
    let rest = rig
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .unwrap();
    assert_eq!(rest.structured_content, Some(document));
}

#[tokio::test]
async fn the_chat_cap_is_the_same_mechanism_in_bytes() {
    let rig = rig(ToolResult::text("é".repeat(20_000)), None, None);
    let chat = rig
        .hub
        .call("big", json!({}), &context(Channel::Chat))
        .await
        .unwrap();
    let text = text_of(&chat);
    let (shown, note) = text.split_once("\n[toolmux: ").unwrap();
    assert_eq!(shown, "é".repeat(16_384));
    assert!(
        note.starts_with("result cut to its first 32768 bytes: bytes 0–32768 and lines 1–1 of 40000 bytes, 1 lines."),
        "{note}"
    );
}

#[tokio::test]
async fn keep_tail_and_head_tail_say_which_lines_they_kept() {
    let text: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
    let tail = rig(
        ToolResult::text(text.clone()),
        None,
        Some(json!({"maxBytes": 20, "keep": "tail"})),
    );
    let result = tail
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .unwrap();
    let shown = text_of(&result);
    assert!(shown.starts_with("\nline 999\nline 1000\n\n[toolmux: result cut to its last 20 bytes: bytes 8873–8893 and lines 998–1000 of 8893 bytes, 1000 lines."), "{shown}");
    let both = rig(
        ToolResult::text(text),
        None,
        Some(json!({"maxBytes": 20, "keep": "headTail"})),
    );
    let result = both
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .unwrap();
    let shown = text_of(&result);
    assert!(shown.starts_with("line 1\nlin\n[… bytes 10–8883 cut …]\nline 1000\n\n[toolmux: result cut to its first and last 10 bytes each: bytes 0–10 (lines 1–2) and 8883–8893 (lines 1000–1000) of 8893 bytes, 1000 lines."), "{shown}");
}

#[tokio::test]
async fn a_projection_shapes_structured_content_and_json_text() {
    let document = json!({"items": [{"id": 1, "title": "a", "body": "x"}, {"id": 2, "title": "b", "body": "y"}, {"id": 3, "title": "c", "body": "z"}]});
    let output = json!({"projection": ".items[:2] | map({id, title})"});
    let structured = rig(
        ToolResult::structured(document.clone()),
        None,
        Some(output.clone()),
    );
    let result = structured
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .unwrap();
    let projected = json!([{"id": 1, "title": "a"}, {"id": 2, "title": "b"}]);
    assert_eq!(result.structured_content, Some(projected.clone()));
    assert_eq!(text_of(&result), projected.to_string());
    let text = rig(ToolResult::text(document.to_string()), None, Some(output));
    let result = text
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .unwrap();
    assert_eq!(result.structured_content, None);
    assert_eq!(text_of(&result), projected.to_string());
}

#[tokio::test]
async fn the_output_schema_judges_the_unshaped_result() {
    let schema = json!({"type": "object", "properties": {"items": {"type": "array"}, "total": {"type": "integer"}}, "required": ["items", "total"]});
    let output = json!({"projection": ".items | length"});
    // The tool's result fits its schema; the projection's does not, and need not: the
    // structured content, a contract with the caller, stays whole, and the text is projected.
    let fits = rig(
        ToolResult::structured(json!({"items": [1, 2, 3], "total": 3})),
        Some(schema.clone()),
        Some(output.clone()),
    );
    let result = fits
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .unwrap();
    assert_eq!(
        result.structured_content,
        Some(json!({"items": [1, 2, 3], "total": 3}))
    );
    assert_eq!(text_of(&result), "3");
    // The tool's result breaks its schema: an error, although the projection would hide it.
    let breaks = rig(
        ToolResult::structured(json!({"items": [1, 2, 3]})),
        Some(schema),
        Some(output),
    );
    let err = breaks
        .hub
        .call("big", json!({}), &context(Channel::Rest))
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::InvalidOutput { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "tool `big` returned output that does not match its output schema: /: \"total\" is a required property"
    );
}

#[test]
fn kept_results_expire() {
    let dir = tempfile::tempdir().unwrap();
    let store = SpillStore::new(dir.path().join("results"), SpillSettings::default());
    let kept = store.keep("{\"a\": 1}", true).unwrap();
    assert_eq!(store.read(&kept.id).unwrap().text, "{\"a\": 1}");
    store.configure(SpillSettings {
        ttl: Duration::ZERO,
        ..SpillSettings::default()
    });
    assert_eq!(
        store.read(&kept.id).unwrap_err().to_string(),
        format!("no kept result `{}`: it expired or never existed", kept.id)
    );
    assert!(
        !dir.path()
            .join(format!("results/{}.json", kept.id))
            .exists()
    );
}

#[test]
fn the_store_stays_within_its_size_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = SpillStore::new(
        dir.path().join("results"),
        SpillSettings {
            ttl: Duration::from_secs(3600),
            max_total_bytes: 100,
        },
    );
    let first = store.keep(&"a".repeat(60), false).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let second = store.keep(&"b".repeat(60), false).unwrap();
    assert!(store.read(&first.id).is_err());
    assert_eq!(store.read(&second.id).unwrap().text, "b".repeat(60));
    assert_eq!(
        store.keep(&"c".repeat(101), false).unwrap_err().to_string(),
        "the result (101 bytes) is larger than the 100 bytes kept results may take"
    );
}

#[test]
fn output_settings_refuse_two_caps_and_a_bad_expression() {
    let parse = |v: Value| serde_json::from_value::<OutputSettings>(v).map_err(|e| e.to_string());
    assert_eq!(
        parse(json!({"maxTokens": 10, "maxBytes": 10})).unwrap_err(),
        "set `maxTokens` or `maxBytes`, not both"
    );
    assert!(
        parse(json!({"projection": ".items["}))
            .unwrap_err()
            .starts_with("the jq expression `.items[` does not compile:")
    );
    assert_eq!(
        parse(json!({"keep": "middle"})).unwrap_err(),
        "unknown variant `middle`, expected one of `head`, `tail`, `headTail`"
    );
    let settings = parse(json!({"maxBytes": 10, "keep": "tail", "projection": ".a"})).unwrap();
    assert_eq!(
        serde_json::to_value(&settings).unwrap(),
        json!({"maxBytes": 10, "keep": "tail", "projection": ".a"})
    );
}
