// One tool call as a card: its name, where it comes from, its arguments, live progress while it
// runs, how long it took, its outcome and its result, with a link to its execution-log entry.
import type { DynamicToolUIPart } from "ai";
import { memo, type ReactNode } from "react";
import { Link } from "react-router";
import { JsonTree } from "./JsonTree";
import { ErrorView, ResultView } from "./Renderers";
import type { ContentBlock } from "../api";

export interface Progress {
  progress: number;
  total?: number;
  message?: string;
}

interface Output {
  content?: string;
  structured?: unknown;
  /// The result's images and audio (MCP content blocks).
  media?: ContentBlock[];
  logId?: string;
  durationMs?: number;
  source?: string;
}

export function sourceOf(part: DynamicToolUIPart): string | undefined {
  const meta = (part as { callProviderMetadata?: { toolmux?: { source?: unknown } } }).callProviderMetadata;
  const fromMeta = meta?.toolmux?.source;
  if (typeof fromMeta === "string") return fromMeta;
  const out = part.state === "output-available" ? (part.output as Output | undefined) : undefined;
  return out?.source;
}

/// The badge's words: built-in packs say so, scripts are scripts, an MCP server is named.
const BUILT_IN = new Set(["workspace", "codemode", "chat", "human", "specs", "web", "skills", "internal", "tasks", "shell", "secrets"]);

/// `kind` is the catalog's `sourceKind` where the page has it; the stream's cards and the log's
/// entries carry only the source's name.
export function SourceBadge({ source, kind: given }: { source?: string; kind?: "builtin" | "script" | "mcp" }) {
  if (!source) return <span className="badge">unknown source</span>;
  const kind = given
    ? given === "builtin"
      ? "built-in"
      : given
    : source === "script" || source === "scripts"
      ? "script"
      : BUILT_IN.has(source)
        ? "built-in"
        : "mcp";
  const words = kind === "mcp" ? `via ${source}` : kind === "script" ? "script" : `built-in · ${source}`;
  return (
    <span className={`badge source-${kind}`} data-source={source}>
      {words}
    </span>
  );
}

/// Rendered again only when the call changes state or reports progress, not on every delta of
/// the answer that streams around it. The comparison reads `state` and `source` as they were
/// when each render was asked for: the part object itself may be one the SDK goes on editing.
/// `approval` is the call's approval, shown in the card (its buttons while it waits);
/// `approvalState` names what of it the card shows (its id, and how it ended), so that the card
/// is rendered again when that changes.
export function ToolCard(props: { part: DynamicToolUIPart; progress?: Progress; approval?: ReactNode; approvalState?: string; waiting?: boolean }) {
  const { part, progress, approval, approvalState, waiting } = props;
  return (
    <MemoCard
      part={part}
      state={part.state}
      source={sourceOf(part)}
      progress={progress}
      approval={approval}
      approvalState={approvalState}
      waiting={waiting}
    />
  );
}

interface CardProps {
  part: DynamicToolUIPart;
  state: DynamicToolUIPart["state"];
  source?: string;
  progress?: Progress;
  approval?: ReactNode;
  approvalState?: string;
  /// The call waits for a person's approval.
  waiting?: boolean;
}

const MemoCard = memo(
  ToolCardView,
  (a: CardProps, b: CardProps) =>
    a.state === b.state &&
    a.source === b.source &&
    a.progress === b.progress &&
    a.approvalState === b.approvalState &&
    a.waiting === b.waiting,
);

function ToolCardView({ part, source, progress, approval, waiting }: CardProps) {
  const output = part.state === "output-available" ? (part.output as Output) : undefined;
  const running = part.state === "input-streaming" || part.state === "input-available";
  const outcome = running ? (waiting ? "waiting for you" : "running") : part.state === "output-error" ? "failed" : "done";
  return (
    <article className={`tool-card ${outcome}`} aria-label={`Tool call ${part.toolName}`} data-tool={part.toolName}>
      <header>
        <strong className="tool-name">{part.toolName}</strong>
        <SourceBadge source={source} />
        <span className={`outcome ${running ? "running" : outcome}`}>{outcome}</span>
        {output?.durationMs !== undefined && <span className="muted duration">{output.durationMs} ms</span>}
        {output?.logId && (
          <Link to={`/activity?id=${encodeURIComponent(output.logId)}`} className="log-link">
            Activity entry
          </Link>
        )}
      </header>
      <details className="arguments">
        <summary>Arguments</summary>
        {part.input === undefined ? <p className="muted">…</p> : <JsonTree value={part.input} />}
      </details>
      {running && progress && (
        <div className="progress">
          <progress
            value={progress.progress}
            max={progress.total ?? undefined}
            aria-label={`Progress of ${part.toolName}`}
          />
          <span>
            {progress.total ? `${progress.progress} / ${progress.total}` : progress.progress}
            {progress.message ? ` — ${progress.message}` : ""}
          </span>
        </div>
      )}
      {approval}
      {running && !progress && !waiting && (
        <p className="muted" aria-live="polite">
          Running…
        </p>
      )}
      {output && (
        <div className="result" role="region" aria-label={`Result of ${part.toolName}`} tabIndex={0}>
          <ResultView tool={part.toolName} input={part.input} structured={output.structured} content={output.content} media={output.media} />
        </div>
      )}
      {part.state === "output-error" && <ErrorView text={part.errorText} />}
    </article>
  );
}
