//! Skills as MCP prompts: each skill a model may load is also the prompt `skill__NAME`, whose
//! text is what `skill_load` gives (the instructions, the skill's folder and its bundled files),
//! so a person can start a skill from a client's prompt menu. The pack offers them as a
//! [`ResourceProvider`], the one way a built-in pack puts things beside its tools on every
//! channel: the relay lists them with the upstream servers' prompts and serves them where it
//! serves `skill_load` (not denied, in the channel's scope). The pack has no resources of its
//! own; its `skill://` scheme is only claimed so that no server's resource shadows a skill.

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::time::SystemTime;

use toolmux_core::ResourceProvider;
use toolmux_core::{PromptContents, PromptInfo, ResourceContents, ResourceError, ResourceInfo};

use crate::{Audience, SOURCE_ID, SkillError, SkillsSource};

/// What a skill's prompt name starts with: `skill__csv-summary`, namespaced like an upstream
/// server's prompt (`PREFIX__name`), so it never takes a server's name.
pub const PROMPT_PREFIX: &str = "skill__";

impl ResourceProvider for SkillsSource {
    fn source(&self) -> &str {
        SOURCE_ID
    }

    fn scheme(&self) -> &str {
        "skill"
    }

    /// A skill's prompt is what `skill_load` gives, so it is served exactly where that tool is.
    fn read_tool(&self) -> &str {
        "skill_load"
    }

    fn resources(&self) -> Result<Vec<ResourceInfo>, ResourceError> {
        Ok(Vec::new())
    }

    fn read(&self, uri: &str) -> Result<Vec<ResourceContents>, ResourceError> {
        Err(ResourceError::NotFound(format!(
            "no resource `{uri}`: skills are served as prompts (`{PROMPT_PREFIX}NAME`) and by skill_load"
        )))
    }

    /// The name, size and modification time of every `SKILL.md` in the roots: any edit, new
    /// or removed skill changes it, for a `stat` per skill folder.
    fn version(&self) -> Result<u64, ResourceError> {
        let mut hasher = DefaultHasher::new();
        for root in self.roots() {
            let Ok(entries) = fs::read_dir(&root.path) else {
                continue; // most projects have none of the places
            };
            let mut seen: Vec<(std::path::PathBuf, u64, Option<SystemTime>)> = entries
                .filter_map(Result::ok)
                .filter_map(|entry| {
                    let file = entry.path().join(crate::SKILL_FILE);
                    let meta = fs::metadata(&file).ok()?;
                    Some((file, meta.len(), meta.modified().ok()))
                })
                .collect();
            seen.sort();
            seen.hash(&mut hasher);
        }
        Ok(hasher.finish())
    }

    /// Every skill a model may load, by its prompt name, with its description.
    fn prompts(&self) -> Result<Vec<PromptInfo>, ResourceError> {
        let found = self.discover().map_err(failed)?;
        Ok(found
            .skills
            .iter()
            .filter(|s| s.model_invocable)
            .map(|s| PromptInfo {
                name: format!("{PROMPT_PREFIX}{}", s.name),
                title: Some(s.name.clone()),
                description: Some(s.description.clone()),
            })
            .collect())
    }

    /// The skill's instructions, as `skill_load` gives them to a model: a skill only a person
    /// starts is no prompt, like it is no `skill_load` for a model.
    fn prompt(&self, name: &str) -> Result<Option<PromptContents>, ResourceError> {
        let Some(skill) = name.strip_prefix(PROMPT_PREFIX) else {
            return Ok(None);
        };
        match self.load(Audience::Model, &skill_arguments(skill)) {
            Ok((value, text)) => Ok(Some(PromptContents {
                description: value["description"].as_str().map(str::to_string),
                text,
            })),
            // Not a skill: perhaps an upstream server's prompt (a server named `skill`).
            Err(SkillError::NotFound { .. }) => Ok(None),
            Err(e @ SkillError::PersonOnly(_)) => Err(ResourceError::NotFound(e.to_string())),
            Err(e) => Err(failed(e)),
        }
    }
}

fn skill_arguments(name: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut arguments = serde_json::Map::new();
    arguments.insert("name".into(), serde_json::Value::from(name));
    arguments
}

fn failed(e: SkillError) -> ResourceError {
    ResourceError::Failed(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Origin, SkillRoot};

    fn source_with(skills: &[(&str, &str)]) -> (tempfile::TempDir, SkillsSource) {
        let dir = tempfile::tempdir().expect("temp dir");
        for (name, frontmatter) in skills {
            let folder = dir.path().join(".toolmux/skills").join(name);
            fs::create_dir_all(&folder).expect("skill folder");
            fs::write(
                folder.join("SKILL.md"),
                format!("---\nname: {name}\n{frontmatter}---\n\nDo {name}.\n"),
            )
            .expect("SKILL.md");
        }
        let roots = vec![SkillRoot {
            path: dir.path().join(".toolmux/skills"),
            origin: Origin::Project,
        }];
        let source = SkillsSource::new(dir.path(), roots);
        (dir, source)
    }

    #[test]
    fn model_invocable_skills_are_prompts_and_person_only_ones_are_not() {
        let (_dir, source) = source_with(&[
            ("csv", "description: Summarise CSV.\n"),
            (
                "deploy",
                "description: Deploy.\ndisable-model-invocation: true\n",
            ),
        ]);
        let prompts = source.prompts().expect("prompts");
        assert_eq!(
            prompts,
            vec![PromptInfo {
                name: "skill__csv".into(),
                title: Some("csv".into()),
                description: Some("Summarise CSV.".into()),
            }]
        );
        let got = source
            .prompt("skill__csv")
            .expect("get")
            .expect("a skill's prompt");
        assert!(got.text.contains("Do csv."), "{}", got.text);
        assert!(got.text.contains(".toolmux/skills/csv"), "{}", got.text);
        assert!(matches!(
            source.prompt("skill__deploy"),
            Err(ResourceError::NotFound(_))
        ));
        assert_eq!(source.prompt("github__csv"), Ok(None));
        assert_eq!(source.prompt("skill__nope"), Ok(None));
    }

    #[test]
    fn the_version_changes_when_a_skill_is_added() {
        let (dir, source) = source_with(&[("csv", "description: Summarise CSV.\n")]);
        let before = source.version().expect("version");
        assert_eq!(before, source.version().expect("version"));
        let folder = dir.path().join(".toolmux/skills/notes");
        fs::create_dir_all(&folder).expect("folder");
        fs::write(
            folder.join("SKILL.md"),
            "---\nname: notes\ndescription: N.\n---\n",
        )
        .expect("write");
        assert_ne!(before, source.version().expect("version"));
    }
}
