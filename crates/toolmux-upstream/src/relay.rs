//! What toolmux relays from its servers besides tools: their prompts (namespaced like tools,
//! `PREFIX__prompt`), resources and resource templates (under their own URIs, which already
//! say where they come from), read from the discovery caches so listing them starts nothing.
//! The MCP server channel serves these; a request for one goes to the server that listed it.

use rmcp::model::{Prompt, Resource, ResourceTemplate};

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
    /// Every prompt of every enabled server.
    pub fn prompts(&self) -> Vec<Relayed<Prompt>> {
        self.servers()
            .iter()
            .filter(|s| s.server().enabled)
            .flat_map(|source| {
                let prompts = source.prompts();
                let own: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
                let names = registry_names(source.prefix(), &own);
                let server = source.name().to_string();
                prompts
                    .into_iter()
                    .zip(names)
                    .map(move |(item, name)| Relayed {
                        server: server.clone(),
                        name,
                        item,
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Every resource of every enabled server.
    pub fn resources(&self) -> Vec<Relayed<Resource>> {
        self.relayed(UpstreamSource::resources, |r| r.name.as_str())
    }

    /// Every resource template of every enabled server.
    pub fn resource_templates(&self) -> Vec<Relayed<ResourceTemplate>> {
        self.relayed(UpstreamSource::resource_templates, |t| t.name.as_str())
    }

    fn relayed<T>(
        &self,
        items: fn(&UpstreamSource) -> Vec<T>,
        own_name: fn(&T) -> &str,
    ) -> Vec<Relayed<T>> {
        let mut relayed = Vec::new();
        for source in self.servers().iter().filter(|s| s.server().enabled) {
            let listed = items(source);
            let own: Vec<&str> = listed.iter().map(own_name).collect();
            let names = registry_names(source.prefix(), &own);
            relayed.extend(listed.into_iter().zip(names).map(|(item, name)| Relayed {
                server: source.name().to_string(),
                name,
                item,
            }));
        }
        relayed
    }

    /// The server of a prompt and the prompt's own name there, by the name it is served
    /// under: its registry name, or with `pass_through`, its own name on that one server.
    pub fn prompt(
        &self,
        served: &str,
        pass_through: Option<&str>,
    ) -> Option<(UpstreamSource, String)> {
        let relayed = self.prompts().into_iter().find(|r| match pass_through {
            None => r.name == served,
            Some(only) => r.server == only && r.item.name == served,
        })?;
        Some((self.get(&relayed.server)?, relayed.item.name))
    }

    /// The server of a resource template named by its URI template (what MCP's
    /// `ref/resource` carries), else the server of a URI the name matches.
    pub fn server_for_template(&self, uri_template: &str) -> Option<UpstreamSource> {
        self.servers()
            .into_iter()
            .filter(|s| s.server().enabled)
            .find(|s| {
                s.resource_templates()
                    .iter()
                    .any(|t| t.uri_template == uri_template)
            })
            .or_else(|| self.server_for_uri(uri_template))
    }

    /// The server a resource URI belongs to: the one that listed it, else the one with the
    /// template that matches it most specifically (the longest literal start).
    pub fn server_for_uri(&self, uri: &str) -> Option<UpstreamSource> {
        let servers: Vec<UpstreamSource> = self
            .servers()
            .into_iter()
            .filter(|s| s.server().enabled)
            .collect();
        if let Some(listed) = servers
            .iter()
            .find(|s| s.resources().iter().any(|r| r.uri == uri))
        {
            return Some(listed.clone());
        }
        servers
            .iter()
            .filter_map(|source| {
                source
                    .resource_templates()
                    .iter()
                    .filter(|t| template_matches(&t.uri_template, uri))
                    .map(|t| literal_start(&t.uri_template).len())
                    .max()
                    .map(|specificity| (specificity, source))
            })
            .max_by_key(|(specificity, _)| *specificity)
            .map(|(_, source)| source.clone())
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
