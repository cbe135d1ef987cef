// JSON as a collapsible tree: native <details>, so it opens and closes with the keyboard and
// screen readers announce its state without any script of ours.
export function JsonTree({ value, name, open = true }: { value: unknown; name?: string; open?: boolean }) {
  const label = name !== undefined ? <span className="json-key">{name}: </span> : null;
  if (value === null || typeof value !== "object") {
    return (
      <div className="json-leaf">
        {label}
        <span className={`json-${value === null ? "null" : typeof value}`}>{JSON.stringify(value)}</span>
      </div>
    );
  }
  const entries = Array.isArray(value)
    ? value.map((v, i) => [String(i), v] as const)
    : Object.entries(value as Record<string, unknown>);
  const summary = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
  return (
    <details className="json-node" open={open}>
      <summary>
        {label}
        <span className="muted">{summary}</span>
      </summary>
      <div className="json-children">
        {entries.map(([k, v]) => (
          <JsonTree key={k} name={k} value={v} open={entries.length < 20} />
        ))}
      </div>
    </details>
  );
}
