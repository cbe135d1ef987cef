// Everything waiting for a person, from any channel, answerable here.
import { useState } from "react";
import { answerApproval, api, describe, type PendingApproval } from "../api";
import { JsonTree } from "../components/JsonTree";
import { SourceBadge } from "../components/ToolCard";
import { SchemaForm } from "../components/SchemaForm";
import type { PendingInput, Waiting } from "../approvals";

/// A free-text question's schema, as the server words its answer (`{"answer": "..."}`).
const FREE_TEXT = { type: "object", properties: { answer: { type: "string", title: "Your answer" } }, required: ["answer"] };

function Question({ input }: { input: PendingInput }) {
  const [error, setError] = useState<string | null>(null);
  const send = async (body: unknown) => {
    try {
      await api(`/api/inputs/${encodeURIComponent(input.id)}`, { method: "POST", body });
      window.dispatchEvent(new Event("toolmux:approvals-changed"));
    } catch (e) {
      setError(describe(e));
    }
  };
  return (
    <li className="input-card" aria-label={`Question: ${input.question}`}>
      <header>
        <strong>{input.question}</strong>{" "}
        <span className="muted">
          {input.tool ? `${input.tool} · ` : ""}from {input.channel ?? "a client"} · {new Date(input.created).toLocaleTimeString()}
        </span>
      </header>
      <SchemaForm
        schema={input.schema ?? FREE_TEXT}
        label={input.question}
        submitLabel="Answer"
        onSubmit={(content) => send({ action: "accept", content })}
        extra={
          <button type="button" onClick={() => void send({ action: "decline" })}>
            Decline
          </button>
        }
      />
      {error && <p role="alert" className="error">{error}</p>}
    </li>
  );
}

function WaitingCall({ approval }: { approval: PendingApproval }) {
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const answer = async (decision: "allow" | "deny") => {
    try {
      await answerApproval(approval.id, decision, decision === "deny" && reason ? reason : undefined);
      window.dispatchEvent(new Event("toolmux:approvals-changed"));
    } catch (e) {
      setError(describe(e));
    }
  };
  const r = approval.request;
  return (
    <li className="approval-card" aria-label={`Approval for ${r.tool}`}>
      <header>
        <strong>{r.tool}</strong> <SourceBadge source={r.source} />{" "}
        <span className="muted">
          from {r.channel ?? "a client"} · {new Date(approval.created).toLocaleTimeString()}
        </span>
      </header>
      {r.message && <p>{r.message}</p>}
      <JsonTree value={r.arguments} />
      <div className="actions">
        <button type="button" onClick={() => void answer("allow")}>
          Allow
        </button>
        <label className="visually-hidden" htmlFor={`reason-${approval.id}`}>
          Reason for denying
        </label>
        <input id={`reason-${approval.id}`} placeholder="Reason (optional)" value={reason} onChange={(e) => setReason(e.target.value)} />
        <button type="button" className="danger" onClick={() => void answer("deny")}>
          Deny
        </button>
      </div>
      {error && <p role="alert" className="error">{error}</p>}
    </li>
  );
}

export default function Approvals({ waiting }: { waiting: Waiting }) {
  const nothing = waiting.approvals.length === 0 && waiting.inputs.length === 0;
  return (
    <div className="approvals-page">
      <h1>Approvals</h1>
      {nothing && <p className="muted">Nothing is waiting for you.</p>}
      <ul className="plain">
        {waiting.approvals.map((a) => (
          <WaitingCall key={a.id} approval={a} />
        ))}
        {waiting.inputs.map((i) => (
          <Question key={i.id} input={i} />
        ))}
      </ul>
    </div>
  );
}
