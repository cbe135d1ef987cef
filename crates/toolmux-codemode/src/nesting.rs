//! How deeply a script nests, found before anything parses it.
//!
//! oxc's parser and its passes recurse per level of nesting with no depth guard, and a stack
//! overflow aborts the process. So the text is scanned first, without recursion, for the
//! deepest nesting of `(`, `[`, `{`, template literals and their `${…}` substitutions. The scan
//! knows just enough of the lexical grammar not to count what is not code: string literals,
//! comments, template text and regular-expression literals (told from division by the token
//! before the `/`, as JavaScript tokenizers do). Where that guess can be wrong (`if (x) /re/`,
//! a regex after a block's `}`), a wrongly skipped stretch ends at the end of its line, and the
//! sandbox thread's large stack is the margin for what it could hide.

use crate::error::CodeModeError;

/// What an open bracket was.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    /// `(`; `control` when it follows `if`, `while`, `for` or `with`, after whose `)` a `/`
    /// starts a regular expression.
    Paren {
        control: bool,
    },
    Bracket,
    Brace,
    /// Inside the text of a template literal.
    Template,
    /// Inside a template's `${…}`.
    Substitution,
    /// A `<` that may open type arguments (`Array<Array<…>>`), closed by `>`; a comparison's
    /// `<` is never closed and goes with its statement.
    Angle,
    /// A statement that nests the next one without braces (`if (a) if (b) …`, `else`, loops),
    /// which oxc follows as deep as it goes (and prints indented, so its output grows with the
    /// square of the depth); it ends with its `;` or the block around it.
    Statement,
}

/// Whether a `/` at this point starts a regular expression (after an operator, an opening
/// bracket, a keyword like `return`, or at the start) or divides (after a value).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Before {
    Operand,
    Value,
}

/// Keywords after which an expression, hence a regular expression, may start.
const EXPRESSION_KEYWORDS: &[&[u8]] = &[
    b"return",
    b"typeof",
    b"instanceof",
    b"in",
    b"of",
    b"new",
    b"delete",
    b"void",
    b"throw",
    b"case",
    b"do",
    b"else",
    b"yield",
    b"await",
    b"extends",
];

/// Keywords whose parenthesised condition may be followed by a statement starting with a
/// regular expression.
const CONTROL_KEYWORDS: &[&[u8]] = &[b"if", b"while", b"for", b"with"];

/// Keywords that start a statement whose body may be another statement without braces.
const STATEMENT_KEYWORDS: &[&[u8]] = &[b"if", b"else", b"while", b"for", b"with", b"do"];

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'#' || b >= 0x80
}

/// Words that continue the expression on the line before (so no semicolon is inserted before
/// them).
const CONTINUING_WORDS: &[&[u8]] = &[b"in", b"instanceof", b"as", b"satisfies", b"extends"];

/// How deep a script may nest: `brackets` levels of brackets, braces, parentheses, template
/// literals, type arguments and brace-less statements; and `tokens` for the depth the parser
/// may follow without any bracket — every level of an AST takes at least one token, so the
/// tokens of one expression (counted until a `,` or `;` or a new statement makes its items
/// siblings), summed over the levels it sits in, bound the depth of `1+1+…`, `!!!…x`,
/// `a.b.c…`, `f()()…`, `x => x => …` alike.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NestingLimits {
    pub brackets: usize,
    pub tokens: usize,
}

/// The scan's state: the open levels, and each level's run of tokens.
struct Scan<'s> {
    source: &'s str,
    limits: NestingLimits,
    stack: Vec<Open>,
    /// Tokens since the last separator, per level: `runs[0]` is the top level, `runs[k]` the
    /// level `stack[k - 1]` opened.
    runs: Vec<usize>,
    /// Open levels plus every run: the bound on the AST's depth here.
    total: usize,
}

impl Scan<'_> {
    fn too_deep(&self, at: usize, what: &str) -> CodeModeError {
        let (line, column) = crate::transpile::line_column(self.source, at);
        CodeModeError::Syntax(format!(
            "{}:{line}:{column}: the script nests too deeply: {what}; split it into smaller \
             expressions or statements",
            crate::transpile::SCRIPT_NAME
        ))
    }

    fn push(&mut self, open: Open, at: usize) -> Result<(), CodeModeError> {
        self.stack.push(open);
        self.runs.push(0);
        self.total += 1;
        if self.stack.len() > self.limits.brackets {
            return Err(self.too_deep(
                at,
                &format!(
                    "more than {} levels of brackets, braces, parentheses, template literals, \
                     type arguments or brace-less statements",
                    self.limits.brackets
                ),
            ));
        }
        self.check_total(at)
    }

    fn check_total(&self, at: usize) -> Result<(), CodeModeError> {
        if self.total > self.limits.tokens {
            return Err(self.too_deep(
                at,
                &format!(
                    "an expression more than {} tokens deep without a `,` or `;`",
                    self.limits.tokens
                ),
            ));
        }
        Ok(())
    }

    /// One more token in the current level's run.
    fn token(&mut self, at: usize) -> Result<(), CodeModeError> {
        if let Some(run) = self.runs.last_mut() {
            *run += 1;
        }
        self.total += 1;
        self.check_total(at)
    }

    /// A separator: what follows is a sibling of what came before, not nested in it.
    fn separate(&mut self) {
        if let Some(run) = self.runs.last_mut() {
            self.total -= *run;
            *run = 0;
        }
    }

    /// Closes the levels from `at` up; the closed expression is one token of its parent's run.
    fn close_from(&mut self, at: usize) {
        while self.stack.len() > at {
            self.stack.pop();
            let run = self.runs.pop().unwrap_or_default();
            self.total -= run + 1;
        }
        if let Some(run) = self.runs.last_mut() {
            *run += 1;
            self.total += 1;
        }
    }

    fn pop_while(&mut self, what: impl Fn(&Open) -> bool) {
        while self.stack.last().is_some_and(&what) {
            self.stack.pop();
            let run = self.runs.pop().unwrap_or_default();
            self.total -= run + 1;
        }
    }
}

/// Checks that `source` nests within `limits`; otherwise a syntax error naming the line and
/// column where the nesting passes them.
pub(crate) fn check_nesting(source: &str, limits: NestingLimits) -> Result<(), CodeModeError> {
    let bytes = source.as_bytes();
    let mut scan = Scan {
        source,
        limits,
        stack: Vec::new(),
        runs: vec![0],
        total: 0,
    };
    let mut before = Before::Operand;
    // The last word, and whether a `.` came right before it (then it is a property name, not a
    // keyword).
    let mut last_word: &[u8] = b"";
    let mut after_dot = false;
    // A line ended after a value: if the next token cannot continue the expression, a new
    // statement starts there (automatic semicolon insertion).
    let mut line_ended_after_value = false;
    let mut i = 0;
    while i < bytes.len() {
        if scan.stack.last() == Some(&Open::Template) {
            match bytes[i] {
                b'\\' => i += 2,
                b'`' => {
                    scan.stack.pop();
                    let run = scan.runs.pop().unwrap_or_default();
                    scan.total -= run + 1;
                    scan.token(i)?;
                    before = Before::Value;
                    i += 1;
                }
                b'$' if bytes.get(i + 1) == Some(&b'{') => {
                    scan.push(Open::Substitution, i)?;
                    before = Before::Operand;
                    i += 2;
                }
                _ => i += 1,
            }
            continue;
        }
        let b = bytes[i];
        if b.is_ascii_whitespace() {
            if b == b'\n' && before == Before::Value {
                line_ended_after_value = true;
            }
            i += 1;
            continue;
        }
        if b == b'/' && matches!(bytes.get(i + 1), Some(b'/' | b'*')) {
            // A comment is not a token: what came before it still decides.
            if bytes[i + 1] == b'/' {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            } else {
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            continue;
        }
        if std::mem::take(&mut line_ended_after_value) {
            let word_start = is_word_byte(b).then(|| {
                let end = bytes[i..]
                    .iter()
                    .position(|c| !is_word_byte(*c))
                    .map_or(bytes.len(), |n| i + n);
                &bytes[i..end]
            });
            let new_statement = match word_start {
                Some(word) => !CONTINUING_WORDS.contains(&word),
                None => matches!(b, b'\'' | b'"' | b'{'),
            };
            if new_statement {
                scan.separate();
            }
        }
        if is_word_byte(b) {
            let start = i;
            while i < bytes.len() && is_word_byte(bytes[i]) {
                i += 1;
            }
            let word = &bytes[start..i];
            let keyword = !after_dot && !word[0].is_ascii_digit();
            before = if keyword && EXPRESSION_KEYWORDS.contains(&word) {
                Before::Operand
            } else {
                Before::Value
            };
            last_word = if keyword { word } else { b"" };
            after_dot = false;
            scan.token(start)?;
            if keyword && STATEMENT_KEYWORDS.contains(&word) {
                scan.push(Open::Statement, start)?;
            }
            continue;
        }
        let previous_word = std::mem::take(&mut last_word);
        after_dot = b == b'.';
        match b {
            b'/' if before == Before::Operand => {
                scan.token(i)?;
                i = skip_regex(bytes, i + 1);
                before = Before::Value;
                continue;
            }
            b'\'' | b'"' => {
                scan.token(i)?;
                i = skip_string(bytes, i + 1, b);
                before = Before::Value;
                continue;
            }
            b'`' => {
                scan.push(Open::Template, i)?;
                i += 1;
                continue;
            }
            b'(' => {
                let control = CONTROL_KEYWORDS.contains(&previous_word);
                scan.push(Open::Paren { control }, i)?;
                before = Before::Operand;
            }
            b'[' => {
                scan.push(Open::Bracket, i)?;
                before = Before::Operand;
            }
            b'{' => {
                scan.push(Open::Brace, i)?;
                before = Before::Operand;
            }
            b')' | b']' | b'}' => {
                // A closer closes back to its own opener; one without an opener is left for the
                // parser to report.
                let matches = |open: &Open| {
                    matches!(
                        (b, open),
                        (b')', Open::Paren { .. })
                            | (b']', Open::Bracket)
                            | (b'}', Open::Brace | Open::Substitution)
                    )
                };
                before = Before::Value;
                if let Some(at) = scan.stack.iter().rposition(matches)
                    && !scan.stack[at + 1..].contains(&Open::Template)
                {
                    let open = scan.stack[at];
                    scan.close_from(at);
                    match open {
                        Open::Substitution => {
                            // Back in the template's text.
                        }
                        Open::Paren { control: true } => before = Before::Operand,
                        Open::Brace => {
                            // A block ends the brace-less statements whose body it was, and
                            // what follows it is a new statement.
                            scan.pop_while(|o| *o == Open::Statement);
                            before = Before::Operand;
                        }
                        _ => {}
                    }
                }
            }
            b'<' => {
                scan.push(Open::Angle, i)?;
                before = Before::Operand;
            }
            // `=>` is an arrow, not the end of type arguments.
            b'=' if bytes.get(i + 1) == Some(&b'>') => {
                scan.token(i)?;
                before = Before::Operand;
                i += 2;
                continue;
            }
            b'>' => {
                if scan.stack.last() == Some(&Open::Angle) {
                    scan.close_from(scan.stack.len() - 1);
                } else {
                    scan.token(i)?;
                }
                before = Before::Operand;
            }
            b';' => {
                // The end of a statement ends the comparisons in it and the brace-less
                // statements it was the body of.
                scan.pop_while(|o| matches!(o, Open::Angle | Open::Statement));
                scan.separate();
                before = Before::Operand;
            }
            b',' => {
                scan.separate();
                before = Before::Operand;
            }
            // `a++ / 2` divides: increments and decrements leave the state as it was.
            b'+' | b'-' if bytes.get(i + 1) == Some(&b) => {
                scan.token(i)?;
                i += 2;
                continue;
            }
            _ => {
                scan.token(i)?;
                before = Before::Operand;
            }
        }
        i += 1;
    }
    Ok(())
}

/// The index after a string literal that opened with `quote` just before `i`. An unterminated
/// one ends at the end of its line (the parser reports it).
fn skip_string(bytes: &[u8], mut i: usize, quote: u8) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// The index after a regular-expression literal whose body starts at `i`, flags included.
fn skip_regex(bytes: &[u8], mut i: usize) -> usize {
    let mut in_class = false;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            b'[' => {
                in_class = true;
                i += 1;
            }
            b']' => {
                in_class = false;
                i += 1;
            }
            b'/' if !in_class => {
                i += 1;
                while i < bytes.len() && is_word_byte(bytes[i]) {
                    i += 1;
                }
                return i;
            }
            _ => i += 1,
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(source: &str, brackets: usize) -> bool {
        let limits = NestingLimits {
            brackets,
            tokens: usize::MAX,
        };
        check_nesting(source, limits).is_ok()
    }

    fn tokens_ok(source: &str, tokens: usize) -> bool {
        let limits = NestingLimits {
            brackets: usize::MAX,
            tokens,
        };
        check_nesting(source, limits).is_ok()
    }

    #[test]
    fn brackets_parens_braces_and_templates_all_count() {
        assert!(depth_ok("[[[]]]", 3));
        assert!(!depth_ok("[[[[]]]]", 3));
        assert!(!depth_ok("f(g(h(i())))", 3));
        assert!(!depth_ok("({a:{b:{c:{}}}})", 3));
        assert!(!depth_ok("`${`${`${1}`}`}`", 5));
        assert!(depth_ok("`${`${1}`}`", 4));
    }

    #[test]
    fn type_arguments_and_braceless_statements_count_until_they_end() {
        assert!(!depth_ok("type T = A<A<A<A<1>>>>;", 3));
        assert!(!depth_ok("type F = A<() => A<() => A<() => A<1>>>>;", 3));
        assert!(!depth_ok("if (a) if (b) if (c) if (d) x;", 3));
        // Comparisons end with their statement, blocks end their `if`: an `else if` chain or a
        // loop full of comparisons stays shallow.
        assert!(depth_ok(
            &"if (a < b) { x; } else if (c < d) { y; } else ".repeat(100),
            4
        ));
        assert!(depth_ok(
            &"for (let i = 0; i < n; i++) { if (i < 2) x(); }\n".repeat(100),
            5
        ));
        assert!(depth_ok(&"const ok = a < b;\n".repeat(100), 2));
    }

    #[test]
    fn strings_comments_and_regexes_are_not_code() {
        assert!(depth_ok(
            "const s = '(((((' + \"[[[[[\"; // {{{{{\n/* ((((( */ x",
            1
        ));
        assert!(depth_ok("const r = /[(]{2}\\(/g.test(s);", 1));
        assert!(depth_ok("const t = `((((( ${ '}}}' } [[[[[`;", 2));
        // Division is not a regex: the brackets after it count.
        assert!(!depth_ok("const q = a / b + ((((1))));", 3));
        assert!(!depth_ok("const q = a++ / (((1)));", 2));
    }

    #[test]
    fn a_regex_after_a_control_condition_or_a_keyword_is_skipped() {
        assert!(depth_ok("if (x) /((((/.test(y);", 2));
        assert!(depth_ok("return /((((/;", 0));
        // A property named like a keyword is a value: what follows divides.
        assert!(!depth_ok("const q = a.return / ((((1))));", 3));
    }

    #[test]
    fn the_error_names_where_the_limit_is_passed() {
        let source = format!(
            "const a = 1;\nconst x = {};",
            "[".repeat(10) + &"]".repeat(10)
        );
        let limits = NestingLimits {
            brackets: 5,
            tokens: 1000,
        };
        let err = check_nesting(&source, limits).expect_err("too deep");
        let text = err.to_string();
        assert!(text.contains("script.ts:2:16"), "{text}");
        assert!(text.contains("more than 5 levels"), "{text}");
    }

    #[test]
    fn chains_without_brackets_count_their_tokens_until_a_separator() {
        for deep in [
            format!("return 1{};", "+1".repeat(50)),
            format!("return {}x;", "!".repeat(100)),
            format!("return a{};", ".b".repeat(50)),
            format!("return f{};", "()".repeat(100)),
            format!("return {}1;", "x => ".repeat(60)),
            format!("return 1\n{};", "+ 1\n".repeat(60)),
            format!("return {}x;", "typeof ".repeat(100)),
        ] {
            assert!(!tokens_ok(&deep, 100), "{deep}");
        }
        // Siblings do not add up: array items, statements, lines without semicolons.
        for flat in [
            format!("return [{}];", "1 + 1, ".repeat(200)),
            "const a = b + c;\n".repeat(200),
            "const a = b + c\n".repeat(200),
            "x.y(z)\n".repeat(200),
        ] {
            assert!(tokens_ok(&flat, 100), "{flat}");
        }
    }
}
