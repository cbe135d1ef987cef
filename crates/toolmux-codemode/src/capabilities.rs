//! The capability compiler: the catalog's tools, grouped by source, as ES modules with TypeScript
//! declarations. `@capabilities/<source>` exports one object named after the source whose methods
//! are the source's tools.
//!
//! Naming, chosen once and kept:
//! - the module specifier is `@capabilities/<source id>` (characters outside `[A-Za-z0-9_.-]`
//!   become `_`), and so is the folder `capabilities build` writes;
//! - the exported object is the source id in camelCase (`workspace`, `github`, `myServer`);
//! - each method is the tool's *original* name in camelCase (`create_issue` → `createIssue`),
//!   because scripts read better in the language's own convention; two tools that give the same
//!   name are numbered in catalog order (`getItem`, `getItem2`);
//! - types are the method name in PascalCase plus `Input` / `Output`, nested objects add their
//!   property name (`GetIssueInputLabels`), array items add `Item`, union members `Variant<n>`,
//!   `allOf` members `Part<n>`, and `$defs` entries the definition's name (`GetIssueLabel`).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolmux_core::{Catalog, ToolDescriptor};

use crate::error::CodeModeError;
use crate::ident::{NameSet, camel_case, json_string, type_fragment, value_ident};
use crate::stdlib::GLOBALS_DTS;
use crate::typescript::{Declarations, doc_lines, write_doc};

/// The source id of code mode's own tools, which are never offered to scripts (a script that
/// runs scripts would only nest sandboxes).
pub const CODEMODE_SOURCE: &str = "codemode";

/// The prefix of every module a script may import.
pub const MODULE_PREFIX: &str = "@capabilities/";

/// The name of the host function the generated modules call; the sandbox provides it.
pub const HOST_CALL: &str = "__toolmux_call";

/// One tool as a function of its source's module.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FunctionInfo {
    /// The tool's registry name, which the stub calls.
    pub tool: String,
    /// The method name in the module's namespace object.
    pub function: String,
    /// The tool's description.
    pub description: String,
    /// The declarations of this function alone: the types it uses and its signature, as
    /// `search_tools` returns them.
    pub declaration: String,
    /// The names of its input's top-level properties, which `search_tools` searches.
    pub parameters: Vec<String>,
}

/// The generated module of one source.
#[derive(Clone, Debug)]
pub struct CapabilityModule {
    /// The source id.
    pub source: String,
    /// The folder name and the part after `@capabilities/`.
    pub name: String,
    /// The exported namespace object.
    pub namespace: String,
    /// One entry per tool, in catalog order.
    pub functions: Vec<FunctionInfo>,
    /// `index.d.ts`.
    pub declarations: String,
    /// `index.js`.
    pub javascript: String,
    /// `schema.json`.
    pub schema: Value,
    /// What the source says about itself (an upstream server's instructions), which
    /// `search_tools` searches; set by [`Capabilities::from_catalog`].
    pub about: Option<String>,
}

impl CapabilityModule {
    /// The specifier a script imports: `@capabilities/<name>`.
    pub fn specifier(&self) -> String {
        format!("{MODULE_PREFIX}{}", self.name)
    }
}

/// Every source's module, compiled from one catalog snapshot.
#[derive(Clone, Debug, Default)]
pub struct Capabilities {
    modules: BTreeMap<String, CapabilityModule>,
}

impl Capabilities {
    /// Compiles the tools a model may see (internal and denied tools, and code mode's own
    /// tools, are left out). Reads only the catalog: no source is started.
    pub fn from_catalog(catalog: &Catalog) -> Self {
        Self::from_tools(catalog.offered().map(|entry| &entry.descriptor)).described_by(catalog)
    }

    /// The modules with what their sources say about themselves, from `catalog`, for
    /// `search_tools` to search.
    pub fn described_by(mut self, catalog: &Catalog) -> Self {
        for source in catalog.sources() {
            if let Some(module) = self.modules.get_mut(&source.id) {
                module.about = source.description.clone();
            }
        }
        self
    }

    /// Compiles the given tools, grouped by their source, in the order given.
    pub fn from_tools<'a>(tools: impl IntoIterator<Item = &'a ToolDescriptor>) -> Self {
        let mut by_source: BTreeMap<&str, Vec<&ToolDescriptor>> = BTreeMap::new();
        for tool in tools {
            if tool.internal || tool.source == CODEMODE_SOURCE {
                continue;
            }
            by_source
                .entry(tool.source.as_str())
                .or_default()
                .push(tool);
        }
        let mut folder_names = NameSet::default();
        let modules = by_source
            .into_iter()
            .map(|(source, tools)| {
                let name = folder_names.claim(&folder_name(source));
                (source.to_string(), compile_module(source, name, &tools))
            })
            .collect();
        Self { modules }
    }

    /// The module of a source, by source id.
    pub fn module(&self, source: &str) -> Option<&CapabilityModule> {
        self.modules.get(source)
    }

    /// The module a specifier (`@capabilities/<name>`) names.
    pub fn by_specifier(&self, specifier: &str) -> Option<&CapabilityModule> {
        let name = specifier.strip_prefix(MODULE_PREFIX)?;
        self.modules.values().find(|m| m.name == name)
    }

    /// All modules, by source id.
    pub fn modules(&self) -> impl Iterator<Item = &CapabilityModule> {
        self.modules.values()
    }

    /// The number of functions over all modules.
    pub fn function_count(&self) -> usize {
        self.modules.values().map(|m| m.functions.len()).sum()
    }
}

/// What `build_capabilities` wrote.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildReport {
    /// The folder written to.
    pub out_dir: PathBuf,
    /// One entry per source.
    pub sources: Vec<BuiltSource>,
}

/// One source's written module.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuiltSource {
    /// The source id.
    pub source: String,
    /// The module specifier.
    pub module: String,
    /// The exported namespace object.
    pub namespace: String,
    /// The folder under `out_dir`.
    pub folder: String,
    /// How many tools it has.
    pub tools: usize,
}

impl BuildReport {
    /// Tools over all sources.
    pub fn tool_count(&self) -> usize {
        self.sources.iter().map(|s| s.tools).sum()
    }
}

/// The manifest `build_capabilities` keeps in `out_dir`, so a rebuild can remove the folders of
/// sources that are gone.
const MANIFEST: &str = "capabilities.json";
/// The declarations of the sandbox's globals (console, the standard library, `ToolError`).
const GLOBALS_FILE: &str = "globals.d.ts";
const MODULE_FILES: [&str; 3] = ["index.d.ts", "index.js", "schema.json"];

/// Writes `<out_dir>/<source>/index.d.ts`, `index.js` and `schema.json` for every source of the
/// catalog, plus `globals.d.ts` and a manifest. Every file is written atomically (a temporary
/// file, then a rename); folders of sources no longer in the catalog are removed.
pub fn build_capabilities(catalog: &Catalog, out_dir: &Path) -> Result<BuildReport, CodeModeError> {
    write_capabilities(&Capabilities::from_catalog(catalog), out_dir)
}

/// Writes already compiled capabilities; see [`build_capabilities`].
pub fn write_capabilities(
    capabilities: &Capabilities,
    out_dir: &Path,
) -> Result<BuildReport, CodeModeError> {
    create_dir(out_dir)?;
    let previous = read_manifest(out_dir);
    let mut sources = Vec::new();
    for module in capabilities.modules() {
        let dir = out_dir.join(&module.name);
        create_dir(&dir)?;
        write_atomic(&dir.join("index.d.ts"), module.declarations.as_bytes())?;
        write_atomic(&dir.join("index.js"), module.javascript.as_bytes())?;
        let schema = serde_json::to_string_pretty(&module.schema).unwrap_or_default();
        write_atomic(&dir.join("schema.json"), schema.as_bytes())?;
        sources.push(BuiltSource {
            source: module.source.clone(),
            module: module.specifier(),
            namespace: module.namespace.clone(),
            folder: module.name.clone(),
            tools: module.functions.len(),
        });
    }
    write_atomic(&out_dir.join(GLOBALS_FILE), GLOBALS_DTS.as_bytes())?;

    let current: HashSet<&str> = sources.iter().map(|s| s.folder.as_str()).collect();
    for gone in previous
        .iter()
        .filter(|s| !current.contains(s.folder.as_str()))
    {
        remove_module_dir(&out_dir.join(&gone.folder))?;
    }

    let report = BuildReport {
        out_dir: out_dir.to_path_buf(),
        sources,
    };
    let manifest = serde_json::to_string_pretty(&report.sources).unwrap_or_default();
    write_atomic(&out_dir.join(MANIFEST), manifest.as_bytes())?;
    Ok(report)
}

fn read_manifest(out_dir: &Path) -> Vec<BuiltSource> {
    std::fs::read(out_dir.join(MANIFEST))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Removes the files this module wrote in a folder, and the folder when nothing else is in it.
/// A folder name from the manifest is only trusted when it is a plain name.
fn remove_module_dir(dir: &Path) -> Result<(), CodeModeError> {
    let plain = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == folder_name(n) && n != "." && n != "..");
    if !plain || !dir.is_dir() {
        return Ok(());
    }
    for file in MODULE_FILES {
        let path = dir.join(file);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(CodeModeError::Write { path, source }),
        }
    }
    // Left in place when the user put something else there.
    let _ = std::fs::remove_dir(dir);
    Ok(())
}

fn create_dir(dir: &Path) -> Result<(), CodeModeError> {
    std::fs::create_dir_all(dir).map_err(|source| CodeModeError::Write {
        path: dir.to_path_buf(),
        source,
    })
}

/// Writes one capability file through toolmux's one atomic writer (temp file, fsync, rename),
/// so a reader sees the old file or the new one, never half of one.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CodeModeError> {
    toolmux_files::write_atomic(path, bytes).map_err(|source| CodeModeError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// A source id as a folder name and module specifier part.
fn folder_name(source: &str) -> String {
    let name: String = source
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.chars().all(|c| c == '.') {
        return format!("_{}", name.len());
    }
    name
}

fn compile_module(source: &str, name: String, tools: &[&ToolDescriptor]) -> CapabilityModule {
    let namespace = value_ident(source, "tools");
    let specifier = format!("{MODULE_PREFIX}{name}");
    let mut declarations = Declarations::default();
    let mut function_names = NameSet::default();
    let mut methods = String::new();
    let mut functions = Vec::with_capacity(tools.len());
    let mut stubs = String::new();
    let mut schema_tools = Vec::with_capacity(tools.len());

    for tool in tools {
        let mut function = camel_case(tool.local_name());
        if function.is_empty() {
            function = camel_case(&tool.name);
        }
        if function.is_empty() || function.starts_with(|c: char| c.is_ascii_digit()) {
            function.insert(0, '_');
        }
        let function = function_names.claim(&function);
        let base = type_fragment(&function);

        let first = declarations.len();
        let input = declarations.declare_root(&tool.input_schema, &base, &format!("{base}Input"));
        let output = match &tool.output_schema {
            Some(schema) => declarations.declare_root(schema, &base, &format!("{base}Output")),
            None => "unknown".to_string(),
        };
        let optional = if Declarations::accepts_empty_object(&tool.input_schema) {
            "?"
        } else {
            ""
        };
        let signature = format!("{function}(input{optional}: {input}): Promise<{output}>;");
        let docs = function_doc(tool);

        let method = |indent: &str| {
            let mut text = String::new();
            write_doc(&mut text, indent, &docs);
            let _ = writeln!(text, "{indent}{signature}");
            text
        };
        methods.push_str(&method("    "));

        let mut declaration = String::new();
        let _ = writeln!(
            declaration,
            "// import {{ {namespace} }} from {};",
            json_string(&specifier)
        );
        declarations.render_range(&mut declaration, first..declarations.len(), "", false);
        let _ = writeln!(declaration, "declare const {namespace}: {{");
        declaration.push_str(&method("  "));
        declaration.push_str("};\n");

        let _ = writeln!(
            stubs,
            "  {}: (input) => call({}, input === undefined ? {{}} : input),",
            json_string(&function),
            json_string(&tool.name)
        );
        schema_tools.push(json!({
            "name": tool.name,
            "function": function,
            "description": tool.description,
            "inputSchema": tool.input_schema,
            "outputSchema": tool.output_schema,
        }));
        functions.push(FunctionInfo {
            tool: tool.name.clone(),
            function,
            description: tool.description.clone(),
            declaration,
            parameters: tool
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|properties| properties.keys().cloned().collect())
                .unwrap_or_default(),
        });
    }

    let mut dts = String::new();
    let _ = writeln!(
        dts,
        "// Generated by `toolmux capabilities build` from the tool catalog; do not edit."
    );
    let _ = writeln!(dts, "declare module {} {{", json_string(&specifier));
    declarations.render(&mut dts, "  ", true);
    write_doc(
        &mut dts,
        "  ",
        &[format!("The tools of the `{source}` source.")],
    );
    let _ = writeln!(dts, "  export const {namespace}: {{");
    dts.push_str(&methods);
    let _ = writeln!(dts, "  }};");
    let _ = writeln!(dts, "}}");

    let mut js = String::new();
    let _ = writeln!(
        js,
        "// Generated by `toolmux capabilities build` from the tool catalog; do not edit."
    );
    let _ = writeln!(js, "const call = globalThis.{HOST_CALL};");
    let _ = writeln!(js, "export const {namespace} = Object.freeze({{");
    js.push_str(&stubs);
    let _ = writeln!(js, "}});");

    let schema = json!({
        "source": source,
        "module": specifier,
        "namespace": namespace,
        "tools": schema_tools,
    });

    CapabilityModule {
        source: source.to_string(),
        about: None,
        name,
        namespace,
        functions,
        declarations: dts,
        javascript: js,
        schema,
    }
}

/// A function's doc comment: the tool's description (or title), then the tool it calls.
fn function_doc(tool: &ToolDescriptor) -> Vec<String> {
    let mut lines = doc_lines(&json!({ "description": tool.description }));
    if lines.is_empty()
        && let Some(title) = &tool.title
    {
        lines.push(title.clone());
    }
    if !lines.is_empty() {
        lines.push(String::new());
    }
    lines.push(format!("Calls the tool `{}`.", tool.name));
    lines
}
