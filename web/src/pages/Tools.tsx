// The catalog: a virtualised list (only the rows in view are in the DOM, so 1,000 tools scroll
// as smoothly as ten), search as you type, filters; a tool's details with its schemas, why its
// policy is what it is, policy and on/off through `PATCH /api/tools/{name}`, and *Try it*.
// Switched-off tools are listed too (`?disabled=true`), greyed and marked "off", with a switch
// in their row that turns them on again.
import { useVirtualizer } from "@tanstack/react-virtual";
import { useDeferredValue, useEffect, useMemo, useRef, useState } from "react";
import { api, describe, type CallResponse, type ToolEntry } from "../api";
import { JsonTree } from "../components/JsonTree";
import { ErrorView, ResultView } from "../components/Renderers";
import { SchemaForm } from "../components/SchemaForm";
import { SourceBadge } from "../components/ToolCard";
import { Link, useNavigate } from "react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";

/// The catalog's query: read again (invalidated) after a tool is changed here.
const CATALOG = ["tools"];

function useCatalog(): [ToolEntry[] | null, string | null, () => Promise<void>] {
  const queryClient = useQueryClient();
  const catalog = useQuery({
    queryKey: CATALOG,
    // Switched-off tools are listed too, so they can be switched on again here.
    queryFn: async () => (await api<{ tools: ToolEntry[] }>("/api/tools?disabled=true")).tools,
  });
  const reload = () => queryClient.invalidateQueries({ queryKey: CATALOG });
  return [catalog.data ?? null, catalog.error ? describe(catalog.error) : null, reload];
}

/// A tool is on unless the catalog says `enabled: false`.
const isOn = (t: ToolEntry) => t.enabled !== false;

/// Switches a tool on or off (the one config editor writes it; the catalog follows at once).
async function setEnabled(name: string, enabled: boolean) {
  await api(`/api/tools/${encodeURIComponent(name)}`, { method: "PATCH", body: { enabled } });
}

function Catalog({ tools, onChanged }: { tools: ToolEntry[]; onChanged: () => Promise<void> }) {
  const [query, setQuery] = useState("");
  const [source, setSource] = useState("");
  const [policy, setPolicy] = useState("");
  const [state, setState] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const toggle = async (t: ToolEntry) => {
    setBusy(t.name);
    setError(null);
    try {
      await setEnabled(t.name, !isOn(t));
      await onChanged();
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(null);
    }
  };
  const deferred = useDeferredValue(query.toLowerCase());
  const sources = useMemo(() => [...new Set(tools.map((t) => t.source))].sort(), [tools]);
  const shown = useMemo(
    () =>
      tools.filter(
        (t) =>
          (!source || t.source === source) &&
          (!policy || t.policy === policy) &&
          (!state || (state === "on") === isOn(t)) &&
          (!deferred || t.name.toLowerCase().includes(deferred) || t.description.toLowerCase().includes(deferred)),
      ),
    [tools, source, policy, state, deferred],
  );
  const scroller = useRef<HTMLDivElement>(null);
  const rows = useVirtualizer({ count: shown.length, getScrollElement: () => scroller.current, estimateSize: () => 64, overscan: 8 });
  return (
    <section className="catalog">
      <div className="filters" role="search">
        <label>
          <span className="visually-hidden">Search tools</span>
          <input type="search" placeholder="Search tools" value={query} onChange={(e) => setQuery(e.target.value)} />
        </label>
        <label>
          <span className="visually-hidden">Source</span>
          <select value={source} onChange={(e) => setSource(e.target.value)}>
            <option value="">All sources</option>
            {sources.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          <span className="visually-hidden">Policy</span>
          <select value={policy} onChange={(e) => setPolicy(e.target.value)}>
            <option value="">Any policy</option>
            <option value="allow">allow</option>
            <option value="ask">ask</option>
            <option value="deny">deny</option>
          </select>
        </label>
        <label>
          <span className="visually-hidden">On or off</span>
          <select value={state} onChange={(e) => setState(e.target.value)}>
            <option value="">On and off</option>
            <option value="on">On</option>
            <option value="off">Off</option>
          </select>
        </label>
        <span className="muted" role="status" data-testid="tool-count">
          {shown.length} of {tools.length} tools
        </span>
      </div>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {/* Focusable, so the list scrolls from the keyboard too. */}
      <div className="tool-list" ref={scroller} role="region" aria-label="Tool list" tabIndex={0}>
        <div role="list" aria-label="Tools" style={{ height: rows.getTotalSize(), position: "relative" }}>
          {rows.getVirtualItems().map((row) => {
            const t = shown[row.index]!;
            const on = isOn(t);
            return (
              <div
                key={t.name}
                role="listitem"
                className={on ? "tool-row" : "tool-row off"}
                data-tool={t.name}
                style={{ position: "absolute", top: 0, left: 0, right: 0, height: row.size, transform: `translateY(${row.start}px)` }}
              >
                <button
                  type="button"
                  role="switch"
                  className="switch"
                  aria-checked={on}
                  aria-label={`${t.name} on`}
                  disabled={busy === t.name}
                  onClick={() => void toggle(t)}
                >
                  <span aria-hidden="true">{on ? "on" : "off"}</span>
                </button>{" "}
                <Link to={`/tools/${encodeURIComponent(t.name)}`}>
                  <strong>{t.name}</strong>
                </Link>{" "}
                <SourceBadge source={t.source} kind={t.sourceKind} /> <span className={`policy ${t.policy}`}>{t.policy}</span>
                {!on && <span className="badge off">off</span>}
                <div className="muted ellipsis">{t.description}</div>
              </div>
            );
          })}
        </div>
      </div>
    </section>
  );
}

function Details({ tool, onChanged }: { tool: ToolEntry; onChanged: () => Promise<void> }) {
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [result, setResult] = useState<CallResponse | null>(null);
  const [input, setInput] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const patch = async (body: Record<string, unknown>, what: string) => {
    setError(null);
    try {
      await api(`/api/tools/${encodeURIComponent(tool.name)}`, { method: "PATCH", body });
      setSaved(what);
      await onChanged();
    } catch (e) {
      setError(describe(e));
    }
  };
  const call = async (values: Record<string, unknown>) => {
    setBusy(true);
    setError(null);
    setInput(values);
    try {
      setResult(await api<CallResponse>(`/api/tools/${encodeURIComponent(tool.name)}/call`, { method: "POST", body: values }));
    } catch (e) {
      setResult(null);
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="tool-details" aria-labelledby="tool-title">
      <p>
        <Link to="/tools">← All tools</Link>
      </p>
      <h2 id="tool-title">
        {tool.name} <SourceBadge source={tool.source} kind={tool.sourceKind} />
        {tool.enabled === false && <span className="badge off">off</span>}
      </h2>
      <p>{tool.description}</p>
      <dl className="facts">
        <dt>Policy</dt>
        <dd>
          <strong>{tool.policy}</strong> — <span data-testid="policy-origin">{tool.policyOrigin}</span>
        </dd>
        <dt>Time limit</dt>
        <dd>{tool.effectiveTimeoutMs} ms</dd>
        <dt>Runs in parallel</dt>
        <dd>{tool.parallel ? "yes" : "no"}</dd>
        <dt>Switched</dt>
        <dd data-testid="tool-enabled">{isOn(tool) ? "on" : "off"}</dd>
        {tool.discoveryStatus && (
          <>
            <dt>Discovery</dt>
            <dd>
              {tool.discoveryStatus}
              {tool.lastDiscovered ? ` · ${new Date(tool.lastDiscovered).toLocaleString()}` : ""}
            </dd>
          </>
        )}
      </dl>
      <div className="actions">
        <label>
          Policy{" "}
          <select
            value=""
            aria-label="Change policy"
            onChange={(e) => {
              const v = e.target.value;
              if (v) void patch({ policy: v === "inherit" ? null : v }, `Policy set to ${v}`);
            }}
          >
            <option value="">Change policy…</option>
            <option value="allow">allow</option>
            <option value="ask">ask</option>
            <option value="deny">deny</option>
            <option value="inherit">as its rules say</option>
          </select>
        </label>
        {isOn(tool) ? (
          <button type="button" onClick={() => void patch({ enabled: false }, "Switched off")}>
            Switch off
          </button>
        ) : (
          <button type="button" onClick={() => void patch({ enabled: true }, "Switched on")}>
            Switch on
          </button>
        )}
      </div>
      {saved && (
        <p role="status" className="ok">
          {saved}; written to the project's configuration.
        </p>
      )}
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <h3>Try it</h3>
      <SchemaForm key={tool.name} schema={tool.inputSchema} submitLabel="Call" busy={busy} onSubmit={call} label={`Arguments of ${tool.name}`} />
      {result && (
        <div className="result" role="region" aria-label="Result" tabIndex={0}>
          <p className="muted">
            {result.status} in {Math.round(result.durationMs)} ms ·{" "}
            <Link to={`/activity?id=${encodeURIComponent(result.callId)}`}>Activity entry</Link>
          </p>
          {result.error ? (
            <ErrorView text={result.error} />
          ) : (
            <ResultView tool={tool.name} input={input} structured={result.structuredContent} content={result.content} />
          )}
        </div>
      )}
      <h3>Input schema</h3>
      <JsonTree value={tool.inputSchema} />
      {tool.outputSchema && (
        <>
          <h3>Output schema</h3>
          <JsonTree value={tool.outputSchema} open={false} />
        </>
      )}
    </section>
  );
}

export default function Tools({ path }: { path: string }) {
  const [tools, error, reload] = useCatalog();
  const navigate = useNavigate();
  const name = path.startsWith("/tools/") ? decodeURIComponent(path.slice("/tools/".length)) : undefined;
  const tool = name ? tools?.find((t) => t.name === name) : undefined;
  useEffect(() => {
    if (name && tools && !tool) void navigate("/tools", { replace: true });
  }, [name, tools, tool, navigate]);
  return (
    <div className="tools-page">
      <h1>Tools</h1>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {!tools ? <p className="muted">Loading…</p> : tool ? <Details tool={tool} onChanged={reload} /> : <Catalog tools={tools} onChanged={reload} />}
    </div>
  );
}
