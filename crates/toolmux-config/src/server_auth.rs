//! `server.auth`: toolmux as an OAuth protected resource. When set, `/mcp` and `/api` also
//! accept JWT access tokens from one issuer (the team's identity provider), beside the API keys
//! and the local token.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The authorization server whose access tokens toolmux accepts, and what a token must say to
/// be accepted. toolmux finds the issuer's keys itself (its RFC 8414 metadata, then OpenID
/// Connect discovery) unless `jwksUrl` names them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `issuer`, `audience`, `requiredScopes` and `jwksUrl`"
)]
pub struct ServerAuth {
    /// The issuer identifier, exactly as tokens carry it in `iss` (`https://login.example.com`
    /// or `https://login.example.com/realms/team`): `https://`, or `http://` on a loopback
    /// address only, since the keys that vouch for every token are fetched from it.
    #[serde(deserialize_with = "issuer_url")]
    pub issuer: String,
    /// The audience a token must name in `aud`: this server's identifier at the issuer (often
    /// its public URL, such as `https://tools.example.com/mcp`).
    pub audience: String,
    /// Scopes every token must grant (its `scope` claim, space-separated, or `scp`); a token
    /// without one of them is refused with `403 insufficient_scope`. Published as the
    /// resource's `scopes_supported`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_scopes: Vec<String>,
    /// Where the issuer's signing keys (a JWK Set) are, when its metadata cannot be found at the
    /// standard places.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_issuer_url"
    )]
    pub jwks_url: Option<String>,
}

/// A URL toolmux fetches keys from must be `https://`, or `http://` on loopback (a test or a
/// local identity provider): over plain HTTP anyone on the path could swap the keys.
fn check_key_source(url: &str) -> Result<(), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("`{url}` is not an absolute URL"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    if host.is_empty() || host.chars().any(char::is_whitespace) {
        return Err(format!("`{url}` has no host"));
    }
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match scheme {
        s if s.eq_ignore_ascii_case("https") => Ok(()),
        s if s.eq_ignore_ascii_case("http") && loopback => Ok(()),
        s if s.eq_ignore_ascii_case("http") => Err(format!(
            "`{url}` must use https:// (plain http:// is accepted on loopback only)"
        )),
        _ => Err(format!("`{url}` must start with https://")),
    }
}

fn issuer_url<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let url = String::deserialize(deserializer)?;
    check_key_source(&url).map_err(serde::de::Error::custom)?;
    Ok(url)
}

fn optional_issuer_url<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    let url = String::deserialize(deserializer)?;
    check_key_source(&url).map_err(serde::de::Error::custom)?;
    Ok(Some(url))
}

#[cfg(test)]
mod tests {
    use crate::{load_with_env, project_config_path};

    fn load(text: &str) -> Result<Option<super::ServerAuth>, String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = project_config_path(dir.path());
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
        load_with_env(dir.path(), None, &|_| None)
            .map(|loaded| loaded.config.server.auth)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn an_issuer_with_an_audience_is_read_with_its_scopes() {
        let auth = load(
            r#"{"server": {"auth": {"issuer": "https://login.example.com",
                "audience": "https://tools.example.com/mcp", "requiredScopes": ["tools"]}}}"#,
        )
        .expect("loads")
        .expect("set");
        assert_eq!(auth.issuer, "https://login.example.com");
        assert_eq!(auth.required_scopes, ["tools"]);
        assert_eq!(auth.jwks_url, None);
        assert_eq!(load("{}").expect("loads"), None);
    }

    #[test]
    fn plain_http_is_refused_beyond_loopback_and_the_error_names_the_field() {
        let error = load(
            "{\"server\": {\"auth\": {\n  \"issuer\": \"http://login.example.com\",\n  \
             \"audience\": \"a\"}}}",
        )
        .expect_err("plain http beyond loopback");
        assert!(
            error.contains("server.auth.issuer") && error.contains("https://"),
            "{error}"
        );
        assert!(error.contains("config.json:2:"), "names the line: {error}");
        for ok in [
            "http://127.0.0.1:8080",
            "http://localhost/realm",
            "http://[::1]:9",
        ] {
            let text =
                format!(r#"{{"server": {{"auth": {{"issuer": "{ok}", "audience": "a"}}}}}}"#);
            assert!(load(&text).is_ok(), "{ok}");
        }
        let missing = load(r#"{"server": {"auth": {"issuer": "https://a.example"}}}"#)
            .expect_err("no audience");
        assert!(missing.contains("audience"), "{missing}");
        let jwks = load(
            r#"{"server": {"auth": {"issuer": "https://a.example", "audience": "a",
                "jwksUrl": "ftp://a.example/keys"}}}"#,
        )
        .expect_err("not http");
        assert!(jwks.contains("server.auth.jwksUrl"), "{jwks}");
    }
}
