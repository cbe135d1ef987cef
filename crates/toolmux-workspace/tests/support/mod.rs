//! The pack over a test's project directory, with default or given limits, and calling one of
//! its tools as the hub would.

// Every test binary (and the benches) compiles this module and uses part of it.
#![allow(dead_code)]

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::Value;
use toolmux_core::{CallContext, Channel, Source, SourceCall, ToolDescriptor, ToolResult};
use toolmux_testkit::project::write_file;
use toolmux_workspace::{WorkspaceLimits, WorkspacePack};

/// A pack over `root` with default limits.
pub fn pack(root: &Path) -> WorkspacePack {
    pack_with(root, WorkspaceLimits::default())
}

/// A pack over `root` with the given limits.
pub fn pack_with(root: &Path, limits: WorkspaceLimits) -> WorkspacePack {
    WorkspacePack::new(root, limits).expect("pack")
}

/// A pack over `root` with the default limits changed by `change`.
pub fn pack_limited(root: &Path, change: impl FnOnce(&mut WorkspaceLimits)) -> WorkspacePack {
    pack_with(root, limits_with(change))
}

/// The default limits with `change` made.
pub fn limits_with(change: impl FnOnce(&mut WorkspaceLimits)) -> WorkspaceLimits {
    let mut limits = WorkspaceLimits::default();
    change(&mut limits);
    limits
}

/// Calls `tool` of `pack` with `arguments`, as the hub would.
pub async fn call(pack: &WorkspacePack, tool: &str, arguments: Value) -> ToolResult {
    call_in_context(pack, tool, arguments, &CallContext::new(Channel::Cli)).await
}

/// Calls `tool` of `pack` with `arguments` in `context`, as the hub would.
pub async fn call_in_context(
    pack: &WorkspacePack,
    tool: &str,
    arguments: Value,
    context: &CallContext,
) -> ToolResult {
    let descriptor = descriptor(pack, tool);
    pack.call(source_call(&descriptor, arguments, context))
        .await
        .unwrap_or_else(|e| panic!("{tool} failed at the source level: {e}"))
}

/// What `pack` would show a person asked to approve `tool` with `arguments` in `context`.
pub async fn preview_in_context(
    pack: &WorkspacePack,
    tool: &str,
    arguments: Value,
    context: &CallContext,
) -> Option<String> {
    let descriptor = descriptor(pack, tool);
    pack.preview(source_call(&descriptor, arguments, context))
        .await
}

/// A temporary project directory holding `files` (path relative to it, contents).
pub fn project_of(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    for (path, contents) in files {
        write_file(dir.path(), path, contents);
    }
    dir
}

/// The file's bytes, inode and modification time: what "left untouched" means.
pub fn fingerprint(path: &Path) -> (Vec<u8>, u64, i64, i64) {
    let meta = std::fs::metadata(path).expect("stat");
    (
        std::fs::read(path).expect("read"),
        meta.ino(),
        meta.mtime(),
        meta.mtime_nsec(),
    )
}

fn descriptor(pack: &WorkspacePack, tool: &str) -> ToolDescriptor {
    pack.tools()
        .into_iter()
        .find(|t| t.name == tool)
        .unwrap_or_else(|| panic!("no tool {tool}"))
}

fn source_call<'a>(
    tool: &'a ToolDescriptor,
    arguments: Value,
    context: &'a CallContext,
) -> SourceCall<'a> {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    SourceCall {
        tool,
        arguments,
        context,
    }
}
