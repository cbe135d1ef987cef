//! The instruction patterns, from the published tool-poisoning attack categories (MCPTox, MSB:
//! explicit and implicit triggers, parameter tampering, shadowing, concealment, exfiltration).
//! One `RegexSet` pass says which patterns occur at all (most descriptions match none); only
//! those are run again for their spans.

use std::ops::Range;
use std::sync::LazyLock;

use regex::{Regex, RegexSet, RegexSetBuilder};

use crate::{FindingKind, Severity};

use FindingKind::{Concealment, Exfiltration, Instruction, Secret, ToolReference, Urgency};
use Severity::{High, Low, Medium};

/// Each pattern: what it finds, how serious, the expression (case-insensitive; `\s+` so that
/// line breaks do not hide a phrase).
const PATTERNS: &[(FindingKind, Severity, &str)] = &[
    // Overriding the model's instructions.
    (
        Instruction,
        High,
        r"\b(ignore|disregard|forget|override|bypass)\s+(all\s+|any\s+)?(of\s+)?(the\s+|your\s+|these\s+)?(previous|prior|above|earlier|preceding|original|system|safety|other)\s+(instructions?|prompts?|rules|guidelines|directions|messages)",
    ),
    (
        Instruction,
        High,
        r"</?\s*(important|system|instructions?|secret|hidden|admin|critical)\s*>",
    ),
    (
        Instruction,
        High,
        r"\b(new|updated|real|actual|hidden)\s+(system\s+)?instructions?\s*:",
    ),
    // Explicit triggers: work the model must do before or after the tool's own.
    (
        Instruction,
        Medium,
        r"\b(before|prior\s+to|after)\s+(using|calling|invoking|running|executing)\s+(this|any|every|the\s+\w+)\s+(tool|function)\b",
    ),
    (
        Instruction,
        Medium,
        r"\byou\s+(must|have\s+to|need\s+to|are\s+required\s+to|should\s+always)\s+(first\s+|also\s+|always\s+)?(call|invoke|use|run|read|send|include|pass|fetch|execute|attach|append|add|set)\b",
    ),
    (
        Instruction,
        Medium,
        r"\b(as\s+an?\s+ai(\s+assistant)?|dear\s+(ai|assistant|model|agent|llm)|note\s+to\s+the\s+(ai|assistant|model|agent|llm))\b",
    ),
    // Implicit triggers: whenever something else happens.
    (
        Instruction,
        Medium,
        r"\bwhen(ever)?\s+(the\s+user|you|the\s+assistant|the\s+model|the\s+agent)\s+(calls?|uses?|invokes?|runs?|asks?|requests?|wants?)\b",
    ),
    // Concealment.
    (
        Concealment,
        High,
        r"\b(do\s+not|don'?t|never|must\s+not|should\s+not)\s+(tell|inform|mention|reveal|notify|alert|show|disclose|let|report|explain)\b.{0,40}?\b(user|human|anyone|person|them)\b",
    ),
    (
        Concealment,
        High,
        r"\bwithout\s+(telling|informing|notifying|asking|alerting|showing|mentioning)\s+(the\s+|any\s+)?(user|human|person|anyone)",
    ),
    (
        Concealment,
        High,
        r"\b(keep|remain|stay)\s+(this|it|these|that)\s+(secret|hidden|confidential|private|between\s+us)",
    ),
    (
        Concealment,
        High,
        r"\b(the\s+)?user\s+(must|should|will|may)\s+(not|never)\s+(know|see|notice|be\s+told|find\s+out)",
    ),
    (
        Concealment,
        Medium,
        r"\b(silently|secretly|covertly|quietly|discreetly|invisibly)\b",
    ),
    // Urgency.
    (
        Urgency,
        Low,
        r"\b(urgent(ly)?|immediately|critical|mandatory|very\s+important|extremely\s+important|crucial)\b",
    ),
    // Credential files and secrets.
    (
        Secret,
        High,
        r"~/\.ssh\b|\.ssh/|\bid_(rsa|dsa|ecdsa|ed25519)\b|~/\.aws\b|\.aws/credentials|\.git-credentials|(^|[\s'`(/~])\.netrc\b|(^|[\s'`(/~])\.npmrc\b|\.pypirc\b|\.kube/config|\.docker/config\.json|/etc/(passwd|shadow|sudoers)\b|\bclaude_desktop_config\.json|\bmcp\.json\b|\.config/gcloud|\bprivate[\s_-]?keys?\b|\bwallet\.dat\b|\bseed\s+phrase|\bkeychain\b|\.gnupg\b",
    ),
    (Secret, High, r#"(^|[\s'"`(/~])\.env(\.\w+)?\b"#),
    (
        Secret,
        Low,
        r"\b(api[\s_-]?keys?|access[\s_-]?tokens?|secret[\s_-]?keys?|passwords?|passphrases?|credentials?|auth[\s_-]?tokens?|bearer\s+tokens?|session\s+(cookies?|tokens?)|environment\s+variables?)\b",
    ),
    // Exfiltration through arguments or to an address.
    (
        Exfiltration,
        High,
        r#"\b(pass|put|include|insert|append|add|embed|send|copy|attach|provide|place|store|write)\s+(it|them|its\s+contents?|their\s+contents?|(the\s+|all\s+|any\s+|every\s+)?([\w.~/]+(['’]s)?\s+){0,3}?(contents?|output|result|file|keys?|data|text|conversation|history|credentials?|tokens?|secrets?|passwords?|values?|messages?|cookies?))\b.{0,60}?\b(as|in|into|to|inside|within|via|through)\s+(the\s+|a\s+|an\s+)?(`\w+`|'\w+'|"\w+"|\w+\s+(parameter|argument|param|field|arg)s?\b)"#,
    ),
    (
        Exfiltration,
        High,
        r"\b(send|post|upload|forward|transmit|exfiltrate|leak|bcc|cc|email|mail)\b.{0,60}?(https?://\S+|\b[\w.+-]+@[\w-]+\.[\w.-]+)",
    ),
    (
        Exfiltration,
        Medium,
        r"\b(conversation|chat)\s+history\b|\bprevious\s+messages\b|\bsystem\s+prompt\b|\b(full|entire)\s+conversation\b",
    ),
    // Parameter tampering: changing what the person asked for.
    (
        Exfiltration,
        High,
        r"\b(change|replace|override|redirect|swap|set)\s+(the\s+)?(recipient|destination|target|email|address|account|amount|url|host|endpoint|to\s+address|receiver|beneficiary)s?\b.{0,40}?\b(to|with)\b",
    ),
    (
        Exfiltration,
        Medium,
        r"\balways\s+(set|use|add|include|bcc|cc|copy|change|replace|redirect|send|route)\b",
    ),
    (Exfiltration, Medium, r"\b(bcc|blind\s+(carbon\s+)?copy)\b"),
    // Naming other tools and steering calls of them (shadowing through text).
    (
        ToolReference,
        High,
        r"\b(instead\s+of|rather\s+than|in\s+place\s+of|do\s+not\s+use|never\s+use|don'?t\s+use)\s+(using\s+|calling\s+)?(the\s+|any\s+)?(`\w+`|'\w+'|\w+)\s+(tool|function|server)s?\b",
    ),
    (
        ToolReference,
        Medium,
        r"\b(call|invoke|use|run|execute|trigger)\s+(the\s+)?[`'\x22]?([a-z][a-z0-9]*_[a-z0-9_]+|\w+__\w+)[`'\x22]?(\s+tool)?\b",
    ),
    (
        ToolReference,
        Medium,
        r"\b(all|any|every|other)\s+(other\s+)?(tools?|servers?|functions)\s+(must|should|will|are|is)\b",
    ),
];

struct Compiled {
    set: RegexSet,
    each: Vec<Regex>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let sources: Vec<String> = PATTERNS
        .iter()
        // ASCII word boundaries: a Unicode `\b` makes the lazy DFA give up on non-ASCII text
        // and fall back to a slower engine, and every pattern's words are ASCII.
        .map(|(_, _, p)| format!("(?i){}", p.replace(r"\b", r"(?-u:\b)")))
        .collect();
    // The patterns are constants; a test compiles them, so a bad one fails the tests.
    Compiled {
        // A larger lazy-DFA cache than the default: the set's many bounded gaps make many
        // states, and a cache that fills up falls back to a far slower engine.
        set: RegexSetBuilder::new(&sources)
            .dfa_size_limit(32 << 20)
            .build()
            .expect("the trust patterns compile"),
        each: sources
            .iter()
            .map(|p| Regex::new(p).expect("the trust patterns compile"))
            .collect(),
    }
});

/// Whether any pattern occurs in a text: one pass of the set.
pub(crate) fn any(text: &str) -> bool {
    COMPILED.set.is_match(text)
}

/// Every pattern's matches in a text: what, how serious, where.
pub(crate) fn matches(text: &str) -> Vec<(FindingKind, Severity, Range<usize>)> {
    let compiled = &*COMPILED;
    let mut found = Vec::new();
    for i in compiled.set.matches(text).iter() {
        let (kind, severity, _) = PATTERNS[i];
        for m in compiled.each[i].find_iter(text) {
            found.push((kind, severity, m.range()));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_pattern_compiles() {
        assert_eq!(super::COMPILED.each.len(), super::PATTERNS.len());
    }
}
