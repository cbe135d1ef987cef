//! Ranked search over the compiled capabilities, by tool name, function name, source and
//! description.

use serde::Serialize;

use crate::capabilities::Capabilities;

/// One search hit.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    /// The tool's registry name.
    pub tool: String,
    /// The module to import.
    pub module: String,
    /// The namespace object the module exports.
    pub namespace: String,
    /// The method on it.
    pub function: String,
    /// The tool's description.
    pub description: String,
    /// The declarations of the function and the types it uses.
    pub declaration: String,
    /// Higher is better.
    pub score: f64,
}

/// Splits text into lowercase words at non-alphanumerics and camelCase humps.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// `files` matches `file`: a trailing plural `s` is ignored on both sides.
fn stem(word: &str) -> &str {
    if word.len() > 3 {
        word.strip_suffix('s').unwrap_or(word)
    } else {
        word
    }
}

fn word_matches(term: &str, word: &str) -> f64 {
    let (t, w) = (stem(term), stem(word));
    if t == w {
        1.0
    } else if w.starts_with(t) && t.len() >= 3 {
        0.7
    } else if strsim_like(t, w) {
        0.5
    } else {
        0.0
    }
}

/// A cheap typo tolerance: words of four letters or more at most one edit apart.
fn strsim_like(a: &str, b: &str) -> bool {
    a.len() >= 4 && b.len() >= 4 && a.len().abs_diff(b.len()) <= 1 && strsim::levenshtein(a, b) <= 1
}

/// The best `limit` matches of `query`. An empty query lists tools in catalog order.
pub fn search(capabilities: &Capabilities, query: &str, limit: usize) -> Vec<SearchHit> {
    let terms = words(query);
    let mut hits = Vec::new();
    for module in capabilities.modules() {
        let source_words = words(&module.source);
        for function in &module.functions {
            let name_words: Vec<String> = words(&function.tool)
                .into_iter()
                .chain(words(&function.function))
                .collect();
            let description_words = words(&function.description);
            let mut score = 0.0;
            for term in &terms {
                let best =
                    |ws: &[String]| ws.iter().map(|w| word_matches(term, w)).fold(0.0, f64::max);
                let in_name = best(&name_words);
                let in_source = best(&source_words);
                let in_description = best(&description_words);
                // A term the tool does not mention at all costs more than a weak match gains.
                if in_name + in_source + in_description == 0.0 {
                    score -= 1.0;
                }
                score += 4.0 * in_name + 2.0 * in_source + in_description;
            }
            if !terms.is_empty() && score <= 0.0 {
                continue;
            }
            hits.push(SearchHit {
                tool: function.tool.clone(),
                module: module.specifier(),
                namespace: module.namespace.clone(),
                function: function.function.clone(),
                description: function.description.clone(),
                declaration: function.declaration.clone(),
                score,
            });
        }
    }
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.tool.cmp(&b.tool))
    });
    hits.truncate(limit);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_snake_kebab_and_camel_case() {
        assert_eq!(words("github__create_issue"), ["github", "create", "issue"]);
        assert_eq!(words("fileRead"), ["file", "read"]);
        assert_eq!(
            words("Read a UTF-8 file."),
            ["read", "a", "utf", "8", "file"]
        );
    }

    #[test]
    fn plurals_prefixes_and_one_typo_still_match() {
        assert_eq!(word_matches("files", "file"), 1.0);
        assert_eq!(word_matches("dir", "directory"), 0.7);
        assert_eq!(word_matches("di", "directory"), 0.0);

        assert_eq!(word_matches("serach", "search"), 0.0);
        assert_eq!(word_matches("grap", "grep"), 0.5);
    }
}
