//! Hostile `principals` and `roles` sections: a role that does not exist, a stored key that is
//! no hash (a key pasted in place of its hash), a name that is no name, an unknown field. Each is
//! refused with where it is; a stored key is never echoed whole.

use toolmux_config::{ConfigError, LoadedConfig};

mod common;

/// Loads `text` as a project's configuration.
fn load(text: &str) -> Result<LoadedConfig, ConfigError> {
    common::Project::new().load_text(text)
}

/// The error `text` is refused with, with the file's path in place of `FILE`.
fn refusal(text: &str) -> String {
    common::Project::new().refusal(text)
}

#[test]
fn a_missing_role_a_pasted_key_and_a_bad_name_are_refused() {
    assert_eq!(
        refusal(r#"{"principals": {"ci-bot": {"roles": ["ghost"]}}}"#),
        "FILE: at `principals`: `principals.ci-bot` holds the role `ghost`, which is not in \
         `roles`"
    );
    let pasted = r#"{"roles": {"r": {}}, "principals": {"ci-bot": {"roles": ["r"],
        "keys": [{"id": "tmk_abc", "sha256": "tmk_the-whole-secret-key", "created": "x"}]}}}"#;
    let error = refusal(pasted);
    assert_eq!(
        error,
        "FILE: at `principals`: `principals.ci-bot.keys`: the key `tmk_abc` has no valid \
         `sha256` (64 lower-case hexadecimal digits); make keys with `toolmux keys create`"
    );
    assert!(!error.contains("the-whole-secret-key"));
    let error = refusal(r#"{"principals": {"a b": {}}}"#);
    assert!(
        error.contains("at `principals.a b`: invalid endpoint name `a b`"),
        "{error}"
    );
    let error = refusal(r#"{"roles": {"r": {"tools": {"*": "maybe"}}}}"#);
    assert!(error.contains("at `roles.r.tools.*`"), "{error}");
    let error = refusal(r#"{"principals": {"p": {"password": "x"}}}"#);
    assert!(
        error.contains("at `principals.p`: unknown field `password`"),
        "{error}"
    );
}

#[test]
fn a_valid_section_loads_and_without_either_nothing_is_narrowed() {
    let loaded = load(
        r#"{"roles": {"reader": {"endpoints": ["default"], "tools": {"grep": "allow"}}},
            "principals": {"alice": {"roles": ["reader"], "subjects": ["alice@example.com"]}}}"#,
    );
    let settings = loaded.expect("loads").config.hub_settings();
    let alice = settings
        .principals
        .rights_of(Some("alice"))
        .expect("narrowed");
    assert!(alice.lists("grep") && !alice.lists("file_read") && alice.opens(""));
    let loaded = load("{}");
    let settings = loaded.expect("loads").config.hub_settings();
    assert!(settings.principals.rights_of(Some("alice")).is_none());
}
