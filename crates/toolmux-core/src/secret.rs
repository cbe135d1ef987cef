//! The one judgement of what is a secret, by name and by value: which variables toolmux takes
//! out of its own environment and keeps from children, which values an approval hides, which
//! argument keys the execution log redacts, which imported `env` and `headers` entries are
//! flagged as written out in full. It lives here, the lowest crate, because the execution log
//! (which depends on this crate alone) and the configuration need it as much as the child
//! recipe does. It errs towards hiding: a hidden value costs a person a little debugging, a
//! shown token costs a rotation.
//!
//! A name is split into lowercase **words** at every non-alphanumeric character and at camelCase
//! humps (`X-Api-Key` → `x api key`, `APIKey` → `api key`, `refreshToken` → `refresh token`),
//! and **joined** is those words run together (`xapikey`). The name is a secret's when:
//!
//! 1. *joined* contains `password`, `passwd`, `passphrase`, `secret`, `authorization`,
//!    `credential`, `cookie`, `bearer`, `webhook`, or a compound naming key material: `apikey`,
//!    `accesskey`, `authkey`, `clientkey`, `encryptionkey`, `licensekey`, `masterkey`,
//!    `privatekey`, `sessionkey`, `signingkey`, `sshkey`;
//! 2. a word, without trailing digits, *ends with* `token` (`accessToken`, `GITHUB_TOKEN`,
//!    `oauth2_token`), so `tokenizer` and `max_tokens` stay;
//! 3. a word is `auth`, `pwd`, `pat`, `pass`, `dsn`, `creds` or `private` (`basicAuth`,
//!    `MYSQL_PWD`, `GH_PAT`, `SENTRY_DSN`), so `author`, `path` and `bypass` stay — but `PWD`
//!    itself is the shell's working directory;
//! 4. *joined* is exactly `key` or `jwt` (alone they are credentials; in `sort_key` or
//!    `primaryKey` a key is data);
//! 5. it is written in capitals, as environment variables are, and holds `KEY` or `TOKEN`
//!    anywhere (`OPENAI_KEY`, `APP_KEY`): there a key is a credential far more often than not,
//!    and a child that needs one gets it through its configured `env`.
//!
//! `session` and `sessionId` are deliberately not secret: in toolmux they name coding sessions
//! and conversations, which the log exists to answer questions about. Known over-redactions
//! (accepted): `token_count`, `password_policy`, `secretary`, `auth_type`, a boolean `private`.
//!
//! A value is a secret's, whatever its name, when it carries credentials: a URL with user
//! information (`postgres://user:pass@db/app`) or a well-known key's prefix ([`is_secret`]).

use std::ffi::OsStr;

/// Substrings of the joined name that make it secret (rule 1).
const SECRET_PARTS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "authorization",
    "credential",
    "cookie",
    "bearer",
    "webhook",
    "apikey",
    "accesskey",
    "authkey",
    "clientkey",
    "encryptionkey",
    "licensekey",
    "masterkey",
    "privatekey",
    "sessionkey",
    "signingkey",
    "sshkey",
];

/// Whole words that make a name secret (rule 3): as substrings they are too common (`PAT` is in
/// `PATH`, `auth` in `author`).
const SECRET_WORDS: &[&str] = &["auth", "pwd", "pat", "pass", "dsn", "creds", "private"];

/// Whole names that are secret on their own (rule 4).
const SECRET_NAMES: &[&str] = &["key", "jwt"];

/// Substrings that make a name written in capitals secret (rule 5).
const SECRET_IN_CAPITALS: &[&str] = &["KEY", "TOKEN"];

/// Prefixes of well-known credentials (OpenAI, Stripe, GitHub, GitLab, Slack, AWS, Hugging
/// Face, npm, PyPI, Google), for a secret kept under a name that does not say so.
const SECRET_PREFIXES: &[&str] = &[
    "sk-",
    "sk_live_",
    "rk_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xapp-",
    "AKIA",
    "ASIA",
    "hf_",
    "npm_",
    "pypi-",
    "AIza",
];

/// The shortest value [`SECRET_PREFIXES`] are looked for in: a credential is long, and a short
/// value such as `hf_home` is a setting.
const MIN_PREFIXED_SECRET: usize = 16;

/// Whether a name (a variable's, an argument's, a header's) names a secret, by the rule in the
/// [module documentation](self).
pub fn is_secret_name(name: &str) -> bool {
    if name == "PWD" {
        return false;
    }
    let words = words(name);
    let joined: String = words.concat();
    let capitals = name.chars().any(char::is_alphabetic) && !name.chars().any(char::is_lowercase);
    SECRET_PARTS.iter().any(|part| joined.contains(part))
        || words.iter().any(|word| {
            word.trim_end_matches(|c: char| c.is_ascii_digit())
                .ends_with("token")
                || SECRET_WORDS.contains(&word.as_str())
        })
        || SECRET_NAMES.contains(&joined.as_str())
        || (capitals && SECRET_IN_CAPITALS.iter().any(|s| name.contains(s)))
}

/// Whether the variable `name=value` holds a secret that no child may get unless its
/// configuration names it: a secret's name ([`is_secret_name`]), or a value that carries
/// credentials — a URL with user information (`postgres://user:pass@db/app`,
/// `https://key@sentry.io/1`) or a well-known key's prefix.
pub fn is_secret(name: &str, value: &OsStr) -> bool {
    is_secret_name(name) || holds_credentials(&value.to_string_lossy())
}

/// Whether `value` carries credentials (see [`is_secret`]).
fn holds_credentials(value: &str) -> bool {
    let url_with_user = value.match_indices("://").any(|(at, _)| {
        let authority = value[at + 3..]
            .split(['/', '?', '#', ' ', ',', ';'])
            .next()
            .unwrap_or_default();
        authority.contains('@')
    });
    url_with_user
        || (value.len() >= MIN_PREFIXED_SECRET
            && !value.contains(char::is_whitespace)
            && SECRET_PREFIXES.iter().any(|p| value.starts_with(p)))
}

/// The lowercase words of a name: split at non-alphanumeric characters, at a lowercase letter
/// or digit followed by an uppercase one (`apiKey`), and before the last capital of an acronym
/// that starts a new word (`APIKey` → `api`, `key`).
fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            continue;
        }
        if let (false, Some(&prev)) = (word.is_empty(), i.checked_sub(1).map(|p| &chars[p])) {
            let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let hump = (prev.is_lowercase() || prev.is_ascii_digit()) && c.is_uppercase();
            let acronym_end = prev.is_uppercase() && c.is_uppercase() && next_is_lower;
            if hump || acronym_end {
                words.push(std::mem::take(&mut word));
            }
        }
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(name: &str, value: &str) -> bool {
        is_secret(name, OsStr::new(value))
    }

    #[test]
    fn names_that_say_secret_are_secret() {
        for name in [
            "OPENAI_API_KEY",
            "TOOLMUX_API_KEY",
            "TOOLMUX_SECRET_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "github_token",
            "PGPASSWORD",
            "MYSQL_PWD",
            "GITHUB_PAT",
            "GH_PAT",
            "SLACK_WEBHOOK_URL",
            "REDISCLI_AUTH",
            "SENTRY_DSN",
            "DOCKER_CREDS",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "BW_SESSION_COOKIE",
            "SSH_PRIVATE_KEY",
            "OPENAIAPIKEY",
        ] {
            assert!(secret(name, "x"), "{name}");
        }
    }

    #[test]
    fn ordinary_settings_are_not() {
        for name in [
            "PATH",
            "PWD",
            "OLDPWD",
            "HOME",
            "LANG",
            "TERM",
            "TOOLMUX_LOG",
            "TOOLMUX_PROJECT",
            "PYTHONPATH",
            "XAUTHORITY",
            "SSH_ASKPASS",
            "DBUS_SESSION_BUS_ADDRESS",
            "HTTPS_PROXY",
            "DATABASE_URL",
            "COMPASS_DIR",
        ] {
            assert!(!secret(name, "/usr/bin:/bin"), "{name}");
        }
    }

    #[test]
    fn values_that_carry_credentials_are_secret_whatever_the_name() {
        for value in [
            "postgres://user:pass@db.example.com/app",
            "mysql://root:hunter2@127.0.0.1:3306",
            "https://0123abcd@o1.ingest.sentry.io/42",
            "http://proxyuser:proxypass@proxy:3128",
            "redis://:pw@cache:6379/0,redis://other",
            "sk-proj-0123456789abcdefghij",
            "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
            "github_pat_11ABCDEFG0123456789",
            "xoxb-1234-5678-abcdefghijkl",
            "AKIAIOSFODNN7EXAMPLE",
        ] {
            assert!(secret("DATABASE_URL", value), "{value}");
        }
        for value in [
            "postgres://db.example.com/app",
            "https://example.com/path?a=b@c",
            "sk-short",
            "hf_home",
            "/home/user/.local/bin",
            "user@example.com",
        ] {
            assert!(!secret("SETTING", value), "{value}");
        }
    }

    #[test]
    fn odd_values_never_panic() {
        for value in [
            "://",
            "://@",
            "a://",
            "@://",
            "://\u{e9}@",
            "\u{1F600}://x@y",
        ] {
            let _ = secret("X", value);
        }
        let huge = "a://".repeat(100_000) + "@";
        assert!(secret("X", &huge));
    }

    #[test]
    fn secret_key_table_both_ways() {
        let secret = [
            "password",
            "Password",
            "user_password",
            "db-passwd",
            "passphrase",
            "client_secret",
            "clientSecret",
            "AWS_SECRET_ACCESS_KEY",
            "apiKey",
            "api_key",
            "X-Api-Key",
            "APIKey",
            "apikey",
            "access_key",
            "privateKey",
            "ssh_key",
            "token",
            "accessToken",
            "GITHUB_TOKEN",
            "githubtoken",
            "refresh-token",
            "x-auth-token",
            "oauth2_token",
            "Authorization",
            "credentials",
            "Cookie",
            "set-cookie",
            "auth",
            "basicAuth",
            "key",
            "pwd",
            "db_pwd",
            "pass",
            "bearer",
            "jwt",
        ];
        let plain = [
            "author",
            "authors",
            "authority",
            "authenticated",
            "oauth_provider",
            "keyword",
            "keywords",
            "keys",
            "monkey",
            "hotkey",
            "keyboard",
            "sort_key",
            "primaryKey",
            "tokenizer",
            "tokenize",
            "max_tokens",
            "tokens",
            "passenger",
            "bypass",
            "compass",
            "path",
            "query",
            "session",
            "sessionId",
            "description",
            "",
        ];
        let wrong_secret: Vec<_> = plain.iter().filter(|k| is_secret_name(k)).collect();
        let wrong_plain: Vec<_> = secret.iter().filter(|k| !is_secret_name(k)).collect();
        assert!(
            wrong_secret.is_empty(),
            "redacted by mistake: {wrong_secret:?}"
        );
        assert!(wrong_plain.is_empty(), "leaked: {wrong_plain:?}");
    }

    #[test]
    fn words_split_at_separators_humps_and_acronyms() {
        assert_eq!(words("X-Api-Key"), ["x", "api", "key"]);
        assert_eq!(words("APIKey"), ["api", "key"]);
        assert_eq!(words("refreshToken"), ["refresh", "token"]);
        assert_eq!(words("oauth2Token"), ["oauth2", "token"]);
        assert_eq!(words("GITHUB_TOKEN"), ["github", "token"]);
        assert_eq!(words("__"), Vec::<String>::new());
    }
}
