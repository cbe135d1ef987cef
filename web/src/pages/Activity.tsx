// The execution log: filters, a live tail, and a call's details. The tail is the server's
// event stream of the log (`GET /api/logs/stream`, which also sees calls made by other toolmux
// processes, the CLI's included); each time it (re)connects, the page reads the newest entries
// again, so nothing falls between the list and the stream.
import { useEffect, useMemo, useState } from "react";
import { api, describe, openStream } from "../api";
import { JsonTree } from "../components/JsonTree";
import { SourceBadge } from "../components/ToolCard";
import { Link, useLocation } from "react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";

interface LogEntry {
  id: string;
  timestamp: string;
  tool: string;
  source?: string | null;
  channel: string;
  session?: string | null;
  arguments: unknown;
  outcome: string;
  error?: string | null;
  durationUs: number;
  result?: unknown;
  resultTruncated?: boolean;
}

/** `value` once it has stopped changing for `ms`: typing a filter reloads the list and reopens
 * the stream once, when the typing pauses, not once per key. */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

export default function Activity() {
  const params = new URLSearchParams(useLocation().search);
  const [tool, setTool] = useState("");
  const [outcome, setOutcome] = useState("");
  const [since, setSince] = useState("");
  const [source, setSource] = useState("");
  const [channel, setChannel] = useState("");
  const [tail, setTail] = useState(true);
  const [selected, setSelected] = useState<string | null>(params.get("id"));
  const [live, setLive] = useState<"connecting" | "live" | "stopped">("connecting");
  const toolFilter = useSettled(tool, 300);
  const queryClient = useQueryClient();
  // The list for the filters the server applies; the live tail adds to it as calls are logged.
  const logsKey = useMemo(() => ["logs", toolFilter, outcome, since], [toolFilter, outcome, since]);
  const list = useQuery({
    queryKey: logsKey,
    queryFn: async () => {
      const q = new URLSearchParams({ limit: "500" });
      if (toolFilter) q.set("tool", toolFilter);
      if (outcome) q.set("outcome", outcome);
      if (since) q.set("since", since);
      return (await api<{ entries: LogEntry[] }>(`/api/logs?${q}`)).entries.reverse();
    },
  });
  const entries = list.data ?? [];
  const error = list.error ? describe(list.error) : null;
  useEffect(() => {
    if (!tail) return;
    const q = new URLSearchParams();
    if (toolFilter) q.set("tool", toolFilter);
    if (outcome) q.set("outcome", outcome);
    setLive("connecting");
    const events = openStream(`/api/logs/stream?${q}`, {
      // "live" once the list read on (re)connecting is in, so nothing that came before is missing.
      onOpen: () => void queryClient.refetchQueries({ queryKey: logsKey, exact: true }).then(() => setLive("live")),
      onEvent: (event, data) => {
        if (event !== "entry") return;
        const entry = JSON.parse(data) as LogEntry;
        queryClient.setQueryData<LogEntry[]>(logsKey, (old = []) =>
          old.some((o) => o.id === entry.id) ? old : [entry, ...old].slice(0, 500),
        );
      },
      onState: (state) => {
        if (state !== "open") setLive(state === "closed" ? "stopped" : "connecting");
      },
    });
    return () => events.close();
  }, [logsKey, tail, toolFilter, outcome, queryClient]);
  const shown = entries.filter((e) => (!source || e.source === source) && (!channel || e.channel === channel));
  const sources = [...new Set(entries.map((e) => e.source).filter((s): s is string => !!s))].sort();
  const channels = [...new Set(entries.map((e) => e.channel))].sort();
  const detail = selected ? entries.find((e) => e.id === selected) : undefined;
  return (
    <div className="activity-page">
      <h1>Activity</h1>
      <div className="filters" role="search">
        <label>
          <span className="visually-hidden">Tool (name or glob)</span>
          <input type="search" placeholder="Tool (name or glob)" value={tool} onChange={(e) => setTool(e.target.value)} />
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
          <span className="visually-hidden">Channel</span>
          <select value={channel} onChange={(e) => setChannel(e.target.value)}>
            <option value="">All channels</option>
            {channels.map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          <span className="visually-hidden">Outcome</span>
          <select value={outcome} onChange={(e) => setOutcome(e.target.value)}>
            <option value="">Any outcome</option>
            {["ok", "error", "denied", "timeout", "invalid"].map((o) => (
              <option key={o}>{o}</option>
            ))}
          </select>
        </label>
        <label>
          <span className="visually-hidden">Since</span>
          <select value={since} onChange={(e) => setSince(e.target.value)}>
            <option value="">Any time</option>
            <option value="15m">Last 15 minutes</option>
            <option value="1h">Last hour</option>
            <option value="1d">Last day</option>
          </select>
        </label>
        <label className="check">
          <input type="checkbox" checked={tail} onChange={(e) => setTail(e.target.checked)} /> Live tail
        </label>
        {tail && (
          <span className="muted" role="status" data-testid="tail-state">
            {live === "live" ? "live" : live === "connecting" ? "connecting…" : "the live tail stopped"}
          </span>
        )}
      </div>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <div className="split">
        <table className="log-table">
          <caption className="visually-hidden">Calls, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Tool</th>
              <th scope="col">Source</th>
              <th scope="col">Channel</th>
              <th scope="col">Outcome</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((e) => (
              <tr key={e.id} className={e.id === selected ? "selected" : undefined} data-tool={e.tool}>
                <td data-label="Time">{new Date(e.timestamp).toLocaleTimeString()}</td>
                <td data-label="Tool">
                  <button type="button" className="link" onClick={() => setSelected(e.id)}>
                    {e.tool}
                  </button>
                </td>
                <td data-label="Source">{e.source && <SourceBadge source={e.source} />}</td>
                <td data-label="Channel">{e.channel}</td>
                <td data-label="Outcome" className={`outcome ${e.outcome}`}>
                  {e.outcome}
                </td>
                <td data-label="Duration">{(e.durationUs / 1000).toFixed(1)} ms</td>
              </tr>
            ))}
          </tbody>
        </table>
        {detail && (
          <section className="log-detail" aria-label="Call details" tabIndex={0}>
            <h2>
              {detail.tool} <span className="muted">{detail.outcome}</span>
            </h2>
            <p className="muted">
              {detail.timestamp} · {detail.channel}
              {detail.session ? ` · session ${detail.session}` : ""} · id {detail.id}
            </p>
            {detail.error && <p className="error">{detail.error}</p>}
            <h3>Arguments</h3>
            <JsonTree value={detail.arguments} />
            <h3>Result{detail.resultTruncated ? " (cut; the full result is kept in the log's results folder)" : ""}</h3>
            {detail.result === undefined ? <p className="muted">Not kept.</p> : <JsonTree value={detail.result} />}
            <button type="button" onClick={() => setSelected(null)}>
              Close
            </button>
          </section>
        )}
        {selected && !detail && entries.length > 0 && (
          <p className="muted">
            That call is not among the newest shown. <Link to="/activity">Clear</Link>
          </p>
        )}
      </div>
    </div>
  );
}
