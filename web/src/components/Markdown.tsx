// Markdown answers: `marked` renders (small, fast, streaming-friendly: a partial answer is just
// shorter Markdown); code blocks are highlighted by highlight.js's core with a few languages,
// loaded only when an answer first shows code. Raw HTML in the Markdown is escaped, never
// rendered: the text comes from a model that reads untrusted files. Each code block has a
// button that copies its text (one click handler for the whole answer).
import { memo, useEffect, useMemo, useRef, type MouseEvent } from "react";
import { Marked, type Tokens } from "marked";

const escape = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    html: (token: Tokens.HTML | Tokens.Tag) => escape(token.text),
    code: (token: Tokens.Code) =>
      `<div class="code-block"><button type="button" class="copy-code">Copy code</button>` +
      `<pre class="code" tabindex="0"><code data-lang="${escape(token.lang ?? "")}">${escape(token.text)}</code></pre></div>`,
    link: (token: Tokens.Link) => {
      const href = /^(https?:|mailto:|#|\/)/i.test(token.href) ? token.href : "#";
      return `<a href="${escape(href)}" target="_blank" rel="noreferrer noopener">${escape(token.text)}</a>`;
    },
    image: (token: Tokens.Image) => `[image: ${escape(token.text || token.href)}]`,
  },
});

/// Copies the code block whose "Copy code" button was clicked, and says so on the button.
function copyCode(e: MouseEvent<HTMLElement>) {
  const button = (e.target as HTMLElement).closest<HTMLButtonElement>("button.copy-code");
  const code = button?.parentElement?.querySelector("pre.code")?.textContent;
  if (!button || code == null) return;
  void copyText(code).then((said) => {
    button.textContent = said;
    window.setTimeout(() => (button.textContent = "Copy code"), 2000);
  });
}

/// Puts `text` on the clipboard; what to say on the button that did it.
export async function copyText(text: string): Promise<string> {
  try {
    await navigator.clipboard.writeText(text);
    return "Copied";
  } catch {
    // No clipboard (an insecure origin, a refused permission): the person copies by hand.
    return "Copy failed";
  }
}

type Highlighter = typeof import("./highlight");
let highlighter: Promise<Highlighter> | null = null;

/// The text cut into top-level blocks (at blank lines outside code fences), so that while an
/// answer streams only its last block is parsed and rendered again: the cost of a delta stays
/// the size of a paragraph, not of the whole answer.
function blocks(text: string): string[] {
  const out: string[] = [];
  let fence: string | null = null;
  let start = 0;
  let at = 0;
  while (at < text.length) {
    const end = text.indexOf("\n", at);
    const line = text.slice(at, end === -1 ? text.length : end);
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker) {
      if (fence === null) fence = marker[0]!;
      else if (marker[0] === fence) fence = null;
    }
    if (fence === null && line.trim() === "" && at > start) {
      out.push(text.slice(start, at));
      start = at;
    }
    if (end === -1) break;
    at = end + 1;
  }
  if (start < text.length) out.push(text.slice(start));
  return out;
}

export function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown" onClick={copyCode}>
      {blocks(text).map((b, i) => (
        <Block key={i} text={b} />
      ))}
    </div>
  );
}

const Block = memo(function Block({ text }: { text: string }) {
  const html = useMemo(() => marked.parse(text, { async: false }) as string, [text]);
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const blocks = ref.current?.querySelectorAll<HTMLElement>("pre.code > code:not(.hljs)");
    if (!blocks || blocks.length === 0) return;
    highlighter ??= import("./highlight");
    void highlighter.then((h) => blocks.forEach((b) => h.highlight(b)));
  }, [html]);
  return <div className="md-block" ref={ref} dangerouslySetInnerHTML={{ __html: html }} />;
});
