//! The `toolmux` command: parse the command line, run one command, map the outcome to an exit
//! code. Everything else lives in the library crates; this binary is glue.

mod access;
mod approve;
mod assembly;
mod cli;
mod cli_call;
mod commands;
mod exit;
mod handoff;
mod output;
mod project;
mod resource_tools;
mod rest_upstreams;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Then, while toolmux still has a single thread: its secrets (API keys, tokens,
    // passwords, and what its configuration and `--api-key-env` name) leave the process
    // environment and the block `/proc/<pid>/environ` shows, kept for toolmux's own lookups
    // (`${VAR}` at every configuration load and reload), and the process becomes not
    // dumpable, so no child reads them from toolmux.
    let named = named_variables(&cli);
    #[allow(unsafe_code)]
    // SAFETY: no other thread exists yet (parsing the command line and reading the
    // configuration files start none), so nothing reads or changes the environment while it
    // is rewritten.
    let hidden = unsafe { toolmux_scripts::environ::hide_secrets(&named) };
    init_tracing(cli.verbose);
    if !hidden.names.is_empty() {
        tracing::debug!(
            names = %hidden.names.join(" "),
            overwritten = hidden.overwritten,
            "secrets taken out of toolmux's environment (children get them only through a configured `env`)"
        );
    }
    for problem in &hidden.problems {
        tracing::warn!("{problem}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolmux: cannot start the async runtime: {e}");
            return ExitCode::from(exit::RUNTIME);
        }
    };
    let outcome = runtime.block_on(commands::run(cli));
    // Whatever is left in the cgroups of what this command started, and whatever left the
    // process groups of what it started where there are no cgroups (a script's or a server's
    // `setsid` daemon), dies now: nothing toolmux started outlives it, whichever command ran.
    toolmux_scripts::child::sweep_escaped();
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            failure.report();
            ExitCode::from(failure.code())
        }
    }
}

/// The variables toolmux hands on only where its configuration says: those `${VAR}`
/// references name in every file whose references toolmux expands (the user's and the
/// project's configuration files and the registries they name), and those `--api-key-env`
/// names. Read before the runtime starts; a file that cannot be read names nothing here
/// (loading it reports the error).
fn named_variables(cli: &Cli) -> Vec<String> {
    let mut names = Vec::new();
    if let cli::Command::Serve(args) = &cli.command {
        names.extend(args.api_key_env.iter().cloned());
    }
    let user = toolmux_config::user_config_path();
    let files = match project::locate(cli.project.as_deref()) {
        Ok(dir) => toolmux_config::referencing_files(&dir, user.as_deref()),
        Err(_) => user
            .and_then(|path| {
                let text = toolmux_config::read_config_text(&path).ok()?;
                Some(toolmux_config::FileText {
                    path,
                    text: text.into(),
                })
            })
            .into_iter()
            .collect(),
    };
    names.extend(toolmux_scripts::environ::references_in(&files));
    names
}

/// Logs go to stderr so stdout carries only results (and, for `toolmux mcp`, only protocol
/// messages). `TOOLMUX_LOG` takes an `EnvFilter` directive; `-v` raises the default level.
fn init_tracing(verbose: u8) {
    // rmcp reports an unreachable upstream at ERROR from inside its worker, and genai warns on
    // every tool-call chunk; toolmux reports the failures that matter itself (naming the server
    // or provider), so their own lines stay quiet unless asked for. html5ever warns about
    // every odd namespace it serializes while url_fetch extracts a page's content.
    let default = match verbose {
        0 => "warn,rmcp=off,genai=error,html5ever=error",
        1 => "info,rmcp=warn,genai=warn",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLMUX_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
