//! Taking toolmux's secrets out of its own environment, once, when the binary starts.
//!
//! A child that reads `/proc/$PPID/environ` sees toolmux's environment as it was at exec: the
//! kernel shows the original block of `NAME=value` strings (between the process's `env_start`
//! and `env_end`), whatever `unsetenv` did to the `environ` array since. So [`hide_secrets`]:
//! 1. finds the secret variables ([`is_secret`]: a name that says key, token, password…, or a
//!    value that carries credentials, such as a URL with a password in it);
//! 2. keeps their values for toolmux alone (`toolmux_core::process_env`, which `${VAR}`
//!    expansion reads at every configuration load and reload);
//! 3. takes them out of the process environment, so no child inherits them, whichever way it
//!    is started — except the proxy variables, which toolmux's own HTTP clients read from the
//!    process environment; those stay there as a fresh copy, and the child recipe leaves them
//!    out ([`crate::child`]);
//! 4. overwrites their original bytes with zeros, so `/proc/<toolmux>/environ` no longer shows
//!    them;
//! 5. makes toolmux not dumpable (`PR_SET_DUMPABLE` 0): its `/proc` entries (`environ`, `mem`,
//!    `maps`, …) then belong to root, and a child running as the same unprivileged user can
//!    neither read them nor attach to toolmux. Core dumps of toolmux are off as a consequence.

#![allow(unsafe_code)] // Overwriting the original environment block needs raw pointers.

use std::collections::HashMap;
use std::ffi::OsString;

/// Proxy variables: toolmux's HTTP clients read them from its process environment, so a
/// secret one (a proxy URL with a password) stays there, out of `/proc` and out of children.
const PROXY_VARS: &[&str] = &["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "FTP_PROXY"];

/// Whether the variable `name=value` holds a secret: the one judgement, in the core (here
/// too, where the child recipe and the approvals have always found it).
pub use toolmux_core::is_secret;
use toolmux_core::is_secret_name;

/// Whether toolmux's own code reads `name` from its process environment, so that a secret
/// value must stay there (see [`PROXY_VARS`]).
fn needed_in_process(name: &str) -> bool {
    PROXY_VARS.iter().any(|p| p.eq_ignore_ascii_case(name))
}

/// The variables `${NAME}` and `${NAME:-default}` references in a configuration file's text
/// name (not `${secret:NAME}`, nor an escaped `$${`), in order, without repeats. A plain scan
/// of the text: comments are looked at too, which at worst hides one variable more.
pub fn references(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    // Linear in the file however many names it holds: it runs before anything else, on a
    // file a cloned repository chooses.
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let bytes = text.as_bytes();
    for (at, _) in text.match_indices("${") {
        if at > 0 && bytes[at - 1] == b'$' {
            continue;
        }
        let rest = &text[at + 2..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        let closes = matches!(rest[end..].chars().next(), Some('}' | ':'));
        let secret_ref = name == "secret" && rest[end..].starts_with(':');
        if !name.is_empty() && closes && !secret_ref && seen.insert(name) {
            names.push(name.to_string());
        }
    }
    names
}

/// The variables the `${VAR}` references of `files` name ([`references`]), in order, without
/// repeats: the texts as read once by [`toolmux_config::referencing_files`] or a load
/// ([`toolmux_config::LoadedConfig::texts`]).
pub fn references_in(files: &[toolmux_config::FileText]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    files
        .iter()
        .flat_map(|file| references(&file.text))
        .filter(|name| seen.insert(name.clone()))
        .collect()
}

/// Whether a variable named by the configuration (or `--api-key-env`) is taken out of the
/// process environment: all but the basics every program needs and toolmux reads itself
/// (the child allowlist, `XDG_*`, the working directory).
fn named_is_hidden(name: &str) -> bool {
    !(crate::child::is_inherited(name)
        || name.starts_with("XDG_")
        || name == "PWD"
        || name == "OLDPWD"
        || name.starts_with("TOOLMUX_") && !is_secret_name(name))
}

/// What [`hide_secrets`] did, for a log line (names only, never values).
#[derive(Debug, Default)]
pub struct Hidden {
    /// The secret variables taken out of the process environment (or, for a proxy variable,
    /// only out of `/proc`).
    pub names: Vec<String>,
    /// How many of their original entries were overwritten in the block `/proc` shows.
    pub overwritten: usize,
    /// Why a step could not be done (no `/proc`, `prctl` refused), if one could not.
    pub problems: Vec<String>,
}

/// Takes toolmux's secrets out of its process environment and out of what
/// `/proc/<toolmux>/environ` shows, keeps them for toolmux's own lookups, and makes the
/// process not dumpable (see the module's documentation). Called once, first thing in `main`.
///
/// The secrets are the variables [`is_secret`] finds, and those in `named`: what the
/// configuration's `${VAR}` references ([`references`]) and `--api-key-env` name — values
/// toolmux hands to the places its configuration says, not to every child — except the
/// basics (`HOME`, `PATH`, locale, `XDG_*`…).
///
/// # Safety
/// No other thread may exist, or at least none that reads or changes the environment: like
/// [`std::env::remove_var`], this changes the process environment, and it also overwrites
/// the original strings of the removed variables, which any copy of a pointer into the
/// environment taken before would see change.
pub unsafe fn hide_secrets(named: &[String]) -> Hidden {
    let mut hidden = Hidden::default();
    let secrets: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, value)| {
            name.to_str().is_some_and(|n| {
                is_secret(n, value) || (named.iter().any(|m| m == n) && named_is_hidden(n))
            })
        })
        .collect();
    if !toolmux_core::process_env::keep_removed(kept_values(&secrets)) {
        hidden.problems.push(
            "the secrets were already hidden once; what this second pass took out is lost to \
             the configuration"
                .to_string(),
        );
    }
    // SAFETY: no other thread reads or writes the environment (the caller's promise).
    unsafe { take_out(secrets, &mut hidden) };
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        hidden
            .problems
            .push(format!("cannot make toolmux not dumpable: {e}"));
    }
    hidden
}

/// [`hide_secrets`] for the variables a configuration reloaded since start names (`named`,
/// its [`references`]): those still in the process environment leave it and the block
/// `/proc/<toolmux>/environ` shows, their values kept for toolmux's own lookups first. A
/// proxy variable stays (toolmux's HTTP clients read it there; putting a copy back as at start
/// would mean a `setenv` while other threads run).
///
/// # Safety
/// No other thread may change the environment (in toolmux nothing does after start but this,
/// and two reloads take turns here), nor read it through the C library without Rust's
/// environment lock meanwhile (a `getenv` of C code on another thread): the entries are taken
/// out with [`std::env::remove_var`], which holds that lock against every Rust reader, and
/// their original strings are then overwritten. glibc's `unsetenv` frees nothing and the
/// strings stay mapped, so a C reader at the same moment sees at worst a shortened string,
/// never freed memory; but that is not a promise the C library makes.
pub unsafe fn hide_newly_named(named: &[String]) -> Hidden {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut hidden = Hidden::default();
    let newly: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| {
            name.to_str().is_some_and(|n| {
                named.iter().any(|m| m == n) && named_is_hidden(n) && !needed_in_process(n)
            })
        })
        .collect();
    if newly.is_empty() {
        return hidden;
    }
    toolmux_core::process_env::keep_more(kept_values(&newly));
    // SAFETY: the caller's promise; no proxy variable is among them, so nothing is set.
    unsafe { take_out(newly, &mut hidden) };
    hidden
}

/// The values of `secrets` toolmux keeps for its own lookups: all but the proxy variables
/// (which stay in the process environment) and values that are not Unicode (which `${VAR}`
/// could not read before either).
fn kept_values(secrets: &[(OsString, OsString)]) -> HashMap<String, String> {
    secrets
        .iter()
        .filter(|(name, _)| !needed_in_process(&name.to_string_lossy()))
        .filter_map(|(name, value)| Some((name.to_str()?.to_string(), value.to_str()?.to_string())))
        .collect()
}

/// Takes `secrets` out of the process environment (a proxy variable is put back as a fresh
/// copy) and overwrites their original strings in the block `/proc` shows.
///
/// # Safety
/// As [`std::env::remove_var`] and [`std::env::set_var`]; see the callers'.
unsafe fn take_out(secrets: Vec<(OsString, OsString)>, hidden: &mut Hidden) {
    // Where their original strings are, found before the environment changes.
    let originals = original_entries(&secrets, &mut hidden.problems);
    for (name, value) in secrets {
        if needed_in_process(&name.to_string_lossy()) {
            // SAFETY: the caller's promise. The copy setenv makes is on the heap, which
            // `/proc/PID/environ` never shows.
            unsafe { std::env::set_var(&name, &value) };
        } else {
            // SAFETY: the caller's promise.
            unsafe { std::env::remove_var(&name) };
        }
        hidden.names.push(name.to_string_lossy().into_owned());
    }
    for (start, len) in &originals {
        // SAFETY: each range is one `NAME=value` string of the original block the kernel
        // placed on the initial stack, checked to lie within `[env_start, env_end)`: memory
        // this process owns, writable, never freed, and no longer in `environ` (the variable
        // was removed, or replaced by a heap copy) — nothing reads it but `/proc`.
        unsafe { std::ptr::write_bytes(*start, 0, *len) };
    }
    hidden.overwritten = originals.len();
}

/// The original strings (start, length) of the `secrets` in the block `/proc/self/environ`
/// shows, as the initial `environ` array points to them.
#[cfg(target_os = "linux")]
fn original_entries(
    secrets: &[(OsString, OsString)],
    problems: &mut Vec<String>,
) -> Vec<(*mut u8, usize)> {
    use std::os::unix::ffi::OsStrExt;

    unsafe extern "C" {
        /// The C library's environment: the array of `NAME=value` strings.
        static environ: *const *mut std::ffi::c_char;
    }

    let Some((env_start, env_end)) = environment_block() else {
        problems.push(
            "cannot read where the environment block is (/proc/self/stat); /proc/self/environ \
             still shows the secrets"
                .to_string(),
        );
        return Vec::new();
    };
    let mut found = Vec::new();
    // SAFETY: `environ` is a null-terminated array of null-terminated strings, which no other
    // thread changes (the caller's promise).
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            let start = *entry;
            let bytes = std::ffi::CStr::from_ptr(start).to_bytes();
            let name = bytes.split(|b| *b == b'=').next().unwrap_or_default();
            let address = start as usize;
            // Only the original block, which nothing ever frees: a string the C library
            // allocated itself for an earlier setenv may be freed by it.
            let original = address >= env_start && address + bytes.len() < env_end;
            if original && secrets.iter().any(|(n, _)| n.as_bytes() == name) {
                found.push((start.cast::<u8>(), bytes.len()));
            }
            entry = entry.add(1);
        }
    }
    found
}

#[cfg(not(target_os = "linux"))]
fn original_entries(
    _secrets: &[(OsString, OsString)],
    _problems: &mut Vec<String>,
) -> Vec<(*mut u8, usize)> {
    Vec::new()
}

/// `env_start` and `env_end` of this process (`/proc/self/stat` fields 50 and 51): the block
/// `/proc/self/environ` shows.
#[cfg(target_os = "linux")]
fn environment_block() -> Option<(usize, usize)> {
    let stat = toolmux_files::ProcStat::of_self()?;
    let start = stat.number(50)?;
    let end = stat.number(51)?;
    (start < end).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxies_stay_in_the_process_for_its_http_clients() {
        assert!(needed_in_process("https_proxy"));
        assert!(needed_in_process("HTTP_PROXY"));
        assert!(!needed_in_process("OPENAI_API_KEY"));
    }

    #[test]
    fn references_are_found_but_not_secret_store_ones_or_escapes() {
        let text = r#"{"apiKey": "${OPENAI_API_KEY}", "h": "Bearer ${DOCS_KEY:-none}",
            "s": "${secret:STORED}", "lit": "$${NOT_A_REF}", "again": "${OPENAI_API_KEY}",
            "odd": "${", "open": "${UNCLOSED", "x": "${A-B}", "home": "${HOME}/bin"}"#;
        assert_eq!(references(text), ["OPENAI_API_KEY", "DOCS_KEY", "HOME"]);
        for text in [
            "${",
            "$${",
            "${}",
            "${:",
            "\u{e9}${\u{e9}}",
            "${secret",
            "${secret}",
        ] {
            let _ = references(text);
        }
        assert_eq!(references("${secret}"), ["secret"]);
        let huge = "${A}".repeat(100_000);
        assert_eq!(references(&huge), ["A"]);
        // Found in review: each name was compared with every earlier one, so a file of many
        // distinct names (a cloned repository's) held start-up for minutes. Each is kept once,
        // in order.
        let distinct: String = (0..200_000).map(|n| format!("${{V{n}}}")).collect();
        let found = references(&distinct);
        assert_eq!(found.len(), 200_000);
        assert_eq!(
            (found[0].as_str(), found[199_999].as_str()),
            ("V0", "V199999")
        );
    }

    #[test]
    fn named_variables_are_hidden_but_the_basics() {
        for name in [
            "MY_SERVICE_URL",
            "PYTHONPATH",
            "SERVE_CRED",
            "TOOLMUX_TEST_KEY",
        ] {
            assert!(named_is_hidden(name), "{name}");
        }
        for name in [
            "HOME",
            "PATH",
            "LANG",
            "LC_ALL",
            "XDG_CONFIG_HOME",
            "PWD",
            "TOOLMUX_PROJECT",
        ] {
            assert!(!named_is_hidden(name), "{name}");
        }
    }
}
