//! Bounds on YAML from outside — the frontmatter of a spec's `README.md` or a skill's
//! `SKILL.md`, a project's `.lean-spec/config.yaml` — checked before a YAML parser sees it.
//!
//! The YAML parser the packs use (libyaml's scanner, through serde_yaml_ng) refuses nesting
//! deeper than 128 levels only after it has scanned the whole document, and its scanner keeps
//! one pending key per open flow collection and walks them all at every token: 100,000 `[`
//! took 25 seconds to refuse (finding D31). [`check_yaml_bounds`] refuses such text in
//! one pass first. It follows the scanner's own rules for what opens a level — flow `[` and
//! `{`, and a block sequence entry, explicit key or simple key at a deeper column — and for
//! what hides brackets from it (quoted, plain and block scalars, comments), so a bracket the
//! scanner would count is never skipped here. After a spot where the scanner would stop with an
//! error it simply goes on counting, which can only refuse more, never less.

use crate::bytes::human_bytes;

/// The largest YAML document read: far above any real frontmatter or config (a few hundred
/// bytes), small enough that parsing it is instant.
pub const MAX_YAML_BYTES: usize = 64 * 1024;

/// The deepest nesting of collections (block and flow together) a YAML document may have: far
/// above any real frontmatter, half the YAML parser's own limit.
pub const MAX_YAML_DEPTH: usize = 64;

/// Why YAML is refused before it is parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum YamlBoundsError {
    /// Larger than [`MAX_YAML_BYTES`].
    #[error(
        "the YAML is {}, more than the {} allowed",
        human_bytes(*size as u64),
        human_bytes(MAX_YAML_BYTES as u64)
    )]
    TooLarge {
        /// Its size in bytes.
        size: usize,
    },
    /// Nested deeper than [`MAX_YAML_DEPTH`].
    #[error("the YAML nests deeper than {MAX_YAML_DEPTH} levels")]
    TooDeep {
        /// The 1-based line of the YAML text where the limit was passed.
        line: usize,
    },
}

impl YamlBoundsError {
    /// The 1-based line of the YAML text the problem is on (the first for a size).
    pub fn line(&self) -> usize {
        match self {
            Self::TooLarge { .. } => 1,
            Self::TooDeep { line } => *line,
        }
    }
}

/// Checks YAML text (a frontmatter without its `---` lines) against
/// [`MAX_YAML_BYTES`] and [`MAX_YAML_DEPTH`], in time linear in its length.
pub fn check_yaml_bounds(yaml: &str) -> Result<(), YamlBoundsError> {
    if yaml.len() > MAX_YAML_BYTES {
        return Err(YamlBoundsError::TooLarge { size: yaml.len() });
    }
    Scanner::new(yaml)
        .run()
        .map_err(|line| YamlBoundsError::TooDeep { line })
}

/// The parts of libyaml's scanner state that decide nesting. Columns and positions count
/// characters, as the scanner's marks do.
struct Scanner {
    text: Vec<char>,
    pos: usize,
    /// 0-based.
    line: usize,
    col: usize,
    /// Open flow collections.
    flow: usize,
    /// The current block indentation column; -1 outside any block collection.
    indent: i64,
    /// The enclosing block indentations (one per open block collection).
    indents: Vec<i64>,
    /// Whether a simple key may start here.
    key_allowed: bool,
    /// The block context's possible simple key: line, column, position.
    block_key: Option<(usize, usize, usize)>,
}

/// A simple key must end within this many characters of its start (libyaml's rule).
const SIMPLE_KEY_REACH: usize = 1024;

fn is_break(c: Option<char>) -> bool {
    matches!(c, Some('\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}'))
}

fn is_blank(c: Option<char>) -> bool {
    matches!(c, Some(' ' | '\t'))
}

fn is_blankz(c: Option<char>) -> bool {
    c.is_none() || is_blank(c) || is_break(c)
}

fn is_breakz(c: Option<char>) -> bool {
    c.is_none() || is_break(c)
}

impl Scanner {
    fn new(yaml: &str) -> Self {
        Self {
            text: yaml.chars().collect(),
            pos: 0,
            line: 0,
            col: 0,
            flow: 0,
            indent: -1,
            indents: Vec::new(),
            key_allowed: true,
            block_key: None,
        }
    }

    fn at(&self, k: usize) -> Option<char> {
        self.text.get(self.pos + k).copied()
    }

    fn marker_here(&self) -> bool {
        self.col == 0
            && (self.text[self.pos..].starts_with(&['-', '-', '-'])
                || self.text[self.pos..].starts_with(&['.', '.', '.']))
            && is_blankz(self.at(3))
    }

    /// Moves past one character that is not a line break.
    fn skip(&mut self) {
        if self.pos < self.text.len() {
            self.pos += 1;
            self.col += 1;
        }
    }

    /// Moves past one line break (`\r\n` counts as one).
    fn skip_line(&mut self) {
        if self.at(0) == Some('\r') && self.at(1) == Some('\n') {
            self.pos += 2;
        } else {
            self.pos += 1;
        }
        self.line += 1;
        self.col = 0;
    }

    fn skip_any(&mut self) {
        if is_break(self.at(0)) {
            self.skip_line();
        } else {
            self.skip();
        }
    }

    fn depth_ok(&self) -> Result<(), usize> {
        if self.indents.len() + self.flow > MAX_YAML_DEPTH {
            Err(self.line + 1)
        } else {
            Ok(())
        }
    }

    fn roll(&mut self, column: usize) -> Result<(), usize> {
        let column = column as i64;
        if self.flow == 0 && self.indent < column {
            self.indents.push(self.indent);
            self.indent = column;
            self.depth_ok()?;
        }
        Ok(())
    }

    fn unroll(&mut self, column: i64) {
        if self.flow > 0 {
            return;
        }
        while self.indent > column {
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    fn save_key(&mut self) {
        if self.flow == 0 && self.key_allowed {
            self.block_key = Some((self.line, self.col, self.pos));
        }
    }

    fn remove_key(&mut self) {
        if self.flow == 0 {
            self.block_key = None;
        }
    }

    fn run(mut self) -> Result<(), usize> {
        loop {
            let before = self.pos;
            self.skip_to_next_token();
            if self
                .block_key
                .is_some_and(|(line, _, pos)| line < self.line || pos + SIMPLE_KEY_REACH < self.pos)
            {
                self.block_key = None;
            }
            self.unroll(self.col as i64);
            let Some(c) = self.at(0) else {
                return Ok(());
            };
            self.token(c)?;
            if self.pos == before {
                // Never reached (every token consumes); kept so no input can loop forever.
                self.skip_any();
            }
        }
    }

    fn token(&mut self, c: char) -> Result<(), usize> {
        let next = self.at(1);
        if self.col == 0 && c == '%' {
            // A directive runs to the end of its line (or is an error there).
            self.unroll(-1);
            self.remove_key();
            self.key_allowed = false;
            while !is_breakz(self.at(0)) {
                self.skip();
            }
            return Ok(());
        }
        if self.marker_here() {
            self.unroll(-1);
            self.remove_key();
            self.key_allowed = false;
            self.pos += 3;
            self.col += 3;
            return Ok(());
        }
        match c {
            '[' | '{' => {
                self.save_key();
                self.flow += 1;
                self.depth_ok()?;
                self.key_allowed = true;
                self.skip();
            }
            ']' | '}' => {
                self.remove_key();
                self.flow = self.flow.saturating_sub(1);
                self.key_allowed = false;
                self.skip();
            }
            ',' => {
                self.remove_key();
                self.key_allowed = true;
                self.skip();
            }
            '-' if is_blankz(next) => {
                if self.flow == 0 {
                    self.roll(self.col)?;
                }
                self.remove_key();
                self.key_allowed = true;
                self.skip();
            }
            '?' if self.flow > 0 || is_blankz(next) => {
                if self.flow == 0 {
                    self.roll(self.col)?;
                }
                self.remove_key();
                self.key_allowed = self.flow == 0;
                self.skip();
            }
            ':' if self.flow > 0 || is_blankz(next) => {
                if self.flow == 0 {
                    match self.block_key.take() {
                        Some((_, column, _)) => {
                            self.roll(column)?;
                            self.key_allowed = false;
                        }
                        None => {
                            self.roll(self.col)?;
                            self.key_allowed = true;
                        }
                    }
                } else {
                    self.key_allowed = false;
                }
                self.skip();
            }
            '*' | '&' => {
                self.save_key();
                self.key_allowed = false;
                self.skip();
                while self
                    .at(0)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    self.skip();
                }
            }
            '!' => {
                self.save_key();
                self.key_allowed = false;
                self.tag();
            }
            '|' | '>' if self.flow == 0 => {
                self.remove_key();
                self.key_allowed = true;
                self.block_scalar();
            }
            '\'' | '"' => {
                self.save_key();
                self.key_allowed = false;
                self.quoted(c == '\'');
            }
            _ if self.starts_plain(c, next) => {
                self.save_key();
                self.key_allowed = false;
                self.plain();
            }
            // A character no token starts with: the parser stops here.
            _ => self.skip_any(),
        }
        Ok(())
    }

    fn skip_to_next_token(&mut self) {
        loop {
            if self.col == 0 && self.at(0) == Some('\u{feff}') {
                self.skip();
            }
            while self.at(0) == Some(' ')
                || ((self.flow > 0 || !self.key_allowed) && self.at(0) == Some('\t'))
            {
                self.skip();
            }
            if self.at(0) == Some('#') {
                while !is_breakz(self.at(0)) {
                    self.skip();
                }
            }
            if !is_break(self.at(0)) {
                return;
            }
            self.skip_line();
            if self.flow == 0 {
                self.key_allowed = true;
            }
        }
    }

    fn starts_plain(&self, c: char, next: Option<char>) -> bool {
        let indicator = "-?:,[]{}#&*!|>'\"%@`".contains(c);
        !(is_blankz(Some(c)) || indicator)
            || (c == '-' && !is_blank(next))
            || (self.flow == 0 && (c == '?' || c == ':') && !is_blankz(next))
    }

    /// A tag: everything up to a blank (or, in a flow collection, a `,`); a character the
    /// scanner would not take ends the scan with an error, so taking it here hides nothing.
    fn tag(&mut self) {
        self.skip();
        if self.at(0) == Some('<') {
            while !is_blankz(self.at(0)) {
                let c = self.at(0);
                self.skip();
                if c == Some('>') {
                    break;
                }
            }
            return;
        }
        while !(is_blankz(self.at(0)) || (self.flow > 0 && self.at(0) == Some(','))) {
            self.skip();
        }
    }

    /// A plain scalar: brackets inside it are text (in a flow collection, `,[]{}` end it).
    fn plain(&mut self) {
        let indent = self.indent + 1;
        let mut ended_on_break = false;
        loop {
            if self.marker_here() || self.at(0) == Some('#') {
                break;
            }
            while !is_blankz(self.at(0)) {
                let c = self.at(0);
                let next = self.at(1);
                if self.flow > 0
                    && c == Some(':')
                    && matches!(next, Some(',' | '?' | '[' | ']' | '{' | '}'))
                {
                    // The scanner stops with an error here.
                    break;
                }
                if (c == Some(':') && is_blankz(next))
                    || (self.flow > 0 && matches!(c, Some(',' | '[' | ']' | '{' | '}')))
                {
                    break;
                }
                ended_on_break = false;
                self.skip();
            }
            if !(is_blank(self.at(0)) || is_break(self.at(0))) {
                break;
            }
            while is_blank(self.at(0)) || is_break(self.at(0)) {
                if is_blank(self.at(0)) {
                    self.skip();
                } else {
                    self.skip_line();
                    ended_on_break = true;
                }
            }
            if self.flow == 0 && (self.col as i64) < indent {
                break;
            }
        }
        if ended_on_break {
            self.key_allowed = true;
        }
    }

    /// A single- or double-quoted scalar, over any number of lines.
    fn quoted(&mut self, single: bool) {
        let quote = if single { '\'' } else { '"' };
        self.skip();
        loop {
            if self.marker_here() || self.at(0).is_none() {
                return; // the scanner stops with an error
            }
            while !is_blankz(self.at(0)) {
                let c = self.at(0);
                if single && c == Some('\'') && self.at(1) == Some('\'') {
                    self.skip();
                    self.skip();
                } else if c == Some(quote) {
                    break;
                } else if !single && c == Some('\\') && is_break(self.at(1)) {
                    self.skip();
                    self.skip_line();
                    break;
                } else if !single && c == Some('\\') {
                    self.skip();
                    self.skip(); // the escape's code, whatever it is
                } else {
                    self.skip();
                }
            }
            if self.at(0) == Some(quote) {
                self.skip();
                return;
            }
            while is_blank(self.at(0)) || is_break(self.at(0)) {
                self.skip_any();
            }
        }
    }

    /// A literal or folded block scalar: its header, then every line indented at least as far
    /// as its content.
    fn block_scalar(&mut self) {
        self.skip();
        let digit = |c: Option<char>| c.and_then(|c| c.to_digit(10));
        let mut increment = 0;
        if matches!(self.at(0), Some('+' | '-')) {
            self.skip();
            if let Some(d) = digit(self.at(0)) {
                increment = d;
                self.skip();
            }
        } else if let Some(d) = digit(self.at(0)) {
            increment = d;
            self.skip();
            if matches!(self.at(0), Some('+' | '-')) {
                self.skip();
            }
        }
        while is_blank(self.at(0)) {
            self.skip();
        }
        if self.at(0) == Some('#') {
            while !is_breakz(self.at(0)) {
                self.skip();
            }
        }
        if !is_breakz(self.at(0)) {
            return; // the scanner stops with an error
        }
        if is_break(self.at(0)) {
            self.skip_line();
        }
        let mut indent: i64 = match i64::from(increment) {
            0 => 0,
            n if self.indent >= 0 => self.indent + n,
            n => n,
        };
        if !self.block_breaks(&mut indent) {
            return;
        }
        while self.col as i64 == indent && self.at(0).is_some() {
            while !is_breakz(self.at(0)) {
                self.skip();
            }
            if self.at(0).is_none() {
                return;
            }
            self.skip_line();
            if !self.block_breaks(&mut indent) {
                return;
            }
        }
    }

    /// The blank lines and indentation before a block scalar's next line; sets the content's
    /// indentation when it is still to be found (0). `false` where the scanner stops with an
    /// error (a tab in the indentation).
    fn block_breaks(&mut self, indent: &mut i64) -> bool {
        let mut widest = 0;
        loop {
            while (*indent == 0 || (self.col as i64) < *indent) && self.at(0) == Some(' ') {
                self.skip();
            }
            widest = widest.max(self.col as i64);
            if (*indent == 0 || (self.col as i64) < *indent) && self.at(0) == Some('\t') {
                return false;
            }
            if !is_break(self.at(0)) {
                break;
            }
            self.skip_line();
        }
        if *indent == 0 {
            *indent = widest.max(self.indent + 1).max(1);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(open: &str, close: &str, n: usize) -> String {
        format!("x: {}a{}\n", open.repeat(n), close.repeat(n))
    }

    #[test]
    fn ordinary_frontmatter_passes() {
        for yaml in [
            "",
            "status: planned\ncreated: 2026-01-01\ntags: [a, b]\n",
            "name: pdf\ndescription: |\n  Fill [[forms]] {{here}}\n    [[[[[\nallowed-tools:\n  - file_read\n  - grep\n",
            "a: 'it''s [[[['\nb: \"esc \\\" [[[[\"\nc: plain [[[[ text # c [[[[\n# [[[[\n",
            "transitions:\n- status: planned\n  at: 2025-01-01T00:00:00Z\n",
            "x: {a: [1, {b: [2]}]}\n",
        ] {
            assert_eq!(check_yaml_bounds(yaml), Ok(()), "{yaml}");
        }
    }

    #[test]
    fn depth_is_counted_in_flow_and_block_and_refused_past_the_limit() {
        // The top-level mapping is one level, so 63 flow levels fit and 64 do not.
        assert_eq!(check_yaml_bounds(&nested("[", "]", 63)), Ok(()));
        assert_eq!(
            check_yaml_bounds(&nested("[", "]", 64)),
            Err(YamlBoundsError::TooDeep { line: 1 })
        );
        assert!(check_yaml_bounds(&nested("{a: ", "}", 100)).is_err());
        let compact = format!("{}x\n", "- ".repeat(65));
        assert!(check_yaml_bounds(&compact).is_err());
        let indented: String = (0..65)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert_eq!(
            check_yaml_bounds(&indented),
            Err(YamlBoundsError::TooDeep { line: 65 })
        );
    }

    #[test]
    fn what_the_parser_reads_as_text_hides_nothing_it_reads_as_structure() {
        // A quote in the middle of a plain scalar is text, so the brackets after it count.
        let bait = format!("x: [a '{}]\n", "[".repeat(80));
        assert!(check_yaml_bounds(&bait).is_err());
        // A comment ends at any line break YAML knows, U+2028 included.
        let comment = format!("# c\u{2028}x: {}\n", "[".repeat(80));
        assert!(check_yaml_bounds(&comment).is_err());
        // A block scalar ends at the first line indented less than its content.
        let block = format!("x: |\n    text\n  y: {}\n", "[".repeat(80));
        assert!(check_yaml_bounds(&block).is_err());
    }

    #[test]
    fn size_is_capped() {
        let big = format!("x: \"{}\"\n", "a".repeat(MAX_YAML_BYTES));
        assert_eq!(
            check_yaml_bounds(&big),
            Err(YamlBoundsError::TooLarge { size: big.len() })
        );
    }
}
