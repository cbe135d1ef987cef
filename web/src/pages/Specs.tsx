// The project's specs (LeanSpec's folders under `specs/`): a board of columns from
// `GET /api/specs/board` (by status, or by priority, assignee or tag), and a spec opened at
// `/specs/{spec}` from `GET /api/specs/{spec}`: its body as rendered Markdown, its relationships
// as links, and a status change through `PATCH /api/specs/{spec}`, which names the content it
// read (`expectedContentHash`) so that an edit made meanwhile is refused, not overwritten. A write
// asks a person by default: the request waits in the approvals queue, and the page says so (with
// the approval's buttons) until it is answered. A project without a `specs` directory gets the
// API's own sentence, not an empty board.
import { useState } from "react";
import { Link } from "react-router";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { ApiFailure, answerApproval, api, describe } from "../api";
import type { Waiting } from "../approvals";
import { Markdown } from "../components/Markdown";

interface SpecSummary {
  id: string;
  number: number;
  title: string;
  status: string;
  priority?: string | null;
  tags?: string[];
  assignee?: string | null;
}

interface Board {
  groupBy: string;
  total: number;
  groups: { name: string; count: number; specs: SpecSummary[] }[];
}

interface SpecView extends SpecSummary {
  parent?: string | null;
  children: string[];
  dependsOn?: string[];
  requiredBy: string[];
  contentHash: string;
  content: string;
  file: string;
}

/// LeanSpec's statuses a board shows, in its order (archived specs are never listed).
const STATUSES = ["draft", "planned", "in-progress", "complete"];
const GROUPINGS = ["status", "priority", "assignee", "tag"] as const;
type Grouping = (typeof GROUPINGS)[number];

/// Every read of the specs: a change made here reads them all again.
const SPECS = ["specs"];

/// A spec's number as LeanSpec writes it (`#002`).
const numbered = (n: number) => `#${String(n).padStart(3, "0")}`;

export default function Specs({ path, waiting }: { path: string; waiting: Waiting }) {
  const spec = path.split("/")[2];
  return spec ? <SpecPage spec={decodeURIComponent(spec)} waiting={waiting} /> : <BoardPage />;
}

/// A failed read in plain words: the API's sentence alone when the project has no specs.
function Failure({ error }: { error: unknown }) {
  if (error instanceof ApiFailure && error.code === "no_specs_directory")
    return (
      <p role="status" className="notice">
        {error.message}
      </p>
    );
  return (
    <p role="alert" className="error">
      {describe(error)}
    </p>
  );
}

function BoardPage() {
  const [grouping, setGrouping] = useState<Grouping>("status");
  const board = useQuery({
    queryKey: [...SPECS, "board", grouping],
    queryFn: () => api<Board>(`/api/specs/board?groupBy=${grouping}`),
  });
  // By status every column is shown, empty ones too, so a spec moved out of one leaves it there.
  const columns =
    board.data && grouping === "status"
      ? STATUSES.map((s) => board.data.groups.find((g) => g.name === s) ?? { name: s, count: 0, specs: [] })
      : (board.data?.groups ?? []);
  return (
    <section className="specs">
      <div className="page-head">
        <h1>Specs</h1>
        <label>
          Group by{" "}
          <select value={grouping} onChange={(e) => setGrouping(e.target.value as Grouping)}>
            {GROUPINGS.map((g) => (
              <option key={g} value={g}>
                {g}
              </option>
            ))}
          </select>
        </label>
      </div>
      {board.isPending && <p className="muted">Loading…</p>}
      {board.isError && <Failure error={board.error} />}
      {board.data && (
        <div className="board">
          {columns.map((column) => (
            <section key={column.name} className="column" aria-labelledby={`column-${column.name}`}>
              <h2 id={`column-${column.name}`}>
                {column.name} <span className="muted">({column.specs.length})</span>
              </h2>
              <ul>
                {column.specs.map((s) => (
                  <li key={s.id} className="spec-card">
                    <Link to={`/specs/${encodeURIComponent(s.id)}`}>
                      <span className="spec-number">{numbered(s.number)}</span>{" "}
                      <span className="spec-title">{s.title}</span>
                    </Link>
                    <SpecBadges spec={s} />
                  </li>
                ))}
              </ul>
            </section>
          ))}
        </div>
      )}
    </section>
  );
}

function SpecBadges({ spec }: { spec: SpecSummary }) {
  return (
    <p className="spec-badges">
      {spec.priority && <span className={`badge priority-${spec.priority}`}>{spec.priority}</span>}
      {spec.tags?.map((t) => (
        <span key={t} className="badge tag">
          {t}
        </span>
      ))}
      {spec.assignee && <span className="muted">@{spec.assignee}</span>}
    </p>
  );
}

function SpecPage({ spec, waiting }: { spec: string; waiting: Waiting }) {
  const queryClient = useQueryClient();
  const view = useQuery({
    queryKey: [...SPECS, "spec", spec],
    queryFn: () => api<SpecView>(`/api/specs/${encodeURIComponent(spec)}`),
  });
  const [status, setStatus] = useState<string | null>(null);
  const change = useMutation({
    mutationFn: (next: { status: string; expectedContentHash: string }) =>
      api(`/api/specs/${encodeURIComponent(spec)}`, { method: "PATCH", body: next }),
    // The boards are dropped, not only marked stale, so the board opened next shows the new
    // columns (after "Loading…"), never the old ones while it reads them again.
    onSettled: () => {
      queryClient.removeQueries({ queryKey: [...SPECS, "board"] });
      return queryClient.invalidateQueries({ queryKey: SPECS });
    },
    onSuccess: () => setStatus(null),
  });
  const data = view.data;
  // The approval this page's change waits on, while it waits: a REST call of `spec_update` on
  // the spec as this page names it.
  const approval = change.isPending
    ? waiting.approvals.find(
        (a) =>
          a.request.tool === "spec_update" &&
          a.request.channel === "rest" &&
          (a.request.arguments as { spec?: unknown } | null)?.spec === spec,
      )
    : undefined;
  return (
    <section className="spec">
      <p>
        <Link to="/specs">← Specs board</Link>
      </p>
      {view.isPending && <p className="muted">Loading…</p>}
      {view.isError && (
        <>
          <h1>Spec {spec}</h1>
          <Failure error={view.error} />
        </>
      )}
      {data && (
        <>
          <h1>
            <span className="spec-number">{numbered(data.number)}</span> {data.title}
          </h1>
          <p className="spec-meta">
            <span className="badge" data-testid="spec-status">
              {data.status}
            </span>{" "}
            <SpecBadges spec={data} />
          </p>
          <form
            className="row"
            onSubmit={(e) => {
              e.preventDefault();
              change.mutate({ status: status ?? data.status, expectedContentHash: data.contentHash });
            }}
          >
            <label>
              Status{" "}
              <select value={status ?? data.status} onChange={(e) => setStatus(e.target.value)} disabled={change.isPending}>
                {STATUSES.concat("archived").map((s) => (
                  <option key={s} value={s}>
                    {s}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit" disabled={change.isPending || (status ?? data.status) === data.status}>
              Change status
            </button>
          </form>
          {change.isPending && (
            <div role="status" className="notice">
              {approval ? (
                <>
                  Waiting for approval: the change to {approval.request.tool} waits in the approvals queue.{" "}
                  <button type="button" onClick={() => void answerApproval(approval.id, "allow")}>
                    Allow
                  </button>{" "}
                  <button type="button" onClick={() => void answerApproval(approval.id, "deny")}>
                    Deny
                  </button>
                </>
              ) : (
                "Saving…"
              )}
            </div>
          )}
          {change.isError && (
            <p role="alert" className="error">
              {describe(change.error)}
            </p>
          )}
          <Relationships spec={data} />
          <article className="spec-body" aria-label="Spec">
            <Markdown text={data.content} />
          </article>
        </>
      )}
    </section>
  );
}

function Relationships({ spec }: { spec: SpecView }) {
  const links: [string, string[]][] = [
    ["Parent", spec.parent ? [spec.parent] : []],
    ["Children", spec.children],
    ["Depends on", spec.dependsOn ?? []],
    ["Required by", spec.requiredBy],
  ];
  return (
    <section aria-labelledby="relationships">
      <h2 id="relationships">Relationships</h2>
      <dl className="relationships">
        {links.map(([name, ids]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd>
              {ids.length === 0 ? (
                <span className="muted">none</span>
              ) : (
                ids.map((id, i) => (
                  <span key={id}>
                    {i > 0 && ", "}
                    <Link to={`/specs/${encodeURIComponent(id)}`}>{id}</Link>
                  </span>
                ))
              )}
            </dd>
          </div>
        ))}
      </dl>
    </section>
  );
}
