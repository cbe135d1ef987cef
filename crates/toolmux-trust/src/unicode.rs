//! Invisible and bidirectional-control characters: which they are, removing them, and decoding
//! the ASCII that Unicode tag characters can carry.

use std::borrow::Cow;
use std::ops::Range;

use crate::{Finding, FindingKind, Severity};

/// The three kinds of invisible character, by how they are abused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Invisible {
    /// Unicode tags (U+E0000–U+E007F): each mirrors an ASCII character, so a run of them is
    /// hidden text a model reads ("ASCII smuggling").
    Tag,
    /// Bidirectional controls: they reorder what a person sees (Trojan Source).
    Bidi,
    /// Zero-width and other characters that render as nothing: they split words so patterns
    /// miss them, or carry bits (variation selectors U+E0100–U+E01EF).
    ZeroWidth,
}

fn invisible(c: char) -> Option<Invisible> {
    match c {
        '\u{E0000}'..='\u{E007F}' => Some(Invisible::Tag),
        // Embeddings and overrides, isolates, the left-to-right, right-to-left and Arabic
        // letter marks.
        '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{061C}' => Some(Invisible::Bidi),
        // Zero-width space, non-joiner, joiner; word joiner and invisible operators; the
        // deprecated format characters; the byte-order mark; the soft hyphen; the Mongolian
        // vowel separator; Hangul fillers (rendered blank); the supplementary variation
        // selectors, which no text needs but byte smuggling uses.
        '\u{200B}'..='\u{200D}'
        | '\u{2060}'..='\u{2064}'
        | '\u{206A}'..='\u{206F}'
        | '\u{FEFF}'
        | '\u{00AD}'
        | '\u{180E}'
        | '\u{115F}'
        | '\u{1160}'
        | '\u{3164}'
        | '\u{FFA0}'
        | '\u{E0100}'..='\u{E01EF}' => Some(Invisible::ZeroWidth),
        _ => None,
    }
}

/// The text without invisible and bidirectional-control characters: what a model should see.
/// Borrowed when there were none.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| invisible(c).is_some()) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|c| invisible(*c).is_none()).collect())
}

/// A text with its invisible characters removed, remembering where each kept character was.
pub(crate) struct Cleaned<'a> {
    pub(crate) text: Cow<'a, str>,
    /// For each kept character: its byte offset in the clean text and in the original, in
    /// order; empty when nothing was removed.
    offsets: Vec<(usize, usize)>,
    original_len: usize,
}

impl<'a> Cleaned<'a> {
    pub(crate) fn new(original: &'a str) -> Self {
        let text = visible(original);
        let offsets = match text {
            Cow::Borrowed(_) => Vec::new(),
            Cow::Owned(_) => {
                let mut clean_at = 0;
                original
                    .char_indices()
                    .filter(|(_, c)| invisible(*c).is_none())
                    .map(|(at, c)| {
                        let pair = (clean_at, at);
                        clean_at += c.len_utf8();
                        pair
                    })
                    .collect()
            }
        };
        Cleaned {
            text,
            offsets,
            original_len: original.len(),
        }
    }

    /// The original bytes of a range of the clean text (invisible characters inside it
    /// included).
    pub(crate) fn origin(&self, range: Range<usize>) -> Range<usize> {
        if self.offsets.is_empty() {
            return range;
        }
        let start = self.original_at(range.start);
        // The end is one past the last kept character of the range.
        let end = match range.end.checked_sub(1) {
            Some(last) if range.end > range.start => {
                let i = self.offsets.partition_point(|(clean, _)| *clean <= last) - 1;
                let (clean, at) = self.offsets[i];
                let width = self.text[clean..].chars().next().map_or(0, char::len_utf8);
                at + width
            }
            _ => start,
        };
        start..end
    }

    fn original_at(&self, clean: usize) -> usize {
        match self.offsets.binary_search_by_key(&clean, |(c, _)| *c) {
            Ok(i) => self.offsets[i].1,
            Err(_) => self.original_len,
        }
    }
}

/// One run of consecutive invisible characters of one kind, as a finding: tags and bidi
/// controls are high severity, the rest medium. A tag run's text is what it decodes to.
pub(crate) fn invisible_runs(text: &str) -> Vec<Finding> {
    let mut findings: Vec<Finding> = Vec::new();
    let mut run: Option<(Invisible, usize, usize)> = None;
    let close = |run: (Invisible, usize, usize), findings: &mut Vec<Finding>| {
        let (kind, start, end) = run;
        let (severity, shown) = match kind {
            Invisible::Tag => (Severity::High, decode_tags(&text[start..end])),
            Invisible::Bidi => (Severity::High, escaped(&text[start..end])),
            Invisible::ZeroWidth => (Severity::Medium, escaped(&text[start..end])),
        };
        findings.push(Finding {
            kind: FindingKind::InvisibleUnicode,
            severity,
            field: String::new(),
            span: (start..end).into(),
            text: shown,
            hidden: kind == Invisible::Tag,
        });
    };
    for (at, c) in text.char_indices() {
        let end = at + c.len_utf8();
        match (invisible(c), run) {
            (Some(kind), Some((open, start, _))) if kind == open => run = Some((kind, start, end)),
            (found, open) => {
                if let Some(open) = open {
                    close(open, &mut findings);
                }
                run = found.map(|kind| (kind, at, end));
            }
        }
    }
    if let Some(open) = run {
        close(open, &mut findings);
    }
    findings
}

/// The code points of invisible characters, so that a person can see what was there.
fn escaped(text: &str) -> String {
    text.chars()
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A run of tag characters and the ASCII it spells.
pub(crate) struct TagRun {
    pub(crate) span: Range<usize>,
    pub(crate) decoded: String,
}

/// The runs of tag characters in a text that spell something. Tag characters with only other
/// invisible ones between them (a zero-width space after each) are one run: the sentence they
/// spell is matched whole, not letter by letter.
pub(crate) fn tag_runs(text: &str) -> Vec<TagRun> {
    let mut runs: Vec<TagRun> = Vec::new();
    // Where the invisible text that continues the last tag run ends, while it goes on.
    let mut reach: Option<usize> = None;
    for found in invisible_runs(text) {
        let joins = reach == Some(found.span.start);
        if found.hidden {
            match runs.last_mut() {
                Some(run) if joins => {
                    run.decoded.push_str(&found.text);
                    run.span.end = found.span.end;
                }
                _ => runs.push(TagRun {
                    span: found.span.start..found.span.end,
                    decoded: found.text,
                }),
            }
            reach = Some(found.span.end);
        } else {
            reach = joins.then_some(found.span.end);
        }
    }
    runs.retain(|run| !run.decoded.trim().is_empty());
    runs
}

/// The ASCII a run of tag characters mirrors (U+E0020–U+E007E → ' '–'~'); the language tag
/// and cancel tag spell nothing.
fn decode_tags(tags: &str) -> String {
    tags.chars()
        .filter_map(|c| {
            let ascii = u32::from(c).checked_sub(0xE0000)?;
            (0x20..0x7F)
                .contains(&ascii)
                .then(|| char::from_u32(ascii))
                .flatten()
        })
        .collect()
}
