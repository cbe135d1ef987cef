//! jq projections of results, on jaq (a maintained jq interpreter).
//!
//! A projection selects and reshapes a result (`.items[:20] | map({id, title})`); it runs on a
//! tool's output, which nobody checked, and jaq cannot be stopped from outside once it runs. So
//! a projection is bounded by construction, checked when the configuration is read
//! ([`Projection::new`]): at most [`MAX_EXPRESSION_BYTES`] nested at most
//! [`MAX_EXPRESSION_DEPTH`] deep, and none of what makes jq's work unbounded — definitions and
//! `reduce`/`foreach` (recursion, repeated doubling), the generators without end (`range`,
//! `repeat`, `recurse(f)`, `while`, `until`, `combinations`), `*` (`"x" * .n` would allocate
//! what the result says), `fromjson` (a parse as deep as a string says), and the environment
//! and inputs (`env`, `$ENV`, `input`). What remains walks the result a bounded number of times
//! in the expression's length. On top of that, a projection runs on a thread of its own with a
//! large stack (jaq recurses as deep as the value, which toolmux's JSON reading keeps to 128),
//! its caller waits at most [`PROJECTION_TIME_LIMIT`], at most [`MAX_RUNNING`] run at once, and
//! its output is bounded in count ([`MAX_OUTPUTS`]), depth ([`MAX_OUTPUT_DEPTH`]) and size
//! ([`MAX_OUTPUT_BYTES`]) as it comes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// How long a caller waits for a projection.
pub const PROJECTION_TIME_LIMIT: Duration = Duration::from_secs(5);
/// The most values a projection may output (they become one array).
pub const MAX_OUTPUTS: usize = 10_000;
/// The deepest a projection's output may nest (as deep as the JSON toolmux reads at all).
pub const MAX_OUTPUT_DEPTH: usize = 128;
/// The longest expression.
pub const MAX_EXPRESSION_BYTES: usize = 4 * 1024;
/// The deepest an expression's brackets nest.
pub const MAX_EXPRESSION_DEPTH: usize = 64;
/// The most bytes of JSON a projection may output.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;
/// What a projection may not name: each makes its work unbounded (see the module's comment).
const REFUSED_WORDS: [&str; 15] = [
    "def",
    "reduce",
    "foreach",
    "range",
    "repeat",
    "recurse",
    "while",
    "until",
    "combinations",
    "fromjson",
    "env",
    "input",
    "inputs",
    "halt",
    "halt_error",
];
/// The most projections running at once.
pub const MAX_RUNNING: usize = 4;
/// A projection thread's stack: jaq evaluates and drops values recursively.
const STACK_BYTES: usize = 256 * 1024 * 1024;

static RUNNING: AtomicUsize = AtomicUsize::new(0);

/// A jq expression that compiles: checked when the configuration is read, so `config check`
/// names the field of one that does not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projection {
    text: Arc<str>,
}

/// Why a projection gave no value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProjectionError {
    /// The expression does not parse or compile.
    #[error("the jq expression `{expression}` does not compile: {message}")]
    Compile {
        /// The expression.
        expression: String,
        /// jaq's complaint.
        message: String,
    },
    /// It failed on this input (`.foo` of an array, `error("x")`).
    #[error("the projection failed: {0}")]
    Failed(String),
    /// It uses what a projection may not (see the module's comment).
    #[error("the jq expression `{expression}` is refused: {reason}")]
    Refused {
        /// The expression (its beginning when long).
        expression: String,
        /// Why.
        reason: String,
    },
    /// It went past a bound.
    #[error("the projection stopped: {0}")]
    Bounded(String),
}

impl Projection {
    /// Compiles `text` to check it.
    pub fn new(text: &str) -> Result<Self, ProjectionError> {
        check_bounded(text)?;
        compile(text)?;
        Ok(Self { text: text.into() })
    }

    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Runs the projection on `input`: one output is that value, several are an array of them,
    /// none is `null`.
    pub fn apply(&self, input: &Value) -> Result<Value, ProjectionError> {
        let Some(_slot) = Slot::take() else {
            return Err(ProjectionError::Bounded(format!(
                "{MAX_RUNNING} projections are already running (one may never end)"
            )));
        };
        let (sender, receiver) = mpsc::sync_channel(1);
        let text = Arc::clone(&self.text);
        let input = input.to_string();
        let spawned = std::thread::Builder::new()
            .name("toolmux-projection".into())
            .stack_size(STACK_BYTES)
            .spawn(move || {
                // The slot is held by the thread, not the caller: a projection the caller
                // stopped waiting for still counts until it really ends.
                let _slot = _slot;
                let _ = sender.send(run(&text, &input));
            });
        if let Err(e) = spawned {
            return Err(ProjectionError::Bounded(format!(
                "no thread to run it on: {e}"
            )));
        }
        match receiver.recv_timeout(PROJECTION_TIME_LIMIT) {
            Ok(outcome) => outcome,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(ProjectionError::Bounded(format!(
                "it did not finish within {}s",
                PROJECTION_TIME_LIMIT.as_secs()
            ))),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(ProjectionError::Failed(
                "it ended without an answer".to_string(),
            )),
        }
    }
}

/// One of the [`MAX_RUNNING`] places; given back when dropped.
struct Slot;

impl Slot {
    fn take() -> Option<Slot> {
        RUNNING
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_RUNNING).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Refuses an expression that could make unbounded work, before jaq's (recursive) lexer and
/// parser see it.
fn check_bounded(text: &str) -> Result<(), ProjectionError> {
    let refused = |reason: String| ProjectionError::Refused {
        expression: text.chars().take(200).collect(),
        reason,
    };
    if text.trim().is_empty() {
        return Err(refused("it is empty".to_string()));
    }
    if text.len() > MAX_EXPRESSION_BYTES {
        return Err(refused(format!(
            "it is longer than {MAX_EXPRESSION_BYTES} bytes"
        )));
    }
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_EXPRESSION_DEPTH {
            return Err(refused(format!(
                "its brackets nest deeper than {MAX_EXPRESSION_DEPTH}"
            )));
        }
    }
    let tokens =
        jaq_core::load::Lexer::new(text)
            .lex()
            .map_err(|errors| ProjectionError::Compile {
                expression: text.to_string(),
                message: format!("{} lexing error(s): {errors:?}", errors.len()),
            })?;
    // An explicit stack: blocks and string interpolations hold tokens of their own.
    let mut stack: Vec<&jaq_core::load::lex::Token<&str>> = tokens.iter().collect();
    while let Some(jaq_core::load::lex::Token(text, kind)) = stack.pop() {
        use jaq_core::load::lex::{StrPart, Tok};
        match kind {
            Tok::Word if REFUSED_WORDS.contains(text) => {
                return Err(refused(format!(
                    "`{text}` may make unbounded work, which a projection may not"
                )));
            }
            Tok::Var if *text == "$ENV" => {
                return Err(refused(
                    "`$ENV` would show toolmux's environment".to_string(),
                ));
            }
            Tok::Sym if text.starts_with('*') => {
                return Err(refused(
                    "`*` may build values as large as the result says".to_string(),
                ));
            }
            Tok::Block(inner) => stack.extend(inner.iter()),
            Tok::Str(parts) => {
                for part in parts {
                    if let StrPart::Term(token) = part {
                        stack.push(token);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

type JqFilter = jaq_core::Filter<data::JustLut<Val>>;

fn compile(text: &str) -> Result<JqFilter, ProjectionError> {
    let failed = |message: String| ProjectionError::Compile {
        expression: text.to_string(),
        message,
    };
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let modules = loader
        .load(
            &arena,
            File {
                code: text,
                path: (),
            },
        )
        .map_err(|errors| failed(format!("{} parse error(s): {errors:?}", errors.len())))?;
    Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errors| failed(format!("{} error(s): {errors:?}", errors.len())))
}

fn run(text: &str, input: &str) -> Result<Value, ProjectionError> {
    let filter = compile(text)?;
    let input = jaq_json::read::parse_single(input.as_bytes())
        .map_err(|e| ProjectionError::Failed(format!("the input is not JSON: {e}")))?;
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let mut outputs = Vec::new();
    // What all outputs so far may still take: the cap is on their sum, not on each.
    let mut left = MAX_OUTPUT_BYTES;
    for output in filter.id.run((ctx, input)).map(unwrap_valr) {
        let value = output.map_err(|e| ProjectionError::Failed(e.to_string()))?;
        if outputs.len() == MAX_OUTPUTS {
            return Err(ProjectionError::Bounded(format!(
                "it gave more than {MAX_OUTPUTS} values"
            )));
        }
        if depth(&value) > MAX_OUTPUT_DEPTH {
            return Err(ProjectionError::Bounded(format!(
                "its output nests deeper than {MAX_OUTPUT_DEPTH}"
            )));
        }
        let mut text = CappedText {
            text: String::new(),
            limit: left,
        };
        if std::fmt::write(&mut text, format_args!("{value}")).is_err() {
            return Err(ProjectionError::Bounded(format!(
                "its output is larger than {MAX_OUTPUT_BYTES} bytes"
            )));
        }
        left -= text.text.len();
        let json: Value = serde_json::from_str(&text.text)
            .map_err(|e| ProjectionError::Failed(format!("its output is not JSON: {e}")))?;
        outputs.push(json);
    }
    Ok(match outputs.len() {
        0 => Value::Null,
        1 => outputs.pop().unwrap_or(Value::Null),
        _ => Value::Array(outputs),
    })
}

/// One output's serialisation, refusing to grow past `limit`: what [`MAX_OUTPUT_BYTES`] leaves
/// after the outputs before it.
struct CappedText {
    text: String,
    limit: usize,
}

impl std::fmt::Write for CappedText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.text.len() + s.len() > self.limit {
            return Err(std::fmt::Error);
        }
        self.text.push_str(s);
        Ok(())
    }
}

/// How deep a value nests, measured with an explicit stack: the value may be as deep as the
/// expression made it.
fn depth(value: &Val) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((value, level)) = stack.pop() {
        deepest = deepest.max(level);
        if level > MAX_OUTPUT_DEPTH {
            return level;
        }
        match value {
            Val::Arr(items) => stack.extend(items.iter().map(|v| (v, level + 1))),
            Val::Obj(map) => stack.extend(map.values().map(|v| (v, level + 1))),
            _ => {}
        }
    }
    deepest
}

impl Serialize for Projection {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Projection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Projection::new(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Projection {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Projection".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "minLength": 1,
            "description": "A jq expression (jaq's dialect)."
        })
    }
}
