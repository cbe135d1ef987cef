// The upstream MCP servers: transport, on/off, discovery state and tools, the end of each one's
// stderr log; add one by form or by pasting an `mcpServers` block as other clients keep it, or
// import those other clients' files; replace, remove, refresh, sign in (OAuth); their prompts
// and resources.
import { useCallback, useEffect, useRef, useState, type FormEvent } from "react";
import { api, describe, type Schemas } from "../api";
import { JsonTree } from "../components/JsonTree";
import { useQuery, useQueryClient } from "@tanstack/react-query";

/// A server as the list shows it; its detail adds the stderr tail.
type Server = Schemas["McpServerView"] & Partial<Pick<Schemas["McpServerDetail"], "stderrTail">>;

/// A server's discovery status; `needs-sign-in` asks for the Sign in button.
const statusOf = (s: Server) => String(s.discovery?.discoveryStatus ?? s.discovery?.status ?? "never");

/// How long the page waits for a sign-in finished in the other tab.
const SIGN_IN_WAIT_MS = 5 * 60_000;

function StderrTail({ server }: { server: Server }) {
  // Read when the person opens it, and again when they ask.
  const [open, setOpen] = useState(false);
  const tail = useQuery({
    queryKey: [...SERVERS, server.name, "stderr"],
    queryFn: async () => (await api<Server>(`/api/mcp-servers/${encodeURIComponent(server.name)}`)).stderrTail ?? [],
    enabled: open,
  });
  const lines = tail.data ?? null;
  const error = tail.error ? describe(tail.error) : null;
  const load = () => tail.refetch();
  return (
    <details className="stderr" onToggle={(e) => setOpen((e.target as HTMLDetailsElement).open)}>
      <summary>Log (stderr)</summary>
      {error && <p className="error">{error}</p>}
      {lines === null ? (
        <p className="muted">Loading…</p>
      ) : lines.length === 0 ? (
        <p className="muted">Nothing logged yet.</p>
      ) : (
        <pre className="stderr-tail" tabIndex={0} aria-label={`Log of ${server.name}`}>
          {lines.join("\n")}
        </pre>
      )}
      <button type="button" onClick={() => void load()}>
        Reload the log of {server.name}
      </button>
    </details>
  );
}

/// Sign in to a server that needs OAuth: toolmux gives the authorization URL, the person signs
/// in in a new tab, and the page looks at the server until its status moves on.
function SignIn({ server, onChanged }: { server: Server; onChanged: () => Promise<void> }) {
  const [state, setState] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const cancelled = useRef(false);
  useEffect(() => () => void (cancelled.current = true), []);
  const path = `/api/mcp-servers/${encodeURIComponent(server.name)}`;
  const signIn = async () => {
    setError(null);
    // Opened while the click is still being handled, so no pop-up blocker stops it; it gets
    // its address once toolmux has made one.
    const tab = window.open("", "_blank");
    try {
      const { authorizationUrl } = await api<{ authorizationUrl: string | null }>(`${path}/login`, { method: "POST" });
      if (!authorizationUrl) {
        // Signed in without a person (client credentials): nothing to open.
        tab?.close();
        setState("Signed in.");
        await onChanged();
        return;
      }
      if (tab) {
        tab.opener = null;
        tab.location.href = authorizationUrl;
      } else window.open(authorizationUrl, "_blank", "noopener");
      setState("Waiting for the sign-in in the other tab…");
      const until = Date.now() + SIGN_IN_WAIT_MS;
      while (!cancelled.current && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 1500));
        const view = await api<Server>(path);
        if (statusOf(view) !== "needs-sign-in") {
          setState(`Signed in: ${statusOf(view)}.`);
          await onChanged();
          return;
        }
      }
      setState(null);
      if (!cancelled.current) setError("The sign-in did not finish; try again.");
    } catch (e) {
      tab?.close();
      setState(null);
      setError(describe(e));
    }
  };
  return (
    <div className="actions">
      <button type="button" onClick={() => void signIn()} disabled={state !== null}>
        Sign in to {server.name}
      </button>
      {state && <span role="status">{state}</span>}
      {error && (
        <span role="alert" className="error">
          {error}
        </span>
      )}
    </div>
  );
}

type ImportReport = Schemas["ImportReport"];

/// `toolmux import` from the page: the MCP servers of Claude Code, Cursor, VS Code and Codex.
function Import({ onImported }: { onImported: () => Promise<void> }) {
  const [report, setReport] = useState<ImportReport | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      setReport(await api<ImportReport>("/api/import", { method: "POST", body: {} }));
      await onImported();
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="import" aria-labelledby="import-title">
      <h2 id="import-title">Import from other clients</h2>
      <p className="muted">
        The servers of Claude Code (<code>.mcp.json</code>), Cursor (<code>.cursor/mcp.json</code>), VS Code (
        <code>.vscode/mcp.json</code>) and Codex (<code>~/.codex/config.toml</code>); a name toolmux has already is
        kept.
      </p>
      <button type="button" onClick={() => void run()} disabled={busy}>
        {busy ? "Importing…" : "Import"}
      </button>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {report && (
        <div role="status" className="import-report">
          <p>
            {report.files.length === 0
              ? "Found no file of another client."
              : `Read ${report.files.join(", ")}: added ${report.servers.length} server(s).`}
          </p>
          {report.added.length > 0 && (
            <ul className="import-added">
              {report.added.map((line) => (
                <li key={line}>{line}</li>
              ))}
            </ul>
          )}
          {report.skipped.length > 0 && (
            <ul className="import-skipped muted">
              {report.skipped.map((line) => (
                <li key={line}>skipped {line}</li>
              ))}
            </ul>
          )}
        </div>
      )}
    </section>
  );
}

/// Entries to add, from what was pasted: `{"mcpServers": {...}}`, the bare map of servers, or
/// one entry with its `name`.
export function entriesOf(text: string): Record<string, unknown>[] {
  const json = JSON.parse(text) as Record<string, unknown>;
  const map = (json.mcpServers ?? json.servers ?? json) as Record<string, unknown>;
  if (typeof map.name === "string" && (map.command || map.url)) return [map];
  return Object.entries(map).map(([name, entry]) => ({ name, ...(entry as object) }));
}

function AddServer({ onAdded }: { onAdded: () => Promise<void> }) {
  const [mode, setMode] = useState<"form" | "paste">("paste");
  const [pasted, setPasted] = useState("");
  const [name, setName] = useState("");
  const [command, setCommand] = useState("");
  const [url, setUrl] = useState("");
  const [status, setStatus] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Servers added whose discovery failed: said as failures, with the end of their stderr.
  const [failed, setFailed] = useState<{ name: string; error: string; stderr: string[] }[]>([]);
  const [busy, setBusy] = useState(false);
  const add = async (entries: Record<string, unknown>[]) => {
    setBusy(true);
    setError(null);
    setStatus(null);
    setFailed([]);
    const done: string[] = [];
    const broken: typeof failed = [];
    try {
      for (const entry of entries) {
        const added = await api<Server>("/api/mcp-servers", { method: "POST", body: entry });
        const why = added.discovery?.discoveryError;
        if (typeof why === "string") {
          // Its stderr says why more often than the error does.
          const stderr = await api<Server>(`/api/mcp-servers/${encodeURIComponent(added.name)}`)
            .then((s) => s.stderrTail ?? [])
            .catch(() => []);
          broken.push({ name: added.name, error: why, stderr });
        } else done.push(`${added.name} (${added.tools.length} tools)`);
      }
      if (done.length > 0) setStatus(`Added ${done.join(", ")}.`);
      setFailed(broken);
      setPasted("");
      await onAdded();
    } catch (e) {
      setError(describe(e));
      await onAdded();
    } finally {
      setBusy(false);
    }
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    try {
      if (mode === "paste") void add(entriesOf(pasted));
      else {
        const [cmd, ...args] = command.trim().split(/\s+/).filter(Boolean);
        void add([url ? { name, url } : { name, command: cmd, args }]);
      }
    } catch (err) {
      setError(`That is not JSON: ${describe(err)}`);
    }
  };
  return (
    <section className="add-server" aria-labelledby="add-title">
      <h2 id="add-title">Add a server</h2>
      <div role="radiogroup" aria-label="How to add" className="actions">
        <label className="check">
          <input type="radio" name="mode" checked={mode === "paste"} onChange={() => setMode("paste")} /> Paste JSON
        </label>
        <label className="check">
          <input type="radio" name="mode" checked={mode === "form"} onChange={() => setMode("form")} /> Form
        </label>
      </div>
      <form onSubmit={submit}>
        {mode === "paste" ? (
          <div className="field">
            <label htmlFor="paste">An <code>mcpServers</code> block, as other clients keep it</label>
            <textarea
              id="paste"
              rows={6}
              placeholder={'{"mcpServers": {"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}}}'}
              value={pasted}
              onChange={(e) => setPasted(e.target.value)}
            />
          </div>
        ) : (
          <>
            <div className="field">
              <label htmlFor="server-name">Name</label>
              <input id="server-name" value={name} required onChange={(e) => setName(e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor="server-command">Command and arguments (local server)</label>
              <input id="server-command" value={command} onChange={(e) => setCommand(e.target.value)} />
            </div>
            <div className="field">
              <label htmlFor="server-url">Or URL (HTTP server)</label>
              <input id="server-url" type="url" value={url} onChange={(e) => setUrl(e.target.value)} />
            </div>
          </>
        )}
        <button type="submit" disabled={busy}>
          {busy ? "Adding…" : "Add"}
        </button>
      </form>
      {status && (
        <p role="status" className="ok">
          {status}
        </p>
      )}
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {failed.map((f) => (
        <div role="alert" className="error add-failed" key={f.name}>
          <p>
            Added {f.name}, but its tools could not be listed: {f.error}
          </p>
          {f.stderr.length > 0 && (
            <pre className="stderr-tail" tabIndex={0} aria-label={`Log of ${f.name}`}>
              {f.stderr.join("\n")}
            </pre>
          )}
        </div>
      ))}
    </section>
  );
}

function ServerRow({ server, onChanged }: { server: Server; onChanged: () => Promise<void> }) {
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState(false);
  const [entry, setEntry] = useState("");
  const d = server.discovery ?? {};
  const status = statusOf(server);
  const act = async (f: () => Promise<unknown>) => {
    setError(null);
    try {
      await f();
      await onChanged();
    } catch (e) {
      setError(describe(e));
    }
  };
  const path = `/api/mcp-servers/${encodeURIComponent(server.name)}`;
  return (
    <li className="server" aria-label={`Server ${server.name}`} data-server={server.name}>
      <header>
        <h2>{server.name}</h2>
        <span className={`badge status-${status}`} data-testid="status">
          {status}
        </span>
        {server.transport && (
          <span className="badge" data-testid="transport">
            {server.transport}
          </span>
        )}
        <span className={server.enabled === false ? "badge off" : "badge"} data-testid="enabled">
          {server.enabled === false ? "disabled" : "enabled"}
        </span>
        <span className="muted" data-testid="tool-count">
          {server.tools.length} tools
        </span>
        {typeof d.lastDiscovery === "string" && <span className="muted">discovered {new Date(d.lastDiscovery).toLocaleString()}</span>}
      </header>
      {typeof d.discoveryError === "string" && <p className="error">{d.discoveryError}</p>}
      {status === "needs-sign-in" && <SignIn server={server} onChanged={onChanged} />}
      <div className="actions">
        <button type="button" onClick={() => void act(() => api(`${path}/refresh`, { method: "POST" }))}>
          Refresh {server.name}
        </button>
        <button type="button" onClick={() => setEditing((e) => !e)} aria-expanded={editing}>
          Edit {server.name}
        </button>
        <button
          type="button"
          className="danger"
          onClick={() => {
            if (confirm(`Remove ${server.name}?`)) void act(() => api(path, { method: "DELETE" }));
          }}
        >
          Remove {server.name}
        </button>
      </div>
      {editing && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            try {
              const body = JSON.parse(entry);
              void act(() => api(path, { method: "PUT", body })).then(() => setEditing(false));
            } catch (err) {
              setError(`That is not JSON: ${describe(err)}`);
            }
          }}
        >
          <div className="field">
            <label htmlFor={`entry-${server.name}`}>
              The new entry (JSON: <code>command</code>/<code>args</code> or <code>url</code>,{" "}
              <code>enabled</code>, <code>policy</code>…)
            </label>
            <textarea id={`entry-${server.name}`} rows={4} value={entry} onChange={(e) => setEntry(e.target.value)} />
          </div>
          <button type="submit">Replace</button>
        </form>
      )}
      <details>
        <summary>Tools</summary>
        <ul>
          {server.tools.map((t) => (
            <li key={t}>
              <a href={`/tools/${encodeURIComponent(t)}`}>{t}</a>
            </li>
          ))}
        </ul>
      </details>
      <details>
        <summary>Discovery</summary>
        <JsonTree value={d} />
      </details>
      <StderrTail server={server} />
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </li>
  );
}

/// A list being read: `null` while it is, empty when the read failed (nothing to show, rather
/// than "…" for ever).
function offered(query: { data?: unknown[]; isError: boolean }): unknown[] | null {
  return query.data ?? (query.isError ? [] : null);
}

/// What the servers offer besides tools, read again whenever `servers` (their names and
/// discovery states) changes: a new server brings its prompts. A failed read lists nothing.
function Offered({ servers }: { servers: string }) {
  const prompts = offered(
    useQuery({
      queryKey: ["prompts", servers],
      queryFn: async () => (await api<{ prompts?: unknown[] }>("/api/prompts")).prompts ?? [],
    }),
  );
  const resources = offered(
    useQuery({
      queryKey: ["resources", servers],
      queryFn: async () => (await api<{ resources?: unknown[] }>("/api/resources")).resources ?? [],
    }),
  );
  return (
    <section aria-labelledby="offered-title">
      <h2 id="offered-title">Prompts and resources</h2>
      <details>
        <summary>Prompts ({prompts?.length ?? "…"})</summary>
        <ul className="offered-prompts">
          {(prompts ?? []).map((p, i) => {
            const prompt = p as { name?: string; description?: string; server?: string };
            return (
              <li key={i}>
                <code>{prompt.name}</code> {prompt.server && <span className="badge">{prompt.server}</span>}{" "}
                <span className="muted">{prompt.description}</span>
                <details>
                  <summary>Details</summary>
                  <JsonTree value={p} />
                </details>
              </li>
            );
          })}
        </ul>
      </details>
      <details>
        <summary>Resources ({resources?.length ?? "…"})</summary>
        <ul className="offered-resources">
          {(resources ?? []).map((r, i) => {
            const resource = r as { uri?: string; name?: string; mimeType?: string; server?: string };
            return (
              <li key={i}>
                <code>{resource.uri}</code> {resource.name}{" "}
                {resource.server && <span className="badge">{resource.server}</span>}{" "}
                <span className="muted">{resource.mimeType}</span>
              </li>
            );
          })}
        </ul>
      </details>
    </section>
  );
}

/// The server list's query: read again (invalidated) after every change made here.
const SERVERS = ["mcp-servers"];

/// Whether a server is being discovered (a server added or imported a moment ago is "never"
/// until its discovery starts).
const discovering = (s: Server) => statusOf(s) === "discovering" || (s.enabled !== false && statusOf(s) === "never");

export default function Servers() {
  const queryClient = useQueryClient();
  const list = useQuery({
    queryKey: SERVERS,
    queryFn: async () => {
      const r = await api<{ servers?: Server[] } | Server[]>("/api/mcp-servers");
      return Array.isArray(r) ? r : (r.servers ?? []);
    },
    // While a server is being discovered, look again each second until it is done.
    refetchInterval: (query) => (query.state.data?.some(discovering) ? 1000 : false),
  });
  const servers = list.data ?? null;
  const error = list.error ? describe(list.error) : null;
  // Only the list itself: a server's log is read when asked for.
  const load = useCallback(() => queryClient.invalidateQueries({ queryKey: SERVERS, exact: true }), [queryClient]);
  return (
    <div className="servers-page">
      <h1>MCP servers</h1>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {servers && servers.length === 0 && <p className="muted">No MCP servers yet.</p>}
      <ul className="plain">
        {servers?.map((s) => (
          <ServerRow key={s.name} server={s} onChanged={load} />
        ))}
      </ul>
      <AddServer onAdded={load} />
      <Import onImported={load} />
      {/* Read again whenever the servers or their discovery change: a new server brings its prompts. */}
      <Offered servers={servers?.map((s) => `${s.name}:${statusOf(s)}`).join(",") ?? ""} />
    </div>
  );
}
