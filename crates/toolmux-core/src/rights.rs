//! Callers' rights: what a configured principal (`principals.<name>`) may list and call, from
//! its roles (`roles.<name>`). Once any principal or role is configured, a caller is refused
//! whatever no role of its grants — deny by default; with none configured, nothing here
//! applies. Rights travel in a call's [`ToolScope`](crate::ToolScope), so every listing and
//! the pipeline read one answer: a tool a caller may not call is never listed to it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::pattern::NamePattern;
use crate::policy::Policy;

/// One role (`roles.<name>`): the endpoints it may use and its tool rules.
#[derive(Clone, Debug, Default)]
pub struct Role {
    /// The endpoints its holders may use, by name; `*` is every endpoint, and `""` (written
    /// as `default` in configuration) the plain `/mcp` and the REST API without `?endpoint=`.
    pub endpoints: Vec<String>,
    /// `allow | ask | deny` by tool-name pattern; within a role the most specific pattern that
    /// matches decides, as in `policies.tools`.
    pub tools: Vec<(NamePattern, Policy)>,
}

impl Role {
    /// What this role says about a tool: `None` when no pattern of it matches.
    fn rule(&self, registry_name: &str) -> Option<Policy> {
        self.tools
            .iter()
            .filter(|(pattern, _)| pattern.matches(registry_name))
            .max_by_key(|(pattern, _)| pattern.specificity())
            .map(|(_, policy)| *policy)
    }

    fn opens(&self, endpoint: &str) -> bool {
        self.endpoints.iter().any(|e| e == "*" || e == endpoint)
    }
}

/// What one caller may do: its principal's name, as logs and approvals show it, and the roles
/// it holds. Roles grant: where several speak about a tool the most permissive answer wins
/// (`allow` over `ask` over `deny`), and where none does the tool is denied.
#[derive(Debug)]
pub struct Rights {
    /// The principal's name (`ci-bot`); "an unknown caller" for one matched by no principal.
    pub principal: String,
    roles: Vec<Arc<Role>>,
}

impl Rights {
    /// The rights that `roles` grant to `principal`.
    pub fn new(principal: &str, roles: Vec<Arc<Role>>) -> Self {
        Self {
            principal: principal.to_string(),
            roles,
        }
    }

    /// The rule for a tool by registry name: `Deny` when no role grants it.
    pub fn rule(&self, registry_name: &str) -> Policy {
        self.roles
            .iter()
            .filter_map(|role| role.rule(registry_name))
            .min_by_key(|policy| match policy {
                Policy::Allow => 0,
                Policy::Ask => 1,
                Policy::Deny => 2,
            })
            .unwrap_or(Policy::Deny)
    }

    /// Whether the caller may call (and so sees listed) the tool, perhaps after asking.
    pub fn lists(&self, registry_name: &str) -> bool {
        self.rule(registry_name) != Policy::Deny
    }

    /// Whether one of the caller's roles opens `endpoint` (`""`: no named endpoint).
    pub fn opens(&self, endpoint: &str) -> bool {
        self.roles.iter().any(|role| role.opens(endpoint))
    }
}

/// The configured principals and roles, as each catalog carries them.
#[derive(Debug)]
pub struct Principals {
    /// Each principal's rights, by name.
    pub by_name: BTreeMap<String, Arc<Rights>>,
    /// Whether any principal or role is configured: from then on a caller that is not the
    /// owner gets only what its roles grant, and one matched by no principal gets nothing.
    pub configured: bool,
    /// What a caller matched by no principal gets: nothing.
    nobody: Arc<Rights>,
}

impl Default for Principals {
    /// None configured: nothing narrows any caller.
    fn default() -> Self {
        Self::new(BTreeMap::new(), false)
    }
}

/// How the rights of a caller matched by no principal name it.
pub const UNKNOWN_CALLER: &str = "a caller matched by no configured principal";

impl Principals {
    /// `by_name` in force; `configured` when any principal or role is.
    pub fn new(by_name: BTreeMap<String, Arc<Rights>>, configured: bool) -> Self {
        Self {
            by_name,
            configured,
            nobody: Arc::new(Rights::new(UNKNOWN_CALLER, Vec::new())),
        }
    }

    /// The rights of a caller that is not the owner, named by the principal it matched (if
    /// any): `None` when no principal or role is configured (today's behaviour: any valid
    /// credential may do anything), nothing at all for one matched by no principal.
    pub fn rights_of(&self, principal: Option<&str>) -> Option<Arc<Rights>> {
        if !self.configured {
            return None;
        }
        let rights = principal.and_then(|name| self.by_name.get(name));
        Some(Arc::clone(rights.unwrap_or(&self.nobody)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(endpoints: &[&str], rules: &[(&str, Policy)]) -> Arc<Role> {
        Arc::new(Role {
            endpoints: endpoints.iter().map(|e| e.to_string()).collect(),
            tools: rules
                .iter()
                .map(|(p, policy)| (NamePattern::new(p).expect("pattern"), *policy))
                .collect(),
        })
    }

    #[test]
    fn the_most_specific_rule_decides_within_a_role_and_the_most_permissive_across_roles() {
        let reviewer = role(
            &["review"],
            &[
                ("github__*", Policy::Allow),
                ("github__delete_*", Policy::Deny),
                ("github__merge", Policy::Ask),
            ],
        );
        let rights = Rights::new("alice", vec![Arc::clone(&reviewer)]);
        assert_eq!(rights.rule("github__read"), Policy::Allow);
        assert_eq!(rights.rule("github__delete_repo"), Policy::Deny);
        assert_eq!(rights.rule("github__merge"), Policy::Ask);
        // Nothing speaks about it: denied.
        assert_eq!(rights.rule("grep"), Policy::Deny);
        assert!(!rights.lists("grep"));
        assert!(rights.lists("github__merge"));
        assert!(rights.opens("review"));
        assert!(!rights.opens("ops"));
        assert!(!rights.opens(""));

        let admin = role(&["*"], &[("github__delete_*", Policy::Ask)]);
        let both = Rights::new("bob", vec![reviewer, admin]);
        assert_eq!(both.rule("github__delete_repo"), Policy::Ask);
        assert!(both.opens("ops") && both.opens(""));
    }

    #[test]
    fn nothing_configured_leaves_callers_alone_and_an_unmatched_caller_gets_nothing() {
        assert!(Principals::default().rights_of(Some("ci-bot")).is_none());
        let everything = role(&["*"], &[("*", Policy::Allow)]);
        let by_name = BTreeMap::from([(
            "ci-bot".to_string(),
            Arc::new(Rights::new("ci-bot", vec![everything])),
        )]);
        let principals = Principals::new(by_name, true);
        let bot = principals.rights_of(Some("ci-bot")).expect("rights");
        assert_eq!(
            (bot.principal.as_str(), bot.rule("grep")),
            ("ci-bot", Policy::Allow)
        );
        for unknown in [None, Some("someone-else")] {
            let rights = principals.rights_of(unknown).expect("rights");
            assert_eq!(rights.principal, UNKNOWN_CALLER);
            assert_eq!(rights.rule("grep"), Policy::Deny);
            assert!(!rights.opens("") && !rights.opens("review"));
        }
    }
}
