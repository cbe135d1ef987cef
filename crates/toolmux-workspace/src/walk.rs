//! How the tools walk the tree, in one place: `.gitignore` is honoured even outside a git
//! repository, hidden files are included, `.git` and toolmux's own `.toolmux/state` are never
//! entered, and symbolic links are
//! never followed (a link is reported as a link, and never searched through).

use std::path::Path;

use globset::{Glob, GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;

/// A walker over `start` (an absolute path already resolved under the project root).
/// `include_ignored` turns off `.gitignore`/`.ignore` handling, for listing.
pub(crate) fn walker(start: &Path, include_ignored: bool) -> WalkBuilder {
    let mut builder = WalkBuilder::new(start);
    builder
        .standard_filters(!include_ignored)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| {
            entry.file_name() != ".git" && !entry.path().ends_with(crate::root::STATE_DIR)
        });
    builder
}

/// A glob written the way `.gitignore` and ripgrep's `-g` read it: with a `/` it is matched
/// against the whole root-relative path (`src/*.rs`, `**/*.toml`); without one, against the
/// file name at any depth (`*.rs`). `*` never crosses a `/`; `**` does.
pub(crate) struct PathGlob {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl PathGlob {
    /// Compiles `pattern`; the error is a message for the caller.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        let trimmed = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob: Glob = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("invalid glob `{pattern}`: {}", glob_reason(&e)))?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            whole_path: trimmed.contains('/'),
        })
    }

    /// Whether the root-relative path `rel` (with `/` separators) matches.
    pub(crate) fn is_match(&self, rel: &str) -> bool {
        if self.whole_path {
            self.matcher.is_match(rel)
        } else {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            self.matcher.is_match(name)
        }
    }
}

/// globset's message repeats the glob; keep only the reason.
fn glob_reason(e: &globset::Error) -> String {
    e.kind().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_without_a_slash_matches_the_file_name_at_any_depth() {
        let g = PathGlob::new("*.rs").unwrap();
        assert!(g.is_match("main.rs"));
        assert!(g.is_match("src/deep/lib.rs"));
        assert!(!g.is_match("src/lib.rs.orig"));
    }

    #[test]
    fn a_glob_with_a_slash_matches_the_whole_path_and_star_stays_in_one_directory() {
        let g = PathGlob::new("src/*.toml").unwrap();
        assert!(g.is_match("src/a.toml"));
        assert!(!g.is_match("src/x/a.toml"));
        let g = PathGlob::new("**/*.rs").unwrap();
        assert!(g.is_match("a.rs"));
        assert!(g.is_match("x/y/a.rs"));
        let g = PathGlob::new("./src/*.rs").unwrap();
        assert!(g.is_match("src/a.rs"));
    }

    #[test]
    fn an_invalid_glob_says_why() {
        assert_eq!(
            PathGlob::new("src/[a").err().unwrap(),
            "invalid glob `src/[a`: unclosed character class; missing ']'"
        );
    }
}
