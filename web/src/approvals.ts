// Everything waiting for a person, from every channel, kept fresh for the navigation's count and
// the Approvals page: approvals (`GET /api/approvals`) and questions (`GET /api/inputs`), read
// again at once whenever the server's one event stream of them (`GET /api/approvals/stream`:
// `pending`, `resolved`) says something changed, and every few seconds besides, so the count
// stays right if the stream drops. How each wait ended (`resolved`) is kept too, so that a card
// answered elsewhere (another tab, the Approvals page, the REST API) stops offering its buttons.
import { useEffect, useMemo, useState } from "react";
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
}

export function useWaiting(): Waiting {
  const [waiting, setWaiting] = useState<Omit<Waiting, "resolved" | "events">>({ approvals: [], inputs: [] });
  const [resolved, setResolved] = useState<Record<string, Outcome>>({});
  const [events, setEvents] = useState(0);
  useEffect(() => {
    let live = true;
    let timer: number | undefined;
    const load = async () => {
      const [approvals, inputs] = await Promise.all([
        api<{ approvals: PendingApproval[] }>("/api/approvals").then((r) => r.approvals).catch(() => null),
        api<{ inputs: PendingInput[] }>("/api/inputs").then((r) => r.inputs).catch(() => []),
      ]);
      // A failed read keeps the count as it was; the page shows the failure when it is open.
      if (live && approvals) setWaiting({ approvals, inputs });
    };
    const poll = () => {
      void load().finally(() => {
        if (live) timer = window.setTimeout(poll, 5000);
      });
    };
    const source = openStream("/api/approvals/stream", {
      onEvent: (event, data) => {
        if (event === "resolved") {
          const ended = parseResolved(data);
          if (ended) setResolved((old) => ({ ...old, [ended.id]: ended.outcome }));
        }
        if (event === "pending" || event === "resolved") {
          setEvents((n) => n + 1);
          void load();
        }
      },
    });
    poll();
    const changed = () => void load();
    window.addEventListener("toolmux:approvals-changed", changed);
    return () => {
      live = false;
      source.close();
      window.clearTimeout(timer);
      window.removeEventListener("toolmux:approvals-changed", changed);
    };
  }, []);
  return useMemo(() => ({ ...waiting, resolved, events }), [waiting, resolved, events]);
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
