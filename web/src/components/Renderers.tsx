// A tool's result, shown by what it is: a file with line numbers, grep matches grouped by file,
// a directory tree, images, audio, embedded resources, JSON as a tree, errors in plain words.
// Chat cards and the catalog's *Try it* share these, so a result looks the same everywhere.
import type { ReactNode } from "react";
import type { ContentBlock } from "../api";
import { JsonTree } from "./JsonTree";

interface GrepMatch {
  path: string;
  line: number;
  text: string;
}

function FileView({ path, start, content }: { path?: string; start: number; content: string }) {
  const lines = content.replace(/\n$/, "").split("\n");
  return (
    <figure className="file-view">
      {path && <figcaption>{path}</figcaption>}
      <table className="code-lines" aria-label={path ? `Content of ${path}` : "File content"}>
        <tbody>
          {lines.map((line, i) => (
            <tr key={i}>
              <th scope="row" className="line-no">
                {start + i}
              </th>
              <td>
                <code>{line}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}

function Highlighted({ text, pattern }: { text: string; pattern?: string }) {
  if (!pattern) return <>{text}</>;
  let re: RegExp;
  try {
    re = new RegExp(pattern, "gi");
  } catch {
    re = new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi");
  }
  const out: ReactNode[] = [];
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m[0].length === 0) break;
    out.push(text.slice(last, m.index));
    out.push(<mark key={m.index}>{m[0]}</mark>);
    last = (m.index ?? 0) + m[0].length;
  }
  out.push(text.slice(last));
  return <>{out}</>;
}

function GrepView({ matches, pattern }: { matches: GrepMatch[]; pattern?: string }) {
  const byFile = new Map<string, GrepMatch[]>();
  for (const m of matches) byFile.set(m.path, [...(byFile.get(m.path) ?? []), m]);
  if (byFile.size === 0) return <p className="muted">No matches.</p>;
  return (
    <div className="grep-view">
      {[...byFile].map(([path, ms]) => (
        <section key={path} className="grep-file">
          <h4>
            {path} <span className="muted">({ms.length})</span>
          </h4>
          <table className="code-lines">
            <tbody>
              {ms.map((m) => (
                <tr key={m.line}>
                  <th scope="row" className="line-no">
                    {m.line}
                  </th>
                  <td>
                    <code>
                      <Highlighted text={m.text} pattern={pattern} />
                    </code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ))}
    </div>
  );
}

interface Entry {
  path: string;
  kind: string;
}

function TreeView({ entries }: { entries: Entry[] }) {
  return (
    <ul className="tree" aria-label="Directory listing">
      {entries.map((e) => {
        const depth = e.path.split("/").length - 1;
        const name = e.path.split("/").pop();
        return (
          <li key={e.path} style={{ paddingLeft: `${depth * 1.1}rem` }}>
            <span aria-hidden="true">{e.kind === "dir" || e.kind === "directory" ? "📁 " : "📄 "}</span>
            {name}
            {e.kind === "dir" || e.kind === "directory" ? "/" : ""}
          </li>
        );
      })}
    </ul>
  );
}

function parseJson(text: string): unknown {
  const t = text.trim();
  if (!(t.startsWith("{") || t.startsWith("["))) return undefined;
  try {
    return JSON.parse(t);
  } catch {
    return undefined;
  }
}

/// A result known by its tool's structured content, or null to fall back on its blocks.
function Known({ tool, input, structured }: { tool: string; input: unknown; structured: unknown }) {
  const s = structured as Record<string, unknown> | null | undefined;
  if (!s || typeof s !== "object") return null;
  const base = tool.split("__").pop();
  if (base === "file_read" && typeof s.content === "string")
    return <FileView path={s.path as string} start={(s.startLine as number) ?? 1} content={s.content} />;
  if (base === "grep" && Array.isArray(s.matches))
    return (
      <GrepView
        matches={s.matches as GrepMatch[]}
        pattern={(input as { pattern?: string } | null)?.pattern}
      />
    );
  if (base === "directory_list" && Array.isArray(s.entries)) return <TreeView entries={s.entries as Entry[]} />;
  return null;
}

export function TextResult({ text }: { text: string }) {
  const json = parseJson(text);
  if (json !== undefined) return <JsonTree value={json} />;
  return <pre className="result-text">{text}</pre>;
}

function Block({ block }: { block: ContentBlock }) {
  switch (block.type) {
    case "text":
      return <TextResult text={(block as { text: string }).text} />;
    case "image": {
      const b = block as { data: string; mimeType: string };
      return <img className="result-image" alt="Image returned by the tool" src={`data:${b.mimeType};base64,${b.data}`} />;
    }
    case "audio": {
      const b = block as { data: string; mimeType: string };
      return <audio controls aria-label="Audio returned by the tool" src={`data:${b.mimeType};base64,${b.data}`} />;
    }
    case "resource": {
      const r = (block as { resource: { uri: string; mimeType?: string; text?: string; blob?: string } }).resource;
      return (
        <figure className="resource">
          <figcaption>
            Resource <code>{r.uri}</code> {r.mimeType && <span className="muted">{r.mimeType}</span>}
          </figcaption>
          {r.text !== undefined ? (
            <TextResult text={r.text} />
          ) : r.blob && r.mimeType?.startsWith("image/") ? (
            <img alt={r.uri} src={`data:${r.mimeType};base64,${r.blob}`} />
          ) : (
            <p className="muted">{r.blob ? `${Math.round((r.blob.length * 3) / 4)} bytes of binary data` : "empty"}</p>
          )}
        </figure>
      );
    }
    case "resource_link": {
      const b = block as { uri: string; name?: string };
      return (
        <p>
          Link to resource <code>{b.uri}</code> {b.name}
        </p>
      );
    }
    default:
      return <JsonTree value={block} />;
  }
}

/// The chat's text of a result without the lines that stand in for its images and audio in what
/// the model reads (`[image/png content, not shown]`): the blocks themselves are shown.
function withoutStandIns(text: string, media: ContentBlock[]): string {
  const standIns = new Set(media.map((b) => `[${(b as { mimeType?: string }).mimeType} content, not shown]`));
  return text
    .split("\n")
    .filter((line) => !standIns.has(line))
    .join("\n")
    .trim();
}

/// A result: a known tool's own view, else its content blocks. `media` are the images and audio
/// of a chat card's result, whose `content` is the text the model read.
export function ResultView(props: {
  tool: string;
  input?: unknown;
  structured?: unknown;
  content?: ContentBlock[] | string;
  media?: ContentBlock[];
}) {
  if (props.media && props.media.length > 0 && typeof props.content === "string") {
    const text = withoutStandIns(props.content, props.media);
    return (
      <>
        {text && <TextResult text={text} />}
        {props.media.map((b, i) => (
          <Block key={i} block={b} />
        ))}
      </>
    );
  }
  const known = <Known tool={props.tool} input={props.input} structured={props.structured} />;
  if (Known({ tool: props.tool, input: props.input, structured: props.structured }) !== null) return known;
  if (typeof props.content === "string") return <TextResult text={props.content} />;
  if (props.content && props.content.length > 0)
    return (
      <>
        {props.content.map((b, i) => (
          <Block key={i} block={b} />
        ))}
      </>
    );
  if (props.structured !== undefined) return <JsonTree value={props.structured} />;
  return <p className="muted">No content.</p>;
}

/// A failure, in plain words: the pipeline's refusal codes said as a person would.
export function ErrorView({ text }: { text: string }) {
  const plain = /denied/i.test(text)
    ? "The call was refused."
    : /timed? ?out/i.test(text)
      ? "The tool did not answer in time."
      : /invalid/i.test(text)
        ? "The arguments did not fit the tool's schema."
        : "The tool reported an error.";
  return (
    <div className="result-error" role="status">
      <strong>{plain}</strong>
      <pre className="result-text">{text}</pre>
    </div>
  );
}
