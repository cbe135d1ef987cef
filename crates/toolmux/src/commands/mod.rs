//! One module per command; `run` dispatches.

mod capabilities;
pub(crate) mod chat;
mod config;
pub(crate) mod eval;
pub(crate) mod import;
mod init;
pub(crate) mod keys;
mod logs;
mod mcp;
mod run;
pub(crate) mod runners;
pub(crate) mod secrets;
mod serve;
pub(crate) mod sessions;
mod skills;
mod specs;
pub(crate) mod tasks;
mod tools;
pub(crate) mod upstream;

use crate::cli::{Cli, Command};
use crate::exit::Failure;

/// Runs the parsed command and returns its exit code.
pub async fn run(cli: Cli) -> Result<u8, Failure> {
    let project = cli.project.as_deref();
    match cli.command {
        Command::Init { force } => init::run(project, force),
        Command::Tools(cmd) => tools::run(project, cmd).await,
        Command::Config(cmd) => config::run(project, cmd),
        Command::Logs(args) => logs::run(project, args).await,
        Command::Mcp(crate::cli::McpArgs { command, serve }) => match command {
            None => mcp::run(project, serve).await,
            Some(crate::cli::McpSubcommand::Serve(serve)) => mcp::run(project, serve).await,
            Some(crate::cli::McpSubcommand::Servers(cmd)) => upstream::run(project, cmd).await,
        },
        Command::Serve(args) => serve::run(project, args).await,
        Command::Capabilities(cmd) => capabilities::run(project, cmd),
        Command::Run(args) => run::run(project, args).await,
        Command::Import(args) => import::run(project, args).await,
        Command::Chat(args) => chat::run(project, args).await,
        Command::Eval(args) => eval::run(project, args).await,
        Command::Specs(args) => specs::run(project, args).await,
        Command::Skills(args) => skills::run(project, args).await,
        Command::Runners(args) => runners::run(project, args).await,
        Command::Sessions(args) => sessions::run(project, args).await,
        Command::Secrets(args) => secrets::run(project, args).await,
        Command::Keys(args) => keys::run(project, args),
        Command::Tasks(args) => tasks::run(project, args).await,
    }
}
