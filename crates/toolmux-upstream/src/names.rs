//! Registry names of upstream tools: `PREFIX__tool`, kept to `^[a-zA-Z0-9_-]{1,64}$`. A name
//! that has to be changed to fit (too long, or clashing with another tool of the same server
//! once cleaned) gets a short hash of the tool's own name as a suffix, so the same tool always
//! gets the same name whatever order the server lists its tools in.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

/// The longest registry name.
pub const MAX_NAME_LEN: usize = 64;
/// `_` and eight hex digits.
const SUFFIX_LEN: usize = 9;

/// The registry names of one server's tools, in the order of `tools` (the server's own names).
pub fn registry_names(prefix: &str, tools: &[&str]) -> Vec<String> {
    let cleaned: Vec<String> = tools
        .iter()
        .map(|tool| format!("{prefix}__{}", clean(tool)))
        .collect();
    let mut groups: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, name) in cleaned.iter().enumerate() {
        groups.entry(name.as_str()).or_default().push(i);
    }
    cleaned
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let tool = tools[i];
            let unchanged = clean(tool) == tool;
            let clashes = groups.get(name.as_str()).is_some_and(|g| g.len() > 1);
            // In a clash, a tool whose own name needed no cleaning keeps the plain name, unless
            // another tool has the very same own name (a buggy server), which nothing can order.
            let plain_owner = clashes
                && unchanged
                && groups[name.as_str()]
                    .iter()
                    .filter(|&&j| clean(tools[j]) == tools[j])
                    .count()
                    == 1;
            if name.len() <= MAX_NAME_LEN && (!clashes || plain_owner) {
                name.clone()
            } else {
                suffixed(
                    name,
                    tool,
                    i,
                    clashes && !plain_owner && duplicate(tools, tool),
                )
            }
        })
        .collect()
}

/// Whether the server lists this exact own name more than once.
fn duplicate(tools: &[&str], tool: &str) -> bool {
    tools.iter().filter(|t| **t == tool).count() > 1
}

/// `name` cut to fit, with a hash of the tool's own name (and its position, when the server
/// lists the same name twice) appended.
fn suffixed(name: &str, tool: &str, position: usize, by_position: bool) -> String {
    let mut hasher = Sha256::new();
    hasher.update(tool.as_bytes());
    if by_position {
        hasher.update(position.to_le_bytes());
    }
    let digest = hasher.finalize();
    let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let keep = name.len().min(MAX_NAME_LEN - SUFFIX_LEN);
    // Names are ASCII after cleaning, so any byte index is a character boundary.
    format!("{}_{hex}", &name[..keep])
}

/// A tool's own name with every character outside `[a-zA-Z0-9_-]` replaced by `_`.
pub fn clean(tool: &str) -> String {
    let cleaned: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_string()
    } else {
        cleaned
    }
}

/// Whether a name keeps to the registry alphabet and length.
pub fn is_valid(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_prefix_and_tool() {
        assert_eq!(
            registry_names("github", &["create_issue", "list-repos"]),
            ["github__create_issue", "github__list-repos"]
        );
    }

    #[test]
    fn characters_outside_the_alphabet_become_underscores() {
        assert_eq!(registry_names("fs", &["read.file"]), ["fs__read_file"]);
    }

    #[test]
    fn over_long_names_are_cut_with_a_stable_hash_suffix() {
        let long = "x".repeat(80);
        let names = registry_names("server", &[&long]);
        assert_eq!(names[0].len(), 64);
        assert!(is_valid(&names[0]));
        assert_eq!(names, registry_names("server", &[&long]), "deterministic");
        let other = registry_names("server", &[&format!("{long}y")]);
        assert_ne!(names[0], other[0], "different tools, different names");
    }

    #[test]
    fn clashing_names_keep_the_plain_one_and_suffix_the_cleaned_one_in_any_order() {
        let a = registry_names("s", &["a.b", "a_b"]);
        let b = registry_names("s", &["a_b", "a.b"]);
        assert_eq!(a[1], "s__a_b");
        assert!(
            a[0].starts_with("s__a_b_") && a[0].len() == "s__a_b".len() + 9,
            "{a:?}"
        );
        assert_eq!(
            (a[0].as_str(), a[1].as_str()),
            (b[1].as_str(), b[0].as_str())
        );
    }

    #[test]
    fn a_server_listing_one_name_twice_still_gets_unique_names() {
        let names = registry_names("s", &["t", "t"]);
        assert_ne!(names[0], names[1]);
        assert!(names.iter().all(|n| is_valid(n)));
    }
}
