//! The one relay of what toolmux serves from its servers besides tools: their prompts
//! (namespaced like tools, `PREFIX__prompt`), resources and resource templates (under their own
//! URIs, which already say where they come from) and completions. It names and titles what is
//! listed, routes a served name, URI or template to the server that listed it, and sorts a
//! failure into a [`RelayError`]; the MCP and REST channels only convert their wire formats and
//! errors at their edge. Listing reads the discovery caches and starts nothing; getting, reading,
//! completing and subscribing start the server when it is not running.

use std::time::Duration;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult, Prompt,
    ReadResourceRequestParams, ReadResourceResult, Reference, Resource, ResourceTemplate,
};

use toolmux_core::{Policy, ToolScope};

use crate::error::UpstreamError;
use crate::names::registry_names;
use crate::servers::Upstreams;
use crate::source::UpstreamSource;

/// Something a server listed, as a channel serves it: under its served name (`PREFIX__name`, or
/// its own name in pass-through mode), with its own name as its title when it was renamed and
/// has none, so that a person still sees what the server calls it.
#[derive(Clone, Debug)]
pub struct Relayed<T> {
    /// The server that listed it.
    pub server: String,
    /// The item as served.
    pub item: T,
}

/// Whether `scope` (none: everything, the REST API) serves the item with this registry name,
/// listed by `server`. The channel's filters (`--tools`, `--exclude`) apply to prompts, resources
/// and templates by registry name as they do to tools, and its source (pass-through) to the
/// server. With entry points (code mode), only what `--tools` names explicitly is served beside
/// them — an item is no entry point, and without `--tools` none is served.
fn scope_serves(scope: Option<&ToolScope>, server: &str, registry_name: &str) -> bool {
    let Some(scope) = scope else { return true };
    if scope.source.as_ref().is_some_and(|only| only != server) {
        return false;
    }
    let filtered = scope.filters_admit(registry_name);
    if scope.entry_points.is_empty() {
        return filtered;
    }
    scope.entry_points.iter().any(|n| n == registry_name) || (!scope.include.is_empty() && filtered)
}

/// Why a relayed request failed, sorted so that each channel maps a kind to one answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RelayError {
    /// Nothing the channel serves answers to the name or URI.
    #[error("{0}")]
    NotFound(Unknown),
    /// The request is not one an MCP server could take.
    #[error("{0}")]
    Invalid(String),
    /// The server does not offer resource subscriptions.
    #[error("MCP server `{server}` does not offer resource subscriptions")]
    NoSubscriptions {
        /// The server's name.
        server: String,
    },
    /// The server answered with a JSON-RPC error of its own, passed on as it is.
    #[error("MCP server `{server}` answered with error {code}: {message}")]
    Answered {
        /// The server's name.
        server: String,
        /// Its JSON-RPC error code.
        code: i32,
        /// Its message.
        message: String,
    },
    /// The server broke the protocol or the connection.
    #[error(transparent)]
    Failed(UpstreamError),
    /// The server cannot be started, is switched off, or was replaced while the request was on
    /// its way.
    #[error(transparent)]
    Unavailable(UpstreamError),
    /// The server did not answer within `after`.
    #[error("{error}")]
    Timeout {
        /// What timed out, naming the server.
        error: UpstreamError,
        /// The limit.
        after: Duration,
    },
}

/// What a request named that nothing relayed answers to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unknown {
    /// A prompt, by its served name.
    #[error("no MCP server behind toolmux offers the prompt `{0}`")]
    Prompt(String),
    /// A resource, by its URI.
    #[error("no MCP server behind toolmux lists the resource `{0}`")]
    Resource(String),
    /// A resource template, by its URI template (or a URI it matches).
    #[error("no MCP server behind toolmux lists the resource template `{0}`")]
    Template(String),
    /// Something the upstream crate itself found no server for.
    #[error("{0}")]
    Reported(String),
}

impl From<UpstreamError> for RelayError {
    fn from(error: UpstreamError) -> Self {
        match error {
            UpstreamError::Answered {
                server,
                code,
                message,
            } => RelayError::Answered {
                server,
                code,
                message,
            },
            UpstreamError::NotFound(message) => RelayError::NotFound(Unknown::Reported(message)),
            UpstreamError::Timeout { after, .. } => RelayError::Timeout { error, after },
            UpstreamError::Protocol { .. } => RelayError::Failed(error),
            UpstreamError::Start { .. }
            | UpstreamError::Unavailable { .. }
            | UpstreamError::Disabled { .. }
            | UpstreamError::Retired { .. }
            | UpstreamError::Cache { .. } => RelayError::Unavailable(error),
        }
    }
}

/// An item as listed, before a channel's scope and names apply.
struct Listed<T> {
    server: String,
    /// Its registry name: `PREFIX__name`, kept to the registry alphabet like a tool's.
    name: String,
    /// The item under the server's own name.
    item: T,
}

/// The relay as one channel sees it: the servers behind toolmux through that channel's
/// [`ToolScope`].
pub struct Relay<'a> {
    upstreams: &'a Upstreams,
    scope: Option<&'a ToolScope>,
}

impl<'a> Relay<'a> {
    /// What `scope` serves of the relayed items; with none, everything under registry names.
    pub fn new(upstreams: &'a Upstreams, scope: Option<&'a ToolScope>) -> Self {
        Self { upstreams, scope }
    }

    /// The one server whose items are served under their own names (pass-through), if any.
    fn pass_through(&self) -> Option<&'a str> {
        self.scope.and_then(|s| s.source.as_deref())
    }

    /// Every served prompt.
    pub fn prompts(&self) -> Vec<Relayed<Prompt>> {
        self.served(
            listed(self.upstreams, UpstreamSource::prompts, |p| &p.name),
            |p| (&mut p.name, &mut p.title),
        )
    }

    /// Every served resource.
    pub fn resources(&self) -> Vec<Relayed<Resource>> {
        self.served(
            listed(self.upstreams, UpstreamSource::resources, |r| &r.name),
            |r| (&mut r.name, &mut r.title),
        )
    }

    /// Every served resource template.
    pub fn resource_templates(&self) -> Vec<Relayed<ResourceTemplate>> {
        self.served(
            listed(self.upstreams, UpstreamSource::resource_templates, |t| {
                &t.name
            }),
            |t| (&mut t.name, &mut t.title),
        )
    }

    /// Gets a prompt by its served name from its server.
    pub async fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, RelayError> {
        let (source, own) = self.prompt(&request.name)?;
        request.name = own;
        Ok(source.get_prompt(request).await?)
    }

    /// Reads a resource from the server that lists it or has a template matching it.
    pub async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, RelayError> {
        let source = self.resource_server(&request.uri)?;
        Ok(source.read_resource(request).await?)
    }

    /// Completes an argument of a prompt (by served name) or resource template. A server that
    /// offers no completions gives an empty one, not an error: the client just shows none.
    pub async fn complete(
        &self,
        mut request: CompleteRequestParams,
    ) -> Result<CompleteResult, RelayError> {
        let source = match &mut request.r#ref {
            Reference::Prompt(prompt) => {
                let (source, own) = self.prompt(&prompt.name)?;
                prompt.name = own;
                source
            }
            Reference::Resource(template) => self.template_server(&template.uri)?,
            other => {
                return Err(RelayError::Invalid(format!(
                    "cannot complete arguments of {other:?}"
                )));
            }
        };
        if !source.offers().completions {
            // Without `resultType`, which reads as "complete" in every protocol version.
            let mut empty = CompleteResult::default();
            empty.result_type = None;
            return Ok(empty);
        }
        Ok(source.complete(request).await?)
    }

    /// The server to subscribe to `uri` at: the one that lists it, when it offers
    /// subscriptions.
    pub fn subscription_server(&self, uri: &str) -> Result<UpstreamSource, RelayError> {
        let source = self.resource_server(uri)?;
        if !source.offers().subscribe {
            return Err(RelayError::NoSubscriptions {
                server: source.name().to_string(),
            });
        }
        Ok(source)
    }

    /// Listed items under the names they are served as.
    fn served<T>(
        &self,
        listed: Vec<Listed<T>>,
        names: fn(&mut T) -> (&mut String, &mut Option<String>),
    ) -> Vec<Relayed<T>> {
        let pass_through = self.pass_through();
        listed
            .into_iter()
            .filter(|l| self.serves(&l.server, &l.name))
            .map(|l| {
                let mut item = l.item;
                let (own, title) = names(&mut item);
                let served = match pass_through {
                    None => l.name,
                    Some(_) => own.clone(),
                };
                if title.is_none() && served != *own {
                    *title = Some(own.clone());
                }
                *own = served;
                Relayed {
                    server: l.server,
                    item,
                }
            })
            .collect()
    }

    /// Whether the scope serves the item `name` (a registry name) of `server`.
    fn serves(&self, server: &str, name: &str) -> bool {
        scope_serves(self.scope, server, name)
    }

    /// The server and own name of a served prompt: by its registry name, or in pass-through
    /// mode by its own name on that one server.
    fn prompt(&self, served: &str) -> Result<(UpstreamSource, String), RelayError> {
        let pass_through = self.pass_through();
        listed(self.upstreams, UpstreamSource::prompts, |p| &p.name)
            .into_iter()
            .find(|l| match pass_through {
                None => l.name == served,
                Some(only) => l.server == only && l.item.name == served,
            })
            .filter(|l| self.serves(&l.server, &l.name))
            .and_then(|l| Some((self.upstreams.get(&l.server)?, l.item.name)))
            .ok_or_else(|| RelayError::NotFound(Unknown::Prompt(served.to_string())))
    }

    /// The server of a resource URI: the one whose resource it is, else the one whose template
    /// matches it most specifically (the longest literal start).
    fn resource_server(&self, uri: &str) -> Result<UpstreamSource, RelayError> {
        self.locate_uri(uri)
            .ok_or_else(|| RelayError::NotFound(Unknown::Resource(uri.to_string())))
    }

    /// The server of a resource template, named by its URI template (what MCP's `ref/resource`
    /// carries), else by a URI it matches.
    fn template_server(&self, uri_template: &str) -> Result<UpstreamSource, RelayError> {
        let templates = listed(self.upstreams, UpstreamSource::resource_templates, |t| {
            &t.name
        });
        let located = match templates
            .into_iter()
            .find(|t| t.item.uri_template == uri_template)
        {
            Some(t) => self.source(t.server, &t.name),
            None => self.locate_uri(uri_template),
        };
        located.ok_or_else(|| RelayError::NotFound(Unknown::Template(uri_template.to_string())))
    }

    fn locate_uri(&self, uri: &str) -> Option<UpstreamSource> {
        let (server, name) = listed(self.upstreams, UpstreamSource::resources, |r| &r.name)
            .into_iter()
            .find(|r| r.item.uri == uri)
            .map(|r| (r.server, r.name))
            .or_else(|| {
                listed(self.upstreams, UpstreamSource::resource_templates, |t| {
                    &t.name
                })
                .into_iter()
                .filter(|t| template_matches(&t.item.uri_template, uri))
                .max_by_key(|t| literal_start(&t.item.uri_template).len())
                .map(|t| (t.server, t.name))
            })?;
        self.source(server, &name)
    }

    /// The running source of `server`, when the scope serves its item `name`.
    fn source(&self, server: String, name: &str) -> Option<UpstreamSource> {
        self.serves(&server, name)
            .then(|| self.upstreams.get(&server))
            .flatten()
    }
}

/// The servers whose prompts and resources are relayed: enabled ones, and not those whose
/// configuration denies all their tools (a server switched off for models entirely).
fn relayable(upstreams: &Upstreams) -> Vec<UpstreamSource> {
    upstreams
        .servers()
        .into_iter()
        .filter(|s| s.server().enabled && s.server().policy != Some(Policy::Deny))
        .collect()
}

/// A listing across servers, each item with its registry name (`PREFIX__name`, assigned per
/// server over all its items like tool names).
fn listed<T>(
    upstreams: &Upstreams,
    items: fn(&UpstreamSource) -> Vec<T>,
    own_name: fn(&T) -> &String,
) -> Vec<Listed<T>> {
    let mut listed = Vec::new();
    for source in relayable(upstreams) {
        let items = items(&source);
        let own: Vec<&str> = items.iter().map(|i| own_name(i).as_str()).collect();
        let names = registry_names(&source.prefix(), &own);
        listed.extend(items.into_iter().zip(names).map(|(item, name)| Listed {
            server: source.name().to_string(),
            name,
            item,
        }));
    }
    listed
}

/// The text of a URI template before its first expression.
fn literal_start(template: &str) -> &str {
    template.split('{').next().unwrap_or_default()
}

/// Whether `uri` could be an expansion of the RFC 6570 `template`: its literal parts appear in
/// order, with each expression standing for any text. Written here because routing a read
/// needs only this; no crate on crates.io matches (rather than expands) templates.
fn template_matches(template: &str, uri: &str) -> bool {
    let mut literals = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        literals.push(&rest[..open]);
        match rest[open..].find('}') {
            Some(close) => rest = &rest[open + close + 1..],
            None => return false, // a broken template matches nothing
        }
    }
    literals.push(rest);
    if literals.len() == 1 {
        return template == uri;
    }
    let (first, last) = (literals[0], literals[literals.len() - 1]);
    if !uri.starts_with(first) || uri.len() < first.len() + last.len() || !uri.ends_with(last) {
        return false;
    }
    let mut middle = &uri[first.len()..uri.len() - last.len()];
    for literal in &literals[1..literals.len() - 1] {
        match middle.find(literal) {
            Some(at) => middle = &middle[at + literal.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolmux_core::NamePattern;

    #[test]
    fn a_scope_serves_by_registry_name_and_server_and_code_mode_only_what_tools_names() {
        let pattern = |p: &str| NamePattern::new(p).expect("valid pattern");
        let filtered = ToolScope {
            include: vec![pattern("github__*")],
            exclude: vec![pattern("github__secret")],
            ..ToolScope::default()
        };
        let pass_through = ToolScope {
            source: Some("github".into()),
            ..ToolScope::default()
        };
        let code_mode = ToolScope {
            entry_points: vec!["run_code".into(), "search_tools".into()],
            ..ToolScope::default()
        };
        let code_mode_with_tools = ToolScope {
            include: vec![pattern("github__review")],
            ..code_mode.clone()
        };
        let cases = [
            (None, "github", "github__anything", true),
            (Some(&filtered), "github", "github__review", true),
            (Some(&filtered), "github", "github__secret", false),
            (Some(&filtered), "gitlab", "gitlab__review", false),
            (Some(&pass_through), "github", "github__review", true),
            (Some(&pass_through), "gitlab", "gitlab__review", false),
            // Code mode serves no relayed item unless `--tools` names it.
            (Some(&code_mode), "github", "github__review", false),
            (
                Some(&code_mode_with_tools),
                "github",
                "github__review",
                true,
            ),
            (
                Some(&code_mode_with_tools),
                "github",
                "github__other",
                false,
            ),
        ];
        for (scope, server, name, served) in cases {
            assert_eq!(
                scope_serves(scope, server, name),
                served,
                "{server} {name} {scope:?}"
            );
        }
    }

    #[test]
    fn templates_match_their_expansions_only() {
        let cases = [
            (
                "test://template/{id}/data",
                "test://template/123/data",
                true,
            ),
            (
                "test://template/{id}/data",
                "test://template/123/other",
                false,
            ),
            ("test://template/{id}/data", "test://other/123/data", false),
            ("file:///{path}", "file:///a/b.txt", true),
            ("users://{user}/posts/{post}", "users://ann/posts/7", true),
            ("users://{user}/posts/{post}", "users://ann/7", false),
            ("static://fixed", "static://fixed", true),
            ("static://fixed", "static://fixed2", false),
            ("broken://{id", "broken://x", false),
            ("a{x}b{y}a", "ab", false),
        ];
        for (template, uri, expected) in cases {
            assert_eq!(
                template_matches(template, uri),
                expected,
                "{template} vs {uri}"
            );
        }
    }

    #[test]
    fn upstream_failures_are_sorted_into_one_kind_each_keeping_the_servers_answer() {
        let server = || "s".to_string();
        let answered = RelayError::from(UpstreamError::Answered {
            server: server(),
            code: -32602,
            message: "no".into(),
        });
        assert!(matches!(
            answered,
            RelayError::Answered { code: -32602, .. }
        ));
        let timeout = RelayError::from(UpstreamError::Timeout {
            server: server(),
            what: "prompts/get",
            after: Duration::from_millis(5),
        });
        assert!(matches!(timeout, RelayError::Timeout { after, .. } if after.as_millis() == 5));
        assert!(
            timeout.to_string().contains("timed out after 5ms"),
            "{timeout}"
        );
        let protocol = UpstreamError::Protocol {
            server: server(),
            message: "x".into(),
        };
        assert!(matches!(protocol.into(), RelayError::Failed(_)));
        for unavailable in [
            UpstreamError::Disabled { server: server() },
            UpstreamError::Retired { server: server() },
        ] {
            let message = unavailable.to_string();
            let sorted = RelayError::from(unavailable);
            assert!(matches!(sorted, RelayError::Unavailable(_)));
            assert_eq!(sorted.to_string(), message);
        }
    }

    #[test]
    fn the_literal_start_measures_how_specific_a_template_is() {
        assert_eq!(literal_start("test://template/{id}"), "test://template/");
        assert_eq!(literal_start("{x}"), "");
        assert_eq!(literal_start("plain"), "plain");
    }
}
