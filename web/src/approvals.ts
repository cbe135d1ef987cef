// Everything waiting for a person, from every channel, kept fresh for the navigation's count and
// the Approvals page: approvals (`GET /api/approvals`) and questions (`GET /api/inputs`), one
// query read again at once whenever the server's one event stream of them
// (`GET /api/approvals/stream`: `pending`, `resolved`) says something changed, and every few
// seconds besides, so the count stays right if the stream drops. How each wait ended
// (`resolved`) is kept too, so that a card answered elsewhere (another tab, the Approvals page,
// the REST API) stops offering its buttons; and which chat turns ended (`turn-ended`), so that a
// page following a turn it did not start reads it once when it ends.
import { useEffect, useMemo, useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, openStream, type JsonSchema, type PendingApproval } from "./api";

export interface PendingInput {
  id: string;
  tool?: string;
  arguments?: unknown;
  question: string;
  schema?: JsonSchema;
  channel?: string;
  session?: string | null;
  /// The MCP server whose form it is (an elicitation), when it is not the model's question.
  asker?: string;
  created: string;
  expires?: string;
}

/// How a wait ended, as the stream's `resolved` event says.
export type Outcome = "allowed" | "denied" | "accepted" | "declined" | "cancelled" | "withdrawn";

export interface Waiting {
  approvals: PendingApproval[];
  inputs: PendingInput[];
  /// How each wait that ended while the page was open ended, by id.
  resolved: Record<string, Outcome>;
  /// How many events the stream has brought: it changes whenever something began or stopped
  /// waiting, for what follows a running turn.
  events: number;
  /// How many times a turn of each conversation ended while the page was open, by conversation.
  turnsEnded: Record<string, number>;
  /// How many times the stream (re)connected: a turn that ended while it was down was not told,
  /// so what follows a turn reads it again then.
  connected: number;
}

/// The query of what waits: read again (invalidated) at each of the stream's events and after an
/// answer given on this page.
const WAITING = ["waiting"];

/// How often what waits is read besides, so the count stays right if the stream drops.
const WAITING_POLL_MS = 5000;

export function useWaiting(): Waiting {
  const queryClient = useQueryClient();
  const waiting = useQuery({
    queryKey: WAITING,
    queryFn: async () => {
      const [approvals, inputs] = await Promise.all([
        api<{ approvals: PendingApproval[] }>("/api/approvals").then((r) => r.approvals),
        // Questions are the lesser half: without them the approvals are still counted.
        api<{ inputs: PendingInput[] }>("/api/inputs").then((r) => r.inputs).catch(() => []),
      ]);
      return { approvals, inputs };
    },
    // A failed read keeps the count as it was (the query keeps its last data); the page shows
    // the failure when it is open.
    refetchInterval: WAITING_POLL_MS,
  });
  const [resolved, setResolved] = useState<Record<string, Outcome>>({});
  const [events, setEvents] = useState(0);
  const [turnsEnded, setTurnsEnded] = useState<Record<string, number>>({});
  const [connected, setConnected] = useState(0);
  useEffect(() => {
    const load = () => void queryClient.invalidateQueries({ queryKey: WAITING });
    const source = openStream("/api/approvals/stream", {
      // The server subscribes before it answers, so a turn ending after this is told.
      onOpen: () => setConnected((n) => n + 1),
      onEvent: (event, data) => {
        if (event === "resolved") {
          const ended = parseResolved(data);
          if (ended) setResolved((old) => ({ ...old, [ended.id]: ended.outcome }));
        }
        if (event === "pending" || event === "resolved") {
          setEvents((n) => n + 1);
          load();
        }
        if (event === "turn-ended") {
          const session = parseTurnEnded(data);
          if (session !== null) setTurnsEnded((old) => ({ ...old, [session]: (old[session] ?? 0) + 1 }));
        }
      },
    });
    window.addEventListener("toolmux:approvals-changed", load);
    return () => {
      source.close();
      window.removeEventListener("toolmux:approvals-changed", load);
    };
  }, [queryClient]);
  const data = waiting.data;
  return useMemo(
    () => ({ approvals: data?.approvals ?? [], inputs: data?.inputs ?? [], resolved, events, turnsEnded, connected }),
    [data, resolved, events, turnsEnded, connected],
  );
}

/// A `resolved` event's `{id, outcome}`; null for anything else (the stream is the server's,
/// but a page never trusts a shape it did not check).
function parseResolved(data: string): { id: string; outcome: Outcome } | null {
  try {
    const value = JSON.parse(data) as { id?: unknown; outcome?: unknown };
    return typeof value.id === "string" && typeof value.outcome === "string"
      ? { id: value.id, outcome: value.outcome as Outcome }
      : null;
  } catch {
    return null;
  }
}

/// A `turn-ended` event's conversation (`{session}`); null for anything else.
function parseTurnEnded(data: string): string | null {
  try {
    const value = JSON.parse(data) as { session?: unknown };
    return typeof value.session === "string" ? value.session : null;
  } catch {
    return null;
  }
}
