//! The task list itself: tasks in plan order, each optionally under a parent, and the changes
//! the tools make to it. Pure data; the pack reads and writes it through a [`StateStore`].
//!
//! [`StateStore`]: crate::StateStore

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use toolmux_core::human_bytes;

/// The longest task title: a line, generously.
pub const MAX_TITLE_BYTES: usize = 4 * 1024;
/// The longest task description.
pub const MAX_DESCRIPTION_BYTES: usize = 64 * 1024;
/// The longest note.
pub const MAX_NOTE_BYTES: usize = 64 * 1024;
/// The most tasks a list holds: a plan far longer than any agent keeps, small enough that the
/// list (read and rewritten whole on every change) stays small.
pub const MAX_TASKS: usize = 10_000;
/// The most notes one task holds.
pub const MAX_NOTES_PER_TASK: usize = 500;

/// Where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

impl Status {
    /// The word used on every channel.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Self::Pending),
            "in_progress" => Some(Self::InProgress),
            "completed" => Some(Self::Completed),
            _ => None,
        }
    }
}

/// A note added to a task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Note {
    /// When it was added.
    pub at: DateTime<Utc>,
    /// What it says.
    pub text: String,
}

/// One task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Its id, never reused in the project.
    pub id: u64,
    /// What is to be done, in a line.
    pub title: String,
    /// More detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where it stands.
    pub status: Status,
    /// The task it is a step of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u64>,
    /// Notes, oldest first.
    #[serde(default)]
    pub notes: Vec<Note>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// When it was completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<DateTime<Utc>>,
}

/// The whole list, as stored in `tasks.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskBook {
    /// The format's version.
    #[serde(default = "version")]
    pub version: u32,
    /// The next id to give.
    #[serde(default)]
    pub next_id: u64,
    /// The tasks; siblings keep their order in this list (the plan's order).
    #[serde(default)]
    pub tasks: Vec<Task>,
}

fn version() -> u32 {
    1
}

/// Why a change was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BookError {
    /// No task has that id.
    #[error("no task with id {0}")]
    NotFound(u64),
    /// The change does not make sense (a parent that is the task or below it).
    #[error("{0}")]
    Invalid(String),
}

/// A task to add.
#[derive(Debug, Default)]
pub struct NewTask {
    /// Its title.
    pub title: String,
    /// Its description.
    pub description: Option<String>,
    /// Its status (pending when unset).
    pub status: Option<Status>,
    /// Its parent.
    pub parent: Option<u64>,
    /// Where among its siblings (0 = first; the end when unset).
    pub position: Option<usize>,
}

/// Changes to a task; what is unset stays.
#[derive(Debug, Default)]
pub struct Changes {
    /// A new title.
    pub title: Option<String>,
    /// A new description (`Some(None)` removes it).
    pub description: Option<Option<String>>,
    /// A new status.
    pub status: Option<Status>,
    /// A new parent (`Some(None)`: top level).
    pub parent: Option<Option<u64>>,
    /// A new place among its siblings.
    pub position: Option<usize>,
}

impl TaskBook {
    /// Reads a stored book; an empty store is an empty book.
    pub fn from_bytes(bytes: Option<&[u8]>) -> Result<Self, serde_json::Error> {
        match bytes {
            None => Ok(Self {
                version: 1,
                next_id: 1,
                tasks: Vec::new(),
            }),
            Some(bytes) => serde_json::from_slice(bytes),
        }
    }

    /// The stored form.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// A task by id.
    pub fn get(&self, id: u64) -> Result<&Task, BookError> {
        self.tasks
            .iter()
            .find(|t| t.id == id)
            .ok_or(BookError::NotFound(id))
    }

    fn index(&self, id: u64) -> Result<usize, BookError> {
        self.tasks
            .iter()
            .position(|t| t.id == id)
            .ok_or(BookError::NotFound(id))
    }

    /// The tasks in plan order: each parent followed by its children, depth first, siblings in
    /// their stored order.
    pub fn ordered(&self) -> Vec<&Task> {
        let mut out = Vec::with_capacity(self.tasks.len());
        self.walk(None, &mut out);
        out
    }

    /// Depth first with an explicit stack (a chain of steps is as deep as the list is long),
    /// each task's children found in one index instead of a scan of the list per task.
    fn walk<'a>(&'a self, parent: Option<u64>, out: &mut Vec<&'a Task>) {
        let children = self.children();
        let mut pending: Vec<&Task> = children
            .get(&parent)
            .map(|c| c.iter().rev().copied().collect())
            .unwrap_or_default();
        let mut seen = std::collections::HashSet::new();
        while let Some(task) = pending.pop() {
            // A hand-edited file could make a cycle of parents: each task once.
            if !seen.insert(task.id) {
                continue;
            }
            out.push(task);
            if let Some(steps) = children.get(&Some(task.id)) {
                pending.extend(steps.iter().rev());
            }
        }
    }

    /// Each parent's children, in stored order.
    fn children(&self) -> HashMap<Option<u64>, Vec<&Task>> {
        let mut children: HashMap<Option<u64>, Vec<&Task>> = HashMap::new();
        for task in &self.tasks {
            children.entry(task.parent).or_default().push(task);
        }
        children
    }

    /// The ids of `id`'s descendants.
    pub fn descendants(&self, id: u64) -> Vec<u64> {
        let children = self.children();
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::from([id]);
        let mut frontier = vec![id];
        while let Some(next) = frontier.pop() {
            for child in children
                .get(&Some(next))
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                if seen.insert(child.id) {
                    out.push(child.id);
                    frontier.push(child.id);
                }
            }
        }
        out
    }

    /// Puts the task at `from` among the siblings under `parent`, at `position` (the end when
    /// unset or past the end).
    fn place(&mut self, from: usize, parent: Option<u64>, position: Option<usize>) {
        let task = self.tasks.remove(from);
        let siblings: Vec<usize> = (0..self.tasks.len())
            .filter(|&i| self.tasks[i].parent == parent)
            .collect();
        let at = match position.and_then(|p| siblings.get(p)) {
            Some(&i) => i,
            None => siblings.last().map_or(self.tasks.len(), |&i| i + 1),
        };
        self.tasks.insert(at, task);
    }

    fn check_parent(&self, id: Option<u64>, parent: Option<u64>) -> Result<(), BookError> {
        let Some(parent) = parent else {
            return Ok(());
        };
        if self.get(parent).is_err() {
            return Err(BookError::Invalid(format!(
                "no parent task with id {parent}"
            )));
        }
        if let Some(id) = id
            && (parent == id || self.descendants(id).contains(&parent))
        {
            return Err(BookError::Invalid(format!(
                "task {parent} is task {id} or one of its steps, so it cannot be its parent"
            )));
        }
        Ok(())
    }

    /// Adds a task; returns its id.
    pub fn create(&mut self, new: NewTask, now: DateTime<Utc>) -> Result<u64, BookError> {
        if new.title.trim().is_empty() {
            return Err(BookError::Invalid("a task needs a title".into()));
        }
        check_size("a task title", &new.title, MAX_TITLE_BYTES)?;
        if let Some(description) = &new.description {
            check_size("a task description", description, MAX_DESCRIPTION_BYTES)?;
        }
        if self.tasks.len() >= MAX_TASKS {
            return Err(BookError::Invalid(format!(
                "the task list already holds {MAX_TASKS} tasks, as many as it may; delete finished ones first"
            )));
        }
        self.check_parent(None, new.parent)?;
        let id = self.next_id.max(1);
        self.next_id = id + 1;
        let status = new.status.unwrap_or(Status::Pending);
        self.tasks.push(Task {
            id,
            title: new.title,
            description: new.description,
            status,
            parent: new.parent,
            notes: Vec::new(),
            created_at: now,
            updated_at: now,
            completed_at: (status == Status::Completed).then_some(now),
        });
        self.place(self.tasks.len() - 1, new.parent, new.position);
        Ok(id)
    }

    /// Changes a task.
    pub fn update(
        &mut self,
        id: u64,
        changes: Changes,
        now: DateTime<Utc>,
    ) -> Result<(), BookError> {
        let i = self.index(id)?;
        if let Some(parent) = changes.parent {
            self.check_parent(Some(id), parent)?;
        }
        if changes
            .title
            .as_deref()
            .is_some_and(|t| t.trim().is_empty())
        {
            return Err(BookError::Invalid("a task needs a title".into()));
        }
        if let Some(title) = &changes.title {
            check_size("a task title", title, MAX_TITLE_BYTES)?;
        }
        if let Some(Some(description)) = &changes.description {
            check_size("a task description", description, MAX_DESCRIPTION_BYTES)?;
        }
        let task = &mut self.tasks[i];
        if let Some(title) = changes.title {
            task.title = title;
        }
        if let Some(description) = changes.description {
            task.description = description;
        }
        if let Some(status) = changes.status {
            if status == Status::Completed && task.status != Status::Completed {
                task.completed_at = Some(now);
            } else if status != Status::Completed {
                task.completed_at = None;
            }
            task.status = status;
        }
        task.updated_at = now;
        if changes.parent.is_some() || changes.position.is_some() {
            let parent = changes.parent.unwrap_or(task.parent);
            self.tasks[i].parent = parent;
            self.place(i, parent, changes.position);
        }
        Ok(())
    }

    /// Adds a note.
    pub fn add_note(&mut self, id: u64, text: String, now: DateTime<Utc>) -> Result<(), BookError> {
        if text.trim().is_empty() {
            return Err(BookError::Invalid("a note needs text".into()));
        }
        check_size("a note", &text, MAX_NOTE_BYTES)?;
        let i = self.index(id)?;
        if self.tasks[i].notes.len() >= MAX_NOTES_PER_TASK {
            return Err(BookError::Invalid(format!(
                "task {id} already has {MAX_NOTES_PER_TASK} notes, as many as a task may; sum them up in its description"
            )));
        }
        self.tasks[i].notes.push(Note { at: now, text });
        self.tasks[i].updated_at = now;
        Ok(())
    }

    /// Removes a task and its steps; returns the ids removed, the task's first.
    pub fn delete(&mut self, id: u64) -> Result<Vec<u64>, BookError> {
        self.index(id)?;
        let mut gone = vec![id];
        gone.extend(self.descendants(id));
        self.tasks.retain(|t| !gone.contains(&t.id));
        Ok(gone)
    }
}

/// Refuses a text longer than `max` bytes, naming what it is and both sizes.
fn check_size(what: &str, text: &str, max: usize) -> Result<(), BookError> {
    if text.len() > max {
        return Err(BookError::Invalid(format!(
            "{what} may be at most {}; this one is {}",
            human_bytes(max as u64),
            human_bytes(text.len() as u64)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn titles(book: &TaskBook) -> Vec<&str> {
        book.ordered().iter().map(|t| t.title.as_str()).collect()
    }

    fn new(title: &str, parent: Option<u64>, position: Option<usize>) -> NewTask {
        NewTask {
            title: title.into(),
            parent,
            position,
            ..NewTask::default()
        }
    }

    #[test]
    fn plan_order_parents_positions_and_cycles() {
        let now = Utc::now();
        let mut book = TaskBook::from_bytes(None).expect("empty");
        let a = book.create(new("a", None, None), now).expect("a");
        let b = book.create(new("b", None, None), now).expect("b");
        book.create(new("a2", Some(a), None), now).expect("a2");
        book.create(new("a1", Some(a), Some(0)), now).expect("a1");
        book.create(new("first", None, Some(0)), now)
            .expect("first");
        assert_eq!(titles(&book), ["first", "a", "a1", "a2", "b"]);

        let moved = Changes {
            parent: Some(Some(b)),
            ..Changes::default()
        };
        book.update(a, moved, now).expect("move a under b");
        assert_eq!(titles(&book), ["first", "b", "a", "a1", "a2"]);
        let cycle = Changes {
            parent: Some(Some(a)),
            ..Changes::default()
        };
        assert!(matches!(
            book.update(b, cycle, now),
            Err(BookError::Invalid(_))
        ));

        assert_eq!(book.delete(b).expect("delete").len(), 4);
        assert_eq!(titles(&book), ["first"]);
        assert_eq!(book.get(a), Err(BookError::NotFound(a)));
        // Ids are never reused.
        assert_eq!(book.create(new("c", None, None), now), Ok(6));
    }

    #[test]
    fn completing_stamps_and_reopening_clears() {
        let now = Utc::now();
        let mut book = TaskBook::from_bytes(None).expect("empty");
        let id = book.create(new("x", None, None), now).expect("x");
        let done = Changes {
            status: Some(Status::Completed),
            ..Changes::default()
        };
        book.update(id, done, now).expect("done");
        assert_eq!(book.get(id).expect("x").completed_at, Some(now));
        let reopen = Changes {
            status: Some(Status::Pending),
            ..Changes::default()
        };
        book.update(id, reopen, now).expect("reopen");
        assert_eq!(book.get(id).expect("x").completed_at, None);
    }
}
