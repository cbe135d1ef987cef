//! Shared by the integration tests: the corpus and calling the pack's tools.

#![allow(dead_code)]

pub mod corpus;

use std::path::Path;

use serde_json::{Map, Value};
use toolmux_specs::SpecsSource;

/// The pack over `root`.
pub fn open(root: &Path) -> SpecsSource {
    SpecsSource::open_with(root, None)
        .expect("opens")
        .expect("has a specs dir")
}

/// Runs a tool and returns its structured result, panicking on a tool error.
pub fn call(pack: &SpecsSource, tool: &str, args: Value) -> Value {
    let result = try_call(pack, tool, args);
    match result {
        Ok(v) => v,
        Err(e) => panic!("{tool} failed: {e}"),
    }
}

/// Runs a tool: its structured result, or the error text.
pub fn try_call(pack: &SpecsSource, tool: &str, args: Value) -> Result<Value, String> {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let args: Map<String, Value> = args;
    let result = pack.run(tool, &args).expect("known tool");
    if result.is_error {
        Err(result.text_content())
    } else {
        Ok(result.structured_content.expect("structured"))
    }
}
