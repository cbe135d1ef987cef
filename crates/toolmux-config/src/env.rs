//! `${VAR}` references in configuration strings: `${NAME}`, `${NAME:-default}` (the default is
//! used when the variable is unset or empty, and may itself hold references), `${secret:NAME}`
//! (a value of the secret store the [`Env`] carries, if any; `:-default` works the same) and
//! `$${` for a literal `${`. Only string values are expanded, never object keys, and a variable's value is
//! inserted as it is (it is not expanded again), so a secret cannot smuggle in a reference.
//!
//! There are two walks over one expansion rule: [`expand_env`] rewrites a parsed
//! [`serde_json::Value`] (what merging and later callers use), and [`Expand`] rewrites strings
//! while a typed value is read straight from the file's text, so that a reference to an unset
//! variable is reported at its line and column like any other mistake.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::secret_refs::SecretLookup;

/// Looks up an environment variable by name; `None` when it is not set.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// What references resolve against: variables for `${NAME}` ([`Env`]) and, when one is given,
/// a secret store for `${secret:NAME}` (without one, such a reference is an error). Passed
/// into every load beside the variables, never kept by the process: two loads may read two
/// environments and two stores.
#[derive(Clone, Copy)]
pub(crate) struct Lookups<'a> {
    vars: &'a dyn Fn(&str) -> Option<String>,
    secrets: Option<&'a dyn SecretLookup>,
}

impl<'a> Lookups<'a> {
    /// Variables from `vars`, and no secret store.
    pub(crate) fn vars(vars: Env<'a>) -> Self {
        Self {
            vars,
            secrets: None,
        }
    }

    /// toolmux's own environment, the secrets it took out of its process environment at start
    /// included ([`toolmux_core::process_env`]), and no secret store.
    pub(crate) fn process() -> Lookups<'static> {
        Lookups::vars(&toolmux_core::process_env::var)
    }

    /// The same variables, with `${secret:NAME}` read from `secrets`.
    pub(crate) fn with_secrets(self, secrets: &'a dyn SecretLookup) -> Self {
        Self {
            secrets: Some(secrets),
            ..self
        }
    }

    /// The value of the variable `name`.
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        (self.vars)(name)
    }

    /// The value of a `${secret:NAME}` reference; `Ok(None)` when the store has no such name.
    fn secret(&self, name: &str) -> Result<Option<String>, EnvProblem> {
        let Some(secrets) = self.secrets else {
            return Err(EnvProblem::SecretUnreadable {
                name: name.to_string(),
                reason: "no secret store was given to this load".into(),
            });
        };
        secrets
            .lookup(name)
            .map_err(|reason| EnvProblem::SecretUnreadable {
                name: name.to_string(),
                reason,
            })
    }
}

/// Why a string's references could not be expanded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvProblem {
    /// `${NAME}` names a variable that is not set, and there is no default.
    #[error("environment variable `{name}` is not set")]
    Unset {
        /// The variable's name.
        name: String,
    },
    /// A `${` has no closing `}`.
    #[error("`${{` without a closing `}}` in `{text}` (write `$${{` for a literal `${{`)")]
    Unclosed {
        /// The string that holds it.
        text: String,
    },
    /// `${secret:NAME}` names a secret the store does not hold, and there is no default.
    #[error(
        "secret `{name}` is not in the secret store (set it with `toolmux secrets set {name}`)"
    )]
    SecretUnset {
        /// The secret's name.
        name: String,
    },
    /// The secret store could not be read for `${secret:NAME}`.
    #[error("secret `{name}` could not be read: {reason}")]
    SecretUnreadable {
        /// The secret's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The text between `${` and `}` is not a variable name (with an optional `:-default`).
    #[error(
        "`${{{reference}}}` is not a variable reference: a name is letters, digits and `_`, \
         not starting with a digit (write `$${{` for a literal `${{`)"
    )]
    BadName {
        /// What stood between the braces.
        reference: String,
    },
}

/// A reference in a configuration value that could not be expanded, with where it is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct EnvError {
    /// The field path of the string (`mcpServers.github.env.TOKEN`, `args[0]`); empty for the
    /// top-level value.
    pub path: String,
    /// What is wrong.
    pub problem: EnvProblem,
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.problem)
        } else {
            write!(f, "{} (used in `{}`)", self.problem, self.path)
        }
    }
}

/// Expands `${VAR}` references in every string value of `value` (object keys are left alone).
/// The error names the variable and the path of the string that uses it.
pub fn expand_env(value: Value, env: Env<'_>) -> Result<Value, EnvError> {
    expand_lookups(value, Lookups::vars(env))
}

/// [`expand_env`] with a secret store, perhaps.
pub(crate) fn expand_lookups(value: Value, env: Lookups<'_>) -> Result<Value, EnvError> {
    let mut path = String::new();
    walk(value, env, &mut path)
}

fn walk(value: Value, env: Lookups<'_>, path: &mut String) -> Result<Value, EnvError> {
    match value {
        Value::String(text) => match expand_text(&text, env) {
            Ok(Cow::Borrowed(_)) => Ok(Value::String(text)),
            Ok(Cow::Owned(expanded)) => Ok(Value::String(expanded)),
            Err(problem) => Err(EnvError {
                path: path.clone(),
                problem,
            }),
        },
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (index, item) in items.into_iter().enumerate() {
                let len = path.len();
                push_index(path, index);
                out.push(walk(item, env, path)?);
                path.truncate(len);
            }
            Ok(Value::Array(out))
        }
        Value::Object(map) => {
            let mut out = serde_json::Map::with_capacity(map.len());
            for (key, item) in map {
                let len = path.len();
                push_key(path, &key);
                let item = walk(item, env, path)?;
                path.truncate(len);
                out.insert(key, item);
            }
            Ok(Value::Object(out))
        }
        other => Ok(other),
    }
}

/// Appends `.key` (or `key` at the top) to a field path.
pub(crate) fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// Appends `[index]` to a field path.
pub(crate) fn push_index(path: &mut String, index: usize) {
    path.push('[');
    path.push_str(&index.to_string());
    path.push(']');
}

/// Expands the references in one string; borrows it back when there are none.
pub(crate) fn expand_text<'s>(text: &'s str, env: Lookups<'_>) -> Result<Cow<'s, str>, EnvProblem> {
    if !text.contains("${") {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let here = &rest[dollar..];
        if let Some(after) = here.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some(body_and_rest) = here.strip_prefix("${") {
            let close = closing_brace(body_and_rest).ok_or_else(|| EnvProblem::Unclosed {
                text: text.to_string(),
            })?;
            out.push_str(&resolve(&body_and_rest[..close], env)?);
            rest = &body_and_rest[close + 1..];
        } else {
            out.push('$');
            rest = &here[1..];
        }
    }
    out.push_str(rest);
    Ok(Cow::Owned(out))
}

/// The index of the `}` that closes a reference whose body starts `text`, allowing references
/// nested in a default (`${A:-${B}}`).
fn closing_brace(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"$${") {
            i += 3;
            continue;
        }
        if bytes[i..].starts_with(b"${") {
            depth += 1;
            i += 2;
            continue;
        }
        if bytes[i] == b'}' {
            if depth == 0 {
                return Some(i);
            }
            depth -= 1;
        }
        i += 1;
    }
    None
}

/// The value of one reference body: `NAME` or `NAME:-default`.
fn resolve(body: &str, env: Lookups<'_>) -> Result<String, EnvProblem> {
    let (name, default) = match body.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (body, None),
    };
    // `${secret:NAME}` reads toolmux's secret store, with the same default rule; its value is
    // inserted as it is, like a variable's.
    if let Some(secret) = name.strip_prefix("secret:") {
        let valid = !secret.is_empty()
            && secret.split('/').all(|s| {
                !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
            });
        if !valid {
            return Err(EnvProblem::BadName {
                reference: body.to_string(),
            });
        }
        return match (env.secret(secret)?, default) {
            (Some(value), None) => Ok(value),
            (Some(value), Some(_)) if !value.is_empty() => Ok(value),
            (_, Some(default)) => Ok(expand_text(default, env)?.into_owned()),
            (None, None) => Err(EnvProblem::SecretUnset {
                name: secret.to_string(),
            }),
        };
    }
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(EnvProblem::BadName {
            reference: body.to_string(),
        });
    }
    match (env.var(name), default) {
        (Some(value), None) => Ok(value),
        (Some(value), Some(_)) if !value.is_empty() => Ok(value),
        (_, Some(default)) => Ok(expand_text(default, env)?.into_owned()),
        (None, None) => Err(EnvProblem::Unset {
            name: name.to_string(),
        }),
    }
}

/// A deserializer that expands references in every string value read through it (keys are
/// read as they are). Errors are the inner deserializer's, so `serde_json` gives them a line and
/// column.
pub(crate) struct Expand<'e, D> {
    inner: D,
    env: Lookups<'e>,
}

impl<'e, D> Expand<'e, D> {
    pub(crate) fn new(inner: D, env: Lookups<'e>) -> Self {
        Self { inner, env }
    }
}

struct ExpandVisitor<'e, V> {
    inner: V,
    env: Lookups<'e>,
}

struct ExpandSeed<'e, S> {
    inner: S,
    env: Lookups<'e>,
}

struct ExpandAccess<'e, A> {
    inner: A,
    env: Lookups<'e>,
}

macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*))*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, Self::Error> {
            self.inner.$method($($arg,)* ExpandVisitor { inner: visitor, env: self.env })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Expand<'_, D> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_any() deserialize_bool() deserialize_i8() deserialize_i16() deserialize_i32()
        deserialize_i64() deserialize_i128() deserialize_u8() deserialize_u16() deserialize_u32()
        deserialize_u64() deserialize_u128() deserialize_f32() deserialize_f64()
        deserialize_char() deserialize_str() deserialize_string() deserialize_bytes()
        deserialize_byte_buf() deserialize_option() deserialize_unit() deserialize_seq()
        deserialize_map() deserialize_identifier() deserialize_ignored_any()
        deserialize_unit_struct(name: &'static str)
        deserialize_newtype_struct(name: &'static str)
        deserialize_tuple(len: usize)
        deserialize_tuple_struct(name: &'static str, len: usize)
        deserialize_struct(name: &'static str, fields: &'static [&'static str])
        deserialize_enum(name: &'static str, variants: &'static [&'static str])
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty))*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for ExpandVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit! {
        visit_bool(bool) visit_i8(i8) visit_i16(i16) visit_i32(i32) visit_i64(i64)
        visit_i128(i128) visit_u8(u8) visit_u16(u16) visit_u32(u32) visit_u64(u64)
        visit_u128(u128) visit_f32(f32) visit_f64(f64) visit_char(char)
        visit_bytes(&[u8]) visit_borrowed_bytes(&'de [u8]) visit_byte_buf(Vec<u8>)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        match expand_text(v, self.env).map_err(E::custom)? {
            Cow::Borrowed(v) => self.inner.visit_str(v),
            Cow::Owned(v) => self.inner.visit_string(v),
        }
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        match expand_text(v, self.env).map_err(E::custom)? {
            Cow::Borrowed(v) => self.inner.visit_borrowed_str(v),
            Cow::Owned(v) => self.inner.visit_string(v),
        }
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        match expand_text(&v, self.env).map_err(E::custom)? {
            Cow::Borrowed(_) => self.inner.visit_string(v),
            Cow::Owned(expanded) => self.inner.visit_string(expanded),
        }
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(Expand::new(d, self.env))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(Expand::new(d, self.env))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_seq(ExpandAccess {
            inner: seq,
            env: self.env,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(ExpandAccess {
            inner: map,
            env: self.env,
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(ExpandAccess {
            inner: data,
            env: self.env,
        })
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for ExpandSeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.deserialize(Expand::new(d, self.env))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for ExpandAccess<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.inner.next_element_seed(ExpandSeed {
            inner: seed,
            env: self.env,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for ExpandAccess<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        // Keys are names, not values: they are never expanded.
        self.inner.next_key_seed(seed)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.inner.next_value_seed(ExpandSeed {
            inner: seed,
            env: self.env,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, 'e, A: EnumAccess<'de>> EnumAccess<'de> for ExpandAccess<'e, A> {
    type Error = A::Error;
    type Variant = ExpandAccess<'e, A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), Self::Error> {
        // An enum written as a plain string (`"ask"`) is a value, so its name is expanded.
        let env = self.env;
        let (value, variant) = self.inner.variant_seed(ExpandSeed { inner: seed, env })?;
        Ok((
            value,
            ExpandAccess {
                inner: variant,
                env,
            },
        ))
    }
}

impl<'de, A: de::VariantAccess<'de>> de::VariantAccess<'de> for ExpandAccess<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), Self::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.inner.newtype_variant_seed(ExpandSeed {
            inner: seed,
            env: self.env,
        })
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner.tuple_variant(
            len,
            ExpandVisitor {
                inner: visitor,
                env: self.env,
            },
        )
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner.struct_variant(
            fields,
            ExpandVisitor {
                inner: visitor,
                env: self.env,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/ada".to_string()),
            "EMPTY" => Some(String::new()),
            "DOLLAR" => Some("${HOME}".to_string()),
            _ => None,
        }
    }

    fn expand(text: &str) -> Result<String, EnvProblem> {
        expand_text(text, Lookups::vars(&env)).map(Cow::into_owned)
    }

    #[test]
    fn references_defaults_and_escapes_expand() {
        assert_eq!(expand("${HOME}/x").as_deref(), Ok("/home/ada/x"));
        assert_eq!(expand("${NOPE:-fallback}").as_deref(), Ok("fallback"));
        assert_eq!(expand("${EMPTY:-fallback}").as_deref(), Ok("fallback"));
        assert_eq!(expand("${EMPTY}").as_deref(), Ok(""));
        assert_eq!(expand("${NOPE:-${HOME}}").as_deref(), Ok("/home/ada"));
        assert_eq!(expand("${HOME:-${NOPE}}").as_deref(), Ok("/home/ada"));
        assert_eq!(expand("$${HOME}").as_deref(), Ok("${HOME}"));
        assert_eq!(expand("cost: $5 $HOME").as_deref(), Ok("cost: $5 $HOME"));
        assert_eq!(expand("${NOPE:-}").as_deref(), Ok(""));
    }

    #[test]
    fn a_variable_value_is_not_expanded_again() {
        assert_eq!(expand("${DOLLAR}").as_deref(), Ok("${HOME}"));
    }

    #[test]
    fn bad_references_are_errors() {
        assert_eq!(
            expand("${NOPE}"),
            Err(EnvProblem::Unset {
                name: "NOPE".into()
            })
        );
        assert_eq!(
            expand("${HOME").map_err(|e| e.to_string()),
            Err("`${` without a closing `}` in `${HOME` (write `$${` for a literal `${`)".into())
        );
        assert_eq!(
            expand("${1X}").map_err(|e| e.to_string()),
            Err(
                "`${1X}` is not a variable reference: a name is letters, digits and `_`, \
                 not starting with a digit (write `$${` for a literal `${`)"
                    .into()
            )
        );
    }

    #[test]
    fn expand_env_walks_values_but_not_keys_and_names_the_path() {
        let value = json!({"${HOME}": ["${HOME}", 1, {"k": "${NOPE:-d}"}]});
        assert_eq!(
            expand_env(value, &env),
            Ok(json!({"${HOME}": ["/home/ada", 1, {"k": "d"}]}))
        );
        let err = expand_env(json!({"a": {"b": [0, "x${GITHUB_TOKEN}"]}}), &env)
            .expect_err("unset variable");
        assert_eq!(
            err.to_string(),
            "environment variable `GITHUB_TOKEN` is not set (used in `a.b[1]`)"
        );
    }
}
