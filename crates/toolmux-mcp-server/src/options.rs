//! What one MCP server serves and to whom: name filters, the pass-through mode, and the HTTP
//! security settings.

use toolmux_core::NamePattern;

/// How an MCP server built on a hub behaves. The same options serve stdio and HTTP; the HTTP-only
/// fields are ignored on stdio.
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// When not empty, only tools whose registry name matches one of these are served
    /// (`--tools`).
    pub include: Vec<NamePattern>,
    /// Tools whose registry name matches one of these are not served (`--exclude`).
    pub exclude: Vec<NamePattern>,
    /// Serve only the tools of this source, under the names the source itself uses: a tool
    /// registered as `<source>__x` is served as `x`. Lets toolmux stand in for one upstream
    /// server while its policies, validation and log still apply.
    pub pass_through: Option<String>,
    /// `Host` header values accepted over HTTP besides the loopback names (`localhost`,
    /// `127.0.0.1`, `::1`); an entry may carry a port (`example.com:8080`). Protects against DNS
    /// rebinding.
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted over HTTP besides loopback ones (`https://app.example.com:443`,
    /// `http://intranet:*`). Requests without an `Origin` header (non-browser clients) pass.
    pub allowed_origins: Vec<String>,
    /// Bearer tokens accepted over HTTP. Empty means no token is asked for; `toolmux serve`
    /// refuses to bind beyond loopback without one.
    pub api_keys: Vec<String>,
}

/// The loopback names every HTTP server accepts in `Host`.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The loopback origins every HTTP server accepts, on any port.
pub const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// The separator between a source id and a tool name in registry names (`github__create_issue`).
pub const NAMESPACE_SEPARATOR: &str = "__";

impl ServeOptions {
    /// The name a tool is served under, or `None` when these options do not serve it.
    pub fn exposed_name<'a>(&self, registry_name: &'a str, source: &str) -> Option<&'a str> {
        if self.exclude.iter().any(|p| p.matches(registry_name)) {
            return None;
        }
        if !self.include.is_empty() && !self.include.iter().any(|p| p.matches(registry_name)) {
            return None;
        }
        match &self.pass_through {
            None => Some(registry_name),
            Some(only) if only != source => None,
            Some(only) => Some(
                registry_name
                    .strip_prefix(only.as_str())
                    .and_then(|rest| rest.strip_prefix(NAMESPACE_SEPARATOR))
                    .filter(|rest| !rest.is_empty())
                    .unwrap_or(registry_name),
            ),
        }
    }

    /// The `Host` values accepted over HTTP: loopback plus the configured ones.
    pub fn effective_allowed_hosts(&self) -> Vec<String> {
        LOOPBACK_HOSTS
            .iter()
            .map(|h| (*h).to_string())
            .chain(self.allowed_hosts.iter().cloned())
            .collect()
    }

    /// The `Origin` values accepted over HTTP: loopback plus the configured ones.
    pub fn effective_allowed_origins(&self) -> Vec<String> {
        LOOPBACK_ORIGINS
            .iter()
            .map(|o| (*o).to_string())
            .chain(self.allowed_origins.iter().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(list: &[&str]) -> Vec<NamePattern> {
        list.iter()
            .map(|p| NamePattern::new(p).expect("valid pattern"))
            .collect()
    }

    #[test]
    fn everything_is_served_under_its_registry_name_by_default() {
        let options = ServeOptions::default();
        assert_eq!(options.exposed_name("grep", "workspace"), Some("grep"));
        assert_eq!(
            options.exposed_name("github__create_issue", "github"),
            Some("github__create_issue")
        );
    }

    #[test]
    fn include_and_exclude_patterns_filter_registry_names() {
        let options = ServeOptions {
            include: patterns(&["github__*", "grep"]),
            exclude: patterns(&["github__delete_*"]),
            ..ServeOptions::default()
        };
        assert_eq!(options.exposed_name("grep", "workspace"), Some("grep"));
        assert_eq!(options.exposed_name("file_read", "workspace"), None);
        assert_eq!(
            options.exposed_name("github__list", "github"),
            Some("github__list")
        );
        assert_eq!(options.exposed_name("github__delete_repo", "github"), None);
    }

    #[test]
    fn pass_through_serves_one_source_without_its_prefix() {
        let options = ServeOptions {
            pass_through: Some("github".into()),
            ..ServeOptions::default()
        };
        assert_eq!(
            options.exposed_name("github__create_issue", "github"),
            Some("create_issue")
        );
        assert_eq!(options.exposed_name("grep", "workspace"), None);
        // A tool of the source that carries no prefix keeps its name.
        assert_eq!(options.exposed_name("plain", "github"), Some("plain"));
        // A bare prefix is not stripped to an empty name.
        assert_eq!(options.exposed_name("github__", "github"), Some("github__"));
    }

    #[test]
    fn filters_apply_to_registry_names_in_pass_through_mode() {
        let options = ServeOptions {
            pass_through: Some("github".into()),
            exclude: patterns(&["github__delete_*"]),
            ..ServeOptions::default()
        };
        assert_eq!(options.exposed_name("github__delete_repo", "github"), None);
        assert_eq!(options.exposed_name("github__list", "github"), Some("list"));
    }
}
