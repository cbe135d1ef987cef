//! Comments in configuration files: `//`, `/* … */` and `#` comments and trailing commas are
//! accepted (JSON with comments, as editors call it), so that `toolmux init` can write a file
//! that explains itself. They are replaced by spaces before the JSON is parsed, so every error
//! still names the line and column of the file as written. An edit through the config editor
//! writes plain JSON: comments do not survive it.

use std::borrow::Cow;

/// `text` with its comments and trailing commas blanked out. Text with a stray `/` outside a
/// string is returned as it is, for the JSON parser to report where.
pub(crate) fn without_comments(text: &str) -> Cow<'_, str> {
    if !text.contains(['/', '#', ',']) {
        return Cow::Borrowed(text);
    }
    let mut owned = text.to_string();
    match json_strip_comments::strip_comments_in_place(&mut owned) {
        Ok(()) => Cow::Owned(owned),
        Err(_) => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_become_spaces_and_strings_are_left_alone() {
        let text = "{\n  // a note\n  \"url\": \"http://x/#y\", /* inline */\n  \"n\": 1,\n}\n";
        let plain = without_comments(text);
        assert_eq!(plain.len(), text.len(), "positions are kept");
        let value: serde_json::Value = serde_json::from_str(&plain).expect("JSON");
        assert_eq!(value, serde_json::json!({"url": "http://x/#y", "n": 1}));
        // The second line is blank where the comment was: a later error keeps its line.
        assert_eq!(plain.lines().nth(1).map(str::trim), Some(""));
    }
}
