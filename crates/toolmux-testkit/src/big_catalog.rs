//! A big catalog for discovery mode's tests: 1,080 tools of twelve made-up upstream servers shaped
//! like real SaaS MCP servers (a verb on a resource, a sentence of description, typed
//! parameters). Among them are the near misses a search must rank below the right tool —
//! `github__search_file`, `slack__list_file`, `postgres__search_query` against `grep` or
//! `file_search` — and the sheer count discovery mode exists for. Deterministic.

use serde_json::{Map, Value, json};

/// A resource of an upstream, with two of its fields.
type Resource = (&'static str, &'static str, &'static str);

/// Each upstream: its name, what its resources live in, and ten resources with two fields each.
const UPSTREAMS: [(&str, &str, [Resource; 10]); 12] = [
    (
        "github",
        "a repository",
        [
            ("issue", "title", "label"),
            ("pull_request", "branch", "reviewer"),
            ("file", "path", "content"),
            ("commit", "message", "author"),
            ("release", "tag", "notes"),
            ("workflow", "run", "status"),
            ("branch", "name", "protection"),
            ("repository", "topic", "visibility"),
            ("gist", "filename", "description"),
            ("code_scanning_alert", "severity", "rule"),
        ],
    ),
    (
        "jira",
        "a project",
        [
            ("ticket", "summary", "priority"),
            ("sprint", "goal", "dates"),
            ("epic", "name", "status"),
            ("board", "columns", "filter"),
            ("worklog", "hours", "author"),
            ("component", "lead", "description"),
            ("version", "release_date", "status"),
            ("attachment", "filename", "size"),
            ("comment", "body", "author"),
            ("user", "email", "group"),
        ],
    ),
    (
        "slack",
        "a workspace",
        [
            ("channel", "topic", "members"),
            ("message", "text", "thread"),
            ("user", "email", "status"),
            ("reaction", "emoji", "message"),
            ("reminder", "time", "text"),
            ("file", "title", "type"),
            ("bookmark", "link", "title"),
            ("usergroup", "handle", "members"),
            ("emoji", "name", "alias"),
            ("huddle", "participants", "duration"),
        ],
    ),
    (
        "gmail",
        "a mailbox",
        [
            ("email", "subject", "sender"),
            ("draft", "subject", "recipient"),
            ("label", "name", "color"),
            ("thread", "subject", "participants"),
            ("filter", "criteria", "action"),
            ("attachment", "filename", "mime_type"),
            ("contact", "name", "email"),
            ("calendar_event", "start", "attendees"),
            ("signature", "text", "alias"),
            ("vacation_reply", "message", "dates"),
        ],
    ),
    (
        "notion",
        "a workspace",
        [
            ("page", "title", "parent"),
            ("database", "title", "properties"),
            ("block", "type", "content"),
            ("comment", "text", "author"),
            ("template", "name", "category"),
            ("property", "name", "type"),
            ("view", "filter", "sort"),
            ("member", "email", "role"),
            ("link_preview", "url", "title"),
            ("synced_block", "source", "content"),
        ],
    ),
    (
        "stripe",
        "an account",
        [
            ("customer", "email", "name"),
            ("invoice", "amount", "due_date"),
            ("payment_intent", "amount", "currency"),
            ("subscription", "plan", "status"),
            ("refund", "amount", "reason"),
            ("product", "name", "price"),
            ("coupon", "percent_off", "duration"),
            ("payout", "amount", "arrival_date"),
            ("dispute", "reason", "evidence"),
            ("tax_rate", "percentage", "jurisdiction"),
        ],
    ),
    (
        "aws",
        "a region",
        [
            ("s3_bucket", "name", "policy"),
            ("s3_object", "key", "size"),
            ("ec2_instance", "type", "state"),
            ("lambda_function", "runtime", "handler"),
            ("security_group", "rule", "port"),
            ("iam_role", "policy", "trust"),
            ("cloudwatch_alarm", "metric", "threshold"),
            ("rds_database", "engine", "size"),
            ("dynamodb_table", "key", "capacity"),
            ("sqs_queue", "visibility_timeout", "retention"),
        ],
    ),
    (
        "kubernetes",
        "a cluster",
        [
            ("pod", "namespace", "phase"),
            ("deployment", "replicas", "image"),
            ("service", "port", "selector"),
            ("config_map", "key", "value"),
            ("secret", "name", "type"),
            ("node", "capacity", "condition"),
            ("namespace", "labels", "quota"),
            ("ingress", "host", "path"),
            ("job", "schedule", "completions"),
            ("persistent_volume", "capacity", "storage_class"),
        ],
    ),
    (
        "postgres",
        "a database",
        [
            ("table", "columns", "owner"),
            ("row", "values", "key"),
            ("index", "columns", "method"),
            ("view", "definition", "owner"),
            ("schema", "name", "owner"),
            ("role", "privileges", "login"),
            ("query", "sql", "plan"),
            ("extension", "name", "version"),
            ("trigger", "event", "function"),
            ("backup", "timestamp", "size"),
        ],
    ),
    (
        "sentry",
        "an organization",
        [
            ("error_event", "message", "level"),
            ("issue_group", "culprit", "count"),
            ("release", "version", "commits"),
            ("alert_rule", "condition", "action"),
            ("project", "platform", "team"),
            ("team", "slug", "members"),
            ("dashboard", "widgets", "title"),
            ("replay", "duration", "user"),
            ("transaction", "name", "duration"),
            ("crash_report", "device", "stacktrace"),
        ],
    ),
    (
        "linear",
        "a team",
        [
            ("issue", "title", "estimate"),
            ("cycle", "number", "dates"),
            ("roadmap", "name", "projects"),
            ("label", "name", "color"),
            ("project", "name", "lead"),
            ("workflow_state", "name", "type"),
            ("comment", "body", "author"),
            ("attachment", "url", "title"),
            ("customer_request", "customer", "priority"),
            ("initiative", "name", "target_date"),
        ],
    ),
    (
        "datadog",
        "an organization",
        [
            ("monitor", "query", "threshold"),
            ("dashboard", "title", "widgets"),
            ("metric", "name", "tags"),
            ("log_pipeline", "filter", "processors"),
            ("incident", "severity", "commander"),
            ("slo", "target", "timeframe"),
            ("synthetic_test", "url", "locations"),
            ("host", "name", "tags"),
            ("notebook", "title", "cells"),
            ("downtime", "scope", "schedule"),
        ],
    ),
];

/// The verbs every resource has, with their description templates.
const VERBS: [(&str, &str); 9] = [
    (
        "list",
        "List the {res}s of {scope}, filtered by {a} and {b}, newest first, a page at a time.",
    ),
    (
        "get",
        "Get one {res} by its id, with its {a}, {b} and timestamps.",
    ),
    (
        "create",
        "Create a new {res} in {scope} with the given {a} and {b}.",
    ),
    ("update", "Update the {a} or {b} of an existing {res}."),
    ("delete", "Delete a {res} from {scope} permanently."),
    (
        "search",
        "Search the {res}s of {scope} by a free-text query over their {a} and {b}.",
    ),
    (
        "export",
        "Export the {res}s of {scope} as CSV or JSON, with their {a} and {b}.",
    ),
    (
        "count",
        "Count the {res}s of {scope} that match a {a} or {b} filter.",
    ),
    (
        "archive",
        "Archive a {res} of {scope}: it leaves the lists but keeps its {a} and {b}.",
    ),
];

/// One made-up upstream tool.
pub struct BigCatalogTool {
    /// The upstream server's name.
    pub server: &'static str,
    /// The tool's name on that server.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its input schema.
    pub input_schema: Value,
}

/// The 1,080 tools, server by server.
pub fn big_catalog() -> Vec<BigCatalogTool> {
    let mut tools = Vec::new();
    for (server, scope, resources) in UPSTREAMS {
        for (resource, a, b) in resources {
            let words = resource.replace('_', " ");
            let (a_words, b_words) = (a.replace('_', " "), b.replace('_', " "));
            for (verb, template) in VERBS {
                let description = template
                    .replace("{res}", &words)
                    .replace("{scope}", scope)
                    .replace("{a}", &a_words)
                    .replace("{b}", &b_words);
                let mut properties = Map::new();
                properties.insert(
                    a.into(),
                    json!({"type": "string", "description": format!("The {a_words}.")}),
                );
                properties.insert(
                    b.into(),
                    json!({"type": "string", "description": format!("The {b_words}.")}),
                );
                if matches!(verb, "get" | "update" | "delete") {
                    properties.insert(
                        "id".into(),
                        json!({"type": "string", "description": format!("The {words}'s id.")}),
                    );
                }
                if matches!(verb, "list" | "search" | "export") {
                    properties.insert(
                        "limit".into(),
                        json!({"type": "integer", "minimum": 1, "maximum": 100}),
                    );
                }
                if verb == "search" {
                    properties.insert(
                        "query".into(),
                        json!({"type": "string", "description": "Free text."}),
                    );
                }
                tools.push(BigCatalogTool {
                    server,
                    name: format!("{verb}_{resource}"),
                    description,
                    input_schema: json!({"type": "object", "properties": properties}),
                });
            }
        }
    }
    tools
}

/// The `mcpServers` section serving the big catalog: one [`crate::servers::catalog_server`]
/// per upstream, each reading its tools from a file written under `dir`.
pub fn big_catalog_servers(dir: &std::path::Path) -> Value {
    let mut by_server: std::collections::BTreeMap<&str, Vec<Value>> = Default::default();
    for tool in big_catalog() {
        by_server.entry(tool.server).or_default().push(json!({
            "name": tool.name,
            "description": tool.description,
            "inputSchema": tool.input_schema,
        }));
    }
    let servers: Map<String, Value> = by_server
        .into_iter()
        .map(|(server, tools)| {
            let file = crate::project::write_file(
                dir,
                &format!("catalog/{server}.json"),
                Value::Array(tools).to_string(),
            );
            (server.to_string(), crate::servers::catalog_server(&file))
        })
        .collect();
    Value::Object(servers)
}
