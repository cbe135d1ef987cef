//! What the integration tests share: calling a tool through the `Source` trait, and building
//! files on disk.

#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;
use toolmux_core::{CallContext, Channel, Source, SourceCall, ToolResult};
use toolmux_workspace::{WorkspaceLimits, WorkspacePack};

/// Calls `tool` of `pack` with `arguments`, as the hub would.
pub async fn call(pack: &WorkspacePack, tool: &str, arguments: Value) -> ToolResult {
    let descriptor = pack
        .tools()
        .into_iter()
        .find(|t| t.name == tool)
        .unwrap_or_else(|| panic!("no tool {tool}"));
    let context = CallContext::new(Channel::Cli);
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    pack.call(SourceCall {
        tool: &descriptor,
        arguments,
        context: &context,
    })
    .await
    .unwrap_or_else(|e| panic!("{tool} failed at the source level: {e}"))
}

/// The text of a successful result; fails the test on a tool error.
pub fn ok_text(result: &ToolResult) -> String {
    assert!(
        !result.is_error,
        "expected success, got: {}",
        result.text_content()
    );
    result.text_content()
}

/// The message of a tool error; fails the test on success.
pub fn error_text(result: &ToolResult) -> String {
    assert!(
        result.is_error,
        "expected a tool error, got: {}",
        result.text_content()
    );
    assert!(result.structured_content.is_none());
    result.text_content()
}

/// The structured content of a successful result.
pub fn structured(result: &ToolResult) -> &Value {
    assert!(!result.is_error, "{}", result.text_content());
    result
        .structured_content
        .as_ref()
        .expect("structured content")
}

/// Everything a result shows anyone: its text and its structured content.
pub fn everything(result: &ToolResult) -> String {
    let mut all = result.text_content();
    if let Some(s) = &result.structured_content {
        all.push('\n');
        all.push_str(&s.to_string());
    }
    all
}

/// Writes `contents` to `root/rel`, creating directories.
pub fn write(root: &Path, rel: &str, contents: impl AsRef<[u8]>) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create dirs");
    }
    std::fs::write(path, contents).expect("write file");
}

/// A pack over `root` with default limits.
pub fn pack(root: &Path) -> WorkspacePack {
    WorkspacePack::new(root, WorkspaceLimits::default()).expect("pack")
}

/// A pack over `root` with the given limits.
pub fn pack_with(root: &Path, limits: WorkspaceLimits) -> WorkspacePack {
    WorkspacePack::new(root, limits).expect("pack")
}
