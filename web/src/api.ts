// The one way the app talks to toolmux's REST API: same origin, and every failure becomes an
// `ApiFailure` carrying the server's one error body (`{"error": {"code", "message", "details"}}`).
//
// Signed in, a request carries the session's two halves: the HttpOnly cookie the browser sends
// by itself, and the session key, which the page keeps in its origin's storage and sends as
// `X-Toolmux-Session`. The server takes neither alone: a browser sends the cookie to every port
// of the host (a page or server on another port gets it too), while the key is readable only by
// this origin's scripts, and no other origin can make the browser send the header.
import { createParser } from "eventsource-parser";
import type { components } from "./api-types";

export class ApiFailure extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
    public details?: unknown,
  ) {
    super(message);
  }
}

const SESSION_KEY = "toolmux.sessionKey";
/// Where the key lives when the browser keeps no storage for the page (then a reload signs out).
let keptInMemory: string | null = null;

/// Keeps the session key `POST /api/auth/session` answered with, or forgets it (`null`). In
/// `localStorage`, which only this origin (scheme, host and port) reads: a reload or a new tab of
/// this address stays signed in, as long as the server keeps the session.
export function keepSessionKey(key: string | null) {
  keptInMemory = key;
  try {
    if (key === null) localStorage.removeItem(SESSION_KEY);
    else localStorage.setItem(SESSION_KEY, key);
  } catch {
    // No storage: the key stays in memory only.
  }
}

function sessionKey(): string | null {
  try {
    // Read each time: another tab's sign-in replaced the cookie, and its key with it.
    return localStorage.getItem(SESSION_KEY) ?? keptInMemory;
  } catch {
    return keptInMemory;
  }
}

/// The header that makes the session cookie count; none before signing in.
export function sessionHeaders(): Record<string, string> {
  const key = sessionKey();
  return key ? { "x-toolmux-session": key } : {};
}

export async function api<T = unknown>(
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<T> {
  const response = await fetch(path, {
    method: init.method ?? "GET",
    credentials: "same-origin",
    headers: { ...sessionHeaders(), ...(init.body !== undefined ? { "content-type": "application/json" } : {}) },
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
    signal: init.signal,
  });
  if (response.status === 401) window.dispatchEvent(new Event("toolmux:signed-out"));
  const text = await response.text();
  let json: unknown = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!response.ok) {
    const error = (json as { error?: { code?: string; message?: string; details?: unknown } })?.error;
    throw new ApiFailure(
      response.status,
      error?.code ?? String(response.status),
      error?.message ?? (text || response.statusText),
      error?.details,
    );
  }
  return json as T;
}

/// What an event stream reports: each event by name (`message` when it has none), and its state.
export interface StreamHandlers {
  /// Connected (again): whatever came before may have been missed.
  onOpen?: () => void;
  onEvent: (event: string, data: string) => void;
  /// `connecting` while (re)connecting, `open`, or `closed` for good (an HTTP error).
  onState?: (state: "connecting" | "open" | "closed") => void;
}

/// The most an event stream may hold of one unfinished event before it is dropped and read again.
const MAX_EVENT_CHARS = 8 * 1024 * 1024;

/// Follows one of the API's event streams (server-sent events), read with `fetch` so that it
/// carries the session key, which `EventSource` cannot send. Like `EventSource`, it reconnects
/// after the server's `retry` (3 s unless it says otherwise) when the stream drops, and stops for
/// good on an HTTP error (a 401 also signs the page out).
export function openStream(path: string, on: StreamHandlers): { close: () => void } {
  const controller = new AbortController();
  let closed = false;
  let retry = 3000;
  let timer: number | undefined;
  const again = () => {
    if (closed) return;
    on.onState?.("connecting");
    timer = window.setTimeout(() => void connect(), retry);
  };
  const connect = async () => {
    let response: Response;
    try {
      response = await fetch(path, {
        credentials: "same-origin",
        cache: "no-store",
        headers: { ...sessionHeaders(), accept: "text/event-stream" },
        signal: controller.signal,
      });
    } catch {
      again();
      return;
    }
    if (response.status === 401) window.dispatchEvent(new Event("toolmux:signed-out"));
    if (!response.ok || !response.body) {
      closed = true;
      on.onState?.("closed");
      return;
    }
    on.onState?.("open");
    on.onOpen?.();
    const parser = createParser({
      onEvent: (e) => on.onEvent(e.event ?? "message", e.data),
      onRetry: (ms) => {
        retry = ms;
      },
      maxBufferSize: MAX_EVENT_CHARS,
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
    } catch {
      // Dropped, closed, or an event past the limit: read the stream again.
      reader.cancel().catch(() => undefined);
    }
    again();
  };
  on.onState?.("connecting");
  void connect();
  return {
    close: () => {
      closed = true;
      window.clearTimeout(timer);
      controller.abort();
    },
  };
}

/// A failure in plain words, for the page.
export function describe(e: unknown): string {
  if (e instanceof ApiFailure) return `${e.message} (${e.code})`;
  if (e instanceof Error) return e.message;
  return String(e);
}

/// The API's shapes as its OpenAPI document names them: `api-types.ts` is generated from
/// `web/openapi.json` (the served document, kept equal by a test) when the app builds.
export type Schemas = components["schemas"];

/// A catalog entry (`ToolView`); the document leaves its schemas as plain JSON, which the page
/// reads as JSON Schema.
export type ToolEntry = Omit<Schemas["ToolView"], "inputSchema" | "outputSchema"> & {
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema | null;
};

export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  items?: JsonSchema;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  format?: string;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  const?: unknown;
  [key: string]: unknown;
}

/// MCP's content blocks, as `POST /api/tools/{name}/call` returns them.
export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: "resource_link"; uri: string; name?: string; mimeType?: string }
  | { type: string; [key: string]: unknown };

/// A call's outcome (`CallResponse`), its content read as MCP's blocks.
export type CallResponse = Omit<Schemas["CallResponse"], "content"> & { content: ContentBlock[] };

/// One waiting approval: the document types the list's items only as JSON objects.
export interface PendingApproval {
  id: string;
  created: string;
  request: {
    tool: string;
    source: string;
    arguments: unknown;
    channel?: string;
    session?: string | null;
    /// The id of the model's call it is for (a chat turn's call), when the caller gave one.
    toolCallId?: string;
    message?: string | null;
  };
}

/// Answers an approval. `scope: "conversation"` (an allow of a chat call only) makes toolmux
/// allow the tool's later calls in the same conversation without asking, server-side.
export function answerApproval(id: string, decision: "allow" | "deny", reason?: string, scope?: "once" | "conversation") {
  return api(`/api/approvals/${encodeURIComponent(id)}`, {
    method: "POST",
    body: { decision, ...(reason ? { reason } : {}), ...(scope ? { scope } : {}) },
  });
}
