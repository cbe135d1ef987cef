//! Agent Skills: folders with a `SKILL.md` (YAML frontmatter `name`, `description`, optional
//! `license`, `compatibility`, `metadata`, `allowed-tools`, then instructions) and the scripts
//! and references they bundle — the format Claude Code, Codex and others use. This crate finds
//! them (`discovery`: the configured paths, the project's `.toolmux/skills/` and
//! `.claude/skills/`, the user's `~/.config/toolmux/skills/`), checks them against the format
//! with errors that name file, line and field (`skill`), and offers them with progressive
//! disclosure as the built-in source `skills`: `skill_list` gives names and descriptions only,
//! `skill_load` the instructions and the list of bundled files, which the workspace tools then
//! read, and each skill a model may load is also the MCP prompt `skill__NAME` (`prompts`).
//! Skills are read from disk on every call: a few small files, and an edit is seen at once.

mod discovery;
mod error;
mod prompts;
mod skill;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolmux_core::{
    Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor, ToolResult,
    input_schema, parse_arguments, run_blocking,
};

pub use discovery::{Found, SkillRoot, bundled_files, default_roots, discover};
pub use error::SkillError;
pub use prompts::PROMPT_PREFIX;
pub use skill::{Origin, SKILL_FILE, Skill, parse};

/// Who a tool call answers: what a skill with `disable-model-invocation: true` hides from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audience {
    /// A model (MCP, chat, code mode): only the skills it may load by itself.
    Model,
    /// A person at a trusted channel (the command line, authenticated REST): every skill.
    Person,
}

/// The source's id.
pub const SOURCE_ID: &str = "skills";

/// The `skills` source. Cheap to clone.
#[derive(Clone, Debug)]
pub struct SkillsSource {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Paths under it are shown relative to it, so the workspace tools can read them.
    project: PathBuf,
    roots: Vec<SkillRoot>,
    tools: Vec<ToolDescriptor>,
}

impl SkillsSource {
    /// The skills of `project` found in `roots` (see [`default_roots`]).
    pub fn new(project: &Path, roots: Vec<SkillRoot>) -> Self {
        Self {
            inner: Arc::new(Inner {
                project: project.to_path_buf(),
                roots,
                tools: descriptors(),
            }),
        }
    }

    /// Where skills are looked for, in precedence order.
    pub fn roots(&self) -> &[SkillRoot] {
        &self.inner.roots
    }

    /// Every skill now.
    pub fn discover(&self) -> Result<Found, SkillError> {
        discover(&self.inner.roots)
    }

    /// Runs a tool by name for a model, synchronously (it reads files). `None` for a tool it
    /// does not have.
    pub fn run(&self, tool: &str, arguments: &Map<String, Value>) -> Option<ToolResult> {
        self.run_for(Audience::Model, tool, arguments)
    }

    /// Runs a tool by name for `audience`: a person (a trusted caller: the command line, an
    /// authenticated REST request) also sees the skills only a person starts.
    pub fn run_for(
        &self,
        audience: Audience,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Option<ToolResult> {
        let outcome = match tool {
            "skill_list" => parse_arguments(arguments)
                .map_err(SkillError::Arguments)
                .and_then(|ListArgs {}| self.list(audience)),
            "skill_load" => self.load(audience, arguments),
            _ => return None,
        };
        Some(match outcome {
            Ok((value, text)) => ToolResult::structured_with_text(value, text),
            Err(e) => ToolResult::failure(e.kind(), e.to_string()),
        })
    }

    /// A path as callers see it: relative to the project when inside it.
    fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.inner.project)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    fn list(&self, audience: Audience) -> Result<(Value, String), SkillError> {
        let found = self.discover()?;
        // A model's view leaves out a skill only a person starts.
        let offered: Vec<&Skill> = found
            .skills
            .iter()
            .filter(|s| s.model_invocable || audience == Audience::Person)
            .collect();
        let skills: Vec<Value> = offered
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "description": s.description,
                    "allowedTools": s.allowed_tools,
                    "modelInvocable": s.model_invocable,
                    "origin": s.origin.as_str(),
                    "dir": self.shown(&s.dir),
                })
            })
            .collect();
        let invalid: Vec<Value> = found
            .invalid
            .iter()
            .map(|e| match e {
                SkillError::Invalid {
                    file,
                    line,
                    field,
                    message,
                } => json!({"file": self.shown(file), "line": line, "field": field, "message": message}),
                other => json!({"file": "", "line": 0, "field": null, "message": other.to_string()}),
            })
            .collect();
        let shadowed: Vec<String> = found.shadowed.iter().map(|p| self.shown(p)).collect();
        let mut text: String = offered
            .iter()
            .map(|s| format!("{}: {}\n", s.name, s.description))
            .collect();
        text.push_str(&format!("{} skills", skills.len()));
        for e in &found.invalid {
            text.push_str(&format!("\ninvalid: {e}"));
        }
        let value = json!({
            "count": skills.len(),
            "skills": skills,
            "invalid": invalid,
            "shadowed": shadowed,
        });
        Ok((value, text))
    }

    fn load(
        &self,
        audience: Audience,
        arguments: &Map<String, Value>,
    ) -> Result<(Value, String), SkillError> {
        let LoadArgs { name } = parse_arguments(arguments).map_err(SkillError::Arguments)?;
        let name = name.as_str();
        let found = self.discover()?;
        let Some(skill) = found.skills.iter().find(|s| s.name == name) else {
            // An invalid skill of that name is reported as such, not as missing.
            if let Some(invalid) = found.invalid.into_iter().find(|e| {
                matches!(e, SkillError::Invalid { file, .. }
                    if file.parent().and_then(Path::file_name).is_some_and(|f| f == name))
            }) {
                return Err(invalid);
            }
            return Err(SkillError::NotFound {
                name: name.to_string(),
                known: found.skills.iter().map(|s| s.name.clone()).collect(),
            });
        };
        if !skill.model_invocable && audience == Audience::Model {
            return Err(SkillError::PersonOnly(skill.name.clone()));
        }
        let (files, files_cut) = bundled_files(&skill.dir)?;
        let value = json!({
            "name": skill.name,
            "description": skill.description,
            "license": skill.license,
            "compatibility": skill.compatibility,
            "metadata": skill.metadata,
            "allowedTools": skill.allowed_tools,
            "modelInvocable": skill.model_invocable,
            "origin": skill.origin.as_str(),
            "dir": self.shown(&skill.dir),
            "file": self.shown(&skill.file()),
            "instructions": skill.instructions,
            "files": files,
            "filesCut": files_cut,
        });
        let mut text = format!(
            "# Skill: {} ({})\n\n{}",
            skill.name,
            self.shown(&skill.dir),
            skill.instructions
        );
        if !files.is_empty() {
            text.push_str("\n\nBundled files (relative to the skill's folder):\n");
            for file in &files {
                text.push_str(&format!("- {file}\n"));
            }
        }
        Ok((value, text))
    }
}

/// `skill_list` takes no arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {}

/// `skill_load`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LoadArgs {
    /// The skill's name, from skill_list.
    name: String,
}

fn descriptors() -> Vec<ToolDescriptor> {
    let string = json!({"type": "string"});
    let strings = json!({"type": "array", "items": {"type": "string"}});
    let nullable = json!({"type": ["string", "null"]});
    let mut list = ToolDescriptor::new(
        SOURCE_ID,
        "skill_list",
        "List the Agent Skills installed for this project: each skill's name and description (what it does and when to use it). Load one with skill_load before following it.",
        input_schema::<ListArgs>(),
    );
    list.title = Some("List skills".into());
    list.output_schema = Some(Arc::new(json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "skills": {"type": "array", "items": {"type": "object", "properties": {
                "name": string, "description": string, "allowedTools": strings,
                "modelInvocable": {"type": "boolean"},
                "origin": {"type": "string", "enum": ["configured", "project", "user"]}, "dir": string,
            }, "required": ["name", "description", "allowedTools", "modelInvocable", "origin", "dir"]}},
            "invalid": {"type": "array", "items": {"type": "object", "properties": {
                "file": string, "line": {"type": "integer"}, "field": nullable, "message": string,
            }, "required": ["file", "line", "field", "message"]}},
            "shadowed": strings,
        },
        "required": ["count", "skills", "invalid", "shadowed"],
    })));
    let mut load = ToolDescriptor::new(
        SOURCE_ID,
        "skill_load",
        "Load an Agent Skill by name: its full instructions and the files it bundles (scripts, references), which you can read with the workspace tools under its `dir`.",
        input_schema::<LoadArgs>(),
    );
    load.title = Some("Load a skill".into());
    load.output_schema = Some(Arc::new(json!({
        "type": "object",
        "properties": {
            "name": string, "description": string, "license": nullable, "compatibility": nullable,
            "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
            "allowedTools": strings, "modelInvocable": {"type": "boolean"}, "origin": string,
            "dir": string, "file": string, "instructions": string, "files": strings,
            "filesCut": {"type": "boolean"},
        },
        "required": ["name", "description", "license", "compatibility", "metadata", "allowedTools",
                     "modelInvocable", "origin", "dir", "file", "instructions", "files", "filesCut"],
    })));
    for d in [&mut list, &mut load] {
        d.annotations = ToolAnnotations::read_only();
    }
    vec![list, load]
}

#[async_trait]
impl Source for SkillsSource {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some("Loads the instructions of an installed skill for a particular task.".to_string())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.inner.tools.clone()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let tool = call.tool.original_name.clone();
        let (this, name, arguments) = (self.clone(), tool.clone(), call.arguments);
        let audience = if call.context.trusted {
            Audience::Person
        } else {
            Audience::Model
        };
        run_blocking(SOURCE_ID, &tool, move || {
            this.run_for(audience, &name, &arguments)
        })
        .await
    }
}
