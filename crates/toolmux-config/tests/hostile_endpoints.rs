//! Hostile `endpoints` sections: names that are no URL segment (`/`, `..`, huge), more
//! endpoints than any deployment has, and malformed entries. Each is refused with the file,
//! line, column and field, and never echoed whole.

use std::fmt::Write as _;

use toolmux_config::{ConfigError, LoadedConfig, MAX_ENDPOINTS};

mod common;

/// Loads `text` as a project's configuration.
fn load(text: &str) -> Result<LoadedConfig, ConfigError> {
    common::Project::new().load_text(text)
}

/// The error `text` is refused with, with the file's path in place of `FILE`.
fn refusal(text: &str) -> String {
    common::Project::new().refusal(text)
}

const RULE: &str = "an endpoint name is 1 to 64 ASCII letters, digits, `-` and `_` (it is a \
                    segment of the endpoint's URL)";

#[test]
fn a_name_with_a_slash_or_dots_is_refused_at_its_place() {
    assert_eq!(
        refusal(r#"{"endpoints": {"a/b": {}}}"#),
        format!("FILE:1:20: at `endpoints.a/b`: invalid endpoint name `a/b`: {RULE}")
    );
    assert_eq!(
        refusal(r#"{"endpoints": {"..": {}}}"#),
        format!("FILE:1:19: at `endpoints...`: invalid endpoint name `..`: {RULE}")
    );
    assert_eq!(
        refusal(r#"{"endpoints": {"": {}}}"#),
        format!("FILE:1:17: at `endpoints.`: invalid endpoint name ``: {RULE}")
    );
}

#[test]
fn a_huge_name_is_refused_and_named_by_its_start_only() {
    let name = "n".repeat(100_000);
    let error = refusal(&format!(r#"{{"endpoints": {{"{name}": {{}}}}}}"#));
    let shown = "n".repeat(65);
    assert!(
        error.ends_with(&format!(": invalid endpoint name `{shown}`: {RULE}")),
        "{error}"
    );
    assert!(
        error.len() < 2 * name.len(),
        "the name is echoed at most in the field path"
    );
}

#[test]
fn ten_thousand_endpoints_are_refused_with_the_cap() {
    let mut text = String::from(r#"{"endpoints": {"#);
    for i in 0..10_000 {
        let sep = if i == 0 { "" } else { ", " };
        write!(text, r#"{sep}"e{i}": {{"tools": ["faults__*"]}}"#).expect("write");
    }
    text.push_str("}}");
    let error = refusal(&text);
    // Reported where the section ends: its whole map is read before it is counted.
    let column = text.len();
    assert_eq!(
        error,
        format!(
            "FILE:1:{column}: at `endpoints`: 10000 endpoints are configured; at most \
             {MAX_ENDPOINTS} are allowed"
        )
    );
    // The cap itself loads.
    let mut text = String::from(r#"{"endpoints": {"#);
    for i in 0..MAX_ENDPOINTS {
        let sep = if i == 0 { "" } else { ", " };
        write!(text, r#"{sep}"e{i}": {{}}"#).expect("write");
    }
    text.push_str("}}");
    let loaded = load(&text);
    let loaded = loaded.expect("the cap loads");
    assert_eq!(loaded.config.hub_settings().endpoints.len(), MAX_ENDPOINTS);
}

#[test]
fn a_malformed_entry_names_the_field() {
    assert_eq!(
        refusal("{\"endpoints\": {\n  \"review\": {\"tools\": [\"a[\"]}\n}}"),
        "FILE:2:28: at `endpoints.review.tools[0]`: invalid tool-name pattern `a[`: unclosed \
         character class; missing ']'"
    );
    assert_eq!(
        refusal(r#"{"endpoints": {"review": {"tool": ["grep"]}}}"#),
        "FILE:1:32: at `endpoints.review`: unknown field `tool`; did you mean `tools`?"
    );
    assert_eq!(
        refusal(r#"{"endpoints": {"review": {"codeMode": "yes"}}}"#),
        "FILE:1:43: at `endpoints.review.codeMode`: invalid type: string \"yes\", expected a \
         boolean"
    );
    assert_eq!(
        refusal(r#"{"endpoints": ["review"]}"#),
        "FILE:1:14: at `endpoints`: invalid type: sequence, expected a map"
    );
}

#[test]
fn endpoints_reach_the_hub_as_scopes_with_their_instructions_and_code_mode() {
    let loaded = load(
        r#"{"endpoints": {
            "review": {"tools": ["github__*"], "exclude": ["github__delete_*"],
                       "servers": ["github"], "instructions": "Review only."},
            "agents": {"codeMode": true}
        }}"#,
    );
    let settings = loaded.expect("loads").config.hub_settings();
    let review = &settings.endpoints["review"];
    assert_eq!(review.instructions.as_deref(), Some("Review only."));
    assert!(!review.code_mode());
    let patterns = |list: &[toolmux_core::NamePattern]| -> Vec<String> {
        list.iter().map(|p| p.as_str().to_string()).collect()
    };
    assert_eq!(patterns(&review.scope.include), ["github__*"]);
    assert_eq!(patterns(&review.scope.exclude), ["github__delete_*"]);
    assert_eq!(review.scope.sources, ["github"]);
    assert_eq!(review.scope.served_by, "the endpoint `review`");
    let agents = &settings.endpoints["agents"];
    assert!(agents.code_mode());
    assert_eq!(agents.instructions, None);
}
