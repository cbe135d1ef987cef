//! toolmux's files, on the ground floor: every other crate may use this one, and it uses none
//! of ours. Three things, all about files and nothing else:
//!
//! - where toolmux keeps them: `<project>/.toolmux/` ([`PROJECT_DIR_NAME`]), its state
//!   ([`state_dir`]) and the user's folder ([`user_dir`]);
//! - the one way toolmux writes a file: atomically ([`write_atomic`], [`stage_in`]), so a reader
//!   sees the old file or the new one and a failed write keeps the old one;
//! - the one way it reads a file someone else chose (a cloned repository's config, a spec, a
//!   state document, a `.git` file): never buffered past a cap ([`read_capped`]), as text only
//!   when it is a regular file of UTF-8, opened without waiting ([`read_text`]), and the kernel's
//!   `/proc/PID/stat` line, whose command field defeats a naive split ([`ProcStat`]).
//!
//! It knows no configuration, secret or tool: those crates build on it (the secret store and
//! the configuration loader both write through it, and neither depends on the other).

mod file_kind;
mod layout;
mod proc_stat;
mod read;
mod write;

pub use file_kind::file_kind;
pub use layout::{PROJECT_DIR_NAME, state_dir, user_dir};
pub use proc_stat::ProcStat;
pub use read::{Links, ReadTextError, read_capped, read_text, read_text_from};
pub use write::{Commit, remove_stale_temps, write_atomic, write_new_atomic, write_new_private};
#[cfg(unix)]
pub use write::{Staged, stage_in};
