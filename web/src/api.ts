// The one way the app talks to toolmux's REST API: same origin, the session cookie (set by
// `POST /api/auth/session`) rides along, and every failure becomes an `ApiFailure` carrying the
// server's one error body (`{"error": {"code", "message", "details"}}`).

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

export async function api<T = unknown>(
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<T> {
  const response = await fetch(path, {
    method: init.method ?? "GET",
    credentials: "same-origin",
    headers: init.body !== undefined ? { "content-type": "application/json" } : {},
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

/// A failure in plain words, for the page.
export function describe(e: unknown): string {
  if (e instanceof ApiFailure) return `${e.message} (${e.code})`;
  if (e instanceof Error) return e.message;
  return String(e);
}

export interface ToolEntry {
  name: string;
  originalName: string;
  source: string;
  title?: string | null;
  description: string;
  inputSchema: JsonSchema;
  outputSchema?: JsonSchema | null;
  annotations?: Record<string, unknown> | null;
  internal: boolean;
  parallel: boolean;
  policy: "allow" | "ask" | "deny";
  policyOrigin: string;
  effectiveTimeoutMs: number;
  enabled?: boolean;
  /// What kind of source it comes from: the badge says so without guessing from the name.
  sourceKind?: "builtin" | "script" | "mcp";
  discoveryStatus?: string;
  lastDiscovered?: string | null;
}

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

export interface CallResponse {
  status: string;
  content: ContentBlock[];
  structuredContent?: unknown;
  error?: string | null;
  callId: string;
  durationMs: number;
}

export interface PendingApproval {
  id: string;
  created: string;
  request: {
    tool: string;
    source: string;
    arguments: unknown;
    channel?: string;
    session?: string | null;
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
