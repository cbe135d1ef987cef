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
import { ApiFailure, answerApproval, api, describe, openStream, sessionHeaders, type JsonSchema, type PendingApproval, type Schemas } from "../api";
import { FoldButton } from "../components/FoldButton";
import { Markdown } from "../components/Markdown";
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
          output: { content: m.content, structured: m.structured, logId: m.logId, durationMs: m.durationMs },
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

/// `GET /api/conversations/{id}`.
const readConversation = (id: string) => api<ConversationDetail>(`/api/conversations/${encodeURIComponent(id)}`);

function Conversations(props: { current?: string; open: boolean; onClose: () => void }) {
  const { current, open, onClose } = props;
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const conversations = useQuery({
    queryKey: CONVERSATIONS,
    queryFn: async () => (await api<Schemas["ConversationList"]>("/api/conversations")).conversations,
  });
  const list: Conversation[] = conversations.data ?? [];
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
      <Link to="/chat" className="button" onClick={onClose}>
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

function ModelPicker({ value, onChange }: { value: string; onChange: (v: string) => void }) {
  // Without the list (no provider answers) the picker offers the default alone.
  const providers = useQuery({ queryKey: ["models"], queryFn: () => api<Schemas["ModelList"]>("/api/models") }).data?.providers ?? [];
  return (
    <label className="model-picker">
      <span>Model</span>
      <select value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">Default</option>
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
  return { approvalId: approval.id, tool: r.tool, source: r.source, arguments: r.arguments, message: r.message };
}

/// `value` as JSON with its objects' keys in order, so that two copies of the same arguments
/// compare equal whichever order their keys came in.
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value) ?? "null";
}

/// Which call each approval is for, by call id (an approval does not name its call): one of the
/// same tool with the same arguments, not yet matched. An approval the turn's stream sent came
/// right after its call, so it is the first such call in order, answered or not (a call allowed
/// for the conversation may be followed by the same call, which must not take its card). One
/// from the queue (a reopened conversation, whose stream is gone) is waiting, so it is the
/// latest such call still without a result: never an earlier turn's finished call. An
/// approval with no such call is shown on its own.
function approvalsByCall(messages: UIMessage[], streamed: ApprovalData[], queued: ApprovalData[]): Map<string, ApprovalData> {
  const byCall = new Map<string, ApprovalData>();
  if (streamed.length === 0 && queued.length === 0) return byCall;
  const calls = messages.flatMap((m) => m.parts.filter((p): p is DynamicToolUIPart => p.type === "dynamic-tool"));
  const open = calls.filter((c) => c.state === "input-streaming" || c.state === "input-available").reverse();
  const match = (candidates: DynamicToolUIPart[], approval: ApprovalData) => {
    const args = canonical(approval.arguments);
    const call = candidates.find((c) => !byCall.has(c.toolCallId) && c.toolName === approval.tool && canonical(c.input) === args);
    if (call) byCall.set(call.toolCallId, approval);
  };
  for (const approval of streamed) match(calls, approval);
  for (const approval of queued) match(open, approval);
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
  const { messages, sendMessage, status, stop, error } = useChat({ chat, experimental_throttle: 50 });
  const streaming = status === "submitted" || status === "streaming";
  const busy = streaming || runningElsewhere;
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
  const byCall = approvalsByCall(
    messages,
    messages.flatMap((m) => m.parts.flatMap((p) => (p.type === "data-approval" ? [p.data as ApprovalData] : []))),
    queued.map(approvalData),
  );
  const inCards = new Set([...byCall.values()].map((a) => a.approvalId));
  const send = (e: FormEvent) => {
    e.preventDefault();
    const text = draft.trim();
    if (!text || busy) return;
    setDraft("");
    onTurnStart();
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
          <ModelPicker value={model} onChange={onModel} />
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

/// How soon a conversation whose turn runs without this page's stream is read again after
/// something happened in it, and the longest it goes unread while its turn runs.
const QUICK_MS = 250;
const SLOW_MS = 4000;

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
  // turn was started elsewhere) is read again when something happens in it, until the turn
  // ends: a call of the turn logged (the execution log's stream, filtered to the conversation),
  // or something of it began or stopped waiting for a person (the approvals stream). The server
  // keeps no replay of a turn's stream to reattach to, and says nothing when the turn saves its
  // last answer, so after each event the page reads again at growing intervals (`QUICK_MS`
  // doubling up to `SLOW_MS`) until it sees the turn end; while the turn waits for a person it
  // reads nothing until the approvals stream says the wait ended.
  const followed = loaded !== null && shown === loaded && runningId === loaded.id ? loaded : null;
  const changed = useRef<(() => void) | null>(null);
  const waitsHere =
    followed !== null &&
    (waiting.approvals.some((a) => a.request.session === followed.id) || waiting.inputs.some((i) => i.session === followed.id));
  const waitsHereRef = useRef(waitsHere);
  waitsHereRef.current = waitsHere;
  useEffect(() => {
    if (followed === null) return;
    let wanted = true;
    let timer: number | undefined;
    let delay = QUICK_MS;
    // One read at a time; an event during a read asks for one more after it.
    let reading = false;
    let readAgain = false;
    const read = () => {
      window.clearTimeout(timer);
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
          } else if (!readAgain) later();
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
    const later = () => {
      if (waitsHereRef.current) return;
      timer = window.setTimeout(read, delay);
      delay = Math.min(delay * 2, SLOW_MS);
    };
    changed.current = () => {
      if (!wanted) return;
      delay = QUICK_MS;
      read();
    };
    const log = openStream(`/api/logs/stream?session=${encodeURIComponent(followed.id)}`, {
      onEvent: (event) => {
        if (event === "entry") changed.current?.();
      },
    });
    later();
    return () => {
      wanted = false;
      changed.current = null;
      log.close();
      window.clearTimeout(timer);
    };
  }, [followed, listChanged, queryClient]);
  // The approvals stream's events, and the turn's wait ending (the queue read again after them).
  useEffect(() => changed.current?.(), [waiting.events, waitsHere]);
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
