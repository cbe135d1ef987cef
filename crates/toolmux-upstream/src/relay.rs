//! What toolmux relays from its servers besides tools: their prompts (namespaced like tools,
//! `PREFIX__prompt`), resources and resource templates (under their own URIs, which already
//! say where they come from), read from the discovery caches so listing them starts nothing.
//! The MCP server channel serves these; a request for one goes to the server that listed it.

use rmcp::model::{Prompt, Resource, ResourceTemplate};

use toolmux_core::Policy;

use crate::names::registry_names;
use crate::servers::Upstreams;
use crate::source::UpstreamSource;

/// Something a server listed, with the server and the name toolmux gives it.
#[derive(Clone, Debug)]
pub struct Relayed<T> {
    /// The server that listed it.
    pub server: String,
    /// Its registry name: `PREFIX__name`, kept to the registry alphabet like a tool's.
    pub name: String,
    /// The item as the server listed it, under the server's own name.
    pub item: T,
}

impl Upstreams {
    /// The servers whose prompts and resources are relayed: enabled ones, and not those whose
    /// configuration denies all their tools (a server switched off for models entirely).
    fn relayable(&self) -> Vec<UpstreamSource> {
        self.servers()
            .into_iter()
            .filter(|s| s.server().enabled && s.server().policy != Some(Policy::Deny))
            .collect()
    }

    /// Every prompt of every relayed server.
    pub fn prompts(&self) -> Vec<Relayed<Prompt>> {
        self.relayed(UpstreamSource::prompts, |p| p.name.as_str())
    }

    /// Every resource of every relayed server.
    pub fn resources(&self) -> Vec<Relayed<Resource>> {
        self.relayed(UpstreamSource::resources, |r| r.name.as_str())
    }

    /// Every resource template of every relayed server.
    pub fn resource_templates(&self) -> Vec<Relayed<ResourceTemplate>> {
        self.relayed(UpstreamSource::resource_templates, |t| t.name.as_str())
    }

    /// A listing across servers, each item under its registry name (`PREFIX__name`, assigned
    /// per server over all its items like tool names).
    fn relayed<T>(
        &self,
        items: fn(&UpstreamSource) -> Vec<T>,
        own_name: fn(&T) -> &str,
    ) -> Vec<Relayed<T>> {
        let mut relayed = Vec::new();
        for source in self.relayable() {
            let listed = items(&source);
            let own: Vec<&str> = listed.iter().map(own_name).collect();
            let names = registry_names(&source.prefix(), &own);
            relayed.extend(listed.into_iter().zip(names).map(|(item, name)| Relayed {
                server: source.name().to_string(),
                name,
                item,
            }));
        }
        relayed
    }

    /// A prompt and its server, by the name it is served under: its registry name, or with
    /// `pass_through`, its own name on that one server.
    pub fn prompt(
        &self,
        served: &str,
        pass_through: Option<&str>,
    ) -> Option<(UpstreamSource, Relayed<Prompt>)> {
        let relayed = self.prompts().into_iter().find(|r| match pass_through {
            None => r.name == served,
            Some(only) => r.server == only && r.item.name == served,
        })?;
        Some((self.get(&relayed.server)?, relayed))
    }

    /// Where a resource URI comes from: the server and the registry name of the resource
    /// that lists it, else of the template that matches it most specifically (the longest
    /// literal start). The name lets a channel apply its filters to what it serves.
    pub fn locate_uri(&self, uri: &str) -> Option<(UpstreamSource, String)> {
        let found = self
            .resources()
            .into_iter()
            .find(|r| r.item.uri == uri)
            .map(|r| (r.server, r.name))
            .or_else(|| {
                self.resource_templates()
                    .into_iter()
                    .filter(|t| template_matches(&t.item.uri_template, uri))
                    .max_by_key(|t| literal_start(&t.item.uri_template).len())
                    .map(|t| (t.server, t.name))
            })?;
        Some((self.get(&found.0)?, found.1))
    }

    /// Where a resource template comes from, named by its URI template (what MCP's
    /// `ref/resource` carries), else by a URI the name matches: see [`Upstreams::locate_uri`].
    pub fn locate_template(&self, uri_template: &str) -> Option<(UpstreamSource, String)> {
        let listed = self
            .resource_templates()
            .into_iter()
            .find(|t| t.item.uri_template == uri_template);
        match listed {
            Some(t) => Some((self.get(&t.server)?, t.name)),
            None => self.locate_uri(uri_template),
        }
    }
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
    fn the_literal_start_measures_how_specific_a_template_is() {
        assert_eq!(literal_start("test://template/{id}"), "test://template/");
        assert_eq!(literal_start("{x}"), "");
        assert_eq!(literal_start("plain"), "plain");
    }
}
