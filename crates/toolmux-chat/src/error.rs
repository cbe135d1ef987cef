//! The one error type of the chat crate.

/// Why a chat operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// The LLM API refused the request or broke off.
    #[error("{0}")]
    Provider(#[from] ProviderError),
    /// No provider is configured under that name, or none was named and there is no default.
    #[error("{0}")]
    NoProvider(String),
    /// No model was named and the provider has no default model.
    #[error(
        "provider `{0}` has no `defaultModel`; name a model (`--model`, or `model` in the request)"
    )]
    NoModel(String),
    /// The conversation does not exist.
    #[error("no conversation `{0}`")]
    NoConversation(String),
    /// The turn to take again is neither one of the conversation's nor its next.
    #[error(
        "conversation `{conversation}` has {turns} turns; turn {turn} cannot be taken again (turns count from 0)"
    )]
    NoTurn {
        /// The conversation.
        conversation: String,
        /// The turn asked for.
        turn: usize,
        /// How many turns the conversation has.
        turns: usize,
    },
    /// The conversation already has a turn running.
    #[error("conversation `{0}` already has a turn running; wait for it or cancel it")]
    Busy(String),
    /// As many turns as the engine runs at once are running ([`crate::MAX_RUNNING_TURNS`]): a
    /// turn outlives the client that started it, so without a bound a client that starts
    /// turns and goes away would pile them up.
    #[error(
        "{0} turns are running already, the most this server runs at once; wait for one to end or cancel one"
    )]
    TooManyTurns(usize),
    /// The conversation database failed.
    #[error("conversation store: {0}")]
    Store(#[from] StoreError),
}

/// A failure of an LLM API, with what a person needs to act on it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// The API answered with an HTTP error status.
    #[error("{provider} answered HTTP {status}{}: {message}", retry_after.as_ref().map(|r| format!(" (retry after {r})")).unwrap_or_default())]
    Status {
        /// The provider's configured name.
        provider: String,
        /// The HTTP status code.
        status: u16,
        /// The provider's message, or the response body.
        message: String,
        /// The `Retry-After` header, when the API sent one.
        retry_after: Option<String>,
    },
    /// The stream ended before the model finished its answer (the connection dropped).
    #[error("{provider}: the response stream ended before the model finished (connection dropped){}", cause.as_ref().map(|c| format!(": {c}")).unwrap_or_default())]
    Dropped {
        /// The provider's configured name.
        provider: String,
        /// What the connection reported, when it said anything.
        cause: Option<String>,
    },
    /// The API could not be reached or its answer could not be read.
    #[error("{provider}: {message}")]
    Transport {
        /// The provider's configured name.
        provider: String,
        /// What went wrong.
        message: String,
    },
    /// The provider's settings are unusable (no API key where one is needed, a bad base URL).
    #[error("provider `{provider}` is misconfigured: {message}")]
    Config {
        /// The provider's configured name.
        provider: String,
        /// What is wrong.
        message: String,
    },
}

/// A failure of the conversation database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// A migration failed.
    #[error(transparent)]
    Migration(#[from] rusqlite_migration::Error),
    /// A stored message could not be read back.
    #[error("a stored message is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The database folder could not be created.
    #[error("cannot create `{path}`: {source}")]
    Folder {
        /// The folder.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The runtime shut down before the store ran the operation.
    #[error("the store was not reached: toolmux is shutting down")]
    ShutDown,
}
