//! The `principals` and `roles` sections: who calls (by a key, stored only as its hash, or by
//! an access token's subject) and what each may list and call. Once either section has an
//! entry, a caller that is not the owner gets only what its roles grant — deny by default.
//!
//! Keys are made by `toolmux keys create` ([`new_key`]): 32 random bytes, shown once; the
//! configuration keeps the SHA-256 of the key. A fast hash is enough where a password would need
//! a slow one: the key is 256 random bits, so no guess can be checked against the hash faster
//! than it could be sent to the server.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use sha2::{Digest, Sha256};
use toolmux_core::{Policy, Principals, Rights, Role};

use crate::endpoints::EndpointName;
use crate::fields::ToolPattern;

/// The most principals, and the most roles, one configuration may define.
pub const MAX_PRINCIPALS: usize = 1000;

/// What every key `toolmux keys create` makes starts with, so a leaked one is recognised.
pub const KEY_PREFIX: &str = "tmk_";

/// One principal: the keys and token subjects it is known by, and the roles it holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `roles`, `keys` and `subjects`"
)]
pub struct PrincipalSettings {
    /// The roles it holds (names in `roles`).
    pub roles: Vec<EndpointName>,
    /// Its keys, as `toolmux keys create` stored them: never the key, only its hash.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<StoredKey>,
    /// The `sub` of `server.auth` access tokens that speak for it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<String>,
}

/// A key as the configuration keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredKey {
    /// What `keys list` and `keys revoke` call it: the key's first characters, which are
    /// no secret.
    pub id: String,
    /// The SHA-256 of the whole key, 64 lower-case hexadecimal digits.
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub sha256: String,
    /// When it was made (RFC 3339).
    pub created: String,
}

/// One role: the endpoints it may use and what it may do with tools.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `endpoints` and `tools`"
)]
pub struct RoleSettings {
    /// Endpoint names its holders may use; `*` for every one, `default` for `/mcp` and the REST
    /// API without `?endpoint=`.
    pub endpoints: Vec<String>,
    /// `allow`, `ask` or `deny` by tool-name pattern, for listing and calling alike: a tool no
    /// rule allows (or asks about) is neither listed nor callable. Within a role the most
    /// specific pattern decides; across roles the most permissive answer.
    pub tools: BTreeMap<ToolPattern, Policy>,
}

/// The name a role's `endpoints` gives the plain `/mcp` and the REST API without `?endpoint=`.
pub const DEFAULT_ENDPOINT: &str = "default";

/// The `principals` or `roles` section, at most [`MAX_PRINCIPALS`] entries.
pub(crate) fn bounded<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<BTreeMap<EndpointName, T>, D::Error> {
    let entries = BTreeMap::<EndpointName, T>::deserialize(d)?;
    if entries.len() > MAX_PRINCIPALS {
        return Err(D::Error::custom(format!(
            "{} entries are configured; at most {MAX_PRINCIPALS} are allowed",
            entries.len()
        )));
    }
    Ok(entries)
}

/// Why the two sections do not fit together: a principal that names a role that does not
/// exist, or a stored key that is not a hash.
pub(crate) fn check(
    principals: &BTreeMap<EndpointName, PrincipalSettings>,
    roles: &BTreeMap<EndpointName, RoleSettings>,
) -> Result<(), String> {
    for (name, principal) in principals {
        if let Some(role) = principal.roles.iter().find(|r| !roles.contains_key(*r)) {
            return Err(format!(
                "`principals.{}` holds the role `{}`, which is not in `roles`",
                name.as_str(),
                role.as_str()
            ));
        }
        let bad = |k: &&StoredKey| {
            k.sha256.len() != 64
                || !k
                    .sha256
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        if let Some(key) = principal.keys.iter().find(bad) {
            return Err(format!(
                "`principals.{}.keys`: the key `{}` has no valid `sha256` (64 lower-case \
                 hexadecimal digits); make keys with `toolmux keys create`",
                name.as_str(),
                key.id.escape_debug()
            ));
        }
    }
    Ok(())
}

/// The principals' rights as the hub keeps them.
pub(crate) fn hub_principals(
    principals: &BTreeMap<EndpointName, PrincipalSettings>,
    roles: &BTreeMap<EndpointName, RoleSettings>,
) -> Principals {
    let roles: BTreeMap<&EndpointName, Arc<Role>> = roles
        .iter()
        .map(|(name, settings)| {
            let role = Role {
                endpoints: settings
                    .endpoints
                    .iter()
                    .map(|e| match e.as_str() {
                        DEFAULT_ENDPOINT => String::new(),
                        other => other.to_string(),
                    })
                    .collect(),
                tools: (settings.tools.iter())
                    .map(|(pattern, policy)| (pattern.pattern().clone(), *policy))
                    .collect(),
            };
            (name, Arc::new(role))
        })
        .collect();
    let by_name = principals
        .iter()
        .map(|(name, settings)| {
            let held = (settings.roles.iter())
                .filter_map(|r| roles.get(r).cloned())
                .collect();
            let rights = Rights::new(name.as_str(), held);
            (name.as_str().to_string(), Arc::new(rights))
        })
        .collect();
    Principals::new(by_name, !principals.is_empty() || !roles.is_empty())
}

/// The SHA-256 of a key, as [`StoredKey::sha256`] holds it.
pub fn key_hash(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// A new key and how the configuration stores it; the key itself is shown once and kept
/// nowhere.
pub fn new_key(created: String) -> Result<(String, StoredKey), getrandom::Error> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)?;
    let key = format!(
        "{KEY_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret)
    );
    let stored = StoredKey {
        id: key.chars().take(KEY_PREFIX.len() + 8).collect(),
        sha256: hex(&key_hash(&key)),
        created,
    };
    Ok((key, stored))
}

/// The hash a stored key holds, as bytes; `None` for one that is not 64 hexadecimal digits
/// (which the loader refuses).
pub fn stored_hash(key: &StoredKey) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    let digits = key.sha256.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    for (i, pair) in digits.chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(text, 16).ok()?;
    }
    Some(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_key_is_stored_as_its_hash_and_named_by_its_start() {
        let (key, stored) = new_key("2026-11-28T00:00:00Z".into()).expect("randomness");
        assert!(key.starts_with(KEY_PREFIX));
        assert_eq!(key.len(), KEY_PREFIX.len() + 43);
        assert_eq!(stored.id, key[..12]);
        assert_eq!(stored_hash(&stored), Some(key_hash(&key)));
        assert!(!stored.sha256.contains(&key[4..]));
        let (other, _) = new_key(String::new()).expect("randomness");
        assert_ne!(key, other);
        // SHA-256 of "abc", the standard's own example.
        assert_eq!(
            hex(&key_hash("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
