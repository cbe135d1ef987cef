//! Conversations on disk: the `ConversationStore` trait and its SQLite implementation in the
//! project's state database (`.toolmux/state/toolmux.db`, WAL mode, migrations).

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use rusqlite_migration::{M, Migrations};
use serde::Serialize;

use crate::error::StoreError;
use crate::provider::Message;

/// A conversation's header.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conversation {
    /// Its id.
    pub id: String,
    /// A title for lists (the first question, until renamed).
    pub title: String,
    /// The provider last used.
    pub provider: String,
    /// The model last used.
    pub model: String,
    /// When it started.
    pub created: DateTime<Utc>,
    /// When it last changed.
    pub updated: DateTime<Utc>,
}

/// One stored message with its position and time.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredMessage {
    /// Its position in the conversation, from 1.
    pub seq: i64,
    /// When it was written.
    pub created: DateTime<Utc>,
    /// The message.
    #[serde(flatten)]
    pub message: Message,
}

/// Where conversations are kept. One implementation today (SQLite); the trait keeps the loop
/// and the channels free of SQL so that another database can take its place.
pub trait ConversationStore: Send + Sync {
    /// Creates a conversation (with the given id, or a new one).
    fn create(
        &self,
        id: Option<&str>,
        title: &str,
        provider: &str,
        model: &str,
    ) -> Result<Conversation, StoreError>;
    /// One conversation's header.
    fn get(&self, id: &str) -> Result<Option<Conversation>, StoreError>;
    /// Every conversation, most recently changed first.
    fn list(&self) -> Result<Vec<Conversation>, StoreError>;
    /// A conversation's messages in order.
    fn messages(&self, id: &str) -> Result<Vec<StoredMessage>, StoreError>;
    /// Appends messages and records the provider and model that produced them.
    fn append(
        &self,
        id: &str,
        provider: &str,
        model: &str,
        messages: &[Message],
    ) -> Result<(), StoreError>;
    /// Renames a conversation; false when it does not exist.
    fn rename(&self, id: &str, title: &str) -> Result<bool, StoreError>;
    /// Deletes a conversation and its messages; false when it did not exist.
    fn delete(&self, id: &str) -> Result<bool, StoreError>;
    /// Drops turn `turn` (0 for the first; a turn starts with the person's message) and every
    /// message after it, so that the turn can be taken again (edit and resend, regenerate);
    /// false when the conversation has no such turn.
    fn drop_from_turn(&self, id: &str, turn: usize) -> Result<bool, StoreError>;
}

/// Conversations in SQLite.
pub struct SqliteStore {
    connection: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

fn migrations() -> Migrations<'static> {
    Migrations::new(vec![M::up(
        "CREATE TABLE conversations (
            id TEXT PRIMARY KEY,
            title TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            created TEXT NOT NULL,
            updated TEXT NOT NULL
        );
        CREATE TABLE messages (
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            body TEXT NOT NULL,
            created TEXT NOT NULL,
            PRIMARY KEY (conversation_id, seq)
        );
        CREATE INDEX conversations_by_update ON conversations(updated);",
    )])
}

impl SqliteStore {
    /// Opens (creating it and its folder when needed) the database at `path` and brings its
    /// schema up to date.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Folder {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let mut connection = Connection::open(path)?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        // In WAL mode NORMAL never corrupts the database; a power cut may lose the last
        // message written, and it saves an fsync per message on the loop's path.
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.pragma_update(None, "foreign_keys", "ON")?;
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        migrations().to_latest(&mut connection)?;
        Ok(Self {
            connection: Mutex::new(connection),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn conversation(row: &rusqlite::Row<'_>) -> rusqlite::Result<Conversation> {
    Ok(Conversation {
        id: row.get(0)?,
        title: row.get(1)?,
        provider: row.get(2)?,
        model: row.get(3)?,
        created: row.get(4)?,
        updated: row.get(5)?,
    })
}

fn role(message: &Message) -> &'static str {
    match message {
        Message::User { .. } => "user",
        Message::Assistant { .. } => "assistant",
        Message::Tool { .. } => "tool",
    }
}

impl ConversationStore for SqliteStore {
    fn create(
        &self,
        id: Option<&str>,
        title: &str,
        provider: &str,
        model: &str,
    ) -> Result<Conversation, StoreError> {
        let now = Utc::now();
        let conversation = Conversation {
            id: id
                .map(str::to_string)
                .unwrap_or_else(|| uuid::Uuid::now_v7().to_string()),
            title: title.to_string(),
            provider: provider.to_string(),
            model: model.to_string(),
            created: now,
            updated: now,
        };
        self.lock().execute(
            "INSERT INTO conversations (id, title, provider, model, created, updated)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                conversation.id,
                conversation.title,
                conversation.provider,
                conversation.model,
                now,
                now
            ],
        )?;
        Ok(conversation)
    }

    fn get(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        Ok(self
            .lock()
            .query_row(
                "SELECT id, title, provider, model, created, updated FROM conversations
                 WHERE id = ?1",
                [id],
                conversation,
            )
            .optional()?)
    }

    fn list(&self) -> Result<Vec<Conversation>, StoreError> {
        let connection = self.lock();
        let mut statement = connection.prepare(
            "SELECT id, title, provider, model, created, updated FROM conversations
             ORDER BY updated DESC, id DESC",
        )?;
        let rows = statement.query_map([], conversation)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn messages(&self, id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let connection = self.lock();
        let mut statement = connection.prepare(
            "SELECT seq, created, body FROM messages WHERE conversation_id = ?1 ORDER BY seq",
        )?;
        let rows = statement.query_map([id], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, DateTime<Utc>>(1)?,
                row.get::<_, String>(2)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, created, body) = row?;
            out.push(StoredMessage {
                seq,
                created,
                message: serde_json::from_str(&body)?,
            });
        }
        Ok(out)
    }

    fn append(
        &self,
        id: &str,
        provider: &str,
        model: &str,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        let mut connection = self.lock();
        let tx = connection.transaction()?;
        let now = Utc::now();
        let next: i64 = tx.query_row(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE conversation_id = ?1",
            [id],
            |row| row.get(0),
        )?;
        for (offset, message) in messages.iter().enumerate() {
            tx.execute(
                "INSERT INTO messages (conversation_id, seq, role, body, created)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    id,
                    next + offset as i64,
                    role(message),
                    serde_json::to_string(message)?,
                    now
                ],
            )?;
        }
        tx.execute(
            "UPDATE conversations SET updated = ?2, provider = ?3, model = ?4 WHERE id = ?1",
            params![id, now, provider, model],
        )?;
        tx.commit()?;
        Ok(())
    }

    fn rename(&self, id: &str, title: &str) -> Result<bool, StoreError> {
        let changed = self.lock().execute(
            "UPDATE conversations SET title = ?2, updated = ?3 WHERE id = ?1",
            params![id, title, Utc::now()],
        )?;
        Ok(changed > 0)
    }

    fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let changed = self
            .lock()
            .execute("DELETE FROM conversations WHERE id = ?1", [id])?;
        Ok(changed > 0)
    }

    fn drop_from_turn(&self, id: &str, turn: usize) -> Result<bool, StoreError> {
        let mut connection = self.lock();
        let tx = connection.transaction()?;
        // More turns than SQLite counts is no turn of this conversation.
        let Ok(offset) = i64::try_from(turn) else {
            return Ok(false);
        };
        let first: Option<i64> = tx
            .query_row(
                "SELECT seq FROM messages WHERE conversation_id = ?1 AND role = 'user'
                 ORDER BY seq LIMIT 1 OFFSET ?2",
                params![id, offset],
                |row| row.get(0),
            )
            .optional()?;
        let Some(first) = first else {
            return Ok(false);
        };
        tx.execute(
            "DELETE FROM messages WHERE conversation_id = ?1 AND seq >= ?2",
            params![id, first],
        )?;
        tx.execute(
            "UPDATE conversations SET updated = ?2 WHERE id = ?1",
            params![id, Utc::now()],
        )?;
        tx.commit()?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Edit and resend, regenerate: a turn and everything after it go; the turns before stay,
    /// and a turn the conversation does not have drops nothing.
    #[test]
    fn dropping_from_a_turn_keeps_the_turns_before_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(&dir.path().join("toolmux.db")).expect("opens");
        let c = store.create(None, "t", "p", "m").expect("creates");
        let turn = |n: &str| {
            vec![
                Message::User { text: n.into() },
                Message::Assistant {
                    text: format!("answer {n}"),
                    tool_calls: vec![],
                },
            ]
        };
        for n in ["one", "two", "three"] {
            store.append(&c.id, "p", "m", &turn(n)).expect("appends");
        }
        assert!(!store.drop_from_turn(&c.id, 3).expect("drops nothing"));
        assert!(!store.drop_from_turn("elsewhere", 0).expect("drops nothing"));
        assert!(
            !store
                .drop_from_turn(&c.id, usize::MAX)
                .expect("drops nothing")
        );
        assert_eq!(store.messages(&c.id).expect("messages").len(), 6);
        assert!(store.drop_from_turn(&c.id, 1).expect("drops"));
        let kept: Vec<Message> = store
            .messages(&c.id)
            .expect("messages")
            .into_iter()
            .map(|m| m.message)
            .collect();
        assert_eq!(kept, turn("one"));
        // The next turn is numbered after what is kept.
        store
            .append(&c.id, "p", "m", &turn("again"))
            .expect("appends");
        let seqs: Vec<i64> = store
            .messages(&c.id)
            .expect("messages")
            .iter()
            .map(|m| m.seq)
            .collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
    }

    #[test]
    fn migrations_are_valid() {
        assert!(migrations().validate().is_ok());
    }

    #[test]
    fn a_conversation_survives_reopening_and_can_be_renamed_and_deleted() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("state").join("toolmux.db");
        let id = {
            let store = SqliteStore::open(&path).expect("opens");
            let c = store.create(None, "hello", "p", "m").expect("creates");
            store
                .append(
                    &c.id,
                    "p",
                    "m2",
                    &[
                        Message::User { text: "hi".into() },
                        Message::Assistant {
                            text: "yo".into(),
                            tool_calls: vec![],
                        },
                    ],
                )
                .expect("appends");
            c.id
        };
        let store = SqliteStore::open(&path).expect("reopens");
        let got = store.get(&id).expect("reads").expect("exists");
        assert_eq!(got.model, "m2");
        let messages = store.messages(&id).expect("messages");
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].message, Message::User { text: "hi".into() });
        assert!(store.rename(&id, "renamed").expect("renames"));
        assert_eq!(store.list().expect("lists")[0].title, "renamed");
        assert!(store.delete(&id).expect("deletes"));
        assert!(store.messages(&id).expect("messages").is_empty());
        assert!(!store.delete(&id).expect("deletes"));
    }
}
