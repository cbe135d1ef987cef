//! Whether a call may run: `allow`, `ask` (a human decides) or `deny`.

use std::collections::HashMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::ToolDescriptor;
use crate::pattern::NamePattern;

/// The decision a policy makes before a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Run without asking.
    Allow,
    /// Ask the channel's approver (a person) first.
    Ask,
    /// Never run.
    Deny,
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Allow => "allow",
            Policy::Ask => "ask",
            Policy::Deny => "deny",
        })
    }
}

/// Which rule decided a tool's policy, so `toolmux tools show` can explain it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "camelCase")]
pub enum PolicyOrigin {
    /// A rule naming exactly this tool.
    Tool(String),
    /// A glob rule.
    Pattern(String),
    /// The source's own setting (for example a per-server policy).
    SourceSetting,
    /// A rule for the whole source.
    Source(String),
    /// The tool's annotations (read-only allows, destructive asks).
    Annotations,
    /// The configured default.
    Default,
}

impl fmt::Display for PolicyOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyOrigin::Tool(name) => write!(f, "rule for `{name}`"),
            PolicyOrigin::Pattern(p) => write!(f, "pattern `{p}`"),
            PolicyOrigin::SourceSetting => f.write_str("source setting"),
            PolicyOrigin::Source(s) => write!(f, "rule for source `{s}`"),
            PolicyOrigin::Annotations => f.write_str("tool annotations"),
            PolicyOrigin::Default => f.write_str("default"),
        }
    }
}

/// The policy rules from configuration.
#[derive(Clone, Debug, Default)]
pub struct PolicyRules {
    /// Used when nothing else decides; `allow` when unset.
    pub default: Option<Policy>,
    /// Rules by tool name or glob.
    pub tools: Vec<(NamePattern, Policy)>,
    /// Rules by source id.
    pub sources: HashMap<String, Policy>,
}

impl PolicyRules {
    /// Decides the policy of one tool. Order: an exact rule for its name, then the most specific
    /// matching glob, then the source's own setting for the tool, then a rule for its source,
    /// then its annotations (read-only → allow, destructive → ask), then the default.
    pub fn resolve(&self, tool: &ToolDescriptor) -> (Policy, PolicyOrigin) {
        if let Some((p, policy)) = self
            .tools
            .iter()
            .find(|(p, _)| p.is_exact() && p.matches(&tool.name))
        {
            return (*policy, PolicyOrigin::Tool(p.as_str().to_string()));
        }
        if let Some((p, policy)) = self
            .tools
            .iter()
            .filter(|(p, _)| !p.is_exact() && p.matches(&tool.name))
            .max_by_key(|(p, _)| p.specificity())
        {
            return (*policy, PolicyOrigin::Pattern(p.as_str().to_string()));
        }
        if let Some(policy) = tool.policy {
            return (policy, PolicyOrigin::SourceSetting);
        }
        if let Some(policy) = self.sources.get(&tool.source) {
            return (*policy, PolicyOrigin::Source(tool.source.clone()));
        }
        if tool.annotations.read_only_hint == Some(true) {
            return (Policy::Allow, PolicyOrigin::Annotations);
        }
        if tool.annotations.destructive_hint == Some(true) {
            return (Policy::Ask, PolicyOrigin::Annotations);
        }
        (self.default.unwrap_or(Policy::Allow), PolicyOrigin::Default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolAnnotations;
    use serde_json::json;

    fn tool(source: &str, name: &str) -> ToolDescriptor {
        ToolDescriptor::new(source, name, "", json!({"type": "object"}))
    }

    fn rules(tools: &[(&str, Policy)]) -> PolicyRules {
        PolicyRules {
            default: None,
            tools: tools
                .iter()
                .map(|(p, pol)| (NamePattern::new(p).expect("valid"), *pol))
                .collect(),
            sources: HashMap::new(),
        }
    }

    #[test]
    fn exact_rule_beats_patterns_and_specific_pattern_beats_broad_one() {
        let r = rules(&[
            ("github__*", Policy::Ask),
            ("github__create_*", Policy::Deny),
            ("github__create_issue", Policy::Allow),
        ]);
        assert_eq!(
            r.resolve(&tool("github", "github__create_issue")),
            (
                Policy::Allow,
                PolicyOrigin::Tool("github__create_issue".into())
            )
        );
        assert_eq!(
            r.resolve(&tool("github", "github__create_pr")).0,
            Policy::Deny
        );
        assert_eq!(r.resolve(&tool("github", "github__list")).0, Policy::Ask);
    }

    #[test]
    fn annotations_give_defaults_when_no_rule_matches() {
        let r = PolicyRules::default();
        let mut read = tool("w", "read");
        read.annotations = ToolAnnotations::read_only();
        assert_eq!(r.resolve(&read), (Policy::Allow, PolicyOrigin::Annotations));
        let mut rm = tool("w", "rm");
        rm.annotations.destructive_hint = Some(true);
        assert_eq!(r.resolve(&rm), (Policy::Ask, PolicyOrigin::Annotations));
        assert_eq!(
            r.resolve(&tool("w", "plain")),
            (Policy::Allow, PolicyOrigin::Default)
        );
    }

    #[test]
    fn source_rule_applies_before_annotations() {
        let mut r = PolicyRules::default();
        r.sources.insert("w".into(), Policy::Deny);
        let mut read = tool("w", "read");
        read.annotations = ToolAnnotations::read_only();
        assert_eq!(
            r.resolve(&read),
            (Policy::Deny, PolicyOrigin::Source("w".into()))
        );
    }
}
