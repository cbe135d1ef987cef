// Coding sessions: a runner (Claude Code, Codex, …) on a prompt in the project. The list is
// `GET /api/sessions`, a new one is `POST /api/sessions` (which waits for a person's approval
// when the policy asks: the navigation counts it and the Approvals page answers it), and a
// session's page follows its log live over `GET /api/sessions/{id}/stream` (`log` events, then
// one `status`), with Cancel while it runs.
import { useEffect, useMemo, useState, type FormEvent } from "react";
import { api, describe, openStream } from "../api";
import { Link, useNavigate } from "react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";

interface Session {
  id: string;
  runner: string;
  status: string;
  prompt: string;
  createdAt: string;
  durationMs?: number;
  exitCode?: number;
  error?: string;
  command?: string[];
  channel?: string;
}

interface LogLine {
  seq: number;
  at: string;
  stream: string;
  text: string;
  kind?: string;
}

interface Final {
  status: string;
  exitCode?: number | null;
  durationMs?: number | null;
  error?: string | null;
}

const RUNNING = new Set(["pending", "running"]);

/// The session list's query: read again (invalidated) when a session starts, ends or is cancelled.
const SESSIONS = ["sessions"];

/// One session's query.
const sessionKey = (id: string) => ["sessions", id];

function NewSession({ onStarted }: { onStarted: () => Promise<void> }) {
  const navigate = useNavigate();
  const runners = useQuery({
    queryKey: ["runners"],
    queryFn: async () => (await api<{ runners: { name: string }[] }>("/api/runners")).runners.map((x) => x.name),
  });
  const names = runners.data ?? [];
  const [chosen, setRunner] = useState("");
  // The first runner until the person picks one.
  const runner = chosen || names[0] || "";
  const [prompt, setPrompt] = useState("");
  const [busy, setBusy] = useState(false);
  const [failed, setError] = useState<string | null>(null);
  const error = failed ?? (runners.error ? describe(runners.error) : null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const record = await api<Session>("/api/sessions", { method: "POST", body: { runner, prompt } });
      setPrompt("");
      await onStarted();
      void navigate(`/sessions/${encodeURIComponent(record.id)}`);
    } catch (err) {
      setError(describe(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="new-session-title">
      <h2 id="new-session-title">Start a session</h2>
      <form onSubmit={(e) => void submit(e)}>
        <div className="field">
          <label htmlFor="session-runner">Runner</label>
          <select id="session-runner" value={runner} onChange={(e) => setRunner(e.target.value)} required>
            {names.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="session-prompt">Prompt</label>
          <textarea id="session-prompt" rows={3} value={prompt} required onChange={(e) => setPrompt(e.target.value)} />
        </div>
        <button type="submit" disabled={busy || !runner}>
          {busy ? "Starting… (an approval may be waiting)" : "Start"}
        </button>
      </form>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </section>
  );
}

function SessionList({ sessions }: { sessions: Session[] }) {
  if (sessions.length === 0) return <p className="muted">No sessions yet.</p>;
  return (
    <table className="log-table sessions-table">
      <caption className="visually-hidden">Sessions, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Session</th>
          <th scope="col">Runner</th>
          <th scope="col">Status</th>
          <th scope="col">Started</th>
          <th scope="col">Prompt</th>
        </tr>
      </thead>
      <tbody>
        {sessions.map((s) => (
          <tr key={s.id} data-session={s.id}>
            <td data-label="Session">
              <Link to={`/sessions/${encodeURIComponent(s.id)}`}>{s.id}</Link>
            </td>
            <td data-label="Runner">{s.runner}</td>
            <td data-label="Status" className={`outcome ${s.status}`}>
              {s.status}
            </td>
            <td data-label="Started">{new Date(s.createdAt).toLocaleString()}</td>
            <td data-label="Prompt" className="ellipsis prompt-cell">
              {s.prompt}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function SessionView({ id, onChanged }: { id: string; onChanged: () => Promise<void> }) {
  const queryClient = useQueryClient();
  const session = useQuery({
    queryKey: sessionKey(id),
    queryFn: () => api<Session>(`/api/sessions/${encodeURIComponent(id)}`),
  });
  const record = session.data ?? null;
  const [lines, setLines] = useState<LogLine[]>([]);
  const [end, setEnd] = useState<Final | null>(null);
  const [failed, setError] = useState<string | null>(null);
  const error = failed ?? (session.error ? describe(session.error) : null);
  useEffect(() => {
    setLines([]);
    setEnd(null);
    // The stream sends the log from its first entry, so a reconnect starts over.
    const events = openStream(`/api/sessions/${encodeURIComponent(id)}/stream`, {
      onOpen: () => setLines([]),
      onEvent: (event, data) => {
        if (event === "log") {
          const line = JSON.parse(data) as LogLine;
          setLines((old) => (old.length > 0 && old[old.length - 1]!.seq >= line.seq ? old : [...old, line]));
        } else if (event === "status") {
          setEnd(JSON.parse(data) as Final);
          events.close();
          void queryClient.invalidateQueries({ queryKey: sessionKey(id) });
          void onChanged();
        }
      },
    });
    return () => events.close();
  }, [id, queryClient, onChanged]);
  const cancel = async () => {
    try {
      queryClient.setQueryData(sessionKey(id), await api<Session>(`/api/sessions/${encodeURIComponent(id)}/cancel`, { method: "POST" }));
      await onChanged();
    } catch (e) {
      setError(describe(e));
    }
  };
  const status = end?.status ?? record?.status;
  return (
    <section className="session-view" aria-labelledby="session-title">
      <p>
        <Link to="/sessions">← All sessions</Link>
      </p>
      <h2 id="session-title">
        Session <code>{id}</code>{" "}
        <span className={`badge outcome ${status ?? ""}`} data-testid="session-status">
          {status ?? "…"}
        </span>
      </h2>
      {record && (
        <dl className="facts">
          <dt>Runner</dt>
          <dd>{record.runner}</dd>
          <dt>Prompt</dt>
          <dd className="prompt">{record.prompt}</dd>
          {record.command && (
            <>
              <dt>Command</dt>
              <dd>
                <code>{record.command.join(" ")}</code>
              </dd>
            </>
          )}
          {end && (
            <>
              <dt>Ended</dt>
              <dd>
                {end.exitCode != null ? `exit code ${end.exitCode}` : "no exit code"}
                {end.durationMs != null ? ` · ${(end.durationMs / 1000).toFixed(1)} s` : ""}
                {end.error ? ` · ${end.error}` : ""}
              </dd>
            </>
          )}
        </dl>
      )}
      {status && RUNNING.has(status) && (
        <div className="actions">
          <button type="button" className="danger" onClick={() => void cancel()}>
            Cancel session
          </button>
        </div>
      )}
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <h3>Log</h3>
      <pre className="session-log" tabIndex={0} aria-label="Session log" aria-live="off">
        {lines.map((l) => (
          <span key={l.seq} className={l.stream === "stderr" ? "error" : undefined}>
            {l.text}
            {"\n"}
          </span>
        ))}
      </pre>
    </section>
  );
}

export default function Sessions({ path }: { path: string }) {
  const queryClient = useQueryClient();
  const list = useQuery({
    queryKey: SESSIONS,
    queryFn: async () => (await api<{ sessions: Session[] }>("/api/sessions")).sessions,
  });
  const sessions = list.data ?? null;
  const error = list.error ? describe(list.error) : null;
  const id = path.startsWith("/sessions/") ? decodeURIComponent(path.slice("/sessions/".length)) : undefined;
  // Only the list itself: a session's own query is read again by its view.
  const load = useMemo(() => () => queryClient.invalidateQueries({ queryKey: SESSIONS, exact: true }), [queryClient]);
  return (
    <div className="sessions-page">
      <h1>Sessions</h1>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {id ? (
        <SessionView id={id} onChanged={load} />
      ) : (
        <>
          <NewSession onStarted={load} />
          <h2>All sessions</h2>
          {sessions ? <SessionList sessions={sessions} /> : <p className="muted">Loading…</p>}
        </>
      )}
    </div>
  );
}
