//! `toolmux tasks list | add | done | show`: the project's task list from the command line,
//! each subcommand one call of a `task_*` tool through the pipeline, so the CLI, MCP and REST
//! share one state (`.toolmux/state/tasks.json`).

use std::path::Path;

use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

use crate::assembly::Assembly;
use crate::cli_call;
use crate::exit::{Failure, OK};
use crate::output::{emit, pretty};

/// `toolmux tasks`.
#[derive(Debug, Args)]
pub struct TasksArgs {
    /// Print the tool's structured result as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: TasksCommand,
}

#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// The tasks in plan order, each followed by its steps.
    List {
        /// Only tasks with this status: `pending`, `in_progress` or `completed`.
        #[arg(long)]
        status: Option<String>,
        /// How many tasks to show (the tool's page size when left out).
        #[arg(long)]
        limit: Option<u64>,
        /// How many matching tasks to skip, in plan order (where the last page said the next
        /// one starts).
        #[arg(long)]
        offset: Option<u64>,
    },
    /// Add a task.
    Add {
        /// What is to be done.
        title: String,
        /// More detail.
        #[arg(long)]
        description: Option<String>,
        /// The id of the task this is a step of.
        #[arg(long)]
        parent: Option<u64>,
    },
    /// Mark a task completed.
    Done {
        /// The task's id.
        id: u64,
    },
    /// One task with its notes.
    Show {
        /// The task's id.
        id: u64,
    },
}

pub async fn run(project: Option<&Path>, args: TasksArgs) -> Result<u8, Failure> {
    let assembly = Assembly::open(project)?;
    let (tool, arguments) = match args.command {
        TasksCommand::List {
            status,
            limit,
            offset,
        } => {
            let mut arguments = Map::new();
            if let Some(status) = status {
                arguments.insert("status".into(), Value::from(status));
            }
            if let Some(limit) = limit {
                arguments.insert("limit".into(), Value::from(limit));
            }
            if let Some(offset) = offset {
                arguments.insert("offset".into(), Value::from(offset));
            }
            ("task_list", Value::Object(arguments))
        }
        TasksCommand::Add {
            title,
            description,
            parent,
        } => {
            let mut arguments = Map::new();
            arguments.insert("title".into(), Value::from(title));
            if let Some(description) = description {
                arguments.insert("description".into(), Value::from(description));
            }
            if let Some(parent) = parent {
                arguments.insert("parent".into(), Value::from(parent));
            }
            ("task_create", Value::Object(arguments))
        }
        TasksCommand::Done { id } => ("task_complete", json!({ "id": id })),
        TasksCommand::Show { id } => ("task_view", json!({ "id": id })),
    };
    let result = cli_call::call_structured(&assembly, tool, arguments).await?;
    if args.json {
        emit(&pretty(&result)?)?;
    } else if tool == "task_list" {
        emit(&list_text(&result))?;
    } else {
        emit(&task_text(&result["task"], true))?;
    }
    Ok(OK)
}

fn mark(status: &str) -> &'static str {
    match status {
        "completed" => "[x]",
        "in_progress" => "[~]",
        _ => "[ ]",
    }
}

fn task_text(task: &Value, notes: bool) -> String {
    let mut out = format!(
        "{} {}. {}",
        mark(task["status"].as_str().unwrap_or_default()),
        task["id"],
        task["title"].as_str().unwrap_or_default()
    );
    if notes {
        if let Some(description) = task["description"].as_str() {
            out.push_str(&format!("\n    {description}"));
        }
        for note in task["notes"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            out.push_str(&format!(
                "\n    note ({}): {}",
                note["at"].as_str().unwrap_or_default(),
                note["text"].as_str().unwrap_or_default()
            ));
        }
    }
    out
}

fn list_text(list: &Value) -> String {
    let tasks = list["tasks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if tasks.is_empty() {
        return "no tasks".into();
    }
    // Steps are indented under their parent: the depth is the number of ancestors listed.
    let parents: std::collections::HashMap<u64, u64> = tasks
        .iter()
        .filter_map(|t| Some((t["id"].as_u64()?, t["parent"].as_u64()?)))
        .collect();
    let mut lines: Vec<String> = tasks
        .iter()
        .map(|task| {
            let mut depth = 0;
            let mut here = task["id"].as_u64();
            while let Some(parent) = here.and_then(|id| parents.get(&id)) {
                depth += 1;
                here = Some(*parent);
            }
            format!("{}{}", "  ".repeat(depth), task_text(task, false))
        })
        .collect();
    // The tool answers a page at a time; say where the rest is rather than let a cut list pass
    // for the whole one.
    if let (Some(next), Some(total)) = (list["nextOffset"].as_u64(), list["total"].as_u64()) {
        lines.push(format!(
            "… {} more: toolmux tasks list --offset {next}",
            total.saturating_sub(next)
        ));
    }
    lines.join("\n")
}
