// Everything waiting for a person, from every channel, kept fresh for the navigation's count and
// the Approvals page: approvals (`GET /api/approvals`) and questions (`GET /api/inputs`), read
// again at once whenever the server's one event stream of them (`GET /api/approvals/stream`:
// `pending`, `resolved`) says something changed, and every few seconds besides, so the count
// stays right if the stream drops.
import { useEffect, useState } from "react";
import { api, openStream, type JsonSchema, type PendingApproval } from "./api";

export interface PendingInput {
  id: string;
  tool?: string;
  arguments?: unknown;
  question: string;
  schema?: JsonSchema;
  channel?: string;
  session?: string | null;
  created: string;
  expires?: string;
}

export interface Waiting {
  approvals: PendingApproval[];
  inputs: PendingInput[];
}

export function useWaiting(): Waiting {
  const [waiting, setWaiting] = useState<Waiting>({ approvals: [], inputs: [] });
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
      onEvent: (event) => {
        if (event === "pending" || event === "resolved") void load();
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
  return waiting;
}
