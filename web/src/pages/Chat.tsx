// The chat: conversations on the side, the AI SDK's own `useChat` speaking to `POST /api/chat`
// (toolmux keeps the history; the client sends the conversation id and the new message), tool
// calls as cards, approvals and questions inline.
// First, before the AI SDK builds its schemas: see the module.
import "../zodJitless";
import { Chat as ChatSession, useChat } from "@ai-sdk/react";
import { DefaultChatTransport, type DynamicToolUIPart, type UIMessage } from "ai";
import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent } from "react";
import { answerApproval, api, describe, sessionHeaders, type JsonSchema } from "../api";
import { Markdown } from "../components/Markdown";
import { SchemaForm } from "../components/SchemaForm";
import { JsonTree } from "../components/JsonTree";
import { SourceBadge, ToolCard, type Progress } from "../components/ToolCard";
import { Link, navigate } from "../router";

interface Conversation {
  id: string;
  title: string;
  provider: string;
  model: string;
  updated: string;
}

interface StoredMessage {
  seq: number;
  role: "user" | "assistant" | "tool";
  text?: string;
  toolCalls?: { id: string; name: string; arguments: unknown }[];
  callId?: string;
  name?: string;
  content?: string;
  isError?: boolean;
  logId?: string;
}

interface ProviderModels {
  provider: string;
  defaultModel?: string | null;
  default_model?: string | null;
  models?: string[];
  error?: string;
}

function newId() {
  return crypto.randomUUID();
}

/// The stored history as the UI messages `useChat` starts from.
function toUiMessages(stored: StoredMessage[]): UIMessage[] {
  const out: UIMessage[] = [];
  const calls = new Map<string, DynamicToolUIPart>();
  for (const m of stored) {
    if (m.role === "user") out.push({ id: `s${m.seq}`, role: "user", parts: [{ type: "text", text: m.text ?? "" }] });
    else if (m.role === "assistant") {
      const parts: UIMessage["parts"] = [];
      if (m.text) parts.push({ type: "text", text: m.text });
      for (const c of m.toolCalls ?? []) {
        const part = { type: "dynamic-tool", toolCallId: c.id, toolName: c.name, state: "input-available", input: c.arguments } as DynamicToolUIPart;
        calls.set(c.id, part);
        parts.push(part);
      }
      const last = out[out.length - 1];
      if (last?.role === "assistant") last.parts.push(...parts);
      else out.push({ id: `s${m.seq}`, role: "assistant", parts });
    } else if (m.role === "tool" && m.callId) {
      const part = calls.get(m.callId) as Record<string, unknown> | undefined;
      if (!part) continue;
      if (m.isError) Object.assign(part, { state: "output-error", errorText: m.content ?? "" });
      else Object.assign(part, { state: "output-available", output: { content: m.content, logId: m.logId } });
    }
  }
  return out;
}

function Conversations({ current, refresh }: { current?: string; refresh: number }) {
  const [list, setList] = useState<Conversation[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [renaming, setRenaming] = useState<string | null>(null);
  const [title, setTitle] = useState("");
  const load = useCallback(async () => {
    try {
      setList((await api<{ conversations: Conversation[] }>("/api/conversations")).conversations);
      setError(null);
    } catch (e) {
      setError(describe(e));
    }
  }, []);
  useEffect(() => void load(), [load, refresh, current]);
  const rename = async (e: FormEvent, id: string) => {
    e.preventDefault();
    try {
      await api(`/api/conversations/${encodeURIComponent(id)}`, { method: "PATCH", body: { title } });
      setRenaming(null);
      await load();
    } catch (err) {
      setError(describe(err));
    }
  };
  const remove = async (c: Conversation) => {
    if (!confirm(`Delete “${c.title}”?`)) return;
    try {
      await api(`/api/conversations/${encodeURIComponent(c.id)}`, { method: "DELETE" });
      if (c.id === current) navigate("/chat");
      await load();
    } catch (err) {
      setError(describe(err));
    }
  };
  return (
    <aside className="conversations" aria-label="Conversations">
      <Link href="/chat" className="button">
        New conversation
      </Link>
      {error && <p role="alert" className="error">{error}</p>}
      <ul>
        {list.map((c) => (
          <li key={c.id} className={c.id === current ? "current" : undefined}>
            {renaming === c.id ? (
              <form onSubmit={(e) => void rename(e, c.id)} className="rename">
                <label className="visually-hidden" htmlFor={`title-${c.id}`}>
                  New title
                </label>
                <input id={`title-${c.id}`} value={title} autoFocus onChange={(e) => setTitle(e.target.value)} />
                <button type="submit">Save</button>
                <button type="button" onClick={() => setRenaming(null)}>
                  Cancel
                </button>
              </form>
            ) : (
              <>
                <Link href={`/chat/${encodeURIComponent(c.id)}`} aria-current={c.id === current ? "page" : undefined}>
                  {c.title || "Untitled"}
                </Link>
                <span className="row-actions">
                  <button
                    type="button"
                    className="icon"
                    aria-label={`Rename ${c.title}`}
                    onClick={() => {
                      setRenaming(c.id);
                      setTitle(c.title);
                    }}
                  >
                    ✎
                  </button>
                  <button type="button" className="icon" aria-label={`Delete ${c.title}`} onClick={() => void remove(c)}>
                    ✕
                  </button>
                </span>
              </>
            )}
          </li>
        ))}
      </ul>
    </aside>
  );
}

function ModelPicker({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  const [providers, setProviders] = useState<ProviderModels[]>([]);
  useEffect(() => {
    api<{ providers: ProviderModels[] }>("/api/models")
      .then((r) => setProviders(r.providers))
      .catch(() => setProviders([]));
  }, []);
  return (
    <label className="model-picker">
      <span>Model</span>
      <select value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">Default</option>
        {providers.map((p) => {
          const models = p.models ?? [p.defaultModel ?? p.default_model].filter((m): m is string => !!m);
          return (
            <optgroup key={p.provider} label={p.error ? `${p.provider} (${p.error})` : p.provider}>
              {models.map((m) => (
                <option key={m} value={`${p.provider}\u0000${m}`}>
                  {m}
                </option>
              ))}
            </optgroup>
          );
        })}
      </select>
    </label>
  );
}

interface ApprovalData {
  approvalId: string;
  tool: string;
  source: string;
  arguments: unknown;
  message?: string | null;
}

function ApprovalCard({ data }: { data: ApprovalData }) {
  const [done, setDone] = useState<string | null>(null);
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const answer = async (decision: "allow" | "deny", always = false) => {
    try {
      await answerApproval(
        data.approvalId,
        decision,
        decision === "deny" && reason ? reason : undefined,
        always ? "conversation" : undefined,
      );
      setDone(decision === "allow" ? (always ? "Allowed for this conversation" : "Allowed once") : "Denied");
      window.dispatchEvent(new Event("toolmux:approvals-changed"));
    } catch (e) {
      setError(describe(e));
    }
  };
  // "For this conversation" is toolmux's to keep (`scope: "conversation"`): the tool's later
  // calls in this conversation run without asking, so no card comes for them.
  return (
    <section className="approval-card" aria-label={`Approval for ${data.tool}`}>
      <header>
        <strong>{data.tool}</strong> <SourceBadge source={data.source} /> wants to run.
      </header>
      {data.message && <p>{data.message}</p>}
      <details>
        <summary>Arguments</summary>
        <JsonTree value={data.arguments} />
      </details>
      {done ? (
        <p className="muted" role="status">
          {done}
        </p>
      ) : (
        <div className="actions">
          <button type="button" onClick={() => void answer("allow")}>
            Allow once
          </button>
          <button type="button" onClick={() => void answer("allow", true)}>
            Allow for this conversation
          </button>
          <label className="visually-hidden" htmlFor={`reason-${data.approvalId}`}>
            Reason for denying
          </label>
          <input
            id={`reason-${data.approvalId}`}
            placeholder="Reason (optional)"
            value={reason}
            onChange={(e) => setReason(e.target.value)}
          />
          <button type="button" className="danger" onClick={() => void answer("deny")}>
            Deny
          </button>
        </div>
      )}
      {error && <p role="alert" className="error">{error}</p>}
    </section>
  );
}

interface InputData {
  requestId: string;
  question: string;
  answer: string;
  form?: JsonSchema;
  asker?: unknown;
}

function InputCard({ data }: { data: InputData }) {
  const [done, setDone] = useState<string | null>(null);
  const [text, setText] = useState("");
  const [error, setError] = useState<string | null>(null);
  const send = async (body: unknown, label: string) => {
    try {
      await api(data.answer, { method: "POST", body });
      setDone(label);
    } catch (e) {
      setError(describe(e));
    }
  };
  return (
    <section className="input-card" aria-label="Question">
      <p>
        <strong>{data.asker ? `${String(data.asker)} asks:` : "The model asks:"}</strong> {data.question}
      </p>
      {done ? (
        <p className="muted" role="status">
          {done}
        </p>
      ) : data.form ? (
        <SchemaForm
          schema={data.form}
          label={data.question}
          submitLabel="Send"
          onSubmit={(values) => send({ answer: values, id: data.requestId }, "Answered")}
          extra={
            <button type="button" onClick={() => void send({ action: "decline", id: data.requestId }, "Declined")}>
              Decline
            </button>
          }
        />
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void send({ answer: text, id: data.requestId }, `Answered: ${text}`);
          }}
        >
          <label htmlFor={`answer-${data.requestId}`}>Your answer</label>
          <input id={`answer-${data.requestId}`} value={text} onChange={(e) => setText(e.target.value)} />
          <button type="submit">Send</button>
          <button type="button" onClick={() => void send({ action: "decline", id: data.requestId }, "Declined")}>
            Decline
          </button>
        </form>
      )}
      {error && <p role="alert" className="error">{error}</p>}
    </section>
  );
}

function Conversation(props: { id: string; initial: UIMessage[]; fresh: boolean; onTurnStart: () => void; onTurnEnd: () => void }) {
  const { id, initial, fresh, onTurnStart, onTurnEnd } = props;
  const [model, setModel] = useState("");
  const [progress, setProgress] = useState<Record<string, Progress>>({});
  const [draft, setDraft] = useState("");
  const modelRef = useRef(model);
  modelRef.current = model;
  const transport = useMemo(
    () =>
      new DefaultChatTransport({
        api: "/api/chat",
        credentials: "same-origin",
        // Read on every request: the session key, without which the cookie is nothing.
        headers: () => sessionHeaders(),
        body: () => {
          const [provider, m] = modelRef.current.split("\u0000");
          return modelRef.current ? { provider, model: m } : {};
        },
      }),
    [],
  );
  const turnEnded = useRef(onTurnEnd);
  turnEnded.current = onTurnEnd;
  const chat = useMemo(() => {
    const session = new ChatSession<UIMessage>({
      id,
      messages: initial,
      transport,
      onData: (part) => {
        if (part.type === "data-tool-progress") {
          const d = part.data as Progress & { toolCallId: string };
          setProgress((old) => ({ ...old, [d.toolCallId]: d }));
        }
      },
      onFinish: () => turnEnded.current(),
    });
    // The SDK deep-clones the whole message on every chunk (for the React Compiler, which we
    // do not use): with 50 tool results and a long answer that is most of the main thread's
    // time. Copying the message and its parts one level deep is enough for React to see every
    // change, since the SDK replaces a part's fields rather than editing inside them.
    (session as unknown as { state: { snapshot: (m: unknown) => unknown } }).state.snapshot = (m) => {
      const message = m as UIMessage;
      return { ...message, parts: message.parts.map((p) => ({ ...p })) };
    };
    return session;
    // One session per conversation: `initial` and the transport are read once.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [id]);
  // One render per 50 ms at most, however fast the deltas come.
  const { messages, sendMessage, status, stop, error } = useChat({ chat, experimental_throttle: 50 });
  const busy = status === "submitted" || status === "streaming";
  const send = (e: FormEvent) => {
    e.preventDefault();
    const text = draft.trim();
    if (!text || busy) return;
    setDraft("");
    onTurnStart();
    if (fresh) history.replaceState(null, "", `/chat/${encodeURIComponent(id)}`);
    void sendMessage({ text });
  };
  const cancel = async () => {
    try {
      await api(`/api/chat/${encodeURIComponent(id)}/cancel`, { method: "POST" });
    } catch {
      // No turn running on the server any more: stopping the stream is all there is to do.
    }
    await stop();
  };
  // Follow the answer while the person is at the bottom; leave them be when they scrolled up.
  const list = useRef<HTMLDivElement>(null);
  const following = useRef(true);
  useEffect(() => {
    const el = list.current;
    if (!el || !following.current) return;
    // Twice: blocks that come into view on the first scroll lay themselves out at their real
    // size (they are `content-visibility: auto`), which moves the bottom once more.
    let frame = requestAnimationFrame(() => {
      el.scrollTop = el.scrollHeight;
      frame = requestAnimationFrame(() => {
        if (following.current) el.scrollTop = el.scrollHeight;
      });
    });
    return () => cancelAnimationFrame(frame);
  }, [messages]);
  return (
    <section className="conversation" aria-label="Conversation">
      <div
        className="messages"
        role="log"
        aria-label="Messages"
        aria-busy={busy}
        tabIndex={0}
        ref={list}
        // Following stops only when the person scrolls up (wheel, touch, keys), never because
        // cards above size themselves, and starts again when they come back to the bottom.
        onWheel={(e) => {
          if (e.deltaY < 0) following.current = false;
        }}
        onTouchMove={() => {
          following.current = false;
        }}
        onKeyDown={(e) => {
          if (["ArrowUp", "PageUp", "Home"].includes(e.key)) following.current = false;
        }}
        onScroll={(e) => {
          const el = e.currentTarget;
          if (el.scrollHeight - el.scrollTop - el.clientHeight < 80) following.current = true;
        }}
      >
        {messages.length === 0 && <p className="muted">Ask anything; the model can use every tool in the catalog.</p>}
        {messages.map((m) => (
          <div key={m.id} className={`message ${m.role}`}>
            <div className="role">{m.role === "user" ? "You" : "Assistant"}</div>
            {m.parts.map((p, i) => {
              if (p.type === "text")
                return m.role === "user" ? <p key={i}>{p.text}</p> : <Markdown key={i} text={p.text} />;
              if (p.type === "dynamic-tool") return <ToolCard key={p.toolCallId} part={p} progress={progress[p.toolCallId]} />;
              if (p.type === "data-approval") {
                const data = p.data as ApprovalData;
                return <ApprovalCard key={data.approvalId} data={data} />;
              }
              if (p.type === "data-input-request") {
                const data = p.data as InputData;
                return <InputCard key={data.requestId} data={data} />;
              }
              return null;
            })}
          </div>
        ))}
        {error && (
          <p role="alert" className="error">
            {error.message}
          </p>
        )}
      </div>
      <form className="composer" onSubmit={send}>
        <label htmlFor="prompt" className="visually-hidden">
          Message
        </label>
        <textarea
          id="prompt"
          rows={2}
          placeholder="Message (Enter sends, Shift+Enter for a new line)"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey) send(e);
          }}
        />
        <div className="composer-actions">
          <ModelPicker value={model} onChange={setModel} />
          {busy ? (
            <button type="button" className="danger" onClick={() => void cancel()}>
              Stop
            </button>
          ) : (
            <button type="submit" disabled={!draft.trim()}>
              Send
            </button>
          )}
        </div>
      </form>
    </section>
  );
}

export default function Chat({ path }: { path: string }) {
  const routeId = path.startsWith("/chat/") ? decodeURIComponent(path.slice("/chat/".length)) : undefined;
  // A new conversation gets its id at once (the server makes one under the id it is sent), so
  // its address is known before its first answer.
  const [freshId, setFreshId] = useState(newId);
  const id = routeId ?? freshId;
  const [initial, setInitial] = useState<UIMessage[] | null>(routeId ? null : []);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [refresh, setRefresh] = useState(0);
  const live = useRef(new Set<string>());
  useEffect(() => {
    if (!routeId) {
      setFreshId(newId());
      setInitial([]);
      return;
    }
    if (live.current.has(routeId)) return;
    setInitial(null);
    api<{ messages: StoredMessage[] }>(`/api/conversations/${encodeURIComponent(routeId)}`)
      .then((r) => {
        setInitial(toUiMessages(r.messages));
        setLoadError(null);
      })
      .catch((e) => setLoadError(describe(e)));
  }, [routeId]);
  return (
    <div className="chat-page">
      <h1 className="visually-hidden">Chat</h1>
      <Conversations current={routeId} refresh={refresh} />
      {loadError ? (
        <p role="alert" className="error">
          {loadError}
        </p>
      ) : initial === null ? (
        <p className="muted">Loading…</p>
      ) : (
        <Conversation
          key={id}
          id={id}
          initial={initial}
          fresh={!routeId}
          onTurnStart={() => live.current.add(id)}
          onTurnEnd={() => setRefresh((n) => n + 1)}
        />
      )}
    </div>
  );
}
