//! `toolmux skills list | show`: the `skills` source from the command line, each subcommand one
//! call of its tool through the pipeline (see `cli_call`).

use std::path::Path;

use serde_json::{Value, json};

use crate::assembly::Assembly;
use crate::cli::{SkillsArgs, SkillsCommand};
use crate::cli_call;
use crate::exit::{Failure, OK, TOOL_FAILED};
use crate::output::{emit, pretty};

pub async fn run(project: Option<&Path>, args: SkillsArgs) -> Result<u8, Failure> {
    let assembly = Assembly::open(project)?;
    match args.command {
        SkillsCommand::List => {
            let list = cli_call::call_structured(&assembly, "skill_list", json!({})).await?;
            if args.json {
                emit(&pretty(&list)?)?;
            } else {
                emit(&list_text(&list))?;
            }
            // Like a linter: a broken SKILL.md is a finding a script must be able to see.
            let invalid = list["invalid"].as_array().is_some_and(|a| !a.is_empty());
            Ok(if invalid { TOOL_FAILED } else { OK })
        }
        SkillsCommand::Show { name } => {
            let skill =
                cli_call::call_structured(&assembly, "skill_load", json!({ "name": name })).await?;
            if args.json {
                emit(&pretty(&skill)?)?;
            } else {
                emit(&show_text(&skill))?;
            }
            Ok(OK)
        }
    }
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_default()
}

fn list_text(list: &Value) -> String {
    let mut out = String::new();
    let skills = list["skills"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for skill in skills {
        out.push_str(&format!(
            "{}  ({}, {})\n  {}\n",
            str_of(skill, "name"),
            str_of(skill, "origin"),
            str_of(skill, "dir"),
            str_of(skill, "description")
        ));
    }
    if skills.is_empty() {
        out.push_str(
            "no skills: put a folder with a SKILL.md in .toolmux/skills/, .claude/skills/ or \
             ~/.config/toolmux/skills/\n",
        );
    }
    for bad in list["invalid"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let field = bad["field"]
            .as_str()
            .map(|f| format!("{f}: "))
            .unwrap_or_default();
        out.push_str(&format!(
            "invalid: {}:{}: {field}{}\n",
            str_of(bad, "file"),
            bad["line"],
            str_of(bad, "message")
        ));
    }
    for hidden in list["shadowed"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        out.push_str(&format!(
            "hidden by a skill of the same name: {}\n",
            hidden.as_str().unwrap_or_default()
        ));
    }
    out.trim_end().to_string()
}

fn show_text(skill: &Value) -> String {
    let mut out = format!(
        "{}  ({}, {})\n{}\n",
        str_of(skill, "name"),
        str_of(skill, "origin"),
        str_of(skill, "dir"),
        str_of(skill, "description")
    );
    if let Some(tools) = skill["allowedTools"].as_array().filter(|t| !t.is_empty()) {
        let names: Vec<&str> = tools.iter().filter_map(Value::as_str).collect();
        out.push_str(&format!("allowed tools: {}\n", names.join(" ")));
    }
    out.push('\n');
    out.push_str(str_of(skill, "instructions").trim_end());
    if let Some(files) = skill["files"].as_array().filter(|f| !f.is_empty()) {
        out.push_str("\n\nfiles:");
        for file in files {
            out.push_str(&format!("\n  {}", file.as_str().unwrap_or_default()));
        }
    }
    out
}
