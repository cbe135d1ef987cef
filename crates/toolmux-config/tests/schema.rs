//! The published schema and the starter file agree with the loader.

use std::fs;

use serde_json::{Value, json};
use toolmux_config::{load_with_env, project_config_path, schema, starter_config};
use toolmux_core::Policy;

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&schema()).expect("schema() is a valid JSON Schema")
}

fn starter() -> Value {
    serde_json::from_str(&starter_config()).expect("the starter config is JSON")
}

#[test]
fn starter_config_loads_with_a_schema_reference_and_asking_by_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = project_config_path(dir.path());
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(&path, starter_config()).expect("write");
    let loaded = load_with_env(dir.path(), None, &|_| None).expect("the starter config loads");
    let config = loaded.config;
    assert_eq!(config.schema.as_deref(), Some("./config.schema.json"));
    assert_eq!(config.policies.default, Some(Policy::Ask));
    assert_eq!(loaded.files, [path]);
    assert!(starter_config().ends_with("}\n"));
    assert!(starter_config().contains("\n  \"policies\": {\n"), "pretty");
}

#[test]
fn schema_accepts_the_starter_config() {
    let validator = validator();
    let errors: Vec<String> = validator
        .iter_errors(&starter())
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn schema_rejects_unknown_keys_and_bad_values() {
    let validator = validator();
    let mut top = starter();
    top["tiemoutMs"] = json!(5);
    assert!(!validator.is_valid(&top));
    let mut nested = starter();
    nested["defaults"]["tiemoutMs"] = json!(5);
    assert!(!validator.is_valid(&nested));
    assert!(!validator.is_valid(&json!({"policies": {"tools": {"grep": "maybe"}}})));
    assert!(!validator.is_valid(&json!({"toolSettings": {"github__*": {}}})));
    assert!(!validator.is_valid(&json!({
        "toolSettings": {"grep": {"rateLimit": {"requests": 1, "period": "soon"}}}
    })));
    assert!(!validator.is_valid(&json!({"chat": {"sampling": "sometimes"}})));
    assert!(
        !validator.is_valid(&json!({"mcpServers": {"s": {"command": "a", "sampling": "yes"}}}))
    );
    assert!(validator.is_valid(&json!({})));
}

#[test]
fn schema_descriptions_come_from_doc_comments() {
    let schema = schema();
    assert_eq!(schema["title"], "toolmux configuration");
    let root = &schema["properties"]["root"]["description"];
    assert!(
        root.as_str()
            .is_some_and(|d| d.contains("relative to the directory that holds `.toolmux/`")),
        "{root}"
    );
    // Answering without asking costs the person money; the schema says so where it is set.
    let text = schema.to_string();
    let sampling = |path: &[&str]| {
        let mut at = &schema;
        for key in path {
            at = &at[*key];
        }
        // Doc comments keep their line breaks; compare the words.
        let text = at["description"].as_str().unwrap_or_default();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    for description in [
        sampling(&["$defs", "ChatSettings", "properties", "sampling"]),
        sampling(&["$defs", "McpServer", "properties", "sampling"]),
    ] {
        assert!(
            description.contains("spends your tokens on the server's behalf"),
            "{text}"
        );
    }
}

#[test]
fn schema_and_loader_agree_on_rate_limit_periods() {
    let validator = validator();
    for (period, valid) in [
        ("30s", true),
        ("1m", true),
        ("minute", true),
        ("day", true),
        ("1 minute", false),
        ("minutes", false),
    ] {
        let config =
            json!({"toolSettings": {"grep": {"rateLimit": {"requests": 1, "period": period}}}});
        assert_eq!(validator.is_valid(&config), valid, "schema, {period}");
        assert_eq!(
            toolmux_config::Period::new(period).is_ok(),
            valid,
            "loader, {period}"
        );
    }
}
