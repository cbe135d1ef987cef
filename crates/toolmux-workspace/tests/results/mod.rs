//! Reading a tool's result: the text of a success, the message of a tool error, the
//! structured content; each fails the test when the result is not what it reads.

use serde_json::Value;
use toolmux_core::ToolResult;

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
