// A form generated from a JSON Schema object: text, number, enum (a select), multi-select (an
// array of enum values, as checkboxes), boolean (a checkbox), defaults filled in. Anything the
// form cannot express (nested objects, free arrays) is edited as JSON in a text area, so every
// schema can still be answered.
import { useId, useState, type FormEvent } from "react";
import type { JsonSchema } from "../api";

type Values = Record<string, unknown>;

function typeOf(s: JsonSchema): string {
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== "null") : s.type;
  if (t) return t;
  if (s.enum) return "string";
  return "json";
}

function initial(schema: JsonSchema): Values {
  const out: Values = {};
  for (const [name, s] of Object.entries(schema.properties ?? {})) {
    if (s.default !== undefined) out[name] = s.default;
    else if (typeOf(s) === "boolean") out[name] = false;
  }
  return out;
}

function Field(props: {
  name: string;
  schema: JsonSchema;
  required: boolean;
  value: unknown;
  onChange: (v: unknown) => void;
}) {
  const { name, schema, required, value, onChange } = props;
  const id = useId();
  const label = schema.title ?? name;
  const hint = schema.description ? <small id={`${id}-hint`}>{schema.description}</small> : null;
  const described = schema.description ? `${id}-hint` : undefined;
  const type = typeOf(schema);
  if (type === "boolean")
    return (
      <div className="field check">
        <input id={id} type="checkbox" checked={value === true} onChange={(e) => onChange(e.target.checked)} aria-describedby={described} />
        <label htmlFor={id}>{label}</label>
        {hint}
      </div>
    );
  if (type === "array" && schema.items?.enum) {
    const chosen = Array.isArray(value) ? value : [];
    return (
      <fieldset className="field">
        <legend>
          {label}
          {required && " *"}
        </legend>
        {schema.items.enum.map((option) => (
          <label key={String(option)} className="check">
            <input
              type="checkbox"
              checked={chosen.includes(option)}
              onChange={(e) => onChange(e.target.checked ? [...chosen, option] : chosen.filter((c) => c !== option))}
            />
            {String(option)}
          </label>
        ))}
        {hint}
      </fieldset>
    );
  }
  const enumValues = schema.enum ?? schema.oneOf?.map((o) => o.const).filter((c) => c !== undefined);
  if (enumValues && enumValues.length > 0)
    return (
      <div className="field">
        <label htmlFor={id}>
          {label}
          {required && " *"}
        </label>
        <select
          id={id}
          value={value === undefined ? "" : String(value)}
          required={required}
          aria-describedby={described}
          onChange={(e) => {
            const picked = enumValues.find((v) => String(v) === e.target.value);
            onChange(e.target.value === "" ? undefined : picked);
          }}
        >
          <option value="">—</option>
          {enumValues.map((v) => (
            <option key={String(v)} value={String(v)}>
              {String(v)}
            </option>
          ))}
        </select>
        {hint}
      </div>
    );
  if (type === "number" || type === "integer")
    return (
      <div className="field">
        <label htmlFor={id}>
          {label}
          {required && " *"}
        </label>
        <input
          id={id}
          type="number"
          step={type === "integer" ? 1 : "any"}
          min={schema.minimum}
          max={schema.maximum}
          required={required}
          aria-describedby={described}
          value={value === undefined ? "" : String(value)}
          onChange={(e) => onChange(e.target.value === "" ? undefined : Number(e.target.value))}
        />
        {hint}
      </div>
    );
  if (type === "string")
    return (
      <div className="field">
        <label htmlFor={id}>
          {label}
          {required && " *"}
        </label>
        <input
          id={id}
          type={schema.format === "email" ? "email" : schema.format === "uri" ? "url" : "text"}
          required={required}
          aria-describedby={described}
          value={value === undefined ? "" : String(value)}
          onChange={(e) => onChange(e.target.value === "" ? undefined : e.target.value)}
        />
        {hint}
      </div>
    );
  return <JsonField id={id} label={label} required={required} hint={hint} described={described} value={value} onChange={onChange} />;
}

function JsonField(props: {
  id: string;
  label: string;
  required: boolean;
  hint: React.ReactNode;
  described?: string;
  value: unknown;
  onChange: (v: unknown) => void;
}) {
  const [text, setText] = useState(props.value === undefined ? "" : JSON.stringify(props.value, null, 2));
  const [bad, setBad] = useState(false);
  return (
    <div className="field">
      <label htmlFor={props.id}>
        {props.label} (JSON){props.required && " *"}
      </label>
      <textarea
        id={props.id}
        rows={3}
        value={text}
        aria-invalid={bad}
        aria-describedby={props.described}
        onChange={(e) => {
          setText(e.target.value);
          try {
            props.onChange(e.target.value.trim() === "" ? undefined : JSON.parse(e.target.value));
            setBad(false);
          } catch {
            setBad(true);
          }
        }}
      />
      {props.hint}
    </div>
  );
}

export function SchemaForm(props: {
  schema: JsonSchema;
  submitLabel: string;
  onSubmit: (values: Values) => void | Promise<void>;
  extra?: React.ReactNode;
  busy?: boolean;
  label?: string;
}) {
  const [values, setValues] = useState<Values>(() => initial(props.schema));
  const required = new Set(props.schema.required ?? []);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void props.onSubmit(values);
  };
  const properties = Object.entries(props.schema.properties ?? {});
  return (
    <form className="schema-form" onSubmit={submit} aria-label={props.label}>
      {properties.length === 0 && <p className="muted">No arguments.</p>}
      {properties.map(([name, s]) => (
        <Field
          key={name}
          name={name}
          schema={s}
          required={required.has(name)}
          value={values[name]}
          onChange={(v) =>
            setValues((old) => {
              const next = { ...old };
              if (v === undefined) delete next[name];
              else next[name] = v;
              return next;
            })
          }
        />
      ))}
      <div className="actions">
        <button type="submit" disabled={props.busy}>
          {props.submitLabel}
        </button>
        {props.extra}
      </div>
    </form>
  );
}
