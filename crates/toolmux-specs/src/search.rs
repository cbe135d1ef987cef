//! LeanSpec's search: its query language and its scoring, ported rule for rule so results
//! come back with the same scores in the same order.
//!
//! Syntax: words (all must match, `AND` implied), `AND`, `OR`, `NOT`, `"phrases"`, fields
//! `status:` `tag:` `priority:` `title:` `created:` (with `>=`, `>`, `<=`, `<`, `=` and a year,
//! month or day), fuzzy `term~` / `term~N` (Levenshtein distance on words). `OR` separates
//! groups of `AND`ed clauses. Matching is case-insensitive; text is ASCII-lowercased.
//!
//! Scoring per clause that is not negated: a word found in the title scores 10 (+5 when a
//! whole word of it), in the folder name 8, in a tag 6 (+3 when a whole tag), plus the number
//! of occurrences in the body up to 5; a phrase 14 / 10 / 8 / 2 per occurrence up to 8; a
//! fuzzy word 8, 6, 4 minus the best distance in title, name, tags, and 2 − distance / 2 in
//! the body; a field that matches 2. When more than one word is found in the title, 2 more
//! per such word. A result with no text term scores at least 1. Results are sorted by score,
//! highest first, ties in spec order, and cut at `limit`.

use chrono::{Datelike, NaiveDate};

use crate::model::Spec;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Connector {
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Status,
    Tag,
    Priority,
    Created,
    Title,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    Word { value: String, fuzzy: Option<usize> },
    Phrase(String),
    Field { field: Field, value: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Clause {
    connector: Connector,
    negated: bool,
    term: Term,
}

/// A parsed query.
#[derive(Debug, Clone)]
pub struct Query {
    clauses: Vec<Clause>,
    /// For each clause, what counts its word's or phrase's occurrences in a body.
    counters: Vec<Counter>,
}

/// Counts a literal's non-overlapping occurrences, as `str::matches` does. The standard
/// library's substring iterator (two-way) dominated a search over a thousand bodies; the
/// `regex` crate's literal search (SIMD) finds the same leftmost, non-overlapping matches
/// several times faster.
#[derive(Debug, Clone)]
struct Counter {
    literal: String,
    /// `None` when the literal is too long for a regex: then `str::matches` counts.
    regex: Option<regex::Regex>,
}

impl Counter {
    fn new(literal: &str) -> Self {
        Self {
            literal: literal.to_string(),
            regex: regex::Regex::new(&regex::escape(literal)).ok(),
        }
    }

    /// The occurrences in `text`, at most `cap` (only that many ever score).
    fn count(&self, text: &str, cap: usize) -> usize {
        match &self.regex {
            Some(re) => re.find_iter(text).take(cap).count(),
            None => text.matches(self.literal.as_str()).take(cap).count(),
        }
    }
}

enum Token {
    Raw(String),
    Phrase(String),
}

impl Query {
    /// Parses a query, with LeanSpec's error messages.
    pub fn parse(query: &str) -> Result<Self, String> {
        let tokens = tokenize(query)?;
        let mut clauses = Vec::new();
        let mut connector = Connector::And;
        let mut negated = false;
        let mut expect_term = true;
        for token in tokens {
            let term = match token {
                Token::Raw(raw) => {
                    let upper = raw.to_ascii_uppercase();
                    if upper == "AND" || upper == "OR" {
                        if expect_term {
                            return Err(format!("Unexpected operator '{raw}'"));
                        }
                        connector = if upper == "OR" {
                            Connector::Or
                        } else {
                            Connector::And
                        };
                        expect_term = true;
                        continue;
                    }
                    if upper == "NOT" {
                        if !expect_term {
                            connector = Connector::And;
                        }
                        negated = !negated;
                        expect_term = true;
                        continue;
                    }
                    parse_term(&raw)?
                }
                Token::Phrase(phrase) => Term::Phrase(phrase),
            };
            clauses.push(Clause {
                connector,
                negated,
                term,
            });
            connector = Connector::And;
            negated = false;
            expect_term = false;
        }
        if expect_term {
            return Err("Query ends with an operator".into());
        }
        if clauses.is_empty() {
            return Err("Empty search query".into());
        }
        let counters = clauses
            .iter()
            .map(|c| match &c.term {
                Term::Word { value, .. } | Term::Phrase(value) => Counter::new(value),
                // Never counted: no regex to build.
                Term::Field { value, .. } => Counter {
                    literal: value.clone(),
                    regex: None,
                },
            })
            .collect();
        Ok(Self { clauses, counters })
    }

    /// Whether a spec matches.
    pub fn matches(&self, spec: &Spec) -> bool {
        let mut acc = false;
        let mut group = false;
        for (i, clause) in self.clauses.iter().enumerate() {
            let matched = matches_term(spec, &clause.term) != clause.negated;
            if i == 0 {
                group = matched;
                continue;
            }
            match clause.connector {
                Connector::And => group = group && matched,
                Connector::Or => {
                    acc = acc || group;
                    group = matched;
                }
            }
        }
        acc || group
    }

    /// A matching spec's score.
    pub fn score(&self, spec: &Spec) -> f64 {
        let text = &spec.doc.search;
        let mut score = 0.0;
        let mut text_terms = 0usize;
        let mut title_terms = 0usize;
        for (clause, counter) in self.clauses.iter().zip(&self.counters) {
            if clause.negated {
                continue;
            }
            match &clause.term {
                Term::Word {
                    value,
                    fuzzy: Some(threshold),
                } => {
                    score += score_fuzzy(value, *threshold, spec);
                    text_terms += 1;
                }
                Term::Word { value, fuzzy: None } => {
                    if word_matches(value, spec) {
                        if text.title.contains(value.as_str()) {
                            title_terms += 1;
                        }
                        score += score_word(value, counter, spec);
                        text_terms += 1;
                    }
                }
                Term::Phrase(value) => {
                    if phrase_matches(value, spec) {
                        score += score_phrase(value, counter, spec);
                        text_terms += 1;
                        if text.title.contains(value.as_str()) {
                            title_terms += 1;
                        }
                    }
                }
                Term::Field { field, value } => {
                    if field_matches(spec, *field, value) {
                        score += 2.0;
                    }
                }
            }
        }
        if title_terms > 1 {
            score += title_terms as f64 * 2.0;
        }
        if text_terms == 0 {
            score.max(1.0)
        } else {
            score
        }
    }
}

/// Runs a query over specs: matching specs with their scores, best first (stable, so ties
/// keep spec order), at most `limit`.
pub fn search<'a>(specs: &'a [Spec], query: &Query, limit: usize) -> Vec<(&'a Spec, f64)> {
    let mut results: Vec<(&Spec, f64)> = specs
        .iter()
        .filter(|s| query.matches(s))
        .map(|s| (s, query.score(s)))
        .collect();
    results.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
    results.truncate(limit);
    results
}

fn tokenize(query: &str) -> Result<Vec<Token>, String> {
    let mut chars = query.chars();
    let mut tokens = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, tokens: &mut Vec<Token>| {
        if !current.trim().is_empty() {
            tokens.push(Token::Raw(current.trim().to_string()));
        }
        current.clear();
    };
    while let Some(ch) = chars.next() {
        if ch == '"' {
            flush(&mut current, &mut tokens);
            let mut phrase = String::new();
            let mut closed = false;
            for c in chars.by_ref() {
                if c == '"' {
                    closed = true;
                    break;
                }
                phrase.push(c);
            }
            if !closed {
                return Err("Unterminated quote in query".into());
            }
            let phrase = phrase.trim();
            if phrase.is_empty() {
                return Err("Empty quoted phrase is not allowed".into());
            }
            tokens.push(Token::Phrase(phrase.to_lowercase()));
        } else if ch.is_whitespace() {
            flush(&mut current, &mut tokens);
        } else {
            current.push(ch);
        }
    }
    flush(&mut current, &mut tokens);
    if tokens.is_empty() {
        return Err("Empty search query".into());
    }
    Ok(tokens)
}

fn parse_term(raw: &str) -> Result<Term, String> {
    if let Some((field, value)) = raw.split_once(':') {
        let value = value.trim().to_ascii_lowercase();
        if value.is_empty() {
            return Err(format!("Missing value for field '{field}:'"));
        }
        let field = match field.to_ascii_lowercase().as_str() {
            "status" => Field::Status,
            "tag" => Field::Tag,
            "priority" => Field::Priority,
            "created" => Field::Created,
            "title" => Field::Title,
            _ => return Err(format!("Unknown field '{field}:'")),
        };
        return Ok(Term::Field { field, value });
    }
    let lower = raw.to_ascii_lowercase();
    let Some(idx) = lower.rfind('~') else {
        return Ok(Term::Word {
            value: lower,
            fuzzy: None,
        });
    };
    let base = lower[..idx].trim();
    if base.is_empty() {
        return Err("Invalid fuzzy token".into());
    }
    let threshold = if idx + 1 >= lower.len() {
        1
    } else {
        lower[idx + 1..]
            .parse::<usize>()
            .map_err(|_| "Invalid fuzzy threshold; expected number".to_string())?
    };
    Ok(Term::Word {
        value: base.to_string(),
        fuzzy: Some(threshold),
    })
}

fn word_matches(value: &str, spec: &Spec) -> bool {
    let t = &spec.doc.search;
    t.title.contains(value)
        || t.path.contains(value)
        || t.tags.iter().any(|tag| tag.contains(value))
        || t.content.contains(value)
}

fn phrase_matches(value: &str, spec: &Spec) -> bool {
    let t = &spec.doc.search;
    t.title.contains(value)
        || t.path.contains(value)
        || t.tags_text.contains(value)
        || t.content.contains(value)
}

fn matches_term(spec: &Spec, term: &Term) -> bool {
    match term {
        Term::Word {
            value,
            fuzzy: Some(threshold),
        } => {
            let t = &spec.doc.search;
            word_matches(value, spec)
                || [&t.title, &t.path, &t.tags_text, &t.content]
                    .iter()
                    .any(|text| best_distance(text, value).is_some_and(|d| d <= *threshold))
        }
        Term::Word { value, fuzzy: None } => word_matches(value, spec),
        Term::Phrase(value) => phrase_matches(value, spec),
        Term::Field { field, value } => field_matches(spec, *field, value),
    }
}

fn score_word(value: &str, counter: &Counter, spec: &Spec) -> f64 {
    let t = &spec.doc.search;
    let mut score = 0.0;
    if t.title.contains(value) {
        score += 10.0;
        if t.title.split_whitespace().any(|w| w == value) {
            score += 5.0;
        }
    }
    if t.path.contains(value) {
        score += 8.0;
    }
    if t.tags.iter().any(|tag| tag.contains(value)) {
        score += 6.0;
        if t.tags.iter().any(|tag| tag == value) {
            score += 3.0;
        }
    }
    // Only the first 5 occurrences count: stop looking after them.
    let count = counter.count(&t.content, 5);
    if count > 0 {
        score += count as f64;
    }
    score
}

fn score_phrase(value: &str, counter: &Counter, spec: &Spec) -> f64 {
    let t = &spec.doc.search;
    let mut score = 0.0;
    if t.title.contains(value) {
        score += 14.0;
    }
    if t.path.contains(value) {
        score += 10.0;
    }
    if t.tags_text.contains(value) {
        score += 8.0;
    }
    // Only the first 4 occurrences count (2 each, up to 8): stop looking after them.
    let count = counter.count(&t.content, 4);
    if count > 0 {
        score += count as f64 * 2.0;
    }
    score
}

fn score_fuzzy(value: &str, threshold: usize, spec: &Spec) -> f64 {
    let t = &spec.doc.search;
    let mut score = 0.0;
    let within = |text: &str| best_distance(text, value).filter(|d| *d <= threshold);
    if let Some(d) = within(&t.title) {
        score += 8.0 - d as f64;
    }
    if let Some(d) = within(&t.path) {
        score += 6.0 - d as f64;
    }
    if let Some(d) = within(&t.tags_text) {
        score += 4.0 - d as f64;
    }
    if let Some(d) = within(&t.content) {
        score += 2.0 - d as f64 * 0.5;
    }
    f64::max(score, 0.0)
}

fn field_matches(spec: &Spec, field: Field, value: &str) -> bool {
    let meta = spec.meta();
    match field {
        Field::Status => spec.status().as_str().eq_ignore_ascii_case(value),
        Field::Tag => meta
            .tags
            .iter()
            .any(|tag| tag.eq_ignore_ascii_case(value) || tag.to_ascii_lowercase().contains(value)),
        Field::Priority => meta
            .priority
            .is_some_and(|p| p.as_str().eq_ignore_ascii_case(value)),
        Field::Title => spec.doc.search.title.contains(value),
        Field::Created => created_matches(&meta.created, value),
    }
}

fn created_matches(created: &str, raw: &str) -> bool {
    let (op, value) = if let Some(rest) = raw.strip_prefix(">=") {
        (">=", rest)
    } else if let Some(rest) = raw.strip_prefix("<=") {
        ("<=", rest)
    } else if let Some(rest) = raw.strip_prefix('>') {
        (">", rest)
    } else if let Some(rest) = raw.strip_prefix('<') {
        ("<", rest)
    } else if let Some(rest) = raw.strip_prefix('=') {
        ("=", rest)
    } else {
        ("=", raw)
    };
    let Some((lower, upper)) = date_range(value.trim()) else {
        return false;
    };
    let created = created.trim();
    let Some(date) = created
        .get(..10)
        .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
    else {
        return false;
    };
    match op {
        ">=" => date >= lower,
        "<=" => date <= upper,
        ">" => date > upper,
        "<" => date < lower,
        _ => date >= lower && date <= upper,
    }
}

/// A year, month or day as the range of days it covers.
fn date_range(raw: &str) -> Option<(NaiveDate, NaiveDate)> {
    let parts: Vec<&str> = raw.split('-').collect();
    match parts.as_slice() {
        [y] => {
            let y = y.parse().ok()?;
            Some((
                NaiveDate::from_ymd_opt(y, 1, 1)?,
                NaiveDate::from_ymd_opt(y, 12, 31)?,
            ))
        }
        [y, m] => {
            let first = NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, 1)?;
            let (ny, nm) = if first.month() == 12 {
                (first.year() + 1, 1)
            } else {
                (first.year(), first.month() + 1)
            };
            Some((first, NaiveDate::from_ymd_opt(ny, nm, 1)?.pred_opt()?))
        }
        [y, m, d] => {
            let day = NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)?;
            Some((day, day))
        }
        _ => None,
    }
}

/// The smallest Levenshtein distance between `term` and a word of `text` (words split on
/// anything but alphanumerics, `_` and `-`).
fn best_distance(text: &str, term: &str) -> Option<usize> {
    text.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
        .filter(|w| !w.is_empty())
        .map(|w| strsim::levenshtein(w, term))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_are_leanspecs() {
        assert_eq!(
            Query::parse("auth AND").unwrap_err(),
            "Query ends with an operator"
        );
        assert_eq!(
            Query::parse("AND x").unwrap_err(),
            "Unexpected operator 'AND'"
        );
        assert_eq!(
            Query::parse("tag:").unwrap_err(),
            "Missing value for field 'tag:'"
        );
        assert_eq!(Query::parse("foo:bar").unwrap_err(), "Unknown field 'foo:'");
        assert_eq!(
            Query::parse("\"open").unwrap_err(),
            "Unterminated quote in query"
        );
        assert_eq!(Query::parse("  ").unwrap_err(), "Empty search query");
        assert_eq!(
            Query::parse("x~y").unwrap_err(),
            "Invalid fuzzy threshold; expected number"
        );
    }

    #[test]
    fn counts_are_str_matches_capped() {
        for (text, literal) in [
            ("aaaaa", "aa"),
            ("axb a.b a.b", "a.b"),
            ("token work, token work token", "token work"),
            ("ünïcode ü ü", "ü"),
            ("(x)* (x)*", "(x)*"),
            ("none here", "zzz"),
        ] {
            let counter = Counter::new(literal);
            assert!(counter.regex.is_some());
            for cap in [1, 4, 5, 100] {
                assert_eq!(
                    counter.count(text, cap),
                    text.matches(literal).take(cap).count(),
                    "{literal:?} in {text:?} up to {cap}"
                );
            }
        }
    }

    #[test]
    fn distances_and_dates() {
        assert_eq!(best_distance("the api-gateway, now", "gateway"), Some(4));
        assert_eq!(best_distance("the gateway, now", "gatway"), Some(1));
        assert!(created_matches("2025-02-10", ">=2025-02"));
        assert!(!created_matches("2025-02-10", ">2025-02"));
        assert!(created_matches("2025-02-10", "2025"));
        assert!(created_matches("2025-02-10", "<2025-02-11"));
        assert!(!created_matches("2025/02/10", "2025"));
    }
}
