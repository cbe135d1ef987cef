//! The one assembly of a project: from its loaded configuration to the hub with its sources
//! (the workspace pack, script tools, code mode, the chat's human input, the upstream servers),
//! the execution log, the chat engine and what the channels serve. Every command that touches
//! tools opens an [`Assembly`] and takes what it needs from it; this is where a new source is
//! plugged in.
//!
//! A configuration is put in force by one function, [`Assembly::put_in_force`], part by part:
//! opening is putting a configuration in force over nothing, and a reload
//! ([`Assembly::reload`], what `serve`'s writer and watcher call) puts in force what differs
//! from the configuration in force, under the same conditions. A part read only at start (the
//! root, workspace limits, the log, the providers and the chat engine they shape, the idle time
//! of MCP sessions) stays as opened, and a change to it is named in a warning instead of being
//! half applied.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use anyhow::Context;
use toolmux_chat::{ChatEngine, EngineSettings, Providers, SamplingSettings, SqliteStore};
use toolmux_config::{Config, LoadedConfig};
use toolmux_core::{BuiltinResources, Hub, HubSettings, NamePattern, ResourceProvider};
use toolmux_execlog::{ExecutionLog, LogBudget, LogSettings};
use toolmux_http::LiveOptions;
use toolmux_mcp_server::ServeOptions;
use toolmux_workspace::{ProjectRoot, ProtectedPaths, WorkspaceLimits, WorkspacePack};

use crate::access::{Access, AccessError};
use crate::exit::Failure;
use crate::project::{load_config, locate, log_dir};
use crate::rest_upstreams::UpstreamView;

/// A project's hub with its sources, its execution log and what its channels share, built from
/// one configuration and kept current by [`Assembly::reload`].
pub struct Assembly {
    /// The configuration the assembly was opened with. The parts read only at start follow it
    /// for the assembly's life (the root scripts run in included); [`Assembly::reload`] keeps
    /// its own record of the configuration in force.
    pub loaded: LoadedConfig,
    /// The catalog and the pipeline every channel calls through.
    pub hub: Hub,
    /// The execution log; commands flush it before they exit.
    pub log: Arc<ExecutionLog>,
    /// Counts every call for `/metrics`; the hub records into it and it passes records on to
    /// the execution log.
    pub metrics: Arc<toolmux_api::CallMetrics>,
    /// The upstream servers (the `mcpServers` section; their sources are in the hub); dropping
    /// this stops the running ones cleanly.
    pub upstreams: Arc<toolmux_upstream::Upstreams>,
    /// Everything waiting for a person — calls with policy `ask`, questions, servers' forms,
    /// coding agents' permission requests — shared by every channel of the process (the REST
    /// API and the web app answer them, the chat stream shows those of its conversation).
    pub approvals: Arc<toolmux_core::ApprovalQueue>,
    /// toolmux's own resources (the spec pack's `spec://…`), served by the MCP channel and the
    /// REST API beside the upstream servers'; set at start with the packs that offer them.
    resources: OnceLock<BuiltinResources>,
    /// The chat engine, built the first time a command asks for it.
    chat: OnceLock<Arc<ChatEngine>>,
    /// Who may use the HTTP server, when one serves this assembly.
    access: OnceLock<Access>,
    /// The configuration in force: the one opened, then each reload's.
    in_force: Mutex<LoadedConfig>,
    /// Coding sessions (the `sessions` source's), kept to put a changed `runners` in force.
    sessions: OnceLock<toolmux_sessions::Sessions>,
    /// Their tools, kept to hand sessions to a running `serve` from a one-shot command.
    sessions_source: OnceLock<toolmux_sessions::SessionsSource>,
    /// The project root every pack that works in it is given a clone of, so that one set of
    /// protected paths (`.toolmux/`, the registries, LeanSpec's configuration: what no write
    /// may change) is in force for all of them and a reload's `registries` reach them all.
    project_root: ProjectRoot,
    /// What `shell` and `code_execution` may never change or reach: the configuration's files
    /// (kept current by every reload) and, under `serve --socket`, the socket.
    pub exec_protected: toolmux_exec::Protected,
    /// The pipeline's last step: every result shaped by `toolSettings.<name>.output` and the
    /// channels' default caps, what it cuts kept whole under `.toolmux/state/results/`.
    pub shaper: Arc<toolmux_shaping::Shaper>,
}

/// How long stopping waits for one coding session to be recorded as ended: its runner's
/// SIGTERM grace (2 s) and the sweep after it, with room to spare.
const SESSION_STOP_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);
/// How long a one-shot command follows a session it started before it gives up waiting: past
/// any session's own time limit ([`Assembly::finish_sessions`]).
const SESSION_WAIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

impl Assembly {
    /// Finds the project, loads its configuration and puts it in force.
    pub fn open(given: Option<&std::path::Path>) -> Result<Self, Failure> {
        let project_dir = locate(given)?;
        let loaded = load_config(&project_dir)?;
        let config = &loaded.config;
        let log = Arc::new(
            ExecutionLog::open_with_budget(
                LogSettings {
                    dir: log_dir(&loaded.project_dir),
                    retention_days: config.logs.retention_days,
                    result_cap_bytes: config.logs.result_cap_bytes,
                },
                LogBudget {
                    argument_cap_bytes: config.logs.argument_cap_bytes,
                    whole_file_cap_bytes: config.logs.whole_file_cap_bytes,
                    max_day_bytes: config.logs.max_day_bytes,
                },
            )
            .context("cannot open the execution log")?,
        );
        let metrics = Arc::new(toolmux_api::CallMetrics::new(log.clone()));
        // The settings are the first part `put_in_force` puts in force.
        let hub = Hub::new(HubSettings::default(), metrics.clone());
        let upstreams = Arc::new(toolmux_upstream::Upstreams::new(
            &loaded,
            &toolmux_config::state_dir(&loaded.project_dir),
        ));
        // The state directory is the project directory's, which with `"root": ".."` (or a
        // symbolic `.toolmux`) is not `<root>/.toolmux/state`.
        let project_root = ProjectRoot::with_state_dir(
            &loaded.root,
            toolmux_config::state_dir(&loaded.project_dir),
        )
        .with_context(|| format!("cannot open the project root `{}`", loaded.root.display()))?;
        // Its rules are put in force with the rest; results are kept in the project's state.
        let shaper = Arc::new(toolmux_shaping::Shaper::new(
            toolmux_shaping::ShapingRules::default(),
            Arc::new(toolmux_shaping::SpillStore::for_project(
                &loaded.project_dir,
                toolmux_shaping::SpillSettings::default(),
            )),
        ));
        let assembly = Self {
            in_force: Mutex::new(loaded.clone()),
            loaded,
            hub,
            log,
            metrics,
            upstreams,
            approvals: Arc::new(toolmux_core::ApprovalQueue::new()),
            resources: OnceLock::new(),
            chat: OnceLock::new(),
            access: OnceLock::new(),
            sessions: OnceLock::new(),
            sessions_source: OnceLock::new(),
            project_root,
            exec_protected: toolmux_exec::Protected::default(),
            shaper,
        };
        assembly.put_in_force(None, &assembly.loaded)?;
        Ok(assembly)
    }

    /// Puts a freshly loaded configuration into effect: what changed since the configuration
    /// in force is replaced (each part publishes a new catalog, which MCP clients hear as
    /// `list_changed`), an unchanged part is left alone, so an unrelated edit restarts no
    /// server and rebuilds no source. A configuration file that was read before and is missing
    /// now leaves the configuration in force as it is.
    pub fn reload(&self, loaded: &LoadedConfig) {
        hide_newly_named(loaded);
        let mut in_force = self.in_force.lock().unwrap_or_else(PoisonError::into_inner);
        // The writer's own writes reach the watcher too; an unchanged configuration is not
        // applied twice.
        if *in_force == *loaded {
            return;
        }
        // A file that was read before and is missing now was deleted or renamed away, not
        // emptied on purpose: loading it as empty would drop its keys, deny rules, tools and
        // servers. The watcher checks this too; here it also covers a file that vanished
        // between that check and the read.
        if let Some(gone) = in_force.files.iter().find(|f| !loaded.files.contains(f)) {
            tracing::warn!(
                "the configuration file `{}` is gone; the last good configuration stays in \
                 force (its keys and policies too) until the file is back",
                gone.display()
            );
            return;
        }
        let old = std::mem::replace(&mut *in_force, loaded.clone());
        if let Err(e) = self.put_in_force(Some(&old), loaded) {
            // Only the parts built at start can fail, and a reload builds none of them.
            tracing::warn!(error = ?e, "the changed configuration was not fully applied");
        }
    }

    /// The one way a configuration takes effect, part by part: with no `old` configuration
    /// (opening) every part is built; with one (a reload) only what changed is replaced, and a
    /// changed part that is read only at start is named in a warning. Who may use the HTTP
    /// server comes first, so that a revoked key stops working before anything else changes;
    /// sources are added in the order the catalog lists them: workspace, specs, scripts, code
    /// mode, chat, upstream servers.
    fn put_in_force(&self, old: Option<&LoadedConfig>, new: &LoadedConfig) -> Result<(), Failure> {
        let hub = &self.hub;
        let after = &new.config;
        // Whether a part changed; with nothing before, every part has.
        let changed =
            |part: fn(&Config, &Config) -> bool| old.is_none_or(|old| part(&old.config, after));
        if let Some(access) = self.access.get()
            && changed(|before, after| {
                before.server.access() != after.server.access()
                    || before.principals != after.principals
            })
        {
            match access.options(after) {
                Ok(options) => {
                    access.live.replace(options);
                    tracing::info!("server access settings (keys, hosts, origins) updated");
                }
                // Keeping the previous settings errs on the side of refusing: the edit that
                // failed may have been meant to revoke a key, but applying it half (or opening
                // a server beyond loopback to keyless requests) would be worse.
                Err(e) => tracing::warn!(
                    "`server` changed in the configuration but was not applied, the previous \
                     keys, hosts and origins stay in force: {e}"
                ),
            }
        }
        // Before any source: what no write may change is known before anything can write.
        if changed(|before, after| before.registries != after.registries) {
            self.project_root.protect(ProtectedPaths::for_project(
                &self.loaded.root,
                &self.loaded.project_dir,
                after,
            ));
        }
        if changed(Config::hub_settings_differ) {
            hub.configure(after.hub_settings());
        }
        if changed(|before, after| before.shaping_rules() != after.shaping_rules()) {
            self.shaper.configure(after.shaping_rules());
        }
        if old.is_none() {
            hub.set_shaper(self.shaper.clone());
            hub.add_source(Arc::new(self.workspace()?));
            let skills = Arc::new(self.skills());
            hub.add_source(skills.clone());
            // One set for the process, so that every MCP session shares one poll of it. Set
            // once: the packs are added only when the assembly opens. Skills offer prompts.
            let mut providers: Vec<Arc<dyn ResourceProvider>> =
                self.add_specs().into_iter().collect();
            providers.push(skills);
            // `toolmux://results/<id>`: the whole of a cut result (its tool, `result_read`, is
            // added with the task list).
            providers.push(Arc::new(toolmux_shaping::ResultsPack::new(
                self.shaper.store().clone(),
            )));
            let _ = self.resources.set(BuiltinResources::new(providers));
        }
        if changed(|before, after| before.tools != after.tools) {
            if after.tools.is_empty() {
                hub.remove_source(toolmux_scripts::SOURCE_ID);
            } else {
                // The root is read only at start: scripts run where the workspace pack works.
                hub.add_source(Arc::new(toolmux_scripts::ScriptSource::new(
                    &after.tools,
                    &self.loaded.root,
                )));
            }
        }
        if changed(|before, after| {
            before.url_fetch != after.url_fetch || before.web_search != after.web_search
        }) {
            match web_pack(after) {
                Ok(pack) => hub.add_source(Arc::new(pack)),
                // At start a bad `urlFetch.allow` entry is a configuration error like any
                // other; on a reload the pack in force (and its guard) stays.
                Err(e) if old.is_none() => return Err(Failure::Config(e)),
                Err(e) => tracing::warn!("`urlFetch`/`webSearch` changed but was not applied: {e}"),
            }
        }
        // Every load, whatever changed: a reload may name other registries or skill folders.
        self.exec_protected.set_read_only(exec_read_only(new));
        if changed(|before, after| before.shell != after.shell) {
            // `shell` and `code_execution` run in the root the assembly was opened with.
            hub.add_source(Arc::new(toolmux_exec::ExecPack::with_protected(
                self.project_root.clone(),
                toolmux_exec::ExecSettings::from_config(&after.shell),
                Some(hub.downgrade()),
                self.exec_protected.clone(),
            )));
        }
        if old.is_none() {
            // Code mode calls back into the hub, so it holds it weakly (no reference cycle).
            hub.add_source(Arc::new(toolmux_codemode::CodeModeSource::new(
                hub.downgrade(),
                Default::default(),
            )));
            // `list_resources` and `read_resource`, on every channel: how a model (the chat's
            // above all) reads the servers' resources and toolmux's own.
            hub.add_source(Arc::new(crate::resource_tools::ResourceTools::new(
                self.upstreams.clone(),
                self.resources(),
                hub.downgrade(),
            )));
            // `request_human_input`, on every channel: whoever the call's approver reaches (the
            // queue, for chat calls in their conversation), within the hub's approval limit.
            hub.add_source(Arc::new(
                toolmux_core::HumanInputSource::new().with_hub(hub.downgrade()),
            ));
            // `delegate`, on every channel: a sub-conversation of the chat with the providers
            // opened at start; a missing or broken `providers` section is said when it is called.
            hub.add_source(Arc::new(
                toolmux_chat::DelegateSource::new(
                    hub.downgrade(),
                    Providers::from_config(&after.providers, &after.chat)
                        .map_err(|e| e.to_string()),
                    self.approvals.clone(),
                    EngineSettings::from_config(after, &project_name(&self.loaded)),
                )
                .with_skills(self.skills()),
            ));
        }
        if old.is_none() {
            // The task list, and the internal pack (secrets, configuration, root), which the
            // catalog serves to trusted callers only.
            let project_dir = &self.loaded.project_dir;
            hub.add_source(Arc::new(toolmux_tasks::TasksPack::for_project(project_dir)));
            // `result_read`: how a caller reads the rest of a cut result, on every channel.
            hub.add_source(Arc::new(toolmux_shaping::ResultsPack::new(
                self.shaper.store().clone(),
            )));
            match toolmux_secrets::project_store(project_dir) {
                Ok(store) => hub.add_source(Arc::new(toolmux_internal::InternalPack::new(
                    store,
                    project_dir,
                    toolmux_config::user_config_path().as_deref(),
                    &self.loaded.root,
                ))),
                Err(e) => tracing::warn!("the internal pack is not available: {e}"),
            }
        }
        if old.is_none() {
            // Coding sessions run where the workspace pack works, with its protected paths
            // (an ACP agent writes files through toolmux); an ACP agent's permission requests
            // wait in the approval queue when the caller brings no approver.
            let approver: Arc<dyn toolmux_core::Approver> = self.approvals.clone();
            match toolmux_sessions::Sessions::for_project(
                &self.project_root,
                &toolmux_config::state_dir(&self.loaded.project_dir),
                &after.runners,
                Some(approver),
            ) {
                Ok(sessions) => {
                    // An agent's permission requests wait the configured approval limit.
                    let source = toolmux_sessions::SessionsSource::new(sessions.clone())
                        .with_hub(hub.downgrade());
                    hub.add_source(Arc::new(source.clone()));
                    let _ = self.sessions_source.set(source);
                    let _ = self.sessions.set(sessions);
                }
                Err(e) => tracing::warn!("coding sessions are not available: {e}"),
            }
        } else if let Some(sessions) = self.sessions.get()
            && changed(|before, after| before.runners != after.runners)
        {
            sessions.set_runners(&after.runners);
            tracing::info!("runners (`runners`) updated");
        }
        if let Some(chat) = self.chat.get()
            && changed(|before, after| {
                SamplingSettings::from_config(before) != SamplingSettings::from_config(after)
            })
        {
            chat.set_sampling(SamplingSettings::from_config(after));
            tracing::info!("sampling settings (`chat.sampling`, `mcpServers.*.sampling`) updated");
        }
        match old {
            None => {
                for source in self.upstreams.sources() {
                    hub.add_source(source);
                }
            }
            Some(_) => {
                let report = self.upstreams.apply(new, hub);
                if !report.is_empty() {
                    tracing::info!(
                        added = ?report.added,
                        changed = ?report.changed,
                        reconfigured = ?report.reconfigured,
                        removed = ?report.removed,
                        "upstream servers (`mcpServers`) updated"
                    );
                }
            }
        }
        if let Some(old) = old {
            for field in needs_restart(old, new) {
                tracing::warn!(
                    "`{field}` changed in the configuration, but `toolmux serve` reads it only \
                     at start: restart the server for the change to take effect"
                );
            }
        }
        Ok(())
    }

    /// The spec pack, when the project keeps LeanSpec specs (`specs/`, `docs/specs/`, or where
    /// `.lean-spec/config.json` says): its tools in the hub, its specs as resources. Looked for
    /// at start, like the root. A specs setup that cannot be read leaves the pack out with a
    /// warning: the rest of toolmux works without it.
    fn add_specs(&self) -> Option<Arc<dyn ResourceProvider>> {
        match toolmux_specs::SpecsSource::open(&self.project_root) {
            Ok(Some(specs)) => {
                let specs = Arc::new(specs);
                self.hub.add_source(specs.clone());
                Some(specs)
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!("the spec tools are not available: {e}");
                None
            }
        }
    }

    /// The workspace pack on the root and limits the assembly was opened with.
    fn workspace(&self) -> Result<WorkspacePack, Failure> {
        let loaded = &self.loaded;
        let limits = loaded.config.workspace_limits();
        // The line limit of grep follows from the read cap (`from_read_bytes`).
        let limits = WorkspaceLimits {
            max_results: limits.max_results,
            max_output_bytes: limits.max_output_bytes,
            ..WorkspaceLimits::from_read_bytes(limits.max_read_bytes)
        };
        let workspace = WorkspacePack::on_root(self.project_root.clone(), limits)
            .with_context(|| format!("cannot open the project root `{}`", loaded.root.display()))?;
        Ok(workspace)
    }

    /// The chat's providers, as opened.
    pub fn providers(&self) -> Result<Providers, Failure> {
        let config = &self.loaded.config;
        Providers::from_config(&config.providers, &config.chat)
            .map_err(|e| Failure::Config(e.to_string()))
    }

    /// The conversation database, `.toolmux/state/toolmux.db`.
    pub fn conversation_store(&self) -> Result<Arc<SqliteStore>, Failure> {
        let path = self.loaded.project_dir.join(toolmux_chat::DATABASE_PATH);
        let store = SqliteStore::open(&path)
            .with_context(|| format!("cannot open the state database `{}`", path.display()))?;
        Ok(Arc::new(store))
    }

    /// The chat engine: the providers, the conversation database, the approval queue and the
    /// question list, built on the first call and shared by every later one (the terminal
    /// chat, `/api/chat`), with the sampling settings in force.
    pub fn chat_engine(&self) -> Result<Arc<ChatEngine>, Failure> {
        if let Some(engine) = self.chat.get() {
            return Ok(engine.clone());
        }
        // Held while the engine is built, so that a reload cannot slip between reading the
        // sampling settings and the engine becoming the one reloads update.
        let in_force = self.in_force.lock().unwrap_or_else(PoisonError::into_inner);
        let name = project_name(&self.loaded);
        let engine = Arc::new(
            ChatEngine::new(
                self.hub.clone(),
                self.providers()?,
                self.conversation_store()?,
                self.approvals.clone(),
                EngineSettings::from_config(&self.loaded.config, &name),
            )
            .with_skills(self.skills()),
        );
        engine.set_sampling(SamplingSettings::from_config(&in_force.config));
        Ok(self.chat.get_or_init(|| engine).clone())
    }

    /// The Agent Skills source: skills live beside the configuration (`.toolmux/skills/`,
    /// `.claude/skills/`) and in the user's config folder; their paths are shown from the
    /// root, where the workspace tools read them. It holds no state, so the hub's source and the
    /// chat's prompt each take one.
    fn skills(&self) -> toolmux_skills::SkillsSource {
        toolmux_skills::SkillsSource::new(
            &self.loaded.root,
            toolmux_skills::default_roots(
                &self.loaded.project_dir,
                &self.loaded.config.skills.paths,
            ),
        )
    }

    /// toolmux's own resources and prompts: the spec pack's, when the project has specs, and
    /// the skills'.
    pub fn resources(&self) -> BuiltinResources {
        self.resources.get().cloned().unwrap_or_default()
    }

    /// Cancels the coding sessions this process runs and waits until each is recorded as
    /// ended (at most [`SESSION_STOP_LIMIT`] each): how a long-running command stops.
    pub async fn stop_sessions(&self) {
        if let Some(sessions) = self.sessions.get() {
            sessions.shutdown(SESSION_STOP_LIMIT).await;
        }
    }

    /// What a one-shot command (`toolmux mcp` over stdio, `tools call`) does as it starts: the
    /// sessions its calls start are handed to the project's running `serve` when there is one
    /// (`crate::handoff`), so that they outlive this process; without one they run here and
    /// [`Assembly::finish_sessions`] waits for them.
    pub fn hand_sessions_to_serve(&self) {
        if let Some(source) = self.sessions_source.get() {
            source.hand_off_to(Arc::new(crate::handoff::ServeHandoff::new(
                &toolmux_config::state_dir(&self.loaded.project_dir),
            )));
        }
    }

    /// What a one-shot command (`toolmux mcp` over stdio, `tools call`) does before it exits
    /// with coding sessions it started still running: they are supervised by this process, so
    /// exiting would kill them and leave them `lost` (issue 29). It says so on stderr and waits
    /// until each has ended, which its own time limit bounds; Ctrl-C cancels them instead.
    pub async fn finish_sessions(&self) {
        let Some(sessions) = self.sessions.get() else {
            return;
        };
        let running = sessions.running();
        if running.is_empty() {
            return;
        }
        eprintln!(
            "toolmux: waiting for {} coding session(s) to finish before exiting ({}); Ctrl-C \
             cancels them",
            running.len(),
            running.join(", ")
        );
        let ended = async {
            for id in &running {
                if let Err(e) = sessions.wait(id, SESSION_WAIT_LIMIT).await {
                    tracing::warn!(session = %id, error = %e, "cannot follow a session to its end");
                }
            }
        };
        tokio::select! {
            () = ended => {}
            interrupted = tokio::signal::ctrl_c() => {
                if let Err(e) = interrupted {
                    tracing::warn!(error = %e, "cannot listen for Ctrl-C; cancelling the sessions");
                }
                sessions.shutdown(SESSION_STOP_LIMIT).await;
            }
        }
    }

    /// What the MCP channel serves: the serve-time filters (`--tools`, `--exclude`,
    /// `--pass-through`, `--code-mode`, `--discovery`, as plain values: the assembly knows no command line) as
    /// the server's options, relaying the upstream servers and serving toolmux's own resources;
    /// the HTTP fields stay at their defaults.
    pub fn mcp_options(
        &self,
        tools: &[String],
        exclude: &[String],
        pass_through: Option<&str>,
        code_mode: bool,
        discovery: bool,
    ) -> Result<ServeOptions, Failure> {
        let patterns = |list: &[String]| -> Result<Vec<NamePattern>, Failure> {
            list.iter()
                .map(|p| NamePattern::new(p).map_err(|e| Failure::Usage(e.to_string())))
                .collect()
        };
        if let Some(source) = pass_through {
            let catalog = self.hub.catalog();
            if !catalog.sources().iter().any(|s| s.id == source) {
                let known: Vec<&str> = catalog.sources().iter().map(|s| s.id.as_str()).collect();
                return Err(Failure::Usage(format!(
                    "--pass-through: there is no source `{source}`; the sources are: {}",
                    known.join(", ")
                )));
            }
            // A pass-through client expects the server's requests and log levels to be its own.
            self.upstreams.serve_per_client(source);
        }
        Ok(ServeOptions {
            include: patterns(tools)?,
            exclude: patterns(exclude)?,
            pass_through: pass_through.map(str::to_string),
            // The model gets the two code-mode tools and writes scripts, or discovery mode's
            // three and calls by name, for everything else that the filters let through.
            entry_points: toolmux_core::entry_points(code_mode, discovery),
            upstreams: Some(self.upstreams.clone()),
            resources: self.resources(),
            // Read at start: the session table is built once, with the router.
            session_idle_timeout: self.loaded.config.server.session_idle_timeout(),
            ..ServeOptions::default()
        })
    }

    /// The upstream servers as the REST API shows them.
    pub fn upstream_view(&self) -> Arc<dyn toolmux_api::UpstreamServers> {
        Arc::new(UpstreamView {
            upstreams: self.upstreams.clone(),
            hub: self.hub.clone(),
            resources: self.resources(),
        })
    }

    /// Puts `access` in force with the `server` section in force, and keeps it there: later
    /// reloads replace its live options when `server` changes. Returns the options every HTTP
    /// route is checked against.
    pub fn serve_with(&self, access: Access) -> Result<LiveOptions, AccessError> {
        let in_force = self.in_force.lock().unwrap_or_else(PoisonError::into_inner);
        access.live.replace(access.options(&in_force.config)?);
        let live = access.live.clone();
        if self.access.set(access).is_err() {
            // One server per assembly; a second call would leave the first one's options
            // unreloaded, which `serve` never does.
            tracing::warn!("the assembly already serves over HTTP; its access settings stay");
        }
        Ok(live)
    }
}

/// The web pack (`url_fetch`, `web_search`) with the configuration's caps, allowlist and
/// search service.
/// The project's name for the chat's system prompt: its root folder's.
fn project_name(loaded: &LoadedConfig) -> String {
    loaded
        .root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "project".into())
}

fn web_pack(config: &Config) -> Result<toolmux_web::WebPack, String> {
    let settings = toolmux_web::FetchSettings::from(&config.url_fetch);
    let search =
        match &config.web_search {
            None => None,
            Some(search) => {
                use toolmux_config::SearchBackendKind as Kind;
                let key = || {
                    search.api_key.clone().ok_or_else(|| {
                        "`webSearch.apiKey` is required for Brave and Tavily".to_string()
                    })
                };
                let backend =
                    match search.kind {
                        Kind::Searxng => toolmux_web::SearchBackend::Searxng {
                            base_url: search.base_url.clone().ok_or_else(|| {
                                "`webSearch.baseUrl` is required for SearXNG".to_string()
                            })?,
                        },
                        Kind::Brave => toolmux_web::SearchBackend::Brave {
                            base_url: search.base_url.clone().unwrap_or_else(|| {
                                toolmux_web::SearchBackend::BRAVE_URL.to_string()
                            }),
                            api_key: key()?,
                        },
                        Kind::Tavily => toolmux_web::SearchBackend::Tavily {
                            base_url: search.base_url.clone().unwrap_or_else(|| {
                                toolmux_web::SearchBackend::TAVILY_URL.to_string()
                            }),
                            api_key: key()?,
                        },
                    };
                Some(toolmux_web::SearchSettings {
                    backend,
                    max_results: search.max_results.unwrap_or(5) as usize,
                    timeout: settings.timeout,
                })
            }
        };
    toolmux_web::WebPack::new(settings, search).map_err(|e| e.to_string())
}

/// The fields that changed and are only read at start. The listen address, port and socket
/// are command-line flags, not configuration, so no edit can change them.
fn needs_restart(old: &LoadedConfig, new: &LoadedConfig) -> Vec<&'static str> {
    let (before, after) = (&old.config, &new.config);
    [
        ("root", old.root != new.root),
        ("workspace", before.workspace != after.workspace),
        ("logs", before.logs != after.logs),
        ("providers", before.providers != after.providers),
        ("skills", before.skills != after.skills),
        (
            "server.sessionIdleTimeoutMs",
            before.server.session_idle_timeout_ms != after.server.session_idle_timeout_ms,
        ),
        // `chat.sampling` applies live; the rest of `chat` shapes the engine at start.
        ("chat", {
            let without_sampling = |c: &toolmux_config::ChatSettings| {
                let mut c = c.clone();
                c.sampling = Default::default();
                c
            };
            without_sampling(&before.chat) != without_sampling(&after.chat)
        }),
    ]
    .into_iter()
    .filter(|(_, changed)| *changed)
    .map(|(field, _)| field)
    .collect()
}

/// What `shell` and `code_execution` may read but never change, although it may lie beneath
/// the project root: the files that decide what toolmux runs and how — `.toolmux/` (the
/// configuration, state, secrets, project skills), the configuration files read, the
/// registries, the configured skill folders, and where present `.claude/skills` and
/// `.lean-spec/config.{json,yaml}`, and what configured tools and servers run from there
/// ([`run_from_beneath_root`]). A command that could rewrite them could switch its own sandbox
/// off for the next call, or add a server that runs unsandboxed.
fn exec_read_only(loaded: &LoadedConfig) -> Vec<std::path::PathBuf> {
    let project = &loaded.project_dir;
    let config = toolmux_config::project_config_path(project);
    let mut paths: Vec<_> = config
        .parent()
        .map(std::path::Path::to_path_buf)
        .into_iter()
        .collect();
    paths.extend(loaded.files.iter().cloned());
    paths.extend(toolmux_config::registry_paths(&loaded.config, project));
    // What no write tool may change either (the registries' link targets among them): one list
    // for both, with the sandbox's own additions around it. The write tools refuse a protected
    // name before it exists; a mount can only cover what exists, and the named registries
    // above already report a missing one.
    let writes = ProtectedPaths::for_project(&loaded.root, project, &loaded.config);
    paths.extend(
        writes
            .iter()
            .map(|protected| protected.path.clone())
            .filter(|path| path.symlink_metadata().is_ok()),
    );
    paths.extend(loaded.config.skills.paths.iter().map(|p| project.join(p)));
    for optional in [
        project.join(".claude/skills"),
        loaded.root.join(".lean-spec/config.json"),
        loaded.root.join(".lean-spec/config.yaml"),
    ] {
        if optional.symlink_metadata().is_ok() {
            paths.push(optional);
        }
    }
    paths.extend(run_from_beneath_root(loaded));
    paths.sort();
    paths.dedup();
    paths
}

/// What configured script tools and stdio servers run from beneath the project root: every
/// word of a command line that names an existing file there (`./scripts/lint.sh`, `node
/// server.js`), the folder holding each such file — where an interpreter finds what the
/// program imports (`helper.py` beside it, its `node_modules`, and a planted `json.py` that
/// would shadow Python's own) — and a `cwd` set beneath the root (`python3 -m tool` imports
/// from there). A sandboxed command that changed one would have its code run unsandboxed at
/// the tool's next call. The root itself is never one of the folders (the whole project would
/// be read-only): what sits beside a program at the root, programs found on `PATH` and packages
/// a tool installs elsewhere beneath the root (the root's `node_modules`, a virtualenv) are not
/// covered.
fn run_from_beneath_root(loaded: &LoadedConfig) -> Vec<std::path::PathBuf> {
    use toolmux_config::UpstreamTransport;

    let Ok(root) = std::fs::canonicalize(&loaded.root) else {
        return Vec::new();
    };
    let tools = loaded.config.tools.values().map(|tool| {
        let base = loaded
            .root
            .join(tool.cwd.as_deref().unwrap_or(std::path::Path::new("")));
        (base, tool.cwd.is_some(), tool.command.clone())
    });
    let servers = loaded
        .config
        .upstreams
        .values()
        .filter_map(|server| match &server.transport {
            UpstreamTransport::Stdio {
                command, args, cwd, ..
            } => {
                let base = loaded
                    .project_dir
                    .join(cwd.as_deref().unwrap_or(std::path::Path::new("")));
                let words = std::iter::once(command.clone()).chain(args.iter().cloned());
                Some((base, cwd.is_some(), words.collect::<Vec<_>>()))
            }
            _ => None,
        });
    let beneath_root = |path: &std::path::Path| path != root && path.starts_with(&root);
    let mut paths = Vec::new();
    for (base, has_cwd, words) in tools.chain(servers) {
        let files = words
            .iter()
            .filter(|word| !word.starts_with('-'))
            .filter_map(|word| std::fs::canonicalize(base.join(word)).ok())
            .filter(|path| beneath_root(path) && path.is_file());
        for file in files {
            paths.extend(
                file.parent()
                    .filter(|folder| beneath_root(folder))
                    .map(std::path::Path::to_path_buf),
            );
            paths.push(file);
        }
        if has_cwd
            && let Ok(cwd) = std::fs::canonicalize(&base)
            && beneath_root(&cwd)
        {
            paths.push(cwd);
        }
    }
    paths
}

/// What `main` does at start for the variables the configuration names, done again for a
/// reloaded one: a `${VAR}` a configuration or registry file names for the first time leaves
/// toolmux's environment and `/proc`, its value kept for toolmux's own lookups, so that a
/// child that inherits the whole environment does not get it unless configured to.
fn hide_newly_named(loaded: &LoadedConfig) {
    // The texts this load read: nothing is read again.
    let named = toolmux_scripts::environ::references_in(&loaded.texts);
    #[allow(unsafe_code)]
    // SAFETY: nothing else in toolmux changes its environment after start, and its own reads
    // go through Rust's environment lock; a C library's `getenv` on another thread meanwhile
    // (the resolver's, rarely) is the risk `hide_newly_named` describes, glibc's `unsetenv`
    // freeing nothing it could read.
    let hidden = unsafe { toolmux_scripts::environ::hide_newly_named(&named) };
    if !hidden.names.is_empty() {
        tracing::info!(
            names = %hidden.names.join(" "),
            overwritten = hidden.overwritten,
            "variables the reloaded configuration names taken out of toolmux's environment \
             (children get them only through a configured `env`)"
        );
    }
    for problem in &hidden.problems {
        tracing::warn!("{problem}");
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::{Value, json};
    use toolmux_core::{CallContext, Channel};

    use super::*;

    fn write_config(project: &Path, config: Value) {
        let path = toolmux_config::project_config_path(project);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("config dir");
        std::fs::write(&path, config.to_string()).expect("config written");
    }

    fn script(description: &str) -> Value {
        json!({"description": description, "command": ["pwd"], "policy": "allow"})
    }

    #[tokio::test]
    async fn a_reload_applies_script_tools_but_keeps_them_in_the_root_the_assembly_opened() {
        let project = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(project.path().join("elsewhere")).expect("subdir");
        write_config(
            project.path(),
            json!({"tools": {"where": script("Prints its directory.")}}),
        );
        let assembly = Assembly::open(Some(project.path())).expect("opens");

        // One edit changes the tools, which apply at once, and the root, which is read only at
        // start: the scripts keep running where the workspace pack works.
        write_config(
            project.path(),
            json!({"root": "elsewhere", "tools": {
                "where": script("Prints its directory."),
                "also": script("Prints its directory too."),
            }}),
        );
        assembly.reload(&load_config(project.path()).expect("loads"));

        assert!(assembly.hub.catalog().get("also").is_some());
        let printed = assembly
            .hub
            .call("where", json!({}), &CallContext::new(Channel::Cli))
            .await
            .expect("the script runs");
        let opened = std::fs::canonicalize(project.path()).expect("canonical");
        assert_eq!(printed.text_content().trim(), opened.display().to_string());
    }

    #[tokio::test]
    async fn the_human_input_tool_is_there_with_or_without_a_chat_provider() {
        let project = tempfile::tempdir().expect("tempdir");
        write_config(project.path(), json!({}));
        let without = Assembly::open(Some(project.path())).expect("opens");
        assert!(without.hub.catalog().get("request_human_input").is_some());
    }
}
