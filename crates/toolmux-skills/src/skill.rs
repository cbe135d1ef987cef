//! One skill: a folder whose `SKILL.md` starts with YAML frontmatter (the Agent Skills format,
//! agentskills.io) — `name` and `description` required; `license`, `compatibility`,
//! `metadata` and `allowed-tools` optional — followed by the instructions in Markdown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_yaml_ng::Value as Yaml;
use toolmux_core::{MAX_YAML_BYTES, check_yaml_bounds, human_bytes};

use crate::error::SkillError;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

const NAME_MAX: usize = 64;
const DESCRIPTION_MAX: usize = 1024;
const COMPATIBILITY_MAX: usize = 500;

/// Where a skill was found, in precedence order: a name found in an earlier place hides the
/// same name in a later one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// A path listed in the configuration (`skills.paths`).
    Configured,
    /// The project's `.toolmux/skills/` or `.claude/skills/`.
    Project,
    /// The user's `~/.config/toolmux/skills/`.
    User,
}

impl Origin {
    /// The name shown to callers.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Configured => "configured",
            Self::Project => "project",
            Self::User => "user",
        }
    }
}

/// A valid skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// Its name (equal to its folder's name).
    pub name: String,
    /// What it does and when to use it: all a model sees until it loads the skill.
    pub description: String,
    /// A licence name or the bundled licence file.
    pub license: Option<String>,
    /// What the skill needs from its environment.
    pub compatibility: Option<String>,
    /// Free key-value pairs.
    pub metadata: BTreeMap<String, String>,
    /// The tools the skill says it uses (experimental in the format): while the skill is active
    /// the chat may call only these.
    pub allowed_tools: Vec<String>,
    /// Whether a model may find and load it by itself; `false` when its frontmatter sets
    /// `disable-model-invocation: true` (Claude Code's field): a skill a person starts, never
    /// offered to a model.
    pub model_invocable: bool,
    /// The skill's folder.
    pub dir: PathBuf,
    /// Where it was found.
    pub origin: Origin,
    /// The instructions: `SKILL.md` after its frontmatter.
    pub instructions: String,
    /// The 1-based line of `SKILL.md` the instructions start on.
    pub instructions_line: usize,
}

impl Skill {
    /// Its `SKILL.md`.
    pub fn file(&self) -> PathBuf {
        self.dir.join(SKILL_FILE)
    }
}

/// Reads the text of `dir/SKILL.md` as a skill. `dir`'s name must be the skill's name.
pub fn parse(dir: &Path, origin: Origin, text: &str) -> Result<Skill, SkillError> {
    let file = dir.join(SKILL_FILE);
    let fail = |line: usize, field: Option<&str>, message: String| SkillError::Invalid {
        file: file.clone(),
        line,
        field: field.map(str::to_string),
        message,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or_default();
    if first.trim_end() != "---" {
        return Err(fail(
            1,
            None,
            "no frontmatter: SKILL.md must start with a `---` line".into(),
        ));
    }
    // The frontmatter runs to the next line that is exactly `---`.
    let mut yaml = String::new();
    let mut closed_at = None;
    let mut offset = first.len();
    for (i, line) in lines.enumerate() {
        offset += line.len();
        if line.trim_end() == "---" {
            closed_at = Some(i + 2);
            break;
        }
        yaml.push_str(line);
        if yaml.len() > MAX_YAML_BYTES {
            // Refused without reading further: a frontmatter has a bounded size.
            return Err(fail(
                1,
                None,
                format!(
                    "frontmatter is not accepted: it is longer than {}",
                    human_bytes(MAX_YAML_BYTES as u64)
                ),
            ));
        }
    }
    let Some(close_line) = closed_at else {
        return Err(fail(
            1,
            None,
            "unclosed frontmatter: no closing `---` line".into(),
        ));
    };
    // Depth first, in one linear pass: the parser takes quadratic time on deep nesting before
    // it refuses it. The same check as a spec's frontmatter.
    check_yaml_bounds(&yaml).map_err(|e| {
        fail(
            e.line() + 1,
            None,
            format!("frontmatter is not accepted: {e}"),
        )
    })?;
    let fields: Yaml = serde_yaml_ng::from_str(&yaml).map_err(|e| {
        // The YAML starts on line 2 of the file.
        let line = e.location().map_or(2, |l| l.line() + 1);
        fail(line, None, format!("frontmatter is not valid YAML: {e}"))
    })?;
    let Yaml::Mapping(fields) = fields else {
        return Err(fail(
            2,
            None,
            "frontmatter must be a mapping of fields".into(),
        ));
    };
    // A field's line, for errors about its value.
    let line_of = |field: &str| {
        yaml.lines()
            .position(|l| l.starts_with(field) && l[field.len()..].trim_start().starts_with(':'))
            .map_or(2, |i| i + 2)
    };
    let string = |field: &str, required: bool| -> Result<Option<String>, SkillError> {
        match fields.get(field) {
            None | Some(Yaml::Null) if required => {
                Err(fail(2, Some(field), format!("`{field}` is required")))
            }
            None | Some(Yaml::Null) => Ok(None),
            Some(Yaml::String(s)) => Ok(Some(s.trim().to_string())),
            Some(_) => Err(fail(
                line_of(field),
                Some(field),
                format!("`{field}` must be a string"),
            )),
        }
    };

    let name = string("name", true)?.unwrap_or_default();
    let name_problem = if name.is_empty() || name.len() > NAME_MAX {
        Some(format!("must be 1 to {NAME_MAX} characters"))
    } else if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        Some("may hold only lowercase letters, digits and `-`".into())
    } else if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        Some("must not start or end with `-` or hold `--`".into())
    } else {
        None
    };
    if let Some(problem) = name_problem {
        return Err(fail(
            line_of("name"),
            Some("name"),
            format!("`name` `{name}` {problem}"),
        ));
    }
    let folder = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if folder != name {
        return Err(fail(
            line_of("name"),
            Some("name"),
            format!("`name` `{name}` must be the folder's name, `{folder}`"),
        ));
    }

    let description = string("description", true)?.unwrap_or_default();
    if description.is_empty() || description.chars().count() > DESCRIPTION_MAX {
        return Err(fail(
            line_of("description"),
            Some("description"),
            format!("`description` must be 1 to {DESCRIPTION_MAX} characters"),
        ));
    }
    let license = string("license", false)?;
    let compatibility = string("compatibility", false)?;
    if compatibility
        .as_ref()
        .is_some_and(|c| c.chars().count() > COMPATIBILITY_MAX)
    {
        return Err(fail(
            line_of("compatibility"),
            Some("compatibility"),
            format!("`compatibility` must be at most {COMPATIBILITY_MAX} characters"),
        ));
    }

    let mut metadata = BTreeMap::new();
    match fields.get("metadata") {
        None | Some(Yaml::Null) => {}
        Some(Yaml::Mapping(map)) => {
            for (key, value) in map {
                let (Some(key), Some(value)) = (scalar(key), scalar(value)) else {
                    return Err(fail(
                        line_of("metadata"),
                        Some("metadata"),
                        "`metadata` must map names to single values".into(),
                    ));
                };
                metadata.insert(key, value);
            }
        }
        Some(_) => {
            return Err(fail(
                line_of("metadata"),
                Some("metadata"),
                "`metadata` must be a mapping".into(),
            ));
        }
    }

    // The format says space-delimited; Claude Code's skills write `Read, Grep, Glob`, and a
    // YAML list is what a person writes when unsure: all three mean the same list.
    let allowed_tools = match fields.get("allowed-tools") {
        None | Some(Yaml::Null) => Vec::new(),
        Some(Yaml::String(s)) => s
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect(),
        Some(Yaml::Sequence(items)) => {
            let mut tools = Vec::new();
            for item in items {
                match item {
                    Yaml::String(s) if !s.trim().is_empty() => tools.push(s.trim().to_string()),
                    _ => {
                        return Err(fail(
                            line_of("allowed-tools"),
                            Some("allowed-tools"),
                            "`allowed-tools` items must be tool names".into(),
                        ));
                    }
                }
            }
            tools
        }
        Some(_) => {
            return Err(fail(
                line_of("allowed-tools"),
                Some("allowed-tools"),
                "`allowed-tools` must be a space-separated string of tool names".into(),
            ));
        }
    };

    let model_invocable = match fields.get("disable-model-invocation") {
        None | Some(Yaml::Null) => true,
        Some(Yaml::Bool(disabled)) => !disabled,
        Some(_) => {
            return Err(fail(
                line_of("disable-model-invocation"),
                Some("disable-model-invocation"),
                "`disable-model-invocation` must be true or false".into(),
            ));
        }
    };

    let body = &text[offset..];
    let leading_blank = body.len() - body.trim_start_matches(['\n', '\r']).len();
    let instructions_line = close_line + 1 + body[..leading_blank].matches('\n').count();
    Ok(Skill {
        name,
        description,
        license,
        compatibility,
        metadata,
        allowed_tools,
        model_invocable,
        dir: dir.to_path_buf(),
        origin,
        instructions: body[leading_blank..].to_string(),
        instructions_line,
    })
}

fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Bool(b) => Some(b.to_string()),
        Yaml::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        PathBuf::from("/p/.toolmux/skills/pdf-forms")
    }

    fn error(text: &str) -> String {
        parse(&dir(), Origin::Project, text)
            .expect_err("should be refused")
            .to_string()
    }

    #[test]
    fn a_full_skill_reads_every_field() {
        let text = "---\nname: pdf-forms\ndescription: Fill PDF forms. Use when a PDF has fields.\nlicense: MIT\ncompatibility: needs python3\nmetadata:\n  author: ada\n  version: 2\nallowed-tools: file_read grep, run_code\n---\n\n# PDF forms\n\nRun `scripts/fill.py`.\n";
        let skill = parse(&dir(), Origin::Project, text).expect("valid");
        assert_eq!(skill.name, "pdf-forms");
        assert_eq!(
            skill.description,
            "Fill PDF forms. Use when a PDF has fields."
        );
        assert_eq!(skill.license.as_deref(), Some("MIT"));
        assert_eq!(skill.compatibility.as_deref(), Some("needs python3"));
        assert_eq!(
            skill.metadata,
            BTreeMap::from([
                ("author".to_string(), "ada".to_string()),
                ("version".to_string(), "2".to_string())
            ])
        );
        assert_eq!(skill.allowed_tools, ["file_read", "grep", "run_code"]);
        assert_eq!(
            skill.instructions,
            "# PDF forms\n\nRun `scripts/fill.py`.\n"
        );
        assert_eq!(skill.instructions_line, 12);
        assert_eq!(skill.file(), dir().join("SKILL.md"));
    }

    #[test]
    fn disable_model_invocation_is_read_and_checked() {
        let person_only =
            "---\nname: pdf-forms\ndescription: d\ndisable-model-invocation: true\n---\nbody\n";
        assert!(
            !parse(&dir(), Origin::User, person_only)
                .expect("valid")
                .model_invocable
        );
        let plain = "---\nname: pdf-forms\ndescription: d\n---\nbody\n";
        assert!(
            parse(&dir(), Origin::User, plain)
                .expect("valid")
                .model_invocable
        );
        let wrong = "---\nname: pdf-forms\ndescription: d\ndisable-model-invocation: sometimes\n---\nbody\n";
        let err = parse(&dir(), Origin::User, wrong).expect_err("not a boolean");
        assert!(
            err.to_string().ends_with(
                ":4: disable-model-invocation: `disable-model-invocation` must be true or false"
            ),
            "{err}"
        );
    }

    #[test]
    fn allowed_tools_may_be_a_list_and_crlf_and_a_bom_are_read() {
        let text = "\u{feff}---\r\nname: pdf-forms\r\ndescription: d\r\nallowed-tools:\r\n  - file_read\r\n  - grep\r\n---\r\nbody\r\n";
        let skill = parse(&dir(), Origin::User, text).expect("valid");
        assert_eq!(skill.allowed_tools, ["file_read", "grep"]);
        assert_eq!(skill.instructions, "body\r\n");
        assert_eq!(skill.instructions_line, 8);
    }

    #[test]
    fn each_rule_is_refused_with_file_line_and_field() {
        let file = "/p/.toolmux/skills/pdf-forms/SKILL.md";
        assert_eq!(
            error("# no frontmatter\n"),
            format!("{file}:1: no frontmatter: SKILL.md must start with a `---` line")
        );
        assert_eq!(
            error("---\nname: pdf-forms\n"),
            format!("{file}:1: unclosed frontmatter: no closing `---` line")
        );
        assert_eq!(
            error("---\ndescription: d\n---\n"),
            format!("{file}:2: name: `name` is required")
        );
        assert_eq!(
            error("---\ndescription: d\nname: PDF_Forms\n---\n"),
            format!(
                "{file}:3: name: `name` `PDF_Forms` may hold only lowercase letters, digits and `-`"
            )
        );
        assert_eq!(
            error("---\nname: pdf--forms\ndescription: d\n---\n"),
            format!(
                "{file}:2: name: `name` `pdf--forms` must not start or end with `-` or hold `--`"
            )
        );
        assert_eq!(
            error("---\nname: other\ndescription: d\n---\n"),
            format!("{file}:2: name: `name` `other` must be the folder's name, `pdf-forms`")
        );
        assert_eq!(
            error("---\nname: pdf-forms\ndescription: ''\n---\n"),
            format!("{file}:3: description: `description` must be 1 to 1024 characters")
        );
        assert_eq!(
            error("---\nname: pdf-forms\ndescription: [a]\n---\n"),
            format!("{file}:3: description: `description` must be a string")
        );
        assert_eq!(
            error("---\nname: pdf-forms\ndescription: d\nmetadata:\n  a: [1]\n---\n"),
            format!("{file}:4: metadata: `metadata` must map names to single values")
        );
        assert_eq!(
            error("---\nname: pdf-forms\ndescription: d\nallowed-tools: 3\n---\n"),
            format!(
                "{file}:4: allowed-tools: `allowed-tools` must be a space-separated string of tool names"
            )
        );
        let long = "x".repeat(501);
        assert_eq!(
            error(&format!(
                "---\nname: pdf-forms\ndescription: d\ncompatibility: {long}\n---\n"
            )),
            format!("{file}:4: compatibility: `compatibility` must be at most 500 characters")
        );
        let bad_yaml = error("---\nname: pdf-forms\ndescription: [unclosed\n---\n");
        assert!(
            bad_yaml.starts_with(&format!("{file}:4: frontmatter is not valid YAML: ")),
            "{bad_yaml}"
        );
    }
}
