//! The sandbox: one fresh QuickJS runtime per script, on a thread of its own.
//!
//! Why a thread per run: QuickJS is single-threaded and a script may compute for a while, so it
//! must never run on the async runtime's workers. Tool calls go the other way: the script's host
//! call hands each call to the tokio runtime (`Hub::call` on the `code` channel), and the
//! thread's event loop waits for their completions, settles the script's promises, and runs the
//! resulting jobs. Thousands of calls can be in flight at once (`Promise.all`).
//!
//! Limits: a memory limit and a stack limit (QuickJS's own), a CPU-time budget checked on the
//! thread's CPU clock by the interrupt handler, a wall-clock timeout (paused while a person is
//! asked to approve a call), and a watchdog on the async side that gives up on a thread whose
//! built-in ignores the interrupt. Every run gets a fresh runtime, so a runtime that hit a limit
//! is never reused; an abandoned thread drops its runtime when the built-in finally returns.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use cpu_time::ThreadTime;
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Exception, Function, Module, Runtime, Value as JsValue};
use serde::Serialize;
use serde_json::Value;
use toolmux_core::{
    Approval, ApprovalRequest, Approver, CallContext, CallError, Channel, Hub, ToolResult,
    ToolScope, WeakHub,
};

use crate::capabilities::{CODEMODE_SOURCE, Capabilities, MODULE_PREFIX};
use crate::error::CodeModeError;
use crate::stdlib::{PRELUDE, install_natives};
use crate::transpile::{SCRIPT_NAME, TRANSPILE_STACK_BYTES, Transpiled, transpile};

/// What one script may use.
#[derive(Clone, Debug)]
pub struct Limits {
    /// QuickJS heap limit.
    pub memory_bytes: usize,
    /// QuickJS stack limit (deep recursion becomes a `RangeError`).
    pub stack_bytes: usize,
    /// CPU time the script's thread may use (tool calls run elsewhere and do not count).
    pub cpu_time: Duration,
    /// Wall-clock time for the whole run, not counting time spent waiting for a person to
    /// approve a call.
    pub wall_time: Duration,
    /// How long after the wall-clock timeout the watchdog waits for the thread before it
    /// abandons it.
    pub watchdog_grace: Duration,
    /// Console output kept; the rest is dropped with a note.
    pub log_bytes: usize,
    /// Tool calls one script may have in flight at once.
    pub max_in_flight: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 * 1024 * 1024,
            stack_bytes: 1024 * 1024,
            cpu_time: Duration::from_secs(10),
            wall_time: Duration::from_secs(60),
            watchdog_grace: Duration::from_secs(2),
            log_bytes: 1024 * 1024,
            max_in_flight: 10_000,
        }
    }
}

/// One line of console output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogLine {
    /// `log`, `info`, `warn`, `error` or `debug`.
    pub level: String,
    /// The arguments, strings as they are and other values as JSON, joined by spaces.
    pub message: String,
}

/// What a run produced: the result (or why there is none), the console output either way, and
/// how many tool calls the script made.
#[derive(Debug)]
pub struct RunOutput {
    /// The script's return value (or default export) as JSON; `null` when it returns nothing.
    pub result: Result<Value, CodeModeError>,
    /// Console output, in order.
    pub logs: Vec<LogLine>,
    /// Tool calls the script started.
    pub calls: u64,
}

/// Runs scripts against one hub's tools. Holds the hub weakly: a hub may own the sandbox (through
/// the `codemode` source) without a reference cycle.
pub struct Sandbox {
    hub: WeakHub,
    limits: Limits,
    /// The compiled modules of the current catalog version, one entry per scope seen with it.
    cache: Mutex<Vec<CachedCapabilities>>,
}

/// The most scopes whose capabilities are kept at once: a channel (a `toolmux mcp --exclude …`
/// process) hands every call the same `Arc<ToolScope>`, so a few cover the channels in use.
const CACHED_SCOPES: usize = 4;

/// Capabilities compiled for one catalog version and one scope, looked up by `(version, scope)`
/// with the scope by identity; `None` is the whole catalog.
struct CachedCapabilities {
    version: u64,
    scope: Option<Arc<ToolScope>>,
    capabilities: Arc<Capabilities>,
}

impl CachedCapabilities {
    fn is_for(&self, version: u64, scope: Option<&Arc<ToolScope>>) -> bool {
        self.version == version
            && match (&self.scope, scope) {
                (None, None) => true,
                (Some(cached), Some(scope)) => Arc::ptr_eq(cached, scope),
                _ => false,
            }
    }
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("hub", &self.hub)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Why the interrupt handler stopped a script.
const STOP_NONE: u8 = 0;
const STOP_CPU: u8 = 1;
const STOP_WALL: u8 = 2;
const STOP_CANCELLED: u8 = 3;

/// State shared between the async caller (watchdog, cancellation) and the sandbox thread.
struct Shared {
    started: Instant,
    /// The wall-clock deadline in milliseconds after `started`; moves while approvals wait.
    deadline_ms: AtomicU64,
    /// Set by the caller to stop the script (cancelled, or the watchdog fired).
    stop: AtomicBool,
    /// Why the interrupt handler stopped the script.
    reason: AtomicU8,
    /// Calls waiting for a person right now.
    approvals_waiting: Arc<AtomicUsize>,
}

impl Shared {
    fn past_deadline(&self) -> bool {
        self.started.elapsed().as_millis() as u64 > self.deadline_ms.load(Ordering::Relaxed)
    }
}

/// Sets the stop flag when the run's future is dropped (the caller gave up or timed out), so the
/// thread ends at its next interrupt check.
struct StopOnDrop(Arc<Shared>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::Relaxed);
    }
}

impl Sandbox {
    /// A sandbox whose scripts call the tools of `hub`.
    pub fn new(hub: WeakHub, limits: Limits) -> Self {
        Self {
            hub,
            limits,
            cache: Mutex::new(Vec::new()),
        }
    }

    /// The limits every run gets.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The hub whose tools scripts call, while it exists.
    pub(crate) fn hub(&self) -> Result<Hub, CodeModeError> {
        self.hub.upgrade().ok_or_else(hub_gone)
    }

    /// The compiled modules a caller may see: the whole catalog's, or, when the caller's channel
    /// serves only part of it ([`CallContext::scope`]), only the tools within that scope, so a
    /// filtered-out tool is neither importable, declared, nor found by `search_tools`. Cached by
    /// catalog version and scope.
    pub fn capabilities_for(
        &self,
        context: &CallContext,
    ) -> Result<Arc<Capabilities>, CodeModeError> {
        let hub = self.hub.upgrade().ok_or_else(hub_gone)?;
        let catalog = hub.catalog();
        let version = catalog.version();
        let scope = context.scope.as_ref().filter(|s| !s.is_unrestricted());
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cached) = cache.iter().find(|c| c.is_for(version, scope)) {
            return Ok(Arc::clone(&cached.capabilities));
        }
        let capabilities = Arc::new(
            Capabilities::from_tools(
                catalog
                    .offered()
                    .map(|entry| &entry.descriptor)
                    .filter(|tool| context.admits(tool)),
            )
            .described_by(&catalog),
        );
        cache.retain(|c| c.version == version);
        if cache.len() >= CACHED_SCOPES {
            cache.remove(0);
        }
        cache.push(CachedCapabilities {
            version,
            scope: scope.cloned(),
            capabilities: Arc::clone(&capabilities),
        });
        Ok(capabilities)
    }

    /// Runs a TypeScript script. Its tool calls go through the hub's pipeline with `context`
    /// (forced to the `code` channel), so the caller's approver, session and scope apply: the
    /// script sees only the modules of its caller's scope, and the hub refuses the rest. Must be
    /// called within a tokio runtime.
    pub async fn run(&self, script: &str, context: &CallContext) -> RunOutput {
        let failed = |e| RunOutput {
            result: Err(e),
            logs: Vec::new(),
            calls: 0,
        };
        let handle = match tokio::runtime::Handle::try_current() {
            Ok(handle) => handle,
            Err(_) => {
                return failed(CodeModeError::Sandbox(
                    "code mode must run inside a tokio runtime".to_string(),
                ));
            }
        };
        let capabilities = match self.capabilities_for(context) {
            Ok(c) => c,
            Err(e) => return failed(e),
        };
        let shared = Arc::new(Shared {
            started: Instant::now(),
            deadline_ms: AtomicU64::new(self.limits.wall_time.as_millis() as u64),
            stop: AtomicBool::new(false),
            reason: AtomicU8::new(STOP_NONE),
            approvals_waiting: Arc::new(AtomicUsize::new(0)),
        });
        let mut context = context.clone();
        context.channel = Channel::Code;
        if let Some(approver) = context.approver.take() {
            context.approver = Some(Arc::new(CountingApprover {
                inner: approver,
                waiting: Arc::clone(&shared.approvals_waiting),
            }));
        }
        let job = Job {
            script: script.to_string(),
            capabilities,
            limits: self.limits.clone(),
            hub: self.hub.clone(),
            context: Arc::new(context),
            handle,
            shared: Arc::clone(&shared),
        };
        let (done, mut finished) = tokio::sync::oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("toolmux-sandbox".to_string())
            .stack_size(thread_stack_bytes(&self.limits))
            .spawn(move || {
                let output = job.execute();
                let _ = done.send(output);
            });
        if let Err(e) = spawned {
            return failed(CodeModeError::Sandbox(format!(
                "cannot start the sandbox thread: {e}"
            )));
        }
        let _stop_on_drop = StopOnDrop(Arc::clone(&shared));
        let grace = self.limits.watchdog_grace;
        loop {
            tokio::select! {
                output = &mut finished => {
                    return output.unwrap_or_else(|_| failed(CodeModeError::Sandbox(
                        "the sandbox thread ended without a result".to_string(),
                    )));
                }
                () = tokio::time::sleep(Duration::from_millis(50)) => {
                    let deadline = Duration::from_millis(shared.deadline_ms.load(Ordering::Relaxed));
                    if shared.started.elapsed() > deadline + grace {
                        shared.stop.store(true, Ordering::Relaxed);
                        tracing::warn!("code mode: abandoning a sandbox thread that ignored its interrupt");
                        return failed(CodeModeError::Watchdog { timeout: self.limits.wall_time, grace });
                    }
                }
            }
        }
    }
}

/// The stack of a sandbox thread, which first transpiles the script (oxc, on this very thread:
/// at least [`TRANSPILE_STACK_BYTES`]) and then runs it in QuickJS, which checks its own limit
/// (`Limits::stack_bytes`, set with `set_max_stack_size`) and must find the thread's real stack
/// comfortably larger. Only the pages touched are committed, so the size costs address space.
fn thread_stack_bytes(limits: &Limits) -> usize {
    let quickjs = limits.stack_bytes.max(256 * 1024) * 4 + 4 * 1024 * 1024;
    quickjs.max(TRANSPILE_STACK_BYTES)
}

fn hub_gone() -> CodeModeError {
    CodeModeError::Sandbox("the hub is gone".to_string())
}

/// Passes approvals through and counts the ones waiting, so the wall clock can pause.
struct CountingApprover {
    inner: Arc<dyn Approver>,
    waiting: Arc<AtomicUsize>,
}

/// One wait on a person, counted in the approver's `waiting` while it lasts.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn start(waiting: &'a AtomicUsize) -> Self {
        waiting.fetch_add(1, Ordering::Relaxed);
        Self(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[async_trait]
impl Approver for CountingApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let _waiting = Waiting::start(&self.waiting);
        self.inner.approve(request).await
    }

    /// A question (`human.ask`) waits on a person like an approval, so it pauses the clock too.
    async fn ask(
        &self,
        question: &toolmux_core::HumanQuestion,
    ) -> Result<toolmux_core::HumanAnswer, toolmux_core::CannotAsk> {
        let _waiting = Waiting::start(&self.waiting);
        self.inner.ask(question).await
    }
}

/// Everything the sandbox thread needs.
struct Job {
    script: String,
    capabilities: Arc<Capabilities>,
    limits: Limits,
    hub: WeakHub,
    context: Arc<CallContext>,
    handle: tokio::runtime::Handle,
    shared: Arc<Shared>,
}

/// A finished tool call on its way back to the script.
struct Completion {
    id: f64,
    /// JSON text of the value, or `(code, message)`.
    outcome: Result<String, (&'static str, String)>,
}

/// Console output with a size cap.
#[derive(Default)]
struct Logs {
    lines: Vec<LogLine>,
    bytes: usize,
    truncated: bool,
}

impl Logs {
    fn push(&mut self, level: &str, message: String, cap: usize) {
        if self.truncated {
            return;
        }
        if self.bytes + message.len() > cap {
            self.truncated = true;
            self.lines.push(LogLine {
                level: "warn".to_string(),
                message: format!("[console output past {cap} bytes was dropped]"),
            });
            return;
        }
        self.bytes += message.len();
        self.lines.push(LogLine {
            level: level.to_string(),
            message,
        });
    }
}

/// Host-call bookkeeping on the sandbox thread.
#[derive(Default)]
struct Calls {
    in_flight: HashMap<u64, tokio::task::AbortHandle>,
    started: u64,
}

impl Job {
    fn execute(self) -> RunOutput {
        let logs = Rc::new(RefCell::new(Logs::default()));
        let calls = Rc::new(RefCell::new(Calls::default()));
        let result = self.run(&logs, &calls);
        // Tool calls still running belong to a script that is over.
        let calls = std::mem::take(&mut *calls.borrow_mut());
        for handle in calls.in_flight.values() {
            handle.abort();
        }
        let logs = std::mem::take(&mut logs.borrow_mut().lines);
        RunOutput {
            result,
            logs,
            calls: calls.started,
        }
    }

    fn run(
        &self,
        logs: &Rc<RefCell<Logs>>,
        calls: &Rc<RefCell<Calls>>,
    ) -> Result<Value, CodeModeError> {
        // This thread's stack is at least `TRANSPILE_STACK_BYTES` (see `thread_stack_bytes`).
        let transpiled = transpile(&self.script)?;
        let engine = |e: rquickjs::Error| CodeModeError::Sandbox(format!("QuickJS: {e}"));
        let runtime = Runtime::new().map_err(engine)?;
        runtime.set_memory_limit(self.limits.memory_bytes);
        runtime.set_max_stack_size(self.limits.stack_bytes);
        runtime.set_interrupt_handler(Some(self.interrupt_handler()));
        runtime.set_loader(
            CapabilityResolver(Arc::clone(&self.capabilities)),
            CapabilityLoader(Arc::clone(&self.capabilities)),
        );
        let context = Context::full(&runtime).map_err(engine)?;
        let (completions_tx, completions) = mpsc::channel::<Completion>();
        let ran_out_of_memory = Rc::new(std::cell::Cell::new(false));

        let result = context.with(|ctx| -> Result<Value, CodeModeError> {
            let log_cap = self.limits.log_bytes;
            let log_sink = Rc::clone(logs);
            let send_calls = Rc::clone(calls);
            let max_in_flight = self.limits.max_in_flight;
            let hub = self.hub.clone();
            let context = Arc::clone(&self.context);
            let handle = self.handle.clone();
            let out_of_memory = Rc::clone(&ran_out_of_memory);
            install_natives(
                &ctx,
                move |level, text| log_sink.borrow_mut().push(level, text, log_cap),
                move |ctx, id, name, args| {
                    let mut calls = send_calls.borrow_mut();
                    if calls.in_flight.len() >= max_in_flight {
                        return Err(Exception::throw_range(
                            ctx,
                            &format!("more than {max_in_flight} tool calls in flight at once"),
                        ));
                    }
                    let arguments: Value = serde_json::from_str(&args).map_err(|e| {
                        Exception::throw_type(ctx, &format!("arguments of `{name}`: {e}"))
                    })?;
                    let hub = hub.clone();
                    let context = Arc::clone(&context);
                    let tx = completions_tx.clone();
                    let task = handle.spawn(async move {
                        let outcome = match hub.upgrade() {
                            Some(hub) if is_code_mode_tool(&hub, &name) => Err((
                                "denied",
                                format!(
                                    "`{name}` cannot be called from a script (scripts do not nest)"
                                ),
                            )),
                            Some(hub) => script_outcome(hub.call(&name, arguments, &context).await),
                            None => Err(("unavailable", "the hub is gone".to_string())),
                        };
                        let _ = tx.send(Completion { id, outcome });
                    });
                    calls.in_flight.insert(id as u64, task.abort_handle());
                    calls.started += 1;
                    Ok(())
                },
                move || out_of_memory.set(true),
            )
            .map_err(|e| self.caught(&ctx, e, &transpiled))?;
            let settle: Function = ctx
                .eval(PRELUDE)
                .map_err(|e| self.caught(&ctx, e, &transpiled))?;

            let module = Module::declare(ctx.clone(), SCRIPT_NAME, transpiled.code.as_str())
                .map_err(|e| self.caught(&ctx, e, &transpiled))?;
            let (module, promise) = module
                .eval()
                .map_err(|e| self.caught(&ctx, e, &transpiled))?;

            loop {
                while ctx.execute_pending_job() {}
                self.check_stopped()?;
                match promise.state() {
                    PromiseState::Resolved => break,
                    PromiseState::Rejected => {
                        let error = promise
                            .result::<JsValue>()
                            .and_then(Result::err)
                            .unwrap_or(rquickjs::Error::Exception);
                        return Err(self.caught(&ctx, error, &transpiled));
                    }
                    PromiseState::Pending => {}
                }
                if calls.borrow().in_flight.is_empty() {
                    return Err(CodeModeError::Script(
                        "the script is waiting for a promise that nothing will settle (there are \
                         no timers, and no tool call is running)"
                            .to_string(),
                    ));
                }
                let first = self.next_completion(&completions)?;
                let mut batch = vec![first];
                batch.extend(completions.try_iter());
                for completion in batch {
                    calls.borrow_mut().in_flight.remove(&(completion.id as u64));
                    let (ok, payload, code) = match completion.outcome {
                        Ok(json) => (true, json, ""),
                        Err((code, message)) => (false, message, code),
                    };
                    settle
                        .call::<_, ()>((completion.id, ok, payload, code))
                        .map_err(|e| self.caught(&ctx, e, &transpiled))?;
                }
            }

            let value: JsValue = module
                .get("default")
                .map_err(|e| self.caught(&ctx, e, &transpiled))?;
            let json = ctx.json_stringify(value).map_err(|e| {
                let inner = self.caught(&ctx, e, &transpiled);
                CodeModeError::Script(format!(
                    "the script's result cannot be converted to JSON: {inner}"
                ))
            })?;
            match json {
                None => Ok(Value::Null),
                Some(text) => {
                    let text = text
                        .to_string()
                        .map_err(|e| CodeModeError::Script(e.to_string()))?;
                    serde_json::from_str(&text).map_err(|e| {
                        CodeModeError::Script(format!("the script's result is not JSON: {e}"))
                    })
                }
            }
        });
        // QuickJS reports some allocation failures as a bare `null` exception. The script's
        // wrapper says so when it catches one with the heap full; otherwise (a module script,
        // which has no wrapper) the heap's size tells them apart from a script that throws
        // `null` itself.
        let result = match result {
            Err(_) if ran_out_of_memory.get() => {
                Err(CodeModeError::OutOfMemory(self.limits.memory_bytes))
            }
            Err(CodeModeError::Script(text)) if text == UNCAUGHT_NULL => {
                let usage = runtime.memory_usage();
                let limit = self.limits.memory_bytes as f64;
                if usage.malloc_size as f64 >= 0.9 * limit {
                    Err(CodeModeError::OutOfMemory(self.limits.memory_bytes))
                } else {
                    Err(CodeModeError::Script(text))
                }
            }
            other => other,
        };
        drop(context);
        drop(runtime);
        result
    }

    /// Waits for the next completed tool call, up to the wall-clock deadline. Time during which
    /// a person is being asked to approve a call moves the deadline.
    fn next_completion(
        &self,
        completions: &mpsc::Receiver<Completion>,
    ) -> Result<Completion, CodeModeError> {
        let shared = &self.shared;
        loop {
            self.check_stopped()?;
            let deadline = Duration::from_millis(shared.deadline_ms.load(Ordering::Relaxed));
            let left = deadline.saturating_sub(shared.started.elapsed());
            if left.is_zero() {
                return Err(CodeModeError::Timeout(self.limits.wall_time));
            }
            let slice = left.min(Duration::from_millis(50));
            let waited = Instant::now();
            match completions.recv_timeout(slice) {
                Ok(completion) => return Ok(completion),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if shared.approvals_waiting.load(Ordering::Relaxed) > 0 {
                        let paused = waited.elapsed().as_millis() as u64;
                        shared.deadline_ms.fetch_add(paused, Ordering::Relaxed);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(CodeModeError::Sandbox(
                        "tool calls stopped answering".to_string(),
                    ));
                }
            }
        }
    }

    /// The error for a script stopped by the interrupt handler or the caller, if it was.
    fn check_stopped(&self) -> Result<(), CodeModeError> {
        match self.shared.reason.load(Ordering::Relaxed) {
            STOP_CPU => Err(CodeModeError::CpuBudget(self.limits.cpu_time)),
            STOP_WALL => Err(CodeModeError::Timeout(self.limits.wall_time)),
            STOP_CANCELLED => Err(CodeModeError::Sandbox("the run was cancelled".to_string())),
            _ if self.shared.stop.load(Ordering::Relaxed) => {
                Err(CodeModeError::Sandbox("the run was cancelled".to_string()))
            }
            _ => Ok(()),
        }
    }

    /// Interrupts the script when it is cancelled, used up its CPU time, or ran past its
    /// deadline. QuickJS calls it every few thousand instructions.
    fn interrupt_handler(&self) -> Box<dyn FnMut() -> bool + 'static> {
        let shared = Arc::clone(&self.shared);
        let budget = self.limits.cpu_time;
        let cpu_start = ThreadTime::now();
        Box::new(move || {
            let reason = if shared.stop.load(Ordering::Relaxed) {
                STOP_CANCELLED
            } else if cpu_start.elapsed() > budget {
                STOP_CPU
            } else if shared.past_deadline() {
                STOP_WALL
            } else {
                return false;
            };
            shared.reason.store(reason, Ordering::Relaxed);
            true
        })
    }

    /// Turns an engine error (usually a thrown exception) into the crate's error, with the
    /// script's own line and column.
    fn caught(
        &self,
        ctx: &Ctx<'_>,
        error: rquickjs::Error,
        transpiled: &Transpiled,
    ) -> CodeModeError {
        if let Err(stopped) = self.check_stopped() {
            return stopped;
        }
        let text = match error {
            rquickjs::Error::Exception => describe_exception(ctx.catch()),
            rquickjs::Error::Resolving { name, message, .. } => {
                message.unwrap_or_else(|| format!("cannot import `{name}`"))
            }
            rquickjs::Error::Loading { name, message } => {
                message.unwrap_or_else(|| format!("cannot load `{name}`"))
            }
            other => other.to_string(),
        };
        let text = map_positions(&text, transpiled);
        if text.contains("out of memory") {
            return CodeModeError::OutOfMemory(self.limits.memory_bytes);
        }
        if text.contains("stack overflow") || text.contains("Maximum call stack size exceeded") {
            return CodeModeError::StackOverflow(first_line(&text));
        }
        CodeModeError::Script(text)
    }
}

/// How a thrown `null` is described.
const UNCAUGHT_NULL: &str = "Uncaught null";

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

/// `Name: message` and the stack of a thrown value.
fn describe_exception(value: JsValue<'_>) -> String {
    if let Some(object) = value.as_object() {
        let name: Option<String> = object.get("name").ok();
        let message: Option<String> = object.get("message").ok();
        let stack: Option<String> = object.get("stack").ok();
        if let Some(message) = message {
            let mut text = format!("{}: {message}", name.unwrap_or_else(|| "Error".to_string()));
            if let Some(stack) = stack.filter(|s| !s.trim().is_empty()) {
                text.push('\n');
                text.push_str(stack.trim_end());
            }
            return text;
        }
    }
    if let Some(text) = value.as_string().and_then(|s| s.to_string().ok()) {
        return format!("Uncaught {text:?}");
    }
    let ctx = value.ctx().clone();
    match ctx.json_stringify(value) {
        Ok(Some(text)) => format!(
            "Uncaught {}",
            text.to_string().unwrap_or_else(|_| "a value".to_string())
        ),
        _ => "Uncaught exception".to_string(),
    }
}

/// Rewrites `script.ts:LINE:COL` (JavaScript positions) into the TypeScript script's positions.
fn map_positions(text: &str, transpiled: &Transpiled) -> String {
    let marker = format!("{SCRIPT_NAME}:");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&marker) {
        out.push_str(&rest[..at + marker.len()]);
        rest = &rest[at + marker.len()..];
        let digits = |s: &str| s.chars().take_while(char::is_ascii_digit).count();
        let line_len = digits(rest);
        let line: Option<u32> = rest[..line_len].parse().ok();
        let after_line = &rest[line_len..];
        let (column, consumed) = match after_line.strip_prefix(':') {
            Some(tail) => {
                let n = digits(tail);
                (tail[..n].parse::<u32>().ok(), line_len + 1 + n)
            }
            None => (None, line_len),
        };
        match (line, column) {
            (Some(line), Some(column)) => match transpiled.original_position(line, column) {
                Some((l, c)) => out.push_str(&format!("{l}:{c}")),
                None => out.push_str(&rest[..consumed]),
            },
            _ => out.push_str(&rest[..consumed]),
        }
        rest = &rest[consumed..];
    }
    out.push_str(rest);
    out
}

/// Whether a tool is one of code mode's own, which scripts may not call.
fn is_code_mode_tool(hub: &Hub, name: &str) -> bool {
    hub.catalog()
        .get(name)
        .is_some_and(|entry| entry.descriptor.source == CODEMODE_SOURCE)
}

/// A tool call's result as the script sees it: structured content when there is some, else the
/// text (parsed when it is a JSON object or array), else the content blocks.
fn script_outcome(result: Result<ToolResult, CallError>) -> Result<String, (&'static str, String)> {
    match result {
        Err(e) => Err((e.code(), e.to_string())),
        Ok(result) if result.is_error => Err((
            "tool_error",
            format!("the tool reported an error: {}", result.text_content()),
        )),
        Ok(result) => {
            if let Some(value) = result.structured_content {
                return Ok(value.to_string());
            }
            if result.content.iter().all(|c| c.as_text().is_some()) {
                let text = result.text_content();
                let trimmed = text.trim_start();
                if (trimmed.starts_with('{') || trimmed.starts_with('['))
                    && let Ok(value) = serde_json::from_str::<Value>(&text)
                {
                    return Ok(value.to_string());
                }
                return Ok(Value::String(text).to_string());
            }
            Ok(serde_json::to_string(&result.content).unwrap_or_else(|_| "null".to_string()))
        }
    }
}

/// Resolves `@capabilities/<name>` for the sources that exist, and nothing else.
struct CapabilityResolver(Arc<Capabilities>);

impl Resolver for CapabilityResolver {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        if self.0.by_specifier(name).is_some() {
            return Ok(name.to_string());
        }
        let available: Vec<String> = self.0.modules().map(|m| m.specifier()).collect();
        let available = if available.is_empty() {
            "there are none".to_string()
        } else {
            available.join(", ")
        };
        let why = if name.starts_with(MODULE_PREFIX) {
            format!("cannot import `{name}`: no such source; the modules are: {available}")
        } else {
            format!(
                "cannot import `{name}`: code mode has no files, packages or network; only \
                 `{MODULE_PREFIX}<source>` modules can be imported ({available})"
            )
        };
        Err(rquickjs::Error::new_resolving_message(base, name, why))
    }
}

/// Loads the generated module of a source from memory.
struct CapabilityLoader(Arc<Capabilities>);

impl Loader for CapabilityLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js, rquickjs::module::Declared>> {
        let module = self
            .0
            .by_specifier(name)
            .ok_or_else(|| rquickjs::Error::new_loading(name))?;
        Module::declare(ctx.clone(), name, module.javascript.as_str())
    }
}
