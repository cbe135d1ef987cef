//! `code_execution`: a snippet of Python or bash written to the call's temp dir and run in the
//! `shell` sandbox (in the project root, with `$OUTPUT_DIR` for the files it makes, listed and
//! — small text ones — inlined in the result), or of TypeScript, run by code mode's `run_code`
//! through the hub.

use std::path::Path;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolmux_core::{CallContext, ToolDescriptor, ToolResult};

use crate::{
    CODE_EXECUTION, CommandSpec, ExecPack, ExecSettings, FINISHED_REQUIRED, SOURCE_ID, acting,
    common_env, finished_json, finished_properties, pipeline_limit, render, run,
    timed_input_schema,
};

/// Code mode's tool that runs TypeScript.
const RUN_CODE: &str = "run_code";
/// The most files listed from the output dir.
const MAX_FILES: usize = 100;
/// The largest file whose text is inlined.
const MAX_INLINE_FILE: u64 = 16 * 1024;
/// The most bytes inlined over all files.
const MAX_INLINE_TOTAL: u64 = 64 * 1024;
/// How deep the output dir is walked.
const MAX_DEPTH: usize = 16;
/// The most directory entries looked at: a command that made a million folders does not keep
/// the listing (and a blocking thread) busy after its time limit.
const MAX_ENTRIES: usize = 20_000;

/// `code_execution`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CodeArgs {
    /// The language the code is written in.
    pub(crate) language: Language,
    /// The program.
    #[schemars(length(min = 1))]
    pub(crate) code: String,
    /// Time limit in milliseconds.
    #[schemars(range(min = 1))]
    timeout_ms: Option<u64>,
}

/// What `code_execution` runs.
#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Language {
    Python,
    Bash,
    Typescript,
}

impl Language {
    /// The name a caller gives.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Bash => "bash",
            Language::Typescript => "typescript",
        }
    }
}

/// A file the code wrote under `$OUTPUT_DIR`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OutputFile {
    /// Its path relative to the output dir, with `/`.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its text, when it is small UTF-8 and the inline budget allows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

pub(crate) fn descriptor(settings: &ExecSettings) -> ToolDescriptor {
    let mut tool = ToolDescriptor::new(
        SOURCE_ID,
        CODE_EXECUTION,
        "Run a snippet of code and get its output. `python` (python3) and `bash` run in the \
         project root in the same sandbox as `shell` (writes only inside the project and \
         $TMPDIR, no network unless configured); files written under $OUTPUT_DIR are returned \
         (listed with sizes, small text files inlined). `typescript` runs in code mode's QuickJS \
         sandbox (no file or network access except through tools; `console` output is \
         returned, and the script's `return` value as `result`).",
        timed_input_schema::<CodeArgs>(settings),
    );
    tool.title = Some("Run Python, bash or TypeScript code".to_string());
    let mut properties = finished_properties();
    properties.insert("language".into(), json!({"type": "string"}));
    properties.insert(
        "files".into(),
        json!({
            "type": "array",
            "description": "Files the code wrote under $OUTPUT_DIR.",
            "items": {"type": "object", "properties": {
                "path": {"type": "string"}, "size": {"type": "integer"}, "text": {"type": "string"}
            }, "required": ["path", "size"]}
        }),
    );
    properties.insert(
        "filesTruncated".into(),
        json!({"type": "boolean", "description": "More files were written than are listed."}),
    );
    properties.insert(
        "result".into(),
        json!({"description": "TypeScript: what the script returned."}),
    );
    let mut required: Vec<&str> = FINISHED_REQUIRED.to_vec();
    required.extend(["language", "files"]);
    tool.output_schema = Some(Arc::new(json!({
        "type": "object",
        "properties": properties,
        "required": required
    })));
    tool.annotations = acting();
    tool.timeout = Some(pipeline_limit(settings));
    tool
}

impl ExecPack {
    pub(crate) async fn code_execution(
        &self,
        arguments: CodeArgs,
        context: &CallContext,
    ) -> ToolResult {
        let CodeArgs {
            language,
            code,
            timeout_ms,
        } = arguments;
        let (file, program) = match language {
            Language::Python => ("main.py", "python3"),
            Language::Bash => ("main.sh", "bash"),
            Language::Typescript => return self.typescript(&code, timeout_ms, context).await,
        };
        let temp = match Self::temp_dir("toolmux-code-") {
            Ok(temp) => temp,
            Err(refused) => return refused,
        };
        let script = temp.path().join(file);
        let output_dir = temp.path().join("output");
        if let Err(e) = tokio::fs::write(&script, code).await {
            return ToolResult::error(format!("cannot write the code to the temp dir: {e}"));
        }
        if let Err(e) = tokio::fs::create_dir(&output_dir).await {
            return ToolResult::error(format!("cannot make the output dir: {e}"));
        }
        let network = self.inner.settings.network;
        let mut env = common_env(temp.path());
        env.push(("OUTPUT_DIR".into(), output_dir.as_os_str().to_owned()));
        let spec = CommandSpec {
            program: program.into(),
            args: vec![script.to_string_lossy().into_owned()],
            cwd: self.inner.root.path().to_path_buf(),
            env,
            pass_env: self.inner.settings.env.clone(),
            timeout: self.timeout(timeout_ms),
            max_output: self.inner.settings.max_output_bytes,
            sandbox: self.policy(network, temp.path()),
            require_sandbox: self.inner.settings.require_sandbox,
        };
        let limit = spec.timeout;
        let finished = match run(spec).await {
            Ok(finished) => finished,
            Err(e) => return ToolResult::error(e.to_string()),
        };
        let listing = output_dir.clone();
        let (files, truncated) =
            match tokio::task::spawn_blocking(move || list_files(&listing)).await {
                Ok(listed) => listed,
                Err(e) => {
                    // The command's own result still stands; the files it wrote are said missing.
                    tracing::warn!(error = %e, "listing code_execution's output files failed");
                    Default::default()
                }
            };
        let mut text = render(&finished, limit);
        for file in &files {
            text.push_str(&format!("file {} ({} bytes)\n", file.path, file.size));
            if let Some(body) = &file.text {
                text.push_str(body);
                if !body.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
        let mut value = finished_json(&finished);
        if let Value::Object(map) = &mut value {
            map.insert("language".into(), json!(language.name()));
            map.insert("files".into(), json!(files));
            if truncated {
                map.insert("filesTruncated".into(), json!(true));
            }
        }
        failed_unless_zero(
            ToolResult::structured_with_text(value, text),
            finished.exit_code,
        )
    }

    /// TypeScript through code mode's `run_code`, with the caller's context (its scope, its
    /// approver), under the call's time limit.
    async fn typescript(
        &self,
        code: &str,
        timeout_ms: Option<u64>,
        context: &CallContext,
    ) -> ToolResult {
        let Some(hub) = self.inner.hub.as_ref().and_then(|h| h.upgrade()) else {
            return ToolResult::error("TypeScript runs in code mode, which is not available here");
        };
        let limit = self.timeout(timeout_ms);
        let call = hub.call(RUN_CODE, json!({"code": code}), context);
        let (exit_code, stdout, stderr, result, timed_out) =
            match tokio::time::timeout(limit, call).await {
                Err(_) => (
                    None,
                    String::new(),
                    format!("timed out after {}s", limit.as_secs_f64()),
                    Value::Null,
                    true,
                ),
                Ok(Err(e)) => (Some(1), String::new(), e.to_string(), Value::Null, false),
                Ok(Ok(done)) if done.is_error => (
                    Some(1),
                    String::new(),
                    done.text_content(),
                    Value::Null,
                    false,
                ),
                Ok(Ok(done)) => {
                    let structured = done.structured_content.unwrap_or(Value::Null);
                    let (stdout, stderr) = split_logs(&structured["logs"]);
                    (Some(0), stdout, stderr, structured["result"].clone(), false)
                }
            };
        let mut text = match (timed_out, exit_code) {
            (true, _) => "timed out\n".to_string(),
            (false, Some(code)) => format!("exit code {code}\n"),
            (false, None) => String::new(),
        };
        for (name, stream) in [("stdout", &stdout), ("stderr", &stderr)] {
            if !stream.is_empty() {
                text.push_str(&format!("--- {name} ---\n{stream}\n"));
            }
        }
        if !result.is_null() {
            text.push_str(&format!("--- result ---\n{result}\n"));
        }
        let value = json!({
            "language": "typescript",
            "exitCode": exit_code,
            "signal": null,
            "timedOut": timed_out,
            "stdoutBytes": stdout.len(),
            "stderrBytes": stderr.len(),
            "stdoutDroppedBytes": 0,
            "stderrDroppedBytes": 0,
            "stdout": stdout,
            "stderr": stderr,
            "result": result,
            "files": [],
            "notes": ["TypeScript runs in code mode's QuickJS sandbox: no files, process or network except through tools"],
        });
        failed_unless_zero(ToolResult::structured_with_text(value, text), exit_code)
    }
}

/// `result` flagged as a tool error unless the code exited with 0 (a timeout or a signal
/// leaves no exit code): a model or client reading only `isError` must see that the code
/// failed, not just one reading `exitCode`. The result keeps everything it reports.
fn failed_unless_zero(mut result: ToolResult, exit_code: Option<i32>) -> ToolResult {
    result.is_error = exit_code != Some(0);
    result
}

/// Code mode's console lines as stdout (`log`, `info`, `debug`) and stderr (`warn`, `error`).
fn split_logs(logs: &Value) -> (String, String) {
    let mut stdout = String::new();
    let mut stderr = String::new();
    for line in logs.as_array().into_iter().flatten() {
        let message = line["message"].as_str().unwrap_or_default();
        let out = match line["level"].as_str() {
            Some("warn" | "error") => &mut stderr,
            _ => &mut stdout,
        };
        out.push_str(message);
        out.push('\n');
    }
    (stdout, stderr)
}

/// The files under `dir` (links listed, never followed; at most [`MAX_FILES`]), small text
/// ones with their text; and whether more were there.
///
/// A process the command left running can swap a listed file for a link to anything (a
/// 200 MB file, `/etc/shadow`) between any two steps of the listing, so no step trusts a
/// path: every directory and file is opened beneath its parent's descriptor with
/// `O_NOFOLLOW` (a link in its place fails the open), a file is read only through a
/// descriptor `fstat` says is a regular file (`O_NONBLOCK`: a FIFO swapped in cannot hold the
/// open), and never more than the inline budget has left, whatever it grew to.
#[cfg(unix)]
fn list_files(dir: &Path) -> (Vec<OutputFile>, bool) {
    use std::ffi::CString;
    use std::io::Read;
    use std::os::fd::OwnedFd;
    use std::rc::Rc;

    use nix::dir::Dir;
    use nix::fcntl::{AtFlags, OFlag};
    use nix::sys::stat::{Mode, SFlag, fstat, fstatat};

    let directory = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let file = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let is = |mode: nix::libc::mode_t, kind: SFlag| {
        SFlag::from_bits_truncate(mode) & SFlag::S_IFMT == kind
    };
    let mut files: Vec<(OutputFile, Option<OwnedFd>)> = Vec::new();
    let mut truncated = false;
    let Ok(top) = nix::fcntl::open(dir, directory, Mode::empty()) else {
        return (Vec::new(), false);
    };
    /// A folder waiting to be walked: its parent's descriptor and its name (none: the output
    /// dir itself), opened only when its turn comes, so that thousands of folders hold no
    /// thousands of descriptors; its path relative to the output dir; its depth.
    struct Pending {
        at: Option<(Rc<OwnedFd>, CString)>,
        prefix: String,
        depth: usize,
    }
    let mut pending = vec![Pending {
        at: None,
        prefix: String::new(),
        depth: 0,
    }];
    let top = Rc::new(top);
    let mut seen = 0usize;
    while let Some(Pending { at, prefix, depth }) = pending.pop() {
        let opened = match &at {
            None => top.try_clone(),
            Some((parent, name)) => {
                nix::fcntl::openat(&**parent, name.as_c_str(), directory, Mode::empty())
                    .map_err(std::io::Error::from)
            }
        };
        let Ok(fd) = opened else { continue };
        let Ok(parent) = fd.try_clone().map(Rc::new) else {
            continue;
        };
        let Ok(mut entries) = Dir::from_fd(fd) else {
            continue;
        };
        for entry in entries.iter().filter_map(Result::ok) {
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            seen += 1;
            if seen > MAX_ENTRIES {
                truncated = true;
                break;
            }
            let Ok(stat) = fstatat(&*parent, name, AtFlags::AT_SYMLINK_NOFOLLOW) else {
                continue;
            };
            let relative = format!("{prefix}{}", name.to_string_lossy());
            if is(stat.st_mode, SFlag::S_IFDIR) {
                if depth < MAX_DEPTH {
                    pending.push(Pending {
                        at: Some((Rc::clone(&parent), name.to_owned())),
                        prefix: format!("{relative}/"),
                        depth: depth + 1,
                    });
                }
                continue;
            }
            if files.len() == MAX_FILES {
                truncated = true;
                continue;
            }
            let size = u64::try_from(stat.st_size).unwrap_or(0);
            // Only what was a regular file a moment ago is opened (opening a device or a FIFO
            // has effects of its own); the descriptor is checked again below.
            let opened = is(stat.st_mode, SFlag::S_IFREG)
                .then(|| nix::fcntl::openat(&*parent, name, file, Mode::empty()).ok())
                .flatten();
            files.push((
                OutputFile {
                    path: relative,
                    size,
                    text: None,
                },
                opened,
            ));
        }
    }
    files.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    let mut budget = MAX_INLINE_TOTAL;
    let files = files
        .into_iter()
        .map(|(mut listed, opened)| {
            let Some(fd) = opened else { return listed };
            let Ok(stat) = fstat(&fd) else { return listed };
            let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
            listed.size = size;
            let allowed = MAX_INLINE_FILE.min(budget);
            if !is(stat.st_mode, SFlag::S_IFREG) || size > allowed {
                return listed;
            }
            // One byte more than allowed tells a file that grew after `fstat` from one that
            // did not; it is listed, not inlined.
            let mut bytes = Vec::new();
            let read = std::fs::File::from(fd)
                .take(allowed + 1)
                .read_to_end(&mut bytes);
            let read = read.ok().and_then(|n| u64::try_from(n).ok());
            if let Some(n) = read
                && n <= allowed
                && let Ok(text) = String::from_utf8(bytes)
            {
                budget -= n;
                listed.text = Some(text);
            }
            listed
        })
        .collect();
    (files, truncated)
}

/// The files under `dir` without their text: where there is no `O_NOFOLLOW` open beneath a
/// directory's descriptor, a path cannot be read without trusting it.
#[cfg(not(unix))]
fn list_files(dir: &Path) -> (Vec<OutputFile>, bool) {
    let mut files = Vec::new();
    let mut truncated = false;
    let mut pending = vec![(dir.to_path_buf(), 0usize)];
    while let Some((current, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                if depth < MAX_DEPTH {
                    pending.push((path, depth + 1));
                }
                continue;
            }
            if files.len() == MAX_FILES {
                truncated = true;
                continue;
            }
            let relative = path
                .strip_prefix(dir)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            files.push(OutputFile {
                path: relative,
                size: meta.len(),
                text: None,
            });
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    (files, truncated)
}
