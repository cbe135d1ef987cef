// The upstream MCP servers: their discovery state and tools; add one by form or by pasting an
// `mcpServers` block as other clients keep it; replace, remove, refresh; their prompts and
// resources.
import { useCallback, useEffect, useState, type FormEvent } from "react";
import { api, describe } from "../api";
import { JsonTree } from "../components/JsonTree";

interface Server {
  name: string;
  prefix: string;
  discovery: Record<string, unknown> | null;
  tools: string[];
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
  const [busy, setBusy] = useState(false);
  const add = async (entries: Record<string, unknown>[]) => {
    setBusy(true);
    setError(null);
    setStatus(null);
    const done: string[] = [];
    try {
      for (const entry of entries) {
        const added = await api<Server>("/api/mcp-servers", { method: "POST", body: entry });
        done.push(`${added.name} (${added.tools.length} tools)`);
      }
      setStatus(`Added ${done.join(", ")}.`);
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
    </section>
  );
}

function ServerRow({ server, onChanged }: { server: Server; onChanged: () => Promise<void> }) {
  const [error, setError] = useState<string | null>(null);
  const [editing, setEditing] = useState(false);
  const [entry, setEntry] = useState("");
  const d = server.discovery ?? {};
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
        <span className={`badge status-${String(d.discoveryStatus ?? "never")}`}>{String(d.discoveryStatus ?? "never")}</span>
        <span className="muted" data-testid="tool-count">
          {server.tools.length} tools
        </span>
        {typeof d.lastDiscovery === "string" && <span className="muted">discovered {new Date(d.lastDiscovery).toLocaleString()}</span>}
      </header>
      {typeof d.discoveryError === "string" && <p className="error">{d.discoveryError}</p>}
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
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </li>
  );
}

function Offered() {
  const [prompts, setPrompts] = useState<unknown[] | null>(null);
  const [resources, setResources] = useState<unknown[] | null>(null);
  useEffect(() => {
    api<{ prompts?: unknown[] }>("/api/prompts")
      .then((r) => setPrompts(r.prompts ?? []))
      .catch(() => setPrompts([]));
    api<{ resources?: unknown[] }>("/api/resources")
      .then((r) => setResources(r.resources ?? []))
      .catch(() => setResources([]));
  }, []);
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

export default function Servers() {
  const [servers, setServers] = useState<Server[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loads, setLoads] = useState(0);
  const load = useCallback(async () => {
    try {
      const r = await api<{ servers?: Server[] } | Server[]>("/api/mcp-servers");
      setServers(Array.isArray(r) ? r : (r.servers ?? []));
      setLoads((n) => n + 1);
      setError(null);
    } catch (e) {
      setError(describe(e));
    }
  }, []);
  useEffect(() => void load(), [load]);
  // While a server is being discovered, look again each second until it is done.
  const discovering = servers?.some((s) => s.discovery?.discoveryStatus === "discovering");
  useEffect(() => {
    if (!discovering) return;
    const timer = window.setInterval(() => void load(), 1000);
    return () => window.clearInterval(timer);
  }, [discovering, load]);
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
      {/* Read again whenever the servers change: a new server brings its prompts. */}
      <Offered key={loads} />
    </div>
  );
}
