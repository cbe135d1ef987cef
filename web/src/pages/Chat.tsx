// The chat: conversations on the side, the AI SDK's own `useChat` speaking to `POST /api/chat`
// (toolmux keeps the history; the client sends the conversation id and the new message), tool
// calls as cards, approvals and questions inline. A turn outlives the page that started it: a
// conversation reopened while its turn runs (a reload) shows what waits in the approvals queue
// (approvals in their calls' cards, questions with their forms) and reads itself again when the
// execution log's or the approvals' event stream says something happened, until the turn ends.
// First, before the AI SDK builds its schemas: see the module.
import "../zodJitless";
import { Chat as ChatSession, useChat } from "@ai-sdk/react";
import { DefaultChatTransport, type DynamicToolUIPart, type UIMessage } from "ai";
import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent } from "react";
import { ApiFailure, answerApproval, api, describe, openStream, sessionHeaders, type ContentBlock, type JsonSchema, type PendingApproval, type Schemas } from "../api";
import { FoldButton } from "../components/FoldButton";
import { Markdown, copyText } from "../components/Markdown";
import { SchemaForm } from "../components/SchemaForm";
import { JsonTree } from "../components/JsonTree";
import { SourceBadge, ToolCard, type Progress } from "../components/ToolCard";
import type { Outcome, PendingInput, Waiting } from "../approvals";
import { Link, useLocation, useNavigate } from "react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";

type Conversation = Schemas["ConversationView"];

/// A stored message: the document types them only as JSON objects.
interface StoredMessage {
  seq: number;
  role: "user" | "assistant" | "tool";
  text?: string;
  toolCalls?: { id: string; name: string; arguments: unknown; source?: string }[];
  callId?: string;
  name?: string;
  content?: string;
  isError?: boolean;
  logId?: string;
  durationMs?: number;
  structured?: unknown;
  media?: ContentBlock[];
}

/// `GET /api/conversations/{id}`, its messages typed as the page reads them.
type ConversationDetail = Omit<Schemas["ConversationDetail"], "messages"> & { messages: StoredMessage[] };

function newId() {
  return crypto.randomUUID();
}

/// The stored history as the UI messages `useChat` starts from; a tool call's card gets what
/// the live one had (its source where `sourceOf` reads it, its duration and structured result).
function toUiMessages(stored: StoredMessage[]): UIMessage[] {
  const out: UIMessage[] = [];
  const calls = new Map<string, DynamicToolUIPart>();
  for (const m of stored) {
    if (m.role === "user") out.push({ id: `s${m.seq}`, role: "user", parts: [{ type: "text", text: m.text ?? "" }] });
    else if (m.role === "assistant") {
      const parts: UIMessage["parts"] = [];
      if (m.text) parts.push({ type: "text", text: m.text });
      for (const c of m.toolCalls ?? []) {
        // The source where the live part has it (`sourceOf`): the stream's provider metadata.
        const source = c.source ? { callProviderMetadata: { toolmux: { source: c.source } } } : {};
        const part = { type: "dynamic-tool", toolCallId: c.id, toolName: c.name, state: "input-available", input: c.arguments, ...source } as DynamicToolUIPart;
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
      else
        Object.assign(part, {
          state: "output-available",
          output: { content: m.content, structured: m.structured, media: m.media, logId: m.logId, durationMs: m.durationMs },
        });
    }
  }
  return out;
}

/// The conversation list's query: reloaded (invalidated) whenever a turn starts or ends, or one
/// is renamed or deleted.
const CONVERSATIONS = ["conversations"];

/// One conversation's query (apart from the list's, so that reloading the list does not read
/// the conversation shown again).
const conversationKey = (id: string) => ["conversation", id];

/// `GET /api/conversations`: every conversation with its title, provider and model.
const readConversations = async () => (await api<Schemas["ConversationList"]>("/api/conversations")).conversations;

/// `GET /api/conversations/{id}`.
const readConversation = (id: string) => api<ConversationDetail>(`/api/conversations/${encodeURIComponent(id)}`);

function Conversations(props: { current?: string; open: boolean; onClose: () => void }) {
  const { current, open, onClose } = props;
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const conversations = useQuery({
    queryKey: CONVERSATIONS,
    queryFn: readConversations,
  });
  const [search, setSearch] = useState("");
  const all: Conversation[] = conversations.data ?? [];
  const wanted = search.trim().toLowerCase();
  const list = wanted ? all.filter((c) => (c.title || "Untitled").toLowerCase().includes(wanted)) : all;
  const [failed, setError] = useState<string | null>(null);
  const error = failed ?? (conversations.error ? describe(conversations.error) : null);
  const [renaming, setRenaming] = useState<string | null>(null);
  const [title, setTitle] = useState("");
  const load = () => queryClient.invalidateQueries({ queryKey: CONVERSATIONS });
  const rename = async (e: FormEvent, id: string) => {
    e.preventDefault();
    try {
      await api(`/api/conversations/${encodeURIComponent(id)}`, { method: "PATCH", body: { title } });
      setRenaming(null);
      setError(null);
      await load();
    } catch (err) {
      setError(describe(err));
    }
  };
  const remove = async (c: Conversation) => {
    if (!confirm(`Delete “${c.title}”?`)) return;
    try {
      await api(`/api/conversations/${encodeURIComponent(c.id)}`, { method: "DELETE" });
      if (c.id === current) void navigate("/chat");
      setError(null);
      await load();
    } catch (err) {
      setError(describe(err));
    }
  };
  return (
    <aside id="conversations" className={open ? "conversations open" : "conversations"} aria-label="Conversations">
      {open && (
        <button type="button" className="drawer-close" onClick={onClose}>
          Close
        </button>
      )}
      <Link to="/chat" className="button" onClick={onClose} title="New conversation (Ctrl+Shift+O)" aria-keyshortcuts="Control+Shift+O">
        New conversation
      </Link>
      <label className="visually-hidden" htmlFor="conversation-search">
        Search conversations
      </label>
      <input
        id="conversation-search"
        type="search"
        className="conversation-search"
        placeholder="Search conversations"
        value={search}
        onChange={(e) => setSearch(e.target.value)}
      />
      {error && <p role="alert" className="error">{error}</p>}
      {wanted && list.length === 0 && <p className="muted">No conversation’s title has “{search.trim()}”.</p>}
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
                <Link to={`/chat/${encodeURIComponent(c.id)}`} aria-current={c.id === current ? "page" : undefined}>
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

/// The configured providers and their models (`GET /api/models`); undefined until read.
function useProviders(): Schemas["ModelList"]["providers"] | undefined {
  return useQuery({ queryKey: ["models"], queryFn: () => api<Schemas["ModelList"]>("/api/models") }).data?.providers;
}

/// What a new conversation shows when no model provider is configured: what to put in the
/// configuration, instead of an error after the first message.
function FirstRun() {
  return (
    <section className="first-run" aria-labelledby="first-run-title">
      <h2 id="first-run-title">Connect a model to start chatting</h2>
      <p>
        No model provider is configured. Add one under <code>providers</code> in <code>.toolmux/config.json</code>, for
        example:
      </p>
      <pre className="code" tabIndex={0}>
        {FIRST_PROVIDER}
      </pre>
      <p className="muted">
        <code>openai</code> is any OpenAI-compatible server (OpenAI, Ollama, vLLM, llama.cpp, LM Studio); <code>anthropic</code> and{" "}
        <code>gemini</code> are the others. Tools, servers and approvals work without a model.
      </p>
    </section>
  );
}

/// The configuration of a first provider: a hosted one by its key, or a local Ollama.
const FIRST_PROVIDER = `{
  "providers": {
    "openai": { "kind": "openai", "apiKey": "\${OPENAI_API_KEY}", "defaultModel": "gpt-4o" },
    "local": { "kind": "openai", "baseUrl": "http://localhost:11434/v1", "defaultModel": "qwen3" }
  }
}`;

/// What a failed turn's error says in words: the error body's `message` when the server refused
/// the request before the turn started (the SDK hands over the body as it came), else the
/// error's own text (a turn that failed while it ran says it in words already).
function plainError(error: Error): string {
  try {
    const body = JSON.parse(error.message) as { error?: { message?: unknown } };
    if (typeof body.error?.message === "string") return body.error.message;
  } catch {
    // Not JSON: words already.
  }
  return error.message;
}

/// The model picker. Its first choice is the conversation's own provider and model (`kept`), which
/// the server keeps using when none is named, or the configured default for a new conversation.
function ModelPicker({ value, onChange, kept }: { value: string; onChange: (v: string) => void; kept?: Conversation }) {
  // Without the list (no provider answers) the picker offers the default alone.
  const providers = useProviders() ?? [];
  return (
    <label className="model-picker">
      <span>Model</span>
      <select value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">{kept ? `${kept.model} · ${kept.provider} (this conversation's)` : "Default"}</option>
        {providers.map((p) => {
          const models = p.models ?? [p.defaultModel].filter((m): m is string => !!m);
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
  /// The call it is for (the model's id for it), when the approval was raised by one.
  toolCallId?: string;
  tool: string;
  source: string;
  arguments: unknown;
  message?: string | null;
}

/// What a card says of an approval that ended without an answer from it.
const ENDED_ELSEWHERE: Partial<Record<Outcome, string>> = {
  allowed: "Allowed elsewhere",
  denied: "Denied elsewhere",
  withdrawn: "No longer waiting: it timed out or its turn was cancelled",
};

/// An approval in the thread. `outcome` is how it ended when it ended anywhere (the approvals
/// stream): answered on the Approvals page, in another tab, over REST, or timed out; the card
/// then says so and offers no button that could only fail.
function ApprovalCard({ data, outcome, inCard }: { data: ApprovalData; outcome?: Outcome; inCard?: boolean }) {
  const [done, setDone] = useState<string | null>(null);
  const [answering, setAnswering] = useState(false);
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const answer = async (decision: "allow" | "deny", always = false) => {
    setAnswering(true);
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
      // Gone between the stream's word and the click: say so instead of offering it again.
      if (e instanceof ApiFailure && e.status === 404) setDone("No longer waiting: it was answered elsewhere or timed out");
      else setError(describe(e));
    } finally {
      setAnswering(false);
    }
  };
  // While this card's own answer is on its way, the stream's word of it is this answer.
  const ended = done ?? (outcome && !answering ? (ENDED_ELSEWHERE[outcome] ?? `Ended: ${outcome}`) : null);
  // "For this conversation" is toolmux's to keep (`scope: "conversation"`): the tool's later
  // calls in this conversation run without asking, so no card comes for them.
  return (
    <section className="approval-card" aria-label={`Approval for ${data.tool}`}>
      {inCard ? (
        // The call's card around it shows the tool, its source and its arguments; the question
        // is the policy's message when it has one.
        !data.message && (
          <header>
            Allow <strong>{data.tool}</strong> to run?
          </header>
        )
      ) : (
        <>
          <header>
            <strong>{data.tool}</strong> <SourceBadge source={data.source} /> wants to run.
          </header>
          <details>
            <summary>Arguments</summary>
            <JsonTree value={data.arguments} />
          </details>
        </>
      )}
      {data.message && <p>{data.message}</p>}
      {ended ? (
        <p className="muted" role="status">
          {ended}
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

/// What a card says of a question that ended without an answer from it.
const QUESTION_ENDED_ELSEWHERE: Partial<Record<Outcome, string>> = {
  accepted: "Answered elsewhere",
  declined: "Declined elsewhere",
  cancelled: "Dismissed elsewhere",
  withdrawn: "No longer waiting: it timed out or its turn was cancelled",
};

/// A question in the thread (the model's `request_human_input`, or a server's form). Like an
/// approval's card, it says how it ended when it was answered anywhere else (`outcome`, from
/// the approvals stream) and then offers no form that could only fail.
function InputCard({ data, outcome }: { data: InputData; outcome?: Outcome }) {
  const [done, setDone] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const [text, setText] = useState("");
  const [error, setError] = useState<string | null>(null);
  const send = async (body: unknown, label: string) => {
    setSending(true);
    try {
      await api(data.answer, { method: "POST", body });
      setDone(label);
    } catch (e) {
      // Gone between the stream's word and the click: say so instead of offering it again.
      if (e instanceof ApiFailure && e.status === 404) setDone("No longer waiting: it was answered elsewhere or timed out");
      else setError(describe(e));
    } finally {
      setSending(false);
    }
  };
  // While this card's own answer is on its way, the stream's word of it is this answer.
  const ended = done ?? (outcome && !sending ? (QUESTION_ENDED_ELSEWHERE[outcome] ?? `Ended: ${outcome}`) : null);
  return (
    <section className="input-card" aria-label="Question">
      <p>
        <strong>{data.asker ? `${String(data.asker)} asks:` : "The model asks:"}</strong> {data.question}
      </p>
      {ended ? (
        <p className="muted" role="status">
          {ended}
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

/// A waiting approval from the queue, as the turn's stream words it.
function approvalData(approval: PendingApproval): ApprovalData {
  const r = approval.request;
  return {
    approvalId: approval.id,
    toolCallId: r.toolCallId,
    tool: r.tool,
    source: r.source,
    arguments: r.arguments,
    message: r.message,
  };
}

/// Which call each approval is for: the call it names (`toolCallId`), whether it came in the
/// turn's stream or from the queue (a reopened conversation), so that it stays in that call's
/// card once answered. A call's card holds its latest approval (`approvals` are in the order
/// they were raised: the stream's, then the queue's); an approval naming no call of the thread
/// (a coding agent's request) is shown on its own.
function approvalsByCall(messages: UIMessage[], approvals: ApprovalData[]): Map<string, ApprovalData> {
  const byCall = new Map<string, ApprovalData>();
  if (approvals.length === 0) return byCall;
  const calls = new Set(messages.flatMap((m) => m.parts.flatMap((p) => (p.type === "dynamic-tool" ? [p.toolCallId] : []))));
  for (const approval of approvals) if (approval.toolCallId && calls.has(approval.toolCallId)) byCall.set(approval.toolCallId, approval);
  return byCall;
}

/// Whether a question's schema is the free-text one (`{"answer": "..."}`), which the card asks
/// as one text field rather than as a form, as the turn's stream does.
function isFreeText(schema: JsonSchema | undefined): boolean {
  const properties = schema?.properties as Record<string, { type?: unknown }> | undefined;
  const names = Object.keys(properties ?? {});
  return names.length === 1 && names[0] === "answer" && properties?.answer?.type === "string";
}

/// A waiting question of conversation `conversation` from the queue, as the turn's stream
/// words it.
function inputData(conversation: string, input: PendingInput): InputData {
  return {
    requestId: input.id,
    question: input.question,
    answer: `/api/chat/${encodeURIComponent(conversation)}/input`,
    form: isFreeText(input.schema) ? undefined : input.schema,
    asker: input.asker,
  };
}

/// What conversation `id` waits on in the queue (approvals and questions), kept once seen while
/// the conversation is shown: a card answered elsewhere leaves the queue, and then says how it
/// ended instead of vanishing.
function useQueued(id: string, waiting: Waiting): { approvals: PendingApproval[]; inputs: PendingInput[] } {
  const [seen, setSeen] = useState<{ approvals: PendingApproval[]; inputs: PendingInput[] }>({ approvals: [], inputs: [] });
  useEffect(() => {
    setSeen((old) => {
      const approvals = waiting.approvals.filter((a) => a.request.session === id && !old.approvals.some((o) => o.id === a.id));
      const inputs = waiting.inputs.filter((i) => i.session === id && !old.inputs.some((o) => o.id === i.id));
      return approvals.length === 0 && inputs.length === 0
        ? old
        : { approvals: [...old.approvals, ...approvals], inputs: [...old.inputs, ...inputs] };
    });
  }, [id, waiting]);
  return seen;
}

function Conversation(props: {
  chat: ChatSession<UIMessage>;
  model: string;
  onModel: (model: string) => void;
  progress: Record<string, Progress>;
  onTurnStart: () => void;
  waiting: Waiting;
  /// A turn runs on the server that this page does not stream (started before a reload).
  runningElsewhere: boolean;
}) {
  const { chat, model, onModel, progress, onTurnStart, waiting, runningElsewhere } = props;
  const id = chat.id;
  const [draft, setDraft] = useState("");
  // One render per 50 ms at most, however fast the deltas come.
  const { messages, sendMessage, setMessages, status, stop, error } = useChat({ chat, experimental_throttle: 50 });
  const streaming = status === "submitted" || status === "streaming";
  const busy = streaming || runningElsewhere;
  const providers = useProviders();
  // This conversation as the list has it (its provider and model), once it is kept.
  const kept = useQuery({ queryKey: CONVERSATIONS, queryFn: readConversations }).data?.find((c) => c.id === id);
  // The person's message being edited: its place in the thread and the new text.
  const [editing, setEditing] = useState<{ index: number; text: string } | null>(null);
  // What this conversation's turn waits on that its stream did not bring (the page was
  // reloaded, or opened again, while the turn waited): read from the approvals queue.
  const inline = new Set(
    messages.flatMap((m) =>
      m.parts.flatMap((p) =>
        p.type === "data-approval"
          ? [(p.data as ApprovalData).approvalId]
          : p.type === "data-input-request"
            ? [(p.data as InputData).requestId]
            : [],
      ),
    ),
  );
  const waitingHere = useQueued(id, waiting);
  const queued = streaming ? [] : waitingHere.approvals.filter((a) => !inline.has(a.id));
  const queuedInputs = streaming ? [] : waitingHere.inputs.filter((i) => !inline.has(i.id));
  // Each approval is shown in the card of the call it is for, one card per call.
  const byCall = approvalsByCall(messages, [
    ...messages.flatMap((m) => m.parts.flatMap((p) => (p.type === "data-approval" ? [p.data as ApprovalData] : []))),
    ...queued.map(approvalData),
  ]);
  const inCards = new Set([...byCall.values()].map((a) => a.approvalId));
  const send = (e: FormEvent) => {
    e.preventDefault();
    const text = draft.trim();
    if (!text || busy) return;
    setDraft("");
    onTurnStart();
    void sendMessage({ text });
  };
  // Edit and resend, regenerate: the turn that starts at message `index` is taken again with
  // `text` — the server drops it and what followed (`replaceTurn`, counted in the person's
  // messages), and the thread drops them too.
  const takeAgain = (index: number, text: string) => {
    if (busy || !text.trim()) return;
    const turn = messages.slice(0, index).filter((m) => m.role === "user").length;
    setEditing(null);
    setMessages(messages.slice(0, index));
    onTurnStart();
    void sendMessage({ text: text.trim() }, { body: { replaceTurn: turn } });
  };
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  const cancel = async () => {
    try {
      await api(`/api/chat/${encodeURIComponent(id)}/cancel`, { method: "POST" });
    } catch {
      // No turn running on the server any more: stopping the stream is all there is to do.
    }
    await stop();
  };
  // Esc stops the turn, wherever the focus is (a field that uses Esc itself prevents this).
  const cancelRef = useRef(cancel);
  cancelRef.current = cancel;
  useEffect(() => {
    if (!busy) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape" && !e.defaultPrevented) void cancelRef.current();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [busy]);
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
        {messages.length === 0 &&
          (providers?.length === 0 ? <FirstRun /> : <p className="muted">Ask anything; the model can use every tool in the catalog.</p>)}
        {messages.map((m, index) => (
          <div key={m.id} className={`message ${m.role}`}>
            <div className="role">{m.role === "user" ? "You" : "Assistant"}</div>
            {editing?.index === index ? (
              <form
                className="edit-message"
                onSubmit={(e) => {
                  e.preventDefault();
                  takeAgain(index, editing.text);
                }}
              >
                <label htmlFor="edit-message" className="visually-hidden">
                  Edit your message
                </label>
                <textarea
                  id="edit-message"
                  autoFocus
                  rows={2}
                  value={editing.text}
                  onChange={(e) => setEditing({ index, text: e.target.value })}
                  onKeyDown={(e) => {
                    if (e.key === "Escape") {
                      e.preventDefault();
                      setEditing(null);
                    }
                  }}
                />
                <button type="submit" disabled={busy || !editing.text.trim()}>
                  Save and send
                </button>
                <button type="button" onClick={() => setEditing(null)}>
                  Cancel
                </button>
              </form>
            ) : null}
            {m.parts.map((p, i) => {
              if (p.type === "text") {
                if (editing?.index === index) return null;
                return m.role === "user" ? <p key={i}>{p.text}</p> : <Markdown key={i} text={p.text} />;
              }
              if (p.type === "dynamic-tool") {
                const approval = byCall.get(p.toolCallId);
                const outcome = approval ? waiting.resolved[approval.approvalId] : undefined;
                return (
                  <ToolCard
                    key={p.toolCallId}
                    part={p}
                    progress={progress[p.toolCallId]}
                    approval={approval && <ApprovalCard key={approval.approvalId} data={approval} outcome={outcome} inCard />}
                    approvalState={approval && `${approval.approvalId}:${outcome ?? ""}`}
                    waiting={approval !== undefined && outcome === undefined}
                  />
                );
              }
              if (p.type === "data-approval") {
                const data = p.data as ApprovalData;
                if (inCards.has(data.approvalId)) return null;
                return <ApprovalCard key={data.approvalId} data={data} outcome={waiting.resolved[data.approvalId]} />;
              }
              if (p.type === "data-input-request") {
                const data = p.data as InputData;
                return <InputCard key={data.requestId} data={data} outcome={waiting.resolved[data.requestId]} />;
              }
              return null;
            })}
            {editing?.index !== index && (
              <div className="message-actions">
                {textOf(m) && <CopyButton text={textOf(m)} label="Copy message" />}
                {m.role === "user" && !busy && (
                  <button type="button" onClick={() => setEditing({ index, text: textOf(m) })}>
                    Edit
                  </button>
                )}
                {m.role === "assistant" && index === messages.length - 1 && lastUser >= 0 && !busy && (
                  <button type="button" onClick={() => takeAgain(lastUser, textOf(messages[lastUser]!))}>
                    Regenerate
                  </button>
                )}
              </div>
            )}
          </div>
        ))}
        {queued
          .filter((a) => !inCards.has(a.id))
          .map((a) => (
            <ApprovalCard key={a.id} data={approvalData(a)} outcome={waiting.resolved[a.id]} />
          ))}
        {queuedInputs.map((i) => (
          <InputCard key={i.id} data={inputData(id, i)} outcome={waiting.resolved[i.id]} />
        ))}
        {runningElsewhere && (
          <p className="muted" role="status">
            The answer is still being worked on; it appears here when the turn ends.
          </p>
        )}
        {error && (
          <div role="alert" className="error turn-error">
            <p>{plainError(error)}</p>
            {lastUser >= 0 && !busy && (
              // The same message again, in the same turn: the server drops what the failed turn
              // saved of it (`replaceTurn`), or starts it when it never started.
              <button type="button" onClick={() => takeAgain(lastUser, textOf(messages[lastUser]!))}>
                Retry
              </button>
            )}
          </div>
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
          <ModelPicker value={model} onChange={onModel} kept={kept} />
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

/// A message's text (its text parts, one paragraph each).
function textOf(message: UIMessage): string {
  return message.parts
    .flatMap((p) => (p.type === "text" ? [p.text] : []))
    .join("\n\n");
}

/// A button that copies `text`, and says for a moment that it did.
function CopyButton({ text, label }: { text: string; label: string }) {
  const [said, setSaid] = useState<string | null>(null);
  useEffect(() => {
    if (said === null) return;
    const timer = window.setTimeout(() => setSaid(null), 2000);
    return () => window.clearTimeout(timer);
  }, [said]);
  return (
    <button type="button" onClick={() => void copyText(text).then(setSaid)}>
      {said ?? label}
    </button>
  );
}

/// A chat session of the AI SDK for one conversation, starting from `messages`.
function chatSession(
  id: string,
  messages: UIMessage[],
  transport: DefaultChatTransport<UIMessage>,
  on: { progress: (p: Progress & { toolCallId: string }) => void; finish: () => void },
): ChatSession<UIMessage> {
  const session = new ChatSession<UIMessage>({
    id,
    messages,
    transport,
    onData: (part) => {
      if (part.type === "data-tool-progress") on.progress(part.data as Progress & { toolCallId: string });
    },
    onFinish: () => on.finish(),
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
}

export default function Chat({ path, waiting }: { path: string; waiting: Waiting }) {
  const routeId = path.startsWith("/chat/") ? decodeURIComponent(path.slice("/chat/".length)) : undefined;
  const navigate = useNavigate();
  const [model, setModel] = useState("");
  const modelRef = useRef(model);
  modelRef.current = model;
  const [progress, setProgress] = useState<Record<string, Progress>>({});
  const queryClient = useQueryClient();
  const listChanged = useCallback(() => void queryClient.invalidateQueries({ queryKey: CONVERSATIONS }), [queryClient]);
  const transport = useMemo(
    () =>
      new DefaultChatTransport<UIMessage>({
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
  // The sessions of the conversations this page sent a turn in, by id: opened again, each shows
  // what it holds (a turn may still be streaming into it), never another conversation's
  // messages, and is not read again from the server.
  const kept = useRef(new Map<string, ChatSession<UIMessage>>());
  const open = useCallback(
    (id: string, messages: UIMessage[]) =>
      chatSession(id, messages, transport, {
        progress: (p) => setProgress((old) => ({ ...old, [p.toolCallId]: p })),
        finish: listChanged,
      }),
    [transport, listChanged],
  );
  // The conversation shown is worked out while rendering the address, never in an effect
  // after it: an effect would leave the previous conversation on screen for a frame, and what
  // is typed into it in that frame would be sent to the conversation just left.
  const { key: visit } = useLocation();
  // A new conversation gets its id at once (the server makes one under the id it is sent), so
  // its address is known before its first answer; each visit to "New conversation" (`visit`)
  // is a new one.
  const fresh = useMemo(() => (routeId ? null : open(newId(), [])), [routeId, visit, open]);
  const [loaded, setLoaded] = useState<ChatSession<UIMessage> | null>(null);
  // The loaded conversation whose turn runs on the server without this page's stream.
  const [runningId, setRunningId] = useState<string | null>(null);
  const keptSession = routeId ? kept.current.get(routeId) : undefined;
  const shown = fresh ?? keptSession ?? (loaded !== null && loaded.id === routeId ? loaded : null);
  // On a narrow screen the list is a drawer, closed whenever a conversation is chosen.
  const [drawer, setDrawer] = useState(false);
  useEffect(() => setDrawer(false), [path]);
  const [followError, setFollowError] = useState<string | null>(null);
  const needsLoading = routeId !== undefined && keptSession === undefined && loaded?.id !== routeId;
  // The conversation's stored messages, read when it is opened (and dropped from the cache once
  // left, so each opening reads it afresh); its chat session is made from that first read.
  const detail = useQuery({
    queryKey: conversationKey(routeId ?? ""),
    queryFn: () => readConversation(routeId ?? ""),
    enabled: needsLoading,
    gcTime: 0,
  });
  const loadError = followError ?? (needsLoading && detail.error ? describe(detail.error) : null);
  useEffect(() => setFollowError(null), [routeId]);
  useEffect(() => {
    if (!needsLoading || routeId === undefined || detail.data === undefined) return;
    setLoaded(open(routeId, toUiMessages(detail.data.messages)));
    setRunningId(detail.data.running ? routeId : null);
  }, [routeId, needsLoading, detail.data, open]);
  // A conversation opened while its turn runs on the server (its page was reloaded, or the
  // turn was started elsewhere) is read when it is opened and again whenever something happens
  // in it, until the turn ends: a call of the turn logged (the execution log's stream, filtered
  // to the conversation), something of it began or stopped waiting for a person, or its turn
  // ended (both on the approvals stream) — and whenever that stream connects again, since a
  // turn that ended while it was down was not told. Nothing is read on a clock. The server keeps
  // no replay of a turn's stream to reattach to: the answer's text shows when the turn ends.
  const followed = loaded !== null && shown === loaded && runningId === loaded.id ? loaded : null;
  const changed = useRef<(() => void) | null>(null);
  useEffect(() => {
    if (followed === null) return;
    let wanted = true;
    // One read at a time; an event during a read asks for one more after it.
    let reading = false;
    let readAgain = false;
    const read = () => {
      if (reading) {
        readAgain = true;
        return;
      }
      reading = true;
      // Through the query cache, as the first read was.
      queryClient
        // `gcTime: 0` as the first read's: a fetch keeps the longest time any asked for, and a
        // conversation left must be read afresh when opened again (another tab may go on with it).
        .fetchQuery({ queryKey: conversationKey(followed.id), queryFn: () => readConversation(followed.id), gcTime: 0 })
        .then((r) => {
          if (!wanted) return;
          followed.messages = toUiMessages(r.messages);
          if (!r.running) {
            wanted = false;
            setRunningId(null);
            listChanged();
          }
        })
        .catch((e) => {
          if (wanted) setFollowError(describe(e));
          wanted = false;
        })
        .finally(() => {
          reading = false;
          if (readAgain && wanted) {
            readAgain = false;
            read();
          }
        });
    };
    changed.current = () => {
      if (wanted) read();
    };
    const log = openStream(`/api/logs/stream?session=${encodeURIComponent(followed.id)}`, {
      onEvent: (event) => {
        if (event === "entry") changed.current?.();
      },
    });
    // The turn may have ended between the read that opened the conversation and the streams'
    // start.
    read();
    return () => {
      wanted = false;
      changed.current = null;
      log.close();
    };
  }, [followed, listChanged, queryClient]);
  // The approvals stream's events: a wait of the turn began or ended, the turn ended, or the
  // stream connected again.
  const endedHere = followed === null ? 0 : (waiting.turnsEnded[followed.id] ?? 0);
  useEffect(() => changed.current?.(), [waiting.events, waiting.connected, endedHere]);
  // Ctrl+Shift+O (⌘⇧O): a new conversation, wherever the focus is.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.ctrlKey || e.metaKey) && e.shiftKey && e.key.toLowerCase() === "o") {
        e.preventDefault();
        void navigate("/chat");
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [navigate]);
  const turnStarted = (session: ChatSession<UIMessage>) => {
    kept.current.set(session.id, session);
    listChanged();
    // Through the router, so the page knows its address: "New conversation" then leaves it.
    if (!routeId) void navigate(`/chat/${encodeURIComponent(session.id)}`, { replace: true });
  };
  return (
    <div className="chat-page">
      <h1 className="visually-hidden">Chat</h1>
      <FoldButton open={drawer} onToggle={() => setDrawer((o) => !o)} controls="conversations" className="drawer-toggle">
        Conversations
      </FoldButton>
      <Conversations current={routeId} open={drawer} onClose={() => setDrawer(false)} />
      {loadError ? (
        <p role="alert" className="error">
          {loadError}
        </p>
      ) : shown === null ? (
        <p className="muted">Loading…</p>
      ) : (
        <Conversation
          key={shown.id}
          chat={shown}
          model={model}
          onModel={setModel}
          progress={progress}
          onTurnStart={() => turnStarted(shown)}
          waiting={waiting}
          runningElsewhere={shown === followed}
        />
      )}
    </div>
  );
}
