//! TypeScript → JavaScript with oxc, keeping a source map so errors point at the script's own
//! lines and columns.
//!
//! A script is the body of an async function, so it may `await` and `return` at the top level;
//! its imports are hoisted. That wrapping is done on the text, with the imports and the opening
//! of the wrapper put in front of the first line, so every line keeps its number and only columns
//! of the first line move (by a known amount). A script that `export`s something is a module as
//! written, and its result is its default export.

use std::path::Path;

use oxc::allocator::Allocator;
use oxc::ast::ast::Statement;
use oxc::codegen::{Codegen, CodegenOptions};
use oxc::parser::{ParseOptions, Parser};
use oxc::semantic::SemanticBuilder;
use oxc::span::{GetSpan, SourceType};
use oxc::transformer::{TransformOptions, Transformer};

use crate::error::CodeModeError;

/// The name scripts have in error messages and stack traces.
pub const SCRIPT_NAME: &str = "script.ts";

/// A stripped script with the way back to the original positions.
#[derive(Debug)]
pub struct Transpiled {
    /// The JavaScript module to run.
    pub code: String,
    /// `(js line, js column, ts line, ts column)`, 0-based, sorted by JS position.
    tokens: Vec<(u32, u32, u32, u32)>,
    /// How many columns were put in front of the script's first line.
    first_line_shift: u32,
}

impl Transpiled {
    /// The script's own 1-based line and column for a 1-based position in the JavaScript.
    pub fn original_position(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        let key = (line.checked_sub(1)?, column.saturating_sub(1));
        let index = self
            .tokens
            .partition_point(|t| (t.0, t.1) <= key)
            .checked_sub(1)?;
        let token = self.tokens[index];
        if token.0 != key.0 {
            return None;
        }
        let (mut ts_line, mut ts_column) = (token.2, token.3 + (key.1 - token.1));
        if ts_line == 0 {
            ts_column = ts_column.saturating_sub(self.first_line_shift);
        }
        ts_line += 1;
        Some((ts_line, ts_column + 1))
    }
}

/// The deepest nesting of parentheses, brackets, braces and template substitutions a script may
/// have. oxc's parser and passes recurse once (or more) per level with no guard of their own, so
/// an unchecked depth is a stack overflow — an abort of the whole process, not an error. Real
/// scripts stay far below a hundred levels; a sandbox thread's stack holds many times this
/// limit (see [`TRANSPILE_STACK_BYTES`]).
const MAX_NESTING: usize = 1000;

/// The deepest an expression may go without brackets, in tokens (see the `nesting` module).
/// Real statements stay in the hundreds.
pub(crate) const MAX_EXPRESSION_TOKENS: usize = 20_000;

/// The least stack of a thread that calls [`transpile`] (every sandbox thread has it). Only the pages a script actually touches are committed,
/// so the size costs address space, not memory. Measured in a debug build (larger frames than
/// release), each of these fits in 32 MiB: 1,000 nested parentheses, arrays, type arguments or
/// brace-less `if`s, and 20,000-token chains of `+`, `!`, `=>`, `?:`, `=`, calls, members or
/// labels; 256 MiB leaves a margin of four for both limits at once.
pub(crate) const TRANSPILE_STACK_BYTES: usize = 256 * 1024 * 1024;

/// When QuickJS runs out of memory so fully that it cannot even make the "out of memory" error,
/// it throws `null`; by the time the script's promise is rejected (which may fail the same way)
/// its frame — the memory it held — is gone, so the heap's size no longer tells. So the wrapper
/// looks while the frame is still alive: on a `null` with no room left for 64 KiB it tells the
/// host through a native that needs no JavaScript memory.
const OUT_OF_MEMORY_PROBE: &str = "if (e === null) { let full = false; \
     try { new ArrayBuffer(65536); } catch { full = true; } \
     if (full) __toolmux_out_of_memory(); }";

/// Strips the types from `source` and wraps it as described in the module documentation.
///
/// The script is first scanned for its nesting depth, which must stay within [`MAX_NESTING`];
/// then oxc runs right here. The caller's thread must have a stack of at least
/// [`TRANSPILE_STACK_BYTES`] — the sandbox thread, the only caller, does — so that no script
/// within the limits can overflow it.
pub(crate) fn transpile(source: &str) -> Result<Transpiled, CodeModeError> {
    let limits = crate::nesting::NestingLimits {
        brackets: MAX_NESTING,
        tokens: MAX_EXPRESSION_TOKENS,
    };
    crate::nesting::check_nesting(source, limits)?;
    transpile_here(source)
}

fn transpile_here(source: &str) -> Result<Transpiled, CodeModeError> {
    let allocator = Allocator::default();
    let source_type = SourceType::ts().with_module(true);
    let options = ParseOptions {
        allow_return_outside_function: true,
        ..ParseOptions::default()
    };
    let parsed = Parser::new(&allocator, source, source_type)
        .with_options(options)
        .parse();
    if parsed.diagnostics.has_errors() {
        return Err(syntax_error(source, 0, parsed.diagnostics.errors()));
    }
    let mut imports = Vec::new();
    let mut is_module = false;
    for statement in &parsed.program.body {
        match statement {
            Statement::ImportDeclaration(import) => imports.push(import.span()),
            s if s.is_module_declaration() => is_module = true,
            _ => {}
        }
    }
    if is_module {
        return strip(source, 0);
    }

    // Hoist the imports onto the front of line 1 and open the async wrapper there.
    let mut body = source.to_string();
    let mut head = String::new();
    for span in &imports {
        let (start, end) = (span.start as usize, span.end as usize);
        let text = &source[start..end];
        head.push_str(&text.replace(['\n', '\r'], " "));
        if !text.trim_end().ends_with(';') {
            head.push(';');
        }
        head.push(' ');
        let blank: String = text
            .chars()
            .map(|c| if c == '\n' || c == '\r' { c } else { ' ' })
            .collect();
        body.replace_range(start..end, &blank);
    }
    head.push_str("export default await (async () => { try {");
    let wrapped =
        format!("{head}{body}\n}} catch (e) {{ {OUT_OF_MEMORY_PROBE} throw e; }} }})();\n");
    strip(&wrapped, head.chars().count() as u32)
}

fn strip(source: &str, first_line_shift: u32) -> Result<Transpiled, CodeModeError> {
    let allocator = Allocator::default();
    let source_type = SourceType::ts().with_module(true);
    let parsed = Parser::new(&allocator, source, source_type).parse();
    if parsed.diagnostics.has_errors() {
        return Err(syntax_error(
            source,
            first_line_shift,
            parsed.diagnostics.errors(),
        ));
    }
    let mut program = parsed.program;
    let scoping = SemanticBuilder::new()
        .build(&program)
        .semantic
        .into_scoping();
    let transformed = Transformer::new(
        &allocator,
        Path::new(SCRIPT_NAME),
        &TransformOptions::default(),
    )
    .build_with_scoping(scoping, &mut program);
    if transformed.diagnostics.has_errors() {
        return Err(syntax_error(
            source,
            first_line_shift,
            transformed.diagnostics.errors(),
        ));
    }
    let generated = Codegen::new()
        .with_options(CodegenOptions {
            source_map_path: Some(SCRIPT_NAME.into()),
            ..CodegenOptions::default()
        })
        .build(&program);
    let tokens = generated
        .map
        .as_ref()
        .map(|map| {
            let mut tokens: Vec<_> = map
                .get_tokens()
                .map(|t| {
                    (
                        t.get_dst_line(),
                        t.get_dst_col(),
                        t.get_src_line(),
                        t.get_src_col(),
                    )
                })
                .collect();
            tokens.sort_unstable();
            tokens
        })
        .unwrap_or_default();
    Ok(Transpiled {
        code: generated.code,
        tokens,
        first_line_shift,
    })
}

/// `script.ts:3:7: message` for each diagnostic, with positions in the original script.
fn syntax_error<'a>(
    source: &str,
    first_line_shift: u32,
    diagnostics: impl Iterator<Item = &'a oxc::diagnostics::OxcDiagnostic>,
) -> CodeModeError {
    let lines: Vec<String> = diagnostics
        .map(|d| {
            let position = d
                .labels
                .first()
                .map(|label| {
                    let (line, mut column) = line_column(source, label.offset() as usize);
                    if line == 1 {
                        column = column.saturating_sub(first_line_shift).max(1);
                    }
                    format!("{SCRIPT_NAME}:{line}:{column}: ")
                })
                .unwrap_or_default();
            let help = d
                .help
                .as_ref()
                .map(|h| format!(" ({h})"))
                .unwrap_or_default();
            format!("{position}{}{help}", d.message)
        })
        .collect();
    CodeModeError::Syntax(lines.join("\n"))
}

/// The 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_column(source: &str, offset: usize) -> (u32, u32) {
    let offset = offset.min(source.len());
    let before = source.get(..offset).unwrap_or(source);
    let line = before.matches('\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = before[line_start..].chars().count() as u32 + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_stripped_and_the_script_becomes_an_async_body() {
        let out = transpile(
            "import { workspace } from '@capabilities/workspace';\ninterface P { x: number }\nconst p: P = { x: 1 };\nreturn workspace.fileRead({ path: String(p.x) });\n",
        )
        .expect("transpiles");
        assert!(
            out.code
                .contains("import { workspace } from \"@capabilities/workspace\"")
        );
        assert!(out.code.contains("export default await (async () =>"));
        assert!(!out.code.contains("interface"));
        assert!(!out.code.contains(": P"));
    }

    #[test]
    fn a_script_with_exports_stays_a_module() {
        let out = transpile("const x: number = 2;\nexport default x * 2;\n").expect("transpiles");
        assert!(!out.code.contains("async () =>"));
        assert!(out.code.contains("export default x * 2"));
    }

    #[test]
    fn syntax_errors_point_at_the_typescript_line_and_column() {
        let err = transpile("const a = 1;\nconst b = ;\n").expect_err("does not parse");
        let text = err.to_string();
        assert!(text.contains("script.ts:2:11"), "{text}");
    }

    #[test]
    fn positions_map_back_through_the_source_map() {
        let source = "type T = { a: string };\nconst t: T = { a: 'x' };\nthrow new Error(t.a);\n";
        let out = transpile(source).expect("transpiles");
        let (js_line, js_col) = out
            .code
            .lines()
            .enumerate()
            .find_map(|(i, l)| l.find("throw").map(|c| (i as u32 + 1, c as u32 + 1)))
            .expect("throw is in the output");
        assert_eq!(out.original_position(js_line, js_col), Some((3, 1)));
    }
}
