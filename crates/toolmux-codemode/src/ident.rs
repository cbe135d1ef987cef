//! Turning tool, source and property names into TypeScript identifiers that are valid and stable:
//! the same name always gives the same identifier, whatever else is in the catalog (collisions
//! aside, which are numbered in catalog order).

use std::collections::HashSet;

/// Words that cannot name a binding in strict-mode ES modules or in TypeScript declarations.
const RESERVED: &[&str] = &[
    "arguments",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "eval",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// Splits a name into words at every character that is not an ASCII letter or digit
/// (`create_issue`, `create-issue`, `create.issue` all give `create`, `issue`).
fn words(name: &str) -> Vec<&str> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

fn upper_first(word: &str, out: &mut String) {
    let mut chars = word.chars();
    if let Some(first) = chars.next() {
        out.push(first.to_ascii_uppercase());
        out.push_str(chars.as_str());
    }
}

/// `create_issue` → `createIssue`; a name that is already camelCase keeps its case; an
/// all-capitals first word is lowered (`HTTP_get` → `httpGet`).
pub fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, word) in words(name).into_iter().enumerate() {
        if i == 0 {
            if word.chars().all(|c| !c.is_ascii_lowercase()) {
                out.push_str(&word.to_ascii_lowercase());
            } else {
                let mut chars = word.chars();
                if let Some(first) = chars.next() {
                    out.push(first.to_ascii_lowercase());
                    out.push_str(chars.as_str());
                }
            }
        } else {
            upper_first(word, &mut out);
        }
    }
    out
}

/// `create_issue` → `CreateIssue`.
pub fn pascal_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for word in words(name) {
        upper_first(word, &mut out);
    }
    out
}

/// A camelCase identifier that can name a binding: never empty, never starting with a digit,
/// never a reserved word (those get a trailing `_`).
pub fn value_ident(name: &str, fallback: &str) -> String {
    let mut ident = camel_case(name);
    if ident.is_empty() {
        ident = fallback.to_string();
    }
    if ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert(0, '_');
    }
    if RESERVED.contains(&ident.as_str()) {
        ident.push('_');
    }
    ident
}

/// A PascalCase fragment of a type name; a leading digit gets a `_` in front when it starts the
/// whole name.
pub fn type_fragment(name: &str) -> String {
    pascal_case(name)
}

/// A type name made of fragments, valid on its own.
pub fn type_ident(fragments: &str, fallback: &str) -> String {
    let mut ident = if fragments.is_empty() {
        fallback.to_string()
    } else {
        fragments.to_string()
    };
    if ident.starts_with(|c: char| c.is_ascii_digit()) {
        ident.insert(0, '_');
    }
    ident
}

/// Whether a string can be written bare as a property key.
pub fn is_plain_key(key: &str) -> bool {
    let mut chars = key.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A property key as TypeScript source: bare when it can be, a JSON string otherwise.
pub fn property_key(key: &str) -> String {
    if is_plain_key(key) {
        key.to_string()
    } else {
        json_string(key)
    }
}

/// A string literal in TypeScript and JavaScript source (JSON's escaping is valid in both).
pub fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// Hands out names, numbering the second and later uses of one (`Foo`, `Foo2`, `Foo3`).
#[derive(Debug, Default)]
pub struct NameSet {
    used: HashSet<String>,
}

impl NameSet {
    /// Reserves `wanted`, or the first free numbered variant of it.
    pub fn claim(&mut self, wanted: &str) -> String {
        if self.used.insert(wanted.to_string()) {
            return wanted.to_string();
        }
        let mut n = 2;
        loop {
            let candidate = format!("{wanted}{n}");
            if self.used.insert(candidate.clone()) {
                return candidate;
            }
            n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_kebab_and_dotted_names_become_camel_case() {
        assert_eq!(camel_case("create_issue"), "createIssue");
        assert_eq!(camel_case("create-issue"), "createIssue");
        assert_eq!(camel_case("repo.create.issue"), "repoCreateIssue");
        assert_eq!(camel_case("getIssue"), "getIssue");
        assert_eq!(camel_case("HTTP_get"), "httpGet");
        assert_eq!(camel_case("Get_Issue"), "getIssue");
    }

    #[test]
    fn reserved_words_leading_digits_and_empty_names_become_valid_identifiers() {
        assert_eq!(value_ident("delete", "tool"), "delete_");
        assert_eq!(value_ident("class", "tool"), "class_");
        assert_eq!(value_ident("2fa-check", "tool"), "_2faCheck");
        assert_eq!(value_ident("--", "tool"), "tool");
        assert_eq!(value_ident("ünïcode", "tool"), "nCode");
        assert_eq!(type_ident(&type_fragment("3d_model"), "T"), "_3dModel");
    }

    #[test]
    fn property_keys_are_quoted_only_when_needed() {
        assert_eq!(property_key("path"), "path");
        assert_eq!(property_key("default"), "default");
        assert_eq!(property_key("content-type"), "\"content-type\"");
        assert_eq!(property_key("1st"), "\"1st\"");
        assert_eq!(property_key(""), "\"\"");
    }

    #[test]
    fn colliding_names_are_numbered_in_order() {
        let mut names = NameSet::default();
        assert_eq!(names.claim("getItem"), "getItem");
        assert_eq!(names.claim("getItem"), "getItem2");
        assert_eq!(names.claim("getItem"), "getItem3");
    }
}
