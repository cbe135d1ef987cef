//! The command line, as clap types.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand};

/// One registry of tools for AI agents: built-in tools, your scripts and upstream servers,
/// served over MCP, REST and chat.
#[derive(Debug, Parser)]
#[command(name = "toolmux", version, about, long_about = None)]
pub struct Cli {
    /// The project directory (the one holding `.toolmux/`). Default: the nearest ancestor of the
    /// current directory with `.toolmux/config.json`, else the current directory.
    #[arg(
        short = 'C',
        long,
        global = true,
        env = "TOOLMUX_PROJECT",
        value_name = "DIR"
    )]
    pub project: Option<PathBuf>,

    /// More logging on stderr (-v info, -vv debug, -vvv trace). `TOOLMUX_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a starter `.toolmux/config.json` in the project directory.
    Init {
        /// Overwrite an existing configuration.
        #[arg(long)]
        force: bool,
    },
    /// List, inspect and call tools.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Check, print the schema of, or locate the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Read the execution log.
    Logs(LogsArgs),
    /// MCP: `toolmux mcp serve` serves the registry on stdin/stdout (for an agent's MCP
    /// configuration; `toolmux mcp` alone does the same); `toolmux mcp add|list|…` manages the
    /// upstream servers whose tools toolmux aggregates.
    Mcp(McpArgs),
    /// Start the HTTP server: the MCP endpoint at /mcp (streamable HTTP) and the REST API at /api.
    Serve(ServeArgs),
    /// Generate the typed TypeScript API of every tool for code mode.
    #[command(subcommand)]
    Capabilities(CapabilitiesCommand),
    /// Run a TypeScript script in the code-mode sandbox; its tool calls go through the pipeline.
    Run(RunArgs),
    /// Add the MCP servers configured for Claude Code, Cursor, VS Code or Codex to toolmux's
    /// upstream servers (the `mcpServers` section).
    Import(crate::commands::import::ImportArgs),
    /// Chat with a model that uses the registry's tools; list, rename and delete conversations.
    Chat(crate::commands::chat::ChatArgs),
    /// Measure how well a model picks tools: a gold set of prompts, accuracy per tool.
    Eval(crate::commands::eval::EvalArgs),
    /// List, read, search, create, update and validate the project's LeanSpec specs
    /// (`specs/NNN-name/README.md`), through the `specs` tools and their policies.
    Specs(SpecsArgs),
    /// List and show the Agent Skills (`SKILL.md` folders) in `.toolmux/skills/`,
    /// `.claude/skills/` and `~/.config/toolmux/skills/`, through the `skills` tools.
    Skills(SkillsArgs),
    /// List the coding agents toolmux can start (Claude Code, Codex, Gemini CLI, aider …) and
    /// detect which are installed.
    Runners(crate::commands::runners::RunnersArgs),
    /// Start coding sessions (a runner on a prompt or specs) and list, follow and cancel them.
    Sessions(crate::commands::sessions::SessionsArgs),
    /// List, set, print and delete the secrets `${secret:NAME}` references read (the OS
    /// keyring, else an encrypted file under `.toolmux/state/`).
    Secrets(crate::commands::secrets::SecretsArgs),
    /// Make, list and revoke the keys of configured principals (`principals.<name>`): a key
    /// is printed once, and only its hash is stored.
    Keys(crate::commands::keys::KeysArgs),
    /// The project's task list (`task_*` tools): list, add, complete and show tasks.
    Tasks(crate::commands::tasks::TasksArgs),
}

/// `toolmux skills`: each subcommand calls one tool of the `skills` source through the pipeline.
#[derive(Debug, Args)]
pub struct SkillsArgs {
    /// Print the tool's structured result as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: SkillsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Every skill's name and description, and the `SKILL.md` files that break the format.
    List,
    /// One skill's instructions and the files it bundles.
    Show {
        /// The skill's name.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum CapabilitiesCommand {
    /// Write `<source>/index.d.ts`, `index.js` and `schema.json` for every source, plus
    /// `globals.d.ts`, from the catalog (no server is started).
    Build {
        /// The folder to write. Default: `.toolmux/capabilities` in the project directory.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Print a JSON report.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The script (`-` reads it from stdin). It may `import { x } from '@capabilities/x'`, use
    /// top-level `await`, and `return` its result.
    pub script: PathBuf,
    /// Print `{result, logs, calls}` (or `{error, logs, calls}`) as JSON instead of the result
    /// on stdout and the console output on stderr.
    #[arg(long)]
    pub json: bool,
    /// Wall-clock limit in seconds (time spent waiting for an approval does not count).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub timeout: u64,
    /// CPU-time budget in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub cpu: u64,
    /// Memory limit in MB.
    #[arg(long, value_name = "MB", default_value_t = 64)]
    pub memory: usize,
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List the tools in the catalog.
    List {
        /// Only tools of this source.
        #[arg(long)]
        source: Option<String>,
        /// Include internal tools.
        #[arg(long)]
        all: bool,
        /// Also list the tools switched off by configuration (`enabled: false`).
        #[arg(long)]
        disabled: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one tool: schema, policy, limits.
    Show {
        /// The tool's registry name.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Call a tool through the pipeline (policy, validation, limits, log).
    Call(CallArgs),
    /// Register a script tool in the project's configuration:
    /// `toolmux tools add NAME --description TEXT [--input-schema FILE|JSON] -- COMMAND ARGS...`,
    /// or its whole definition with `--file def.json`.
    Add(AddToolArgs),
    /// Remove a script tool from the project's configuration.
    Remove {
        /// The tool's registry name.
        name: String,
    },
    /// Switch a tool on again (`toolSettings.<name>.enabled`, in the project's configuration;
    /// a running `toolmux serve` applies it at once).
    Enable {
        /// The tool's registry name.
        name: String,
    },
    /// Switch a tool off: no channel lists it or calls it.
    Disable {
        /// The tool's registry name.
        name: String,
    },
    /// Set a tool's own policy (`policies.tools.<name>`): `allow`, `ask`, `deny`, or `default`
    /// to remove it so the tool's other rules decide.
    Policy {
        /// The tool's registry name.
        name: String,
        /// `allow`, `ask`, `deny` or `default`.
        #[arg(value_parser = ["allow", "ask", "deny", "default"])]
        policy: String,
    },
}

#[derive(Debug, Args)]
pub struct AddToolArgs {
    /// The tool's registry name.
    pub name: String,
    /// A JSON file holding the definition, as under `tools` in the configuration; the other
    /// options add to it or override it.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// What the tool does, for the model that chooses it.
    #[arg(long, short)]
    pub description: Option<String>,
    /// JSON Schema of the arguments: a file, or the JSON itself (starting with `{`).
    #[arg(long, value_name = "FILE|JSON")]
    pub input_schema: Option<String>,
    /// JSON Schema of the structured result: a file, or the JSON itself.
    #[arg(long, value_name = "FILE|JSON")]
    pub output_schema: Option<String>,
    /// The working directory, relative to the project root.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// An environment variable, `NAME=VALUE` (keep secrets as `${VAR}`). Repeatable.
    #[arg(short, long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// How long a call may run, in milliseconds.
    #[arg(long, value_name = "MS")]
    pub timeout_ms: Option<u64>,
    /// The tool's policy: allow, ask or deny.
    #[arg(long)]
    pub policy: Option<String>,
    /// The tool may run concurrently with other parallel tools of a batch.
    #[arg(long)]
    pub parallel: bool,
    /// Replace a script tool of the same name.
    #[arg(long)]
    pub force: bool,
    /// The program and its arguments (after `--`), run with the call's arguments as JSON on
    /// stdin.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool's registry name.
    pub name: String,
    /// The arguments as one JSON object.
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// One argument as `key=value`; the value is read as JSON when it parses (numbers, true,
    /// arrays), else as a string. Repeatable; combined with --args.
    #[arg(short = 'a', long = "arg", value_name = "KEY=VALUE")]
    pub pairs: Vec<String>,
    /// Print the whole result as JSON (content, structuredContent, isError).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate the configuration without running anything.
    Check,
    /// Print the JSON Schema of the configuration file.
    Schema,
    /// Print where the configuration files are.
    Path,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Only calls of this tool (a name or a glob such as `file_*`).
    #[arg(long)]
    pub tool: Option<String>,
    /// Only calls with this outcome: ok, error, denied, timeout, invalid.
    #[arg(long)]
    pub outcome: Option<String>,
    /// Only calls since this time: RFC 3339, a date, or an age such as 15m, 2h, 7d.
    #[arg(long)]
    pub since: Option<String>,
    /// At most this many calls (the newest).
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Keep printing new calls as they are logged.
    #[arg(short, long)]
    pub follow: bool,
    /// Print JSON lines.
    #[arg(long)]
    pub json: bool,
}

/// Which tools an MCP server serves, and under which names.
#[derive(Debug, Args)]
pub struct ServeFilterArgs {
    /// Serve only tools whose name matches this pattern (`github__*`, `grep`). Repeatable.
    #[arg(long = "tools", value_name = "PATTERN")]
    pub tools: Vec<String>,
    /// Do not serve tools whose name matches this pattern. Repeatable.
    #[arg(long, value_name = "PATTERN")]
    pub exclude: Vec<String>,
    /// Serve only this source's tools, without their `SOURCE__` prefix, so that toolmux can
    /// stand in for that one server.
    #[arg(long, value_name = "SOURCE")]
    pub pass_through: Option<String>,
    /// Code mode: offer only `run_code` and `search_tools` (plus any tool named with --tools) in
    /// place of the whole catalog. Scripts still reach every tool, through the same policies.
    #[arg(long, conflicts_with = "pass_through")]
    pub code_mode: bool,
    /// Discovery mode, for catalogs too big to send: offer only `search_tools`,
    /// `describe_tool` and `call_tool`, which reach the tools --tools and --exclude let
    /// through; calls by name go through the same policies and approvals.
    #[arg(long, conflicts_with = "pass_through")]
    pub discovery: bool,
}

/// What `toolmux mcp serve` serves: the view the filter flags make, or one named endpoint.
#[derive(Debug, Args)]
pub struct McpServeArgs {
    /// Serve the endpoint of this name (`endpoints.<name>` in the configuration) in place of
    /// the filter flags: its tools, prompts, resources, instructions and code mode.
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with_all = ["tools", "exclude", "pass_through", "code_mode", "discovery"]
    )]
    pub endpoint: Option<String>,
    #[command(flatten)]
    pub filters: ServeFilterArgs,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct McpArgs {
    /// What to serve when no subcommand is given (`toolmux mcp` is `toolmux mcp serve`).
    #[command(flatten)]
    pub serve: McpServeArgs,
    #[command(subcommand)]
    pub command: Option<McpSubcommand>,
}

/// `toolmux mcp`'s two jobs, kept apart by name: serving the registry over MCP, and managing
/// the upstream servers. The bare `toolmux mcp [FILTERS]` that agents' configurations already
/// name stays the spelling of `serve`.
#[derive(Debug, Subcommand)]
pub enum McpSubcommand {
    /// Serve the registry as an MCP server on stdin/stdout (for an agent's MCP configuration).
    Serve(McpServeArgs),
    /// Manage the upstream servers (the `mcpServers` section) whose tools toolmux aggregates.
    #[command(flatten)]
    Servers(crate::commands::upstream::McpCommand),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The port to listen on; 0 picks a free one (the URL is printed on stderr).
    #[arg(short, long, default_value_t = 7700)]
    pub port: u16,
    /// The address to listen on. Anything but loopback requires --api-key-env.
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDRESS")]
    pub bind: std::net::IpAddr,
    /// Require `Authorization: Bearer <key>` with the key held in this environment variable.
    /// Repeatable (several keys are accepted).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Vec<String>,
    /// Also accept this `Host` header (`tools.example.com`, `10.0.0.5:7700`); loopback names
    /// always pass. Guards against DNS rebinding. Repeatable.
    #[arg(long, value_name = "HOST")]
    pub allow_host: Vec<String>,
    /// Also accept browser requests from this origin (`https://app.example.com:443`). By
    /// default only the server's own origin (scheme, host and port) passes: a page on another
    /// port of the same host is another origin. Repeatable.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Listen on this Unix socket (created with mode 0600) instead of a TCP port.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["port", "bind"])]
    pub socket: Option<std::path::PathBuf>,
    /// How long a client has to send a request's headers, and how long an idle keep-alive
    /// connection stays open (`20s`, `500ms`); past it the connection is closed. Default: 20s.
    #[arg(long, value_name = "DURATION", value_parser = positive_duration)]
    pub header_timeout: Option<std::time::Duration>,
    /// The most connections served at once; more wait until one closes. Default: 4096, or half
    /// the limit on open files when that is lower.
    #[arg(long, value_name = "N")]
    pub max_connections: Option<std::num::NonZeroUsize>,
    /// The most connections one client address (an IPv6 one by its /64; every loopback address
    /// is one) holds at once; past it, its new connections are answered 503. Default: a quarter
    /// of --max-connections. Every local client shares loopback: raise it behind a reverse
    /// proxy on this host.
    #[arg(long, value_name = "N")]
    pub max_connections_per_peer: Option<std::num::NonZeroUsize>,
    /// Open the web app in the browser (`TOOLMUX_BROWSER`, else `xdg-open` / `open`), logged in
    /// with the project's local token; serving goes on if no browser starts.
    #[arg(long)]
    pub open: bool,
    #[command(flatten)]
    pub filters: ServeFilterArgs,
}

/// A duration as configuration writes it (`20s`), longer than zero: a zero header timeout would
/// close every connection before its first request.
fn positive_duration(text: &str) -> Result<std::time::Duration, String> {
    match toolmux_core::parse_duration(text) {
        Ok(d) if d.is_zero() => Err("must be longer than zero".to_string()),
        Ok(d) => Ok(d),
        Err(e) => Err(e.to_string()),
    }
}

/// `toolmux specs`: each subcommand calls one tool of the `specs` source through the pipeline.
#[derive(Debug, Args)]
pub struct SpecsArgs {
    /// Print the tool's structured result as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: SpecsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SpecsCommand {
    /// List specs in number order (archived ones left out, as LeanSpec does).
    List(toolmux_specs::SpecFilter),
    /// Show one spec: its metadata, relationships and content.
    View {
        /// The spec: its number (`42`, `042`), folder name, or a fragment only one spec has.
        spec: String,
    },
    /// Search specs with LeanSpec's query syntax: words, AND, OR, NOT, "phrases", `status:`,
    /// `tag:`, `priority:`, `title:`, `created:>=2025-01`, fuzzy `term~2`. Best first.
    Search {
        /// The query (several words are joined with spaces).
        #[arg(required = true, num_args = 1.., value_name = "QUERY")]
        query: Vec<String>,
        /// The most results.
        #[arg(short, long, default_value_t = 10)]
        limit: u32,
    },
    /// Create a spec folder `NNN-name/README.md` with the next number (a write: asks first
    /// unless the policy allows it).
    Create(SpecCreateArgs),
    /// Change a spec's status, priority, assignee, tags, checklist or text (a write: asks first
    /// unless the policy allows it).
    Update(SpecUpdateArgs),
    /// Check one spec or all against LeanSpec's rules; exits 1 when one has an error.
    Validate {
        /// One spec; all when absent.
        spec: Option<String>,
        /// Treat warnings as errors (exit 1 on a warning too).
        #[arg(long)]
        strict: bool,
    },
    /// The board: specs grouped by status, priority, assignee, tag or parent.
    Board(toolmux_specs::SpecBoard),
    /// Counts over every spec: by status, priority and tag, completion, dependencies.
    Stats,
    /// Count the cl100k_base tokens of one spec (README and sub-specs), of a file, or of every
    /// spec, with LeanSpec's ratings.
    Tokens {
        /// One spec; every spec when absent.
        #[arg(conflicts_with = "file")]
        spec: Option<String>,
        /// A file relative to the project root, instead of a spec.
        #[arg(long, value_name = "PATH")]
        file: Option<String>,
    },
    /// Show a spec's parent, children, dependencies and dependents (a read, from `spec_view`).
    Deps {
        /// The spec.
        spec: String,
    },
    /// Add a parent, child or dependency link (a write; a cycle is refused).
    Link(SpecLinkArgs),
    /// Remove a parent, child or dependency link (a write).
    Unlink(SpecLinkArgs),
}

#[derive(Debug, Args)]
pub struct SpecCreateArgs {
    /// Kebab-case name (`my-feature`); a leading `NNN-` is dropped.
    pub name: String,
    /// The title. Default: the name in title case.
    #[arg(short, long)]
    pub title: Option<String>,
    /// The initial status. Default: planned (draft when the LeanSpec config enables drafts).
    #[arg(short, long, value_parser = toolmux_specs::cli::status_parser())]
    pub status: Option<String>,
    /// The priority. Default: medium.
    #[arg(short, long, value_parser = toolmux_specs::cli::priority_parser())]
    pub priority: Option<String>,
    /// A tag (repeatable, or comma-separated).
    #[arg(
        long = "tag",
        alias = "tags",
        value_name = "TAG",
        value_delimiter = ','
    )]
    pub tags: Vec<String>,
    /// The parent (umbrella) spec.
    #[arg(long, value_name = "SPEC")]
    pub parent: Option<String>,
    /// A spec this one depends on (repeatable).
    #[arg(long, value_name = "SPEC", num_args = 1..)]
    pub depends_on: Vec<String>,
    /// Who owns it.
    #[arg(short, long)]
    pub assignee: Option<String>,
    /// A template file in `.lean-spec/templates/`. Default: the config's, else the built-in one.
    #[arg(short = 'T', long)]
    pub template: Option<String>,
    /// The body in markdown, instead of the template.
    #[arg(long, value_name = "MARKDOWN", conflicts_with = "file")]
    pub content: Option<String>,
    /// Read the body from this file (`-` for stdin), instead of the template.
    #[arg(short, long, value_name = "FILE")]
    pub file: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("section_edit")
        .args(["section_content", "append", "prepend"])
        .multiple(false)
        .requires("section")
))]
pub struct SpecUpdateArgs {
    /// The spec: its number, folder name, or a fragment only one spec has.
    pub spec: String,
    /// The new status (recorded in `transitions`).
    #[arg(short, long, value_parser = toolmux_specs::cli::status_parser())]
    pub status: Option<String>,
    /// The new priority.
    #[arg(short, long, value_parser = toolmux_specs::cli::priority_parser())]
    pub priority: Option<String>,
    /// The new assignee; an empty string removes it.
    #[arg(short, long)]
    pub assignee: Option<String>,
    /// A tag to add (repeatable, or comma-separated).
    #[arg(long, alias = "add-tags", value_name = "TAG", value_delimiter = ',')]
    pub add_tag: Vec<String>,
    /// A tag to remove (repeatable, or comma-separated).
    #[arg(long, alias = "remove-tags", value_name = "TAG", value_delimiter = ',')]
    pub remove_tag: Vec<String>,
    /// Check the checklist item containing this text (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub check: Vec<String>,
    /// Uncheck the checklist item containing this text (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub uncheck: Vec<String>,
    /// Replace text in the body (repeatable); it must occur exactly once unless --match-all or
    /// --match-first.
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"])]
    pub replace: Vec<String>,
    /// Replace every occurrence (all --replace entries).
    #[arg(long, conflicts_with = "match_first")]
    pub match_all: bool,
    /// Replace the first occurrence only (all --replace entries).
    #[arg(long)]
    pub match_first: bool,
    /// The `## ` section to edit (by heading, case-insensitive), with --section-content,
    /// --append or --prepend.
    #[arg(long, value_name = "HEADING", requires = "section_edit")]
    pub section: Option<String>,
    /// Replace the section's content.
    #[arg(long, value_name = "MARKDOWN")]
    pub section_content: Option<String>,
    /// Append to the section.
    #[arg(long, value_name = "MARKDOWN")]
    pub append: Option<String>,
    /// Prepend to the section.
    #[arg(long, value_name = "MARKDOWN")]
    pub prepend: Option<String>,
    /// A whole new body (the title heading is kept; other body edits are then ignored).
    #[arg(long, value_name = "MARKDOWN")]
    pub content: Option<String>,
    /// The `contentHash` you read (`specs view`): the update is refused if the spec changed
    /// since.
    #[arg(long, value_name = "HASH")]
    pub expected_hash: Option<String>,
    /// Complete a spec with unchecked items or incomplete children, or move a draft straight
    /// to in-progress or complete.
    #[arg(short, long)]
    pub force: bool,
}

/// One relationship of a spec: exactly one of --parent, --child, --depends-on.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("link").required(true).args(["parent", "child", "depends_on"])))]
pub struct SpecLinkArgs {
    /// The spec.
    pub spec: String,
    /// Its parent (umbrella) spec.
    #[arg(long, value_name = "SPEC")]
    pub parent: Option<String>,
    /// A child spec.
    #[arg(long, value_name = "SPEC")]
    pub child: Option<String>,
    /// A spec it depends on.
    #[arg(long, value_name = "SPEC")]
    pub depends_on: Option<String>,
}
