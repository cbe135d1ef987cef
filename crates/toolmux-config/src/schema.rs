//! The published JSON Schema of the file, and the file `toolmux init` writes.

use serde_json::Value;
use toolmux_core::Policy;

use crate::fields::ToolPattern;
use crate::model::Config;

/// The JSON Schema (draft 2020-12) of `.toolmux/config.json`, generated from the types that
/// read it, so that the two cannot disagree. Editors use it to complete and check the file.
pub fn schema() -> Value {
    let mut schema = schemars::schema_for!(Config).to_value();
    if let Value::Object(map) = &mut schema {
        map.insert(
            "title".to_string(),
            Value::String("toolmux configuration".to_string()),
        );
    }
    schema
}

/// The configuration `toolmux init` writes: every section with its defaults, so that a person
/// sees what can be set, and policies that ask before running a tool that is neither read-only
/// nor explicitly allowed. Points `"$schema"` at the schema file beside it
/// ([`crate::project_schema_path`]).
pub fn starter_config() -> String {
    let mut config = Config {
        schema: Some("./config.schema.json".to_string()),
        root: Some(".".into()),
        ..Config::default()
    };
    config.policies.default = Some(Policy::Ask);
    for name in ["file_read", "grep"] {
        if let Ok(pattern) = ToolPattern::new(name) {
            config.policies.tools.insert(pattern, Policy::Allow);
        }
    }
    let mut text =
        serde_json::to_string_pretty(&config).expect("a Config with a UTF-8 root serializes");
    text.push('\n');
    text
}
