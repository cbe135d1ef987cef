//! The one relay of what toolmux serves from its servers besides tools: their prompts
//! (namespaced like tools, `PREFIX__prompt`), resources and resource templates (under their own
//! URIs, which already say where they come from) and completions. It names and titles what is
//! listed, routes a served name, URI or template to the server that listed it, and sorts a
//! failure into a [`RelayError`]; the MCP and REST channels only convert their wire formats and
//! errors at their edge. Listing reads the discovery caches and starts nothing; getting, reading,
//! completing and subscribing start the server when it is not running.
//!
//! A channel with sessions (MCP) names the calling session ([`Relay::in_session`]): a server
//! served per client then answers on that session's own connection, so a prompt, a read, a
//! completion or a log level is that client's alone. Listings stay the discovery cache's for
//! every session: listing never starts anything, and a per-client server is one server whose
//! lists toolmux shows once, as it shows its tools.
//!
//! It is also where toolmux's own resources (`spec://…`, from the built-in packs'
//! [`ResourceProvider`]s) join the relayed ones, so that every channel lists and reads them
//! alike: listed first, read by their provider (which owns its URI scheme), and served where
//! the channel serves the tool that reads them (`spec_view`) — a pass-through channel, which
//! stands in for one server, serves none.

use std::sync::Arc;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult, Prompt,
    PromptMessage, ReadResourceRequestParams, ReadResourceResult, Reference, Resource,
    ResourceContents, ResourceTemplate, Role,
};

use toolmux_core::{
    BuiltinResources, Catalog, Policy, PromptContents, PromptInfo, ResourceError, ResourceInfo,
    ResourceProvider, ToolScope,
};
pub use toolmux_core::{RelayError, Unknown};

use crate::error::UpstreamError;
use crate::names::registry_names;
use crate::servers::Upstreams;
use crate::source::UpstreamSource;
use toolmux_trust::ItemKind;

/// Something a server listed, as a channel serves it: under its served name (`PREFIX__name`, or
/// its own name in pass-through mode), with its own name as its title when it was renamed and
/// has none, so that a person still sees what the server calls it. A resource of toolmux's own
/// is served as its provider lists it.
#[derive(Clone, Debug)]
pub struct Relayed<T> {
    /// The server that listed it; `None` for a resource of toolmux's own (a spec).
    pub server: Option<String>,
    /// The item as served.
    pub item: T,
}

/// Whether `scope` (none: everything, the REST API) serves the item with this registry name,
/// listed by `source` ([`ToolScope::serves_item`]).
fn scope_serves(scope: Option<&ToolScope>, source: &str, registry_name: &str) -> bool {
    scope.is_none_or(|s| s.serves_item(source, registry_name))
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
            UpstreamError::Timeout { after, .. } => RelayError::Timeout {
                message: error.to_string(),
                after,
            },
            UpstreamError::Protocol { .. } => RelayError::Failed(error.to_string()),
            UpstreamError::Start { .. }
            | UpstreamError::Unavailable { .. }
            | UpstreamError::Disabled { .. }
            | UpstreamError::Retired { .. }
            | UpstreamError::TooManySessions { .. }
            | UpstreamError::SessionEnded { .. }
            | UpstreamError::NeedsSignIn { .. }
            | UpstreamError::CredentialRejected { .. }
            | UpstreamError::Cache { .. }
            | UpstreamError::Pins { .. }
            | UpstreamError::NotHeld { .. } => RelayError::Unavailable(error.to_string()),
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

/// The relay as one channel sees it: the servers behind toolmux, and toolmux's own resources,
/// through that channel's [`ToolScope`].
pub struct Relay<'a> {
    upstreams: Option<&'a Upstreams>,
    scope: Option<&'a ToolScope>,
    /// toolmux's own resources, with the catalog that says whether their read tool is offered.
    builtin: Option<(&'a BuiltinResources, Arc<Catalog>)>,
    /// The calling downstream session, when the channel has sessions.
    session: Option<&'a str>,
}

impl<'a> Relay<'a> {
    /// What `scope` serves of the relayed items (none when there are no `upstreams`); with no
    /// scope, everything under registry names.
    pub fn new(upstreams: Option<&'a Upstreams>, scope: Option<&'a ToolScope>) -> Self {
        Self {
            upstreams,
            scope,
            builtin: None,
            session: None,
        }
    }

    /// Relays for one downstream `session`: servers served per client answer on its own
    /// connection.
    pub fn in_session(mut self, session: &'a str) -> Self {
        self.session = Some(session);
        self
    }

    /// The calling session, if any.
    pub fn session(&self) -> Option<&'a str> {
        self.session
    }

    /// Passes the session's `logging/setLevel` to every server the scope serves (see
    /// [`UpstreamSource::set_level`]); without a session there is nobody to set it for. A
    /// server that cannot take it is named in the answer; the others still got it.
    pub async fn set_level(&self, level: toolmux_core::LogLevel) -> Vec<(String, UpstreamError)> {
        let (Some(session), Some(upstreams)) = (self.session, self.upstreams) else {
            return Vec::new();
        };
        let mut failed = Vec::new();
        for source in relayable(upstreams) {
            let served = self
                .scope
                .and_then(|s| s.source.as_deref())
                .is_none_or(|only| only == source.name());
            if !served {
                continue;
            }
            if let Err(e) = source.set_level(session, level).await {
                failed.push((source.name().to_string(), e));
            }
        }
        failed
    }

    /// Serves toolmux's own `resources` beside the relayed ones, each provider's where
    /// `catalog` offers its read tool and the scope serves it.
    pub fn with_builtin(mut self, resources: &'a BuiltinResources, catalog: Arc<Catalog>) -> Self {
        self.builtin = Some((resources, catalog));
        self
    }

    /// The provider of toolmux's own resources that owns `uri` (by its scheme), when this
    /// channel serves its resources. A channel that does not leaves the URI to the servers.
    pub fn builtin_owner(&self, uri: &str) -> Option<&'a Arc<dyn ResourceProvider>> {
        let resources: &'a BuiltinResources = self.builtin.as_ref()?.0;
        resources
            .owner(uri)
            .filter(|provider| self.serves_builtin(provider.as_ref()))
    }

    /// Whether this channel serves `provider`'s resources: its read tool is in the catalog,
    /// from that provider's source and offered (not denied), and the scope serves it as it
    /// would serve a relayed item of that source.
    fn serves_builtin(&self, provider: &dyn ResourceProvider) -> bool {
        let Some((_, catalog)) = &self.builtin else {
            return false;
        };
        let tool = provider.read_tool();
        catalog
            .get(tool)
            .is_some_and(|e| e.is_offered() && e.descriptor.source == provider.source())
            && scope_serves(self.scope, provider.source(), tool)
    }

    /// The providers whose resources this channel serves.
    fn served_providers(&self) -> Vec<&'a Arc<dyn ResourceProvider>> {
        let Some(resources) = self.builtin.as_ref().map(|(r, _)| *r) else {
            return Vec::new();
        };
        resources
            .providers()
            .iter()
            .filter(|p| self.serves_builtin(p.as_ref()))
            .collect()
    }

    /// The one server whose items are served under their own names (pass-through), if any.
    fn pass_through(&self) -> Option<&'a str> {
        self.scope.and_then(|s| s.source.as_deref())
    }

    /// Every served prompt: toolmux's own first (the skills pack's `skill__NAME`, read on the
    /// blocking pool, served where the pack's resources are), then the servers'.
    pub async fn prompts(&self) -> Vec<Relayed<Prompt>> {
        let mut served = Vec::new();
        for provider in self.served_providers() {
            served.extend(
                BuiltinResources::list_prompts(provider)
                    .await
                    .into_iter()
                    .map(|info| Relayed {
                        server: None,
                        item: wire_prompt(info),
                    }),
            );
        }
        served.extend(
            self.served(self.listed(UpstreamSource::prompts, |p| &p.name), |p| {
                (&mut p.name, &mut p.title)
            }),
        );
        served
    }

    /// Every served resource: toolmux's own first (read on the blocking pool), then the
    /// servers'. A server's resource under a URI scheme a served provider owns is left out: a
    /// read of it would reach the provider, and a listing shows only what can be read.
    pub async fn resources(&self) -> Vec<Relayed<Resource>> {
        let providers = self.served_providers();
        let mut served = Vec::new();
        for provider in &providers {
            served.extend(
                BuiltinResources::list(provider)
                    .await
                    .into_iter()
                    .map(|info| Relayed {
                        server: None,
                        item: wire_resource(info),
                    }),
            );
        }
        // A server's resource under the scheme of a provider served here could not be read
        // (the provider answers that scheme): the served set was decided above, once.
        let owned = |uri: &str| {
            self.builtin.as_ref().is_some_and(|(resources, _)| {
                resources
                    .owner(uri)
                    .is_some_and(|owner| providers.iter().any(|p| Arc::ptr_eq(p, owner)))
            })
        };
        served.extend(
            self.served(self.listed(UpstreamSource::resources, |r| &r.name), |r| {
                (&mut r.name, &mut r.title)
            })
            .into_iter()
            .filter(|r| !owned(&r.item.uri)),
        );
        served
    }

    /// Every served resource template.
    pub fn resource_templates(&self) -> Vec<Relayed<ResourceTemplate>> {
        self.served(
            self.listed(UpstreamSource::resource_templates, |t| &t.name),
            |t| (&mut t.name, &mut t.title),
        )
    }

    /// Gets a prompt by its served name: one of toolmux's own from its provider, else from its
    /// server.
    pub async fn get_prompt(
        &self,
        mut request: GetPromptRequestParams,
    ) -> Result<GetPromptResult, RelayError> {
        for provider in self.served_providers() {
            match BuiltinResources::prompt(provider, &request.name).await {
                Ok(Some(contents)) => return Ok(wire_prompt_result(contents)),
                Ok(None) => {}
                Err(ResourceError::NotFound(_)) => {
                    return Err(RelayError::NotFound(Unknown::Prompt(request.name)));
                }
                Err(ResourceError::Failed(message)) => return Err(RelayError::Unreadable(message)),
            }
        }
        let (source, own) = self.prompt(&request.name)?;
        request.name = own;
        Ok(source.get_prompt(self.session, request).await?)
    }

    /// Reads a resource: one of toolmux's own from its provider, else from the server that
    /// lists it or has a template matching it.
    pub async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, RelayError> {
        if let Some(provider) = self.builtin_owner(&request.uri) {
            let uri = request.uri;
            return match BuiltinResources::read(provider, &uri).await {
                Ok(contents) => {
                    let mut result =
                        ReadResourceResult::new(contents.into_iter().map(wire_contents).collect());
                    // Without `resultType`, as every protocol version reads a result.
                    result.result_type = None;
                    Ok(result)
                }
                Err(ResourceError::NotFound(message)) => {
                    Err(RelayError::NotFound(Unknown::Builtin { uri, message }))
                }
                Err(ResourceError::Failed(message)) => Err(RelayError::Unreadable(message)),
            };
        }
        let source = self.resource_server(&request.uri)?;
        Ok(source.read_resource(self.session, request).await?)
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
        Ok(source.complete(self.session, request).await?)
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
                    server: Some(l.server),
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
        self.listed(UpstreamSource::prompts, |p| &p.name)
            .into_iter()
            .find(|l| match pass_through {
                None => l.name == served,
                Some(only) => l.server == only && l.item.name == served,
            })
            .filter(|l| self.serves(&l.server, &l.name))
            .and_then(|l| Some((self.upstreams?.get(&l.server)?, l.item.name)))
            .ok_or_else(|| self.unknown_prompt(served))
    }

    /// Why no served prompt is named `served`: one held until a person accepts it says so
    /// (the server is not asked), any other name is unknown.
    fn unknown_prompt(&self, served: &str) -> RelayError {
        let pass_through = self.pass_through();
        self.listed(UpstreamSource::held_prompts, |p| &p.name)
            .into_iter()
            .find(|l| match pass_through {
                None => l.name == served,
                Some(only) => l.server == only && l.item.name == served,
            })
            .filter(|l| self.serves(&l.server, &l.name))
            .and_then(|l| {
                self.upstreams?
                    .get(&l.server)?
                    .held_refusal(ItemKind::Prompt, &l.item.name)
            })
            .map_or_else(
                || RelayError::NotFound(Unknown::Prompt(served.to_string())),
                |why| {
                    RelayError::Unavailable(format!(
                        "prompt `{served}` is held until a person accepts it: {why}"
                    ))
                },
            )
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
        let templates = self.listed(UpstreamSource::resource_templates, |t| &t.name);
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
        let (server, name) = self
            .listed(UpstreamSource::resources, |r| &r.name)
            .into_iter()
            .find(|r| r.item.uri == uri)
            .map(|r| (r.server, r.name))
            .or_else(|| {
                self.listed(UpstreamSource::resource_templates, |t| &t.name)
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
            .then(|| self.upstreams?.get(&server))
            .flatten()
    }

    /// A listing across the relayed servers; none without servers.
    fn listed<T>(
        &self,
        items: fn(&UpstreamSource) -> Vec<T>,
        own_name: fn(&T) -> &String,
    ) -> Vec<Listed<T>> {
        self.upstreams
            .map(|upstreams| listed(upstreams, items, own_name))
            .unwrap_or_default()
    }
}

/// One of toolmux's own prompts as MCP lists it: a field-for-field copy, with no arguments.
fn wire_prompt(info: PromptInfo) -> Prompt {
    let mut prompt = Prompt::new(info.name, info.description, None);
    prompt.title = info.title;
    prompt
}

/// What getting one of toolmux's own prompts gave: one user message of text.
fn wire_prompt_result(contents: PromptContents) -> GetPromptResult {
    let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, contents.text)]);
    result.description = contents.description;
    // Without `resultType`, as every protocol version reads a result.
    result.result_type = None;
    result
}

/// One of toolmux's own resources as MCP lists it. The core's type has MCP's fields, so this
/// is a field-for-field copy.
fn wire_resource(info: ResourceInfo) -> Resource {
    let mut resource = Resource::new(info.uri, info.name);
    resource.title = info.title;
    resource.description = info.description;
    resource.mime_type = info.mime_type;
    resource.size = info.size;
    resource
}

/// What reading one of toolmux's own resources gave, as MCP's text resource contents.
fn wire_contents(contents: toolmux_core::ResourceContents) -> ResourceContents {
    ResourceContents::TextResourceContents {
        uri: contents.uri,
        mime_type: contents.mime_type,
        text: contents.text,
        meta: None,
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
    use std::time::Duration;
    use toolmux_core::{
        Hub, HubSettings, NamePattern, NullSink, PolicyRules, Source, SourceCall, SourceError,
        SourceKind, ToolDescriptor, ToolResult,
    };

    /// A pack with one read tool, `note_view`, and one resource per note.
    struct Notes;

    #[async_trait::async_trait]
    impl Source for Notes {
        fn id(&self) -> &str {
            "notes"
        }
        fn kind(&self) -> SourceKind {
            SourceKind::Builtin
        }
        fn tools(&self) -> Vec<ToolDescriptor> {
            let schema = serde_json::json!({"type": "object"});
            vec![ToolDescriptor::new(
                "notes",
                "note_view",
                "Shows a note.",
                schema,
            )]
        }
        async fn call(&self, _call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
            Ok(ToolResult::error("not called in these tests"))
        }
    }

    impl ResourceProvider for Notes {
        fn source(&self) -> &str {
            "notes"
        }
        fn scheme(&self) -> &str {
            "note"
        }
        fn read_tool(&self) -> &str {
            "note_view"
        }
        fn resources(&self) -> Result<Vec<ResourceInfo>, ResourceError> {
            Ok(vec![ResourceInfo {
                uri: "note://one".into(),
                name: "one".into(),
                title: Some("One".into()),
                description: None,
                mime_type: Some("text/markdown".into()),
                size: None,
            }])
        }
        fn read(&self, uri: &str) -> Result<Vec<toolmux_core::ResourceContents>, ResourceError> {
            match uri {
                "note://one" => Ok(vec![toolmux_core::ResourceContents {
                    uri: uri.into(),
                    mime_type: Some("text/markdown".into()),
                    text: "# One".into(),
                }]),
                _ => Err(ResourceError::NotFound(format!("no note `{uri}`"))),
            }
        }
        fn version(&self) -> Result<u64, ResourceError> {
            Ok(0)
        }
    }

    fn hub_with_notes(policies: PolicyRules) -> Hub {
        let settings = HubSettings {
            policies,
            ..HubSettings::default()
        };
        let hub = Hub::new(settings, Arc::new(NullSink));
        hub.add_source(Arc::new(Notes));
        hub
    }

    async fn served_uris(relay: &Relay<'_>) -> Vec<String> {
        relay
            .resources()
            .await
            .into_iter()
            .map(|r| {
                assert_eq!(r.server, None, "a built-in resource has no server");
                r.item.uri
            })
            .collect()
    }

    #[tokio::test]
    async fn builtin_resources_are_served_where_their_read_tool_is() {
        let resources = BuiltinResources::new(vec![Arc::new(Notes)]);
        let hub = hub_with_notes(PolicyRules::default());
        let pattern = |p: &str| NamePattern::new(p).expect("valid pattern");
        let everything = Relay::new(None, None).with_builtin(&resources, hub.catalog());
        assert_eq!(served_uris(&everything).await, ["note://one"]);
        let read = everything
            .read_resource(ReadResourceRequestParams::new("note://one"))
            .await
            .expect("reads");
        assert_eq!(read.result_type, None);
        assert!(
            matches!(&read.contents[0], ResourceContents::TextResourceContents { text, .. } if text == "# One")
        );
        let unknown = everything
            .read_resource(ReadResourceRequestParams::new("note://two"))
            .await;
        assert!(
            matches!(&unknown, Err(RelayError::NotFound(Unknown::Builtin { uri, .. })) if uri == "note://two"),
            "{unknown:?}"
        );

        let hidden = [
            ToolScope {
                source: Some("github".into()),
                ..ToolScope::default()
            },
            ToolScope {
                exclude: vec![pattern("note_*")],
                ..ToolScope::default()
            },
            ToolScope {
                include: vec![pattern("file_*")],
                ..ToolScope::default()
            },
            // Code mode serves no item its `--tools` does not name.
            ToolScope {
                entry_points: vec!["run_code".into()],
                ..ToolScope::default()
            },
        ];
        for scope in &hidden {
            let relay = Relay::new(None, Some(scope)).with_builtin(&resources, hub.catalog());
            assert!(served_uris(&relay).await.is_empty(), "{scope:?}");
            assert!(relay.builtin_owner("note://one").is_none(), "{scope:?}");
            let read = relay
                .read_resource(ReadResourceRequestParams::new("note://one"))
                .await;
            assert!(
                matches!(read, Err(RelayError::NotFound(Unknown::Resource(_)))),
                "{scope:?}: {read:?}"
            );
        }
        let own_source = ToolScope {
            source: Some("notes".into()),
            ..ToolScope::default()
        };
        let relay = Relay::new(None, Some(&own_source)).with_builtin(&resources, hub.catalog());
        assert_eq!(served_uris(&relay).await, ["note://one"]);

        // A `deny` policy on the read tool hides the resources, as it hides the tool.
        let denied = hub_with_notes(PolicyRules {
            tools: vec![(pattern("note_view"), Policy::Deny)],
            ..PolicyRules::default()
        });
        let relay = Relay::new(None, None).with_builtin(&resources, denied.catalog());
        assert!(served_uris(&relay).await.is_empty());
        // And without the pack's tools in the catalog there is nothing to serve.
        let bare = Hub::new(HubSettings::default(), Arc::new(NullSink));
        let relay = Relay::new(None, None).with_builtin(&resources, bare.catalog());
        assert!(served_uris(&relay).await.is_empty());
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
