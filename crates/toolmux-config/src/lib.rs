//! toolmux's configuration: the one loader of `.toolmux/config.json`, its types, its JSON
//! Schema and the one editor of the file ([`ConfigEditor`]). Files are written through
//! `toolmux_files`; `${secret:NAME}` values come from the store the caller passes
//! ([`load_with_secrets`], [`ConfigEditor::with_secrets`]), as it passes the environment.
//!
//! # Where settings come from, lowest precedence first
//! 1. Built-in defaults (each type's `Default`).
//! 2. The user file, `$XDG_CONFIG_HOME/toolmux/config.json` or `~/.config/toolmux/config.json`
//!    ([`user_config_path`]).
//! 3. The project file, `<project>/.toolmux/config.json` ([`project_config_path`]), found by
//!    walking up from the working directory ([`find_project_dir`]).
//!
//! Files are merged as JSON: objects key by key, recursively; any other value (a string, a
//! number, an array such as `filters.include`) is replaced whole by the later file. A missing
//! file counts as empty.
//!
//! # How a file is read
//! Each file is read and checked on its own before merging, so every error names the file at
//! fault and, where there is one, its line, column and field path ([`ConfigError`]). Every key is
//! known (a typo is an error with a "did you mean"), and patterns, tool names and periods are
//! checked as they are read. `${VAR}` and `${VAR:-default}` are expanded in every string value
//! (not in keys) of each file before merging, with `$${` for a literal `${` ([`expand_env`]);
//! an unset variable without a default is an error — except in an upstream server's entry,
//! which then alone waits, shown with the reason ([`UnavailableServer`]). Finally `root` is
//! resolved against the directory holding `.toolmux/` and must be an existing directory.
//!
//! Seed 004's registries (`registries`) are read in place, from inside the project only, and
//! edited in place in their own format ([`ConfigEditor::edit_registry`]).
//!
//! It also translates the upstream servers other clients keep (Claude Code, Cursor, VS Code,
//! Codex) into its `mcpServers` section ([`read_import`], [`plan_import`]).
//!
//! This crate reads and writes files and nothing else: it does not watch them, and it knows no
//! channel. Its output is plain data ([`Config`], [`toolmux_core::HubSettings`]).

mod edit;
mod endpoints;
mod env;
mod error;
mod exec;
#[macro_use]
mod fields;
mod import;
mod jsonc;
mod load;
mod model;
mod oauth;
mod principals;
mod providers;
mod read;
mod registries;
mod registry_edit;
mod runners;
mod schema;
mod scripts;
mod secret_refs;
mod server;
mod server_auth;
mod server_list;
mod unavailable;
mod upstream;
mod web;

pub use edit::{ConfigDocument, ConfigEditor, EditError, Edited};
pub use endpoints::{EndpointName, EndpointSettings, MAX_ENDPOINTS};
pub use env::{Env, EnvError, EnvProblem, expand_env};
pub use error::ConfigError;
pub use exec::ShellSettings;
pub use fields::{Period, ToolName, ToolPattern};
pub use import::{
    FoundServer, ImportError, ImportFormat, ImportPlan, ImportedServer, RegistryImport,
    plan_import, read_import, read_registry_import,
};
pub use load::{
    FileText, LoadedConfig, check_config_text, find_project_dir, load, load_with_env,
    load_with_secrets, project_config_path, project_schema_path, unexpanded_upstreams,
    user_config_path,
};
pub use model::{
    Config, Defaults, FilterSettings, LogSettings, Policies, RateLimitSetting, SkillsSettings,
    SourceSettings, ToolSettings, WorkspaceLimits,
};
pub use oauth::{OAuthGrant, OAuthSettings};
pub use principals::{
    DEFAULT_ENDPOINT, KEY_PREFIX, MAX_PRINCIPALS, PrincipalSettings, RoleSettings, StoredKey,
    key_hash, new_key, stored_hash,
};
pub use providers::{ChatSettings, ProviderKind, ProviderSettings, Providers, SamplingPolicy};
pub use read::{MAX_CONFIG_FILE_BYTES, read_config_text};
pub use registries::{RegistryFile, RegistryKind, referencing_files, registry_paths};
pub use registry_edit::{RegistryDocument, tool_fits_registry};
pub use runners::{RunnerProtocol, RunnerSettings};
pub use schema::{schema, starter_config};
pub use scripts::{SCRIPT_SOURCE_ID, ScriptTool};
pub use secret_refs::{SecretLookup, unexpanded_config};
pub use server::ServerSettings;
pub use server_auth::ServerAuth;
/// `<project_dir>/.toolmux/state`, where toolmux keeps what it writes itself (the layout is
/// `toolmux_files`'; named here too, beside the configuration's own paths).
pub use toolmux_files::state_dir;
pub use unavailable::UnavailableServer;
pub use upstream::{
    DEFAULT_DISCOVERY_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_SESSIONS, DEFAULT_STARTUP_TIMEOUT,
    Prefix, RetryMode, ServerEntry, ServerName, SessionMode, TransportKind, UpstreamServer,
    UpstreamTransport,
};
pub use web::{SearchBackendKind, UrlFetchSettings, WebSearchSettings};
