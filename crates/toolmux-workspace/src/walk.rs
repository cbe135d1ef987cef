//! How the tools walk the tree, in one place: `.gitignore` is honoured even outside a git
//! repository, hidden files are included, `.git` and toolmux's own state directory are never
//! entered, and symbolic links are never followed (a link is reported as a link, and never
//! searched through).
//!
//! The walker reads directories by name, so a directory swapped for a link while it runs could
//! show it another directory's names. That is why the tools never trust an entry as it comes:
//! each one is opened (or stat'ed) again beneath the root's descriptor before anything about it
//! is reported or read ([`crate::root::ProjectRoot::open_beneath`]).

use std::io;
use std::path::Path;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::WalkBuilder;
use rustix::fs::{AtFlags, FileType, OFlags};
use rustix::io::Errno;

use crate::root::{PathError, ProjectRoot};

/// The longest glob accepted, in bytes: a path is at most 4096 bytes, and a glob longer than
/// the paths it matches only costs regex size.
const MAX_GLOB_BYTES: usize = 4096;

/// The deepest nesting of `{…}` alternatives accepted. globset turns each level into a regex
/// group; thousands of them blow the regex compiler's limits (issue 12, D16).
const MAX_GLOB_NESTING: usize = 16;

/// The ignore files the walker reads in every directory it enters (with `.gitignore` handling
/// on): the `ignore` crate opens them by name, blocking, and reads each whole into memory.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// The largest ignore file the walker lets the `ignore` crate read.
const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// A walker over `start` (an absolute path already resolved under `root`). `include_ignored`
/// turns off `.gitignore`/`.ignore` handling, for listing.
///
/// With that handling on, the `ignore` crate opens each directory's `.gitignore` and `.ignore`
/// by name (following links, blocking) and reads it whole: a FIFO there would hang the thread
/// for good, a link to `/dev/zero` or a sparse file of gigabytes would be read until the
/// process runs out of memory, and a link out of the root would be read outside it. So a
/// directory is entered only when its ignore files are absent, directories, or regular files
/// (not links) of at most [`MAX_IGNORE_FILE_BYTES`]; another is
/// skipped (a walk never reads what it cannot judge), and `start` itself or a directory above
/// it is an error that names the file. `.git/info/exclude` is not read: the `ignore` crate finds
/// it through the `gitdir:` line of a `.git` file, a path anywhere that the tree's author
/// chooses.
pub(crate) fn walker(
    root: &ProjectRoot,
    start: &Path,
    include_ignored: bool,
) -> Result<WalkBuilder, String> {
    let read_ignore_files = !include_ignored;
    if read_ignore_files {
        // `start` (when a directory) and the directories above it up to the root, whose ignore
        // files apply to the walk too.
        for dir in start.ancestors().take_while(|d| d.starts_with(root.path())) {
            match unreadable_ignore_file(root, dir) {
                Ok(None) => {}
                Ok(Some(name)) => {
                    let file = root.display(&dir.join(name));
                    return Err(format!(
                        "`{file}` is not a regular file of at most {}, so the ignore rules of \
                         `{}` cannot be read; remove or replace it",
                        toolmux_core::human_bytes(MAX_IGNORE_FILE_BYTES),
                        root.display(dir)
                    ));
                }
                // `start` may be a file (grep of one file), which has no ignore files; but
                // not a link, which it was not when it was resolved.
                Err(e)
                    if dir == start
                        && e.raw_os_error() == Some(Errno::NOTDIR.raw_os_error())
                        && root
                            .metadata_beneath(dir)
                            .is_some_and(|m| !m.is_dir() && !m.file_type().is_symlink()) => {}
                Err(_) => {
                    return Err(PathError::Changed {
                        path: root.display(dir),
                    }
                    .to_string());
                }
            }
        }
    }
    let mut builder = WalkBuilder::new(start);
    let root = root.clone();
    builder
        .standard_filters(read_ignore_files)
        .git_exclude(false)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        // The walker's paths have no link in them (it starts from a resolved path and follows
        // none), so they compare with the canonical state directory as they are.
        .filter_entry(move |entry| {
            if entry.file_name() == ".git" || root.is_state(entry.path()) {
                return false;
            }
            if read_ignore_files && entry.file_type().is_some_and(|t| t.is_dir()) {
                match unreadable_ignore_file(&root, entry.path()) {
                    Ok(None) => {}
                    Ok(Some(name)) => {
                        tracing::warn!(
                            dir = %entry.path().display(),
                            file = name,
                            "a workspace walk skipped a directory whose ignore file is not a regular file of at most 1 MiB"
                        );
                        return false;
                    }
                    // Not a directory beneath the root any more (swapped for a link, say):
                    // its ignore files cannot be judged, so it is not entered.
                    Err(e) => {
                        tracing::debug!(
                            dir = %entry.path().display(),
                            error = %e,
                            "a workspace walk skipped a directory it could not open beneath the root"
                        );
                        return false;
                    }
                }
            }
            true
        });
    Ok(builder)
}

/// The first of `dir`'s ignore files that the `ignore` crate must not be let read: one that is
/// not itself a directory or a regular file of at most [`MAX_IGNORE_FILE_BYTES`]. A symbolic
/// link is such a file: it is never followed, so nothing outside the root is looked at. A
/// look, never an open of the file: `dir` is opened (`O_PATH | O_DIRECTORY`) beneath the root,
/// and each name is `fstatat`'ed relative to it without following a link. The error is that
/// of opening `dir`: it is no longer a directory beneath the root.
fn unreadable_ignore_file(root: &ProjectRoot, dir: &Path) -> io::Result<Option<&'static str>> {
    let dir = root.open_beneath(dir, OFlags::PATH | OFlags::DIRECTORY)?;
    Ok(IGNORE_FILES.into_iter().find(|name| {
        match rustix::fs::statat(&dir, *name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => {
                let kind = FileType::from_raw_mode(stat.st_mode);
                let small = u64::try_from(stat.st_size).is_ok_and(|n| n <= MAX_IGNORE_FILE_BYTES);
                !(kind == FileType::Directory || (kind == FileType::RegularFile && small))
            }
            // Missing: the `ignore` crate checks existence first too. Anything else (no
            // permission) it would fail to open, and not block.
            Err(_) => false,
        }
    }))
}

/// A glob written the way `.gitignore` and ripgrep's `-g` read it: with a `/` it is matched
/// against the whole root-relative path (`src/*.rs`, `**/*.toml`); without one, against the
/// file name at any depth (`*.rs`). `*` never crosses a `/`; `**` does.
pub(crate) struct PathGlob {
    matcher: GlobSet,
    whole_path: bool,
}

impl PathGlob {
    /// Compiles `pattern`; the error is a message for the caller.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        if pattern.len() > MAX_GLOB_BYTES {
            return Err(format!(
                "the glob is {} bytes long; at most {MAX_GLOB_BYTES} are accepted",
                pattern.len()
            ));
        }
        let nesting = brace_nesting(pattern);
        if nesting > MAX_GLOB_NESTING {
            return Err(format!(
                "the glob nests `{{…}}` alternatives {nesting} deep; at most {MAX_GLOB_NESTING} levels are accepted"
            ));
        }
        let trimmed = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob: Glob = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("invalid glob `{pattern}`: {}", glob_reason(&e)))?;
        // A one-glob set rather than `Glob::compile_matcher`, which panics when the regex
        // compiler refuses the glob (too big); the set returns that as an error.
        let matcher = GlobSetBuilder::new()
            .add(glob)
            .build()
            .map_err(|e| format!("invalid glob: {}", glob_reason(&e)))?;
        Ok(Self {
            matcher,
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

/// How deep `{…}` alternatives nest in `pattern`, escapes and character classes aside (where
/// a brace is literal, as globset reads them).
fn brace_nesting(pattern: &str) -> usize {
    let mut depth = 0usize;
    let mut deepest = 0usize;
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '{' if !in_class => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            '}' if !in_class => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
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
    fn brace_nesting_counts_levels_not_braces() {
        assert_eq!(brace_nesting("*.{rs,toml}"), 1);
        assert_eq!(brace_nesting("{a,{b,{c,d}}}{e,f}"), 3);
        assert_eq!(brace_nesting("[{]{a,b}"), 1);
        assert_eq!(brace_nesting("\\{{a,b}"), 1);
    }

    #[test]
    fn an_invalid_glob_says_why() {
        assert_eq!(
            PathGlob::new("src/[a").err().unwrap(),
            "invalid glob `src/[a`: unclosed character class; missing ']'"
        );
    }
}
