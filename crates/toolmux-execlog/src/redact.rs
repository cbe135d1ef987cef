//! Which argument keys hold secrets, and hiding their values before a call is logged.
//!
//! The log is read by people and pasted into issues, so a value goes only by its key's name:
//! the rule errs towards hiding (a hidden count costs a little debugging; a leaked token costs
//! a rotation), while keeping the common words that merely *contain* a secret-ish word
//! (`author`, `keyword`, `monkey`, `tokenizer`, `max_tokens`) readable.
//!
//! A key is split into lowercase **words** at every non-alphanumeric character and at camelCase
//! humps (`X-Api-Key` → `x api key`, `APIKey` → `api key`, `refreshToken` → `refresh token`), and
//! **joined** is those words run together (`xapikey`). The key is secret when any of these holds:
//!
//! 1. *joined* contains `password`, `passwd`, `passphrase`, `secret`, `authorization`,
//!    `credential`, `cookie`, `bearer`, or a compound naming key material: `apikey`,
//!    `accesskey`, `authkey`, `clientkey`, `encryptionkey`, `licensekey`, `masterkey`,
//!    `privatekey`, `sessionkey`, `signingkey`, `sshkey`;
//! 2. a word, without trailing digits, *ends with* `token` (`token`, `accessToken`,
//!    `GITHUB_TOKEN`, `githubtoken`, `oauth2_token`), so `tokenizer` and `max_tokens` stay;
//! 3. a word is `auth` or `pwd` (`basicAuth`, `x-auth-token`, `db_pwd`), so `author`,
//!    `authority` and `oauth` stay;
//! 4. *joined* is exactly `key`, `pass` or `jwt` (alone they are credentials; as parts of
//!    `sort_key`, `primaryKey`, `passenger` or `bypass` they are not).
//!
//! `session` and `sessionId` are deliberately not secret: in toolmux they name coding sessions
//! and conversations, which the log exists to answer questions about. Known over-redactions
//! (accepted): `token_count`, `password_policy`, `secretary`, `auth_type`.
//!
//! The value of a secret key is replaced by `"[redacted]"` whatever its type (a whole nested
//! object or array goes), except `null`, which reveals nothing and shows the secret was absent.
//! Objects and arrays under other keys are searched recursively.

use serde_json::Value;

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Substrings of the joined key that make it secret (rule 1).
const SECRET_PARTS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "authorization",
    "credential",
    "cookie",
    "bearer",
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

/// Whole words that make a key secret (rule 3).
const SECRET_WORDS: &[&str] = &["auth", "pwd"];

/// Whole keys that are secret on their own (rule 4).
const SECRET_KEYS: &[&str] = &["key", "pass", "jwt"];

/// Whether an argument key names a secret, by the rule in the [module documentation](self).
pub fn is_secret_key(key: &str) -> bool {
    let words = words(key);
    let joined: String = words.concat();
    SECRET_PARTS.iter().any(|part| joined.contains(part))
        || words.iter().any(|word| {
            word.trim_end_matches(|c: char| c.is_ascii_digit())
                .ends_with("token")
                || SECRET_WORDS.contains(&word.as_str())
        })
        || SECRET_KEYS.contains(&joined.as_str())
}

/// Replaces, in place, the value of every secret key in `value`, at any depth.
pub fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if is_secret_key(key) {
                    if !item.is_null() {
                        *item = Value::String(REDACTED.to_string());
                    }
                } else {
                    redact(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// The lowercase words of a key: split at non-alphanumeric characters, at a lowercase letter or
/// digit followed by an uppercase one (`apiKey`), and before the last capital of an acronym
/// that starts a new word (`APIKey` → `api`, `key`).
fn words(key: &str) -> Vec<String> {
    let chars: Vec<char> = key.chars().collect();
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
    use serde_json::json;

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
        let wrong_secret: Vec<_> = plain.iter().filter(|k| is_secret_key(k)).collect();
        let wrong_plain: Vec<_> = secret.iter().filter(|k| !is_secret_key(k)).collect();
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

    #[test]
    fn redaction_reaches_nested_objects_and_arrays_and_keeps_null() {
        let mut args = json!({
            "query": "select 1",
            "password": "hunter2",
            "headers": {"Authorization": "Bearer abc", "Accept": "text/plain"},
            "accounts": [{"user": "ann", "apiKey": "k1"}, {"user": "bob", "api_key": null}],
            "credentials": {"user": "ann", "pass": "p"},
            "token": 12345,
            "max_tokens": 100
        });
        redact(&mut args);
        assert_eq!(
            args,
            json!({
                "query": "select 1",
                "password": REDACTED,
                "headers": {"Authorization": REDACTED, "Accept": "text/plain"},
                "accounts": [{"user": "ann", "apiKey": REDACTED}, {"user": "bob", "api_key": null}],
                "credentials": REDACTED,
                "token": REDACTED,
                "max_tokens": 100
            })
        );
    }
}
