//! JSON Schema → TypeScript declarations.
//!
//! Each schema becomes a type expression; every object with declared properties becomes a named
//! `interface` whose name is built from where it sits (`GetIssueInput`, `GetIssueInputLabels`,
//! `GetIssueInputLabelsItem`), and every local `$ref` target becomes a named type too, so that
//! recursive schemas terminate. Whatever cannot be expressed is `unknown`, never `any`.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::{Map, Value};

use crate::ident::{NameSet, json_string, property_key, type_fragment, type_ident};

/// A named declaration of a module.
#[derive(Debug, Clone)]
struct Declaration {
    name: String,
    doc: Vec<String>,
    body: Body,
}

#[derive(Debug, Clone)]
enum Body {
    /// `interface Name { ... }`, members already rendered (one per entry, without indent).
    Interface(Vec<Member>),
    /// `type Name = ...;`
    Alias(String),
}

#[derive(Debug, Clone)]
struct Member {
    doc: Vec<String>,
    text: String,
}

/// Collects the declarations of one module (one source), handing out unique type names.
#[derive(Debug, Default)]
pub struct Declarations {
    names: NameSet,
    items: Vec<Option<Declaration>>,
}

/// The state of one schema document being translated: its root (for `$ref`) and the names
/// already given to its `$ref` targets.
struct Document<'a> {
    root: &'a Value,
    /// The prefix of names of this document's `$defs` (the tool's PascalCase name).
    prefix: String,
    /// The name the root itself got, for `"$ref": "#"`.
    root_name: String,
    refs: HashMap<String, String>,
}

impl Declarations {
    /// Declares a named type for a whole schema (a tool's input or output) and returns its name.
    /// `prefix` names the schema's `$defs` (`GetIssue` + `Label`), `name` is the wanted name.
    pub fn declare_root(&mut self, schema: &Value, prefix: &str, name: &str) -> String {
        let mut doc = Document {
            root: schema,
            prefix: prefix.to_string(),
            root_name: String::new(),
            refs: HashMap::new(),
        };
        let name = self.names.claim(&type_ident(name, "Value"));
        doc.root_name = name.clone();
        doc.refs.insert("#".to_string(), name.clone());
        let slot = self.reserve();
        let declaration = self.declaration_of(schema, &name, &mut doc);
        self.items[slot] = Some(declaration);
        name
    }

    /// Whether a declared type accepts `{}` (every property optional), so that the argument
    /// of a function taking it may be left out.
    pub fn accepts_empty_object(schema: &Value) -> bool {
        match schema {
            Value::Object(map) => {
                map.get("required")
                    .and_then(Value::as_array)
                    .is_none_or(|r| r.is_empty())
                    && !map.contains_key("$ref")
                    && !map.contains_key("anyOf")
                    && !map.contains_key("oneOf")
                    && !map.contains_key("allOf")
            }
            Value::Bool(b) => *b,
            _ => true,
        }
    }

    /// How many declarations there are so far; with [`Declarations::render_range`] it picks out
    /// the declarations one tool added.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Renders every declaration, each prefixed with `indent`, `export`ed when `export` is set.
    pub fn render(&self, out: &mut String, indent: &str, export: bool) {
        self.render_range(out, 0..self.items.len(), indent, export);
    }

    /// Renders the declarations in `range`.
    pub fn render_range(
        &self,
        out: &mut String,
        range: std::ops::Range<usize>,
        indent: &str,
        export: bool,
    ) {
        let keyword = if export { "export " } else { "" };
        for declaration in self.items[range].iter().flatten() {
            write_doc(out, indent, &declaration.doc);
            match &declaration.body {
                Body::Interface(members) => {
                    if members.is_empty() {
                        let _ =
                            writeln!(out, "{indent}{keyword}interface {} {{}}", declaration.name);
                        continue;
                    }
                    let _ = writeln!(out, "{indent}{keyword}interface {} {{", declaration.name);
                    let inner = format!("{indent}  ");
                    for member in members {
                        write_doc(out, &inner, &member.doc);
                        let _ = writeln!(out, "{inner}{};", member.text);
                    }
                    let _ = writeln!(out, "{indent}}}");
                }
                Body::Alias(text) => {
                    let _ = writeln!(out, "{indent}{keyword}type {} = {text};", declaration.name);
                }
            }
        }
    }

    fn reserve(&mut self) -> usize {
        self.items.push(None);
        self.items.len() - 1
    }

    /// The declaration named `name` for `schema`: an interface when the schema is a plain
    /// object with properties, an alias otherwise.
    fn declaration_of(
        &mut self,
        schema: &Value,
        name: &str,
        doc: &mut Document<'_>,
    ) -> Declaration {
        let docs = doc_lines(schema);
        if let Some(map) = plain_object(schema) {
            let members = self.members(map, name, doc);
            return Declaration {
                name: name.to_string(),
                doc: docs,
                body: Body::Interface(members),
            };
        }
        let text = self.expr(schema, name, doc, true);
        Declaration {
            name: name.to_string(),
            doc: docs,
            body: Body::Alias(text),
        }
    }

    /// A named type for an object schema nested at `hint`, returning its name.
    fn declare_nested(&mut self, schema: &Value, hint: &str, doc: &mut Document<'_>) -> String {
        let name = self.names.claim(&type_ident(hint, "Value"));
        let slot = self.reserve();
        let declaration = self.declaration_of(schema, &name, doc);
        self.items[slot] = Some(declaration);
        name
    }

    /// The members of an object schema: its properties, then an index signature for
    /// `additionalProperties` / `patternProperties`.
    fn members(
        &mut self,
        map: &Map<String, Value>,
        name: &str,
        doc: &mut Document<'_>,
    ) -> Vec<Member> {
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut members = Vec::new();
        let mut property_types = Vec::new();
        if let Some(Value::Object(properties)) = map.get("properties") {
            for (key, schema) in properties {
                let hint = format!("{name}{}", type_fragment(key));
                let ty = self.expr(schema, &hint, doc, false);
                let optional = if required.contains(&key.as_str()) {
                    ""
                } else {
                    "?"
                };
                property_types.push(ty.clone());
                members.push(Member {
                    doc: doc_lines(schema),
                    text: format!("{}{optional}: {ty}", property_key(key)),
                });
            }
        }
        if let Some(index) = self.index_type(map, name, doc) {
            let mut types = vec![index];
            if types[0] != "unknown" {
                types.extend(property_types);
                // Optional properties may hold `undefined`; an index signature must admit it.
                if members.iter().any(|m| m.text.contains("?:")) {
                    types.push("undefined".to_string());
                }
            }
            members.push(Member {
                doc: Vec::new(),
                text: format!("[key: string]: {}", union(types)),
            });
        }
        members
    }

    /// The type of an object's extra keys, when it allows them.
    fn index_type(
        &mut self,
        map: &Map<String, Value>,
        name: &str,
        doc: &mut Document<'_>,
    ) -> Option<String> {
        let mut types = Vec::new();
        if let Some(Value::Object(patterns)) = map.get("patternProperties") {
            for schema in patterns.values() {
                types.push(self.expr(schema, &format!("{name}Value"), doc, false));
            }
        }
        match map.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => types.push("unknown".to_string()),
            Some(schema @ Value::Object(_)) => {
                types.push(self.expr(schema, &format!("{name}Value"), doc, false));
            }
            _ => {
                // Unset: an object that declares no properties at all is a free-form map.
                let has_properties = map
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|p| !p.is_empty());
                if !has_properties && types.is_empty() {
                    types.push("unknown".to_string());
                }
            }
        }
        (!types.is_empty()).then(|| union(types))
    }

    /// The type expression of `schema` at `hint`. `top` is set for a declaration's own body,
    /// where an object must not be declared again under a new name.
    fn expr(&mut self, schema: &Value, hint: &str, doc: &mut Document<'_>, top: bool) -> String {
        let map = match schema {
            Value::Bool(true) => return "unknown".to_string(),
            Value::Bool(false) => return "never".to_string(),
            Value::Object(map) => map,
            _ => return "unknown".to_string(),
        };
        let ty = self.expr_of_map(map, hint, doc, top);
        if map.get("nullable") == Some(&Value::Bool(true)) {
            return union(vec![ty, "null".to_string()]);
        }
        ty
    }

    fn expr_of_map(
        &mut self,
        map: &Map<String, Value>,
        hint: &str,
        doc: &mut Document<'_>,
        top: bool,
    ) -> String {
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            return self.reference(reference, doc);
        }
        if let Some(value) = map.get("const") {
            return literal(value);
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            if values.is_empty() {
                return "never".to_string();
            }
            return union(values.iter().map(literal).collect());
        }

        let mut parts = Vec::new();
        if has_own_type(map) {
            parts.push(self.own_type(map, hint, doc, top));
        }
        if let Some(Value::Array(all)) = map.get("allOf") {
            for (i, member) in all.iter().enumerate() {
                let member_hint = format!("{hint}Part{}", i + 1);
                parts.push(self.expr(member, &member_hint, doc, false));
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(any)) = map.get(keyword) {
                let members = any
                    .iter()
                    .enumerate()
                    .map(|(i, member)| {
                        let member_hint = format!("{hint}Variant{}", i + 1);
                        self.expr(member, &member_hint, doc, false)
                    })
                    .collect();
                parts.push(union(members));
            }
        }
        intersection(parts)
    }

    /// The type given by `type` (or implied by `properties` / `items`), ignoring combinators.
    fn own_type(
        &mut self,
        map: &Map<String, Value>,
        hint: &str,
        doc: &mut Document<'_>,
        top: bool,
    ) -> String {
        let types: Vec<&str> = match map.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if is_objectish(map) => vec!["object"],
            _ if map.contains_key("items") || map.contains_key("prefixItems") => vec!["array"],
            _ => return "unknown".to_string(),
        };
        let rendered = types
            .into_iter()
            .map(|t| match t {
                "string" => "string".to_string(),
                "number" | "integer" => "number".to_string(),
                "boolean" => "boolean".to_string(),
                "null" => "null".to_string(),
                "array" => self.array(map, hint, doc),
                "object" => self.object(map, hint, doc, top),
                _ => "unknown".to_string(),
            })
            .collect();
        union(rendered)
    }

    fn object(
        &mut self,
        map: &Map<String, Value>,
        hint: &str,
        doc: &mut Document<'_>,
        top: bool,
    ) -> String {
        let has_properties = map
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        if has_properties && !top {
            // Declare only the object part under its own name; combinators stay at the use site.
            let mut object_only = Map::new();
            for key in [
                "type",
                "properties",
                "required",
                "additionalProperties",
                "patternProperties",
            ] {
                if let Some(value) = map.get(key) {
                    let value = if key == "type" {
                        Value::String("object".to_string())
                    } else {
                        value.clone()
                    };
                    object_only.insert(key.to_string(), value);
                }
            }
            return self.declare_nested(&Value::Object(object_only), hint, doc);
        }
        let members = self.members(map, hint, doc);
        if members.is_empty() {
            return "{}".to_string();
        }
        let body = members
            .iter()
            .map(|m| m.text.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        format!("{{ {body} }}")
    }

    fn array(&mut self, map: &Map<String, Value>, hint: &str, doc: &mut Document<'_>) -> String {
        let item_hint = format!("{hint}Item");
        // Draft 2020-12 tuples: `prefixItems`, with `items` for the rest. Older drafts: `items`
        // as an array, with `additionalItems` for the rest.
        let (prefix, rest) = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(prefix)), rest) => (Some(prefix), rest),
            (None, Some(Value::Array(prefix))) => (Some(prefix), map.get("additionalItems")),
            (_, items) => (None, items),
        };
        let Some(prefix) = prefix else {
            let item = match rest {
                Some(items) => self.expr(items, &item_hint, doc, false),
                None => "unknown".to_string(),
            };
            return format!("{}[]", wrap(&item));
        };
        let min_items = map.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let mut elements = Vec::with_capacity(prefix.len() + 1);
        for (i, element) in prefix.iter().enumerate() {
            let ty = self.expr(element, &format!("{hint}Item{}", i + 1), doc, false);
            if (i as u64) < min_items {
                elements.push(ty);
            } else {
                elements.push(format!("{}?", wrap(&ty)));
            }
        }
        match rest {
            Some(Value::Bool(false)) => {}
            None | Some(Value::Bool(true)) => elements.push("...unknown[]".to_string()),
            Some(items) => {
                let ty = self.expr(items, &item_hint, doc, false);
                elements.push(format!("...{}[]", wrap(&ty)));
            }
        }
        format!("[{}]", elements.join(", "))
    }

    /// The name of a local `$ref` target, declaring it on first use.
    fn reference(&mut self, reference: &str, doc: &mut Document<'_>) -> String {
        if let Some(name) = doc.refs.get(reference) {
            return name.clone();
        }
        let Some(pointer) = reference.strip_prefix('#') else {
            return "unknown".to_string();
        };
        let Some(target) = doc.root.pointer(pointer) else {
            return "unknown".to_string();
        };
        let last = pointer.rsplit('/').next().unwrap_or_default();
        let last = last.replace("~1", "/").replace("~0", "~");
        let wanted = format!("{}{}", doc.prefix, type_fragment(&last));
        let name = self.names.claim(&type_ident(&wanted, &doc.root_name));
        doc.refs.insert(reference.to_string(), name.clone());
        let slot = self.reserve();
        let declaration = self.declaration_of(target, &name, doc);
        self.items[slot] = Some(declaration);
        name
    }
}

/// The object map of a schema that is a plain object with declared properties (no
/// combinators, no `$ref`, no enum), which is what becomes an `interface`.
fn plain_object(schema: &Value) -> Option<&Map<String, Value>> {
    let map = schema.as_object()?;
    let combinators = ["$ref", "anyOf", "oneOf", "allOf", "enum", "const"];
    if combinators.iter().any(|k| map.contains_key(*k)) {
        return None;
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        return None;
    }
    let is_object = match map.get("type") {
        Some(Value::String(t)) => t == "object",
        None => is_objectish(map),
        _ => false,
    };
    let has_properties = map
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    (is_object && (has_properties || map.get("additionalProperties") == Some(&Value::Bool(false))))
        .then_some(map)
}

fn is_objectish(map: &Map<String, Value>) -> bool {
    map.contains_key("properties")
        || map.contains_key("additionalProperties")
        || map.contains_key("patternProperties")
}

/// Whether the schema says something about its own type besides combinators.
fn has_own_type(map: &Map<String, Value>) -> bool {
    map.contains_key("type")
        || is_objectish(map)
        || map.contains_key("items")
        || map.contains_key("prefixItems")
        || !(map.contains_key("allOf") || map.contains_key("anyOf") || map.contains_key("oneOf"))
}

/// A JSON value as a TypeScript literal type.
fn literal(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => json_string(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(literal).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => {
            if map.is_empty() {
                return "{}".to_string();
            }
            let members = map
                .iter()
                .map(|(k, v)| format!("{}: {}", property_key(k), literal(v)))
                .collect::<Vec<_>>()
                .join("; ");
            format!("{{ {members} }}")
        }
    }
}

/// `A | B`, without duplicates; `unknown` absorbs everything; `never` disappears.
pub(crate) fn union(types: Vec<String>) -> String {
    combine(types, "unknown", "never", " | ", |m| {
        if m.contains(" & ") {
            format!("({m})")
        } else {
            m.to_string()
        }
    })
}

/// `A & B`, without duplicates; `unknown` disappears; `never` absorbs everything.
fn intersection(types: Vec<String>) -> String {
    combine(types, "never", "unknown", " & ", wrap)
}

/// `types` joined by `separator` (each written by `member`), without duplicates: `absorbing`
/// stands for the whole where it is one of them, `identity` is left out (and is what none
/// leaves).
fn combine(
    types: Vec<String>,
    absorbing: &str,
    identity: &str,
    separator: &str,
    member: fn(&str) -> String,
) -> String {
    let mut members: Vec<String> = Vec::with_capacity(types.len());
    for ty in types {
        if ty == absorbing {
            return ty;
        }
        if ty == identity || members.contains(&ty) {
            continue;
        }
        members.push(ty);
    }
    match members.len() {
        0 => identity.to_string(),
        1 => members.pop().unwrap_or_default(),
        _ => members
            .iter()
            .map(|m| member(m))
            .collect::<Vec<_>>()
            .join(separator),
    }
}

/// Parenthesises a union or intersection where a tighter-binding position needs it.
fn wrap(ty: &str) -> String {
    if needs_parens(ty) {
        format!("({ty})")
    } else {
        ty.to_string()
    }
}

/// Whether `ty` has a `|` or `&` at its top level (outside brackets, braces and strings).
fn needs_parens(ty: &str) -> bool {
    let mut depth = 0i32;
    let mut in_string = false;
    let mut escaped = false;
    for c in ty.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' | '[' | '{' | '<' => depth += 1,
            ')' | ']' | '}' | '>' => depth -= 1,
            '|' | '&' if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// The JSDoc lines of a schema: its description, then `@default` and `@deprecated`.
pub(crate) fn doc_lines(schema: &Value) -> Vec<String> {
    let Some(map) = schema.as_object() else {
        return Vec::new();
    };
    let mut lines: Vec<String> = Vec::new();
    if let Some(description) = map.get("description").and_then(Value::as_str) {
        lines.extend(description.trim().lines().map(|l| l.trim_end().to_string()));
    }
    if let Some(format) = map.get("format").and_then(Value::as_str) {
        lines.push(format!("Format: {format}."));
    }
    if let Some(default) = map.get("default") {
        lines.push(format!("@default {default}"));
    }
    if map.get("deprecated") == Some(&Value::Bool(true)) {
        lines.push("@deprecated".to_string());
    }
    lines
}

/// Writes a JSDoc comment; `*/` inside the text is broken so it cannot end the comment early.
pub(crate) fn write_doc(out: &mut String, indent: &str, lines: &[String]) {
    match lines {
        [] => {}
        [line] => {
            let _ = writeln!(out, "{indent}/** {} */", escape_doc(line));
        }
        lines => {
            let _ = writeln!(out, "{indent}/**");
            for line in lines {
                if line.is_empty() {
                    let _ = writeln!(out, "{indent} *");
                } else {
                    let _ = writeln!(out, "{indent} * {}", escape_doc(line));
                }
            }
            let _ = writeln!(out, "{indent} */");
        }
    }
}

fn escape_doc(line: &str) -> String {
    line.replace("*/", "*\\/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Declares `schema` as `GetIssueInput` (with `$defs` prefixed `GetIssue`) and renders it.
    fn declared(schema: Value) -> String {
        let mut declarations = Declarations::default();
        declarations.declare_root(&schema, "GetIssue", "GetIssueInput");
        let mut out = String::new();
        declarations.render(&mut out, "", true);
        out
    }

    #[test]
    fn schemas_translate_to_the_expected_typescript() {
        let table: Vec<(&str, Value, &str)> = vec![
            (
                "required and optional properties, with descriptions as JSDoc",
                json!({"type": "object", "description": "Find an issue.", "properties": {
                    "repo": {"type": "string", "description": "owner/name"},
                    "number": {"type": "integer"},
                    "draft": {"type": "boolean", "default": false}
                }, "required": ["repo", "number"]}),
                "/** Find an issue. */\nexport interface GetIssueInput {\n  /** owner/name */\n  repo: string;\n  number: number;\n  /** @default false */\n  draft?: boolean;\n}\n",
            ),
            (
                "nested objects and arrays of objects get named types",
                json!({"type": "object", "properties": {
                    "labels": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
                    "author": {"type": "object", "properties": {"login": {"type": "string"}}}
                }}),
                "export interface GetIssueInput {\n  labels?: GetIssueInputLabelsItem[];\n  author?: GetIssueInputAuthor;\n}\nexport interface GetIssueInputLabelsItem {\n  name: string;\n}\nexport interface GetIssueInputAuthor {\n  login?: string;\n}\n",
            ),
            (
                "tuples from prefixItems, closed and open",
                json!({"type": "object", "properties": {
                    "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "minItems": 2, "items": false},
                    "head": {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
                    "old": {"type": "array", "items": [{"type": "string"}, {"type": "boolean"}], "minItems": 2}
                }, "required": ["point"]}),
                "export interface GetIssueInput {\n  point: [number, number];\n  head?: [string?, ...number[]];\n  old?: [string, boolean, ...unknown[]];\n}\n",
            ),
            (
                "enums and const become literal unions",
                json!({"type": "object", "properties": {
                    "state": {"type": "string", "enum": ["open", "closed"]},
                    "kind": {"const": "issue"},
                    "mixed": {"enum": [1, "two", true, null]}
                }}),
                "export interface GetIssueInput {\n  state?: \"open\" | \"closed\";\n  kind?: \"issue\";\n  mixed?: 1 | \"two\" | true | null;\n}\n",
            ),
            (
                "anyOf and oneOf are unions, allOf is an intersection",
                json!({"type": "object", "properties": {
                    "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                    "target": {"oneOf": [
                        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                        {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
                    ]},
                    "both": {"allOf": [
                        {"type": "object", "properties": {"a": {"type": "string"}}},
                        {"type": "object", "properties": {"b": {"type": "number"}}}
                    ]}
                }}),
                "export interface GetIssueInput {\n  id?: string | number;\n  target?: GetIssueInputTargetVariant1 | GetIssueInputTargetVariant2;\n  both?: GetIssueInputBothPart1 & GetIssueInputBothPart2;\n}\nexport interface GetIssueInputTargetVariant1 {\n  path: string;\n}\nexport interface GetIssueInputTargetVariant2 {\n  url: string;\n}\nexport interface GetIssueInputBothPart1 {\n  a?: string;\n}\nexport interface GetIssueInputBothPart2 {\n  b?: number;\n}\n",
            ),
            (
                "nullable and type arrays with null",
                json!({"type": "object", "properties": {
                    "milestone": {"type": ["string", "null"]},
                    "assignee": {"type": "string", "nullable": true},
                    "tags": {"type": ["array", "null"], "items": {"type": "string"}}
                }}),
                "export interface GetIssueInput {\n  milestone?: string | null;\n  assignee?: string | null;\n  tags?: string[] | null;\n}\n",
            ),
            (
                "local $ref into $defs and definitions, including recursion",
                json!({"type": "object", "properties": {
                    "tree": {"$ref": "#/$defs/node"},
                    "owner": {"$ref": "#/definitions/user"},
                    "self": {"$ref": "#"}
                }, "$defs": {"node": {"type": "object", "properties": {
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
                }}}, "definitions": {"user": {"type": "string"}}}),
                "export interface GetIssueInput {\n  tree?: GetIssueNode;\n  owner?: GetIssueUser;\n  self?: GetIssueInput;\n}\nexport interface GetIssueNode {\n  children?: GetIssueNode[];\n}\nexport type GetIssueUser = string;\n",
            ),
            (
                "additionalProperties become index signatures",
                json!({"type": "object", "properties": {
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                    "meta": {"type": "object"},
                    "mixed": {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"], "additionalProperties": {"type": "string"}},
                    "open": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": true}
                }, "additionalProperties": false}),
                "export interface GetIssueInput {\n  env?: { [key: string]: string };\n  meta?: { [key: string]: unknown };\n  mixed?: GetIssueInputMixed;\n  open?: GetIssueInputOpen;\n}\nexport interface GetIssueInputMixed {\n  n: number;\n  [key: string]: string | number;\n}\nexport interface GetIssueInputOpen {\n  x?: string;\n  [key: string]: unknown;\n}\n",
            ),
            (
                "missing or inexpressible schemas are unknown, never any",
                json!({"type": "object", "properties": {
                    "anything": {},
                    "yes": true,
                    "no": false,
                    "remote": {"$ref": "https://example.com/schema.json"},
                    "negated": {"not": {"type": "string"}},
                    "list": {"type": "array"}
                }}),
                "export interface GetIssueInput {\n  anything?: unknown;\n  yes?: unknown;\n  no?: never;\n  remote?: unknown;\n  negated?: unknown;\n  list?: unknown[];\n}\n",
            ),
            (
                "odd property names are quoted and JSDoc cannot be closed early",
                json!({"type": "object", "properties": {
                    "content-type": {"type": "string", "description": "ends */ here"},
                    "2fa": {"type": "boolean"},
                    "default": {"type": "string"}
                }}),
                "export interface GetIssueInput {\n  /** ends *\\/ here */\n  \"content-type\"?: string;\n  \"2fa\"?: boolean;\n  default?: string;\n}\n",
            ),
            (
                "a non-object root becomes a type alias",
                json!({"type": "array", "items": {"type": "string"}}),
                "export type GetIssueInput = string[];\n",
            ),
        ];
        for (what, schema, expected) in table {
            assert_eq!(declared(schema), expected, "{what}");
        }
    }

    #[test]
    fn colliding_type_names_are_numbered() {
        let mut declarations = Declarations::default();
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(declarations.declare_root(&schema, "X", "XInput"), "XInput");
        assert_eq!(declarations.declare_root(&schema, "X", "XInput"), "XInput2");
    }
}
