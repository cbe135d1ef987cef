//! Finding the specs directory, reading the project's LeanSpec config, and walking the spec
//! folders.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use toolmux_files::file_kind;
use toolmux_workspace::ProjectRoot;

use crate::error::SpecsError;
use crate::model::SubSpec;

/// The candidates LeanSpec tries, in order, when no config names the directory.
const CANDIDATES: [&str; 4] = ["specs", ".lean-spec/specs", "doc/specs", "docs/specs"];

/// LeanSpec's size limits (`validation` in its config).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Lines above which a spec is an error (400).
    pub max_lines: usize,
    /// Lines above which a spec gets a warning (200).
    pub warn_lines: usize,
    /// Tokens above which a spec is an error (5000).
    pub max_tokens: usize,
    /// Tokens above which a spec gets a warning (3500).
    pub warn_tokens: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_lines: 400,
            warn_lines: 200,
            max_tokens: 5000,
            warn_tokens: 3500,
        }
    }
}

/// What the pack takes from `.lean-spec/config.json` (camelCase keys) or `config.yaml`
/// (snake_case keys). Unknown keys are ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// `specsDir`.
    pub specs_dir: Option<String>,
    /// `validation`.
    pub limits: Limits,
    /// `templates.default`: a template file name under `.lean-spec/templates/`.
    pub default_template: Option<String>,
    /// `draftStatus.enabled`: new specs start as `draft` rather than `planned`.
    pub draft_status: bool,
}

impl Config {
    /// Reads the project's config; a project without one gets the defaults. One that is there
    /// but cannot be read (not a regular file, a link out of the project, too large) is an
    /// error, never taken for no config.
    pub fn load(project: &ProjectRoot) -> Result<Self, SpecsError> {
        const JSON: &str = ".lean-spec/config.json";
        const YAML: &str = ".lean-spec/config.yaml";
        let root = project.path();
        let json = root.join(JSON);
        let yaml = root.join(YAML);
        // There in any form (a link, a FIFO): whether it is readable is `read_config`'s call.
        let present = |path: &Path| fs::symlink_metadata(path).is_ok();
        let value: Value = if present(&json) {
            let text = crate::file::read_config(project, JSON)?;
            serde_json::from_str(&text).map_err(|e| SpecsError::Config {
                path: json.clone(),
                message: e.to_string(),
            })?
        } else if present(&yaml) {
            let text = crate::file::read_config(project, YAML)?;
            toolmux_core::check_yaml_bounds(&text).map_err(|e| SpecsError::Config {
                path: yaml.clone(),
                message: format!("line {}: {e}", e.line()),
            })?;
            let parsed: serde_yaml_ng::Value =
                serde_yaml_ng::from_str(&text).map_err(|e| SpecsError::Config {
                    path: yaml.clone(),
                    message: e.to_string(),
                })?;
            crate::frontmatter::yaml_to_json(&parsed)
        } else {
            return Ok(Self::default());
        };
        // Either spelling in either file: the JSON file is camelCase, the YAML one snake_case.
        let get = |v: &Value, camel: &str, snake: &str| -> Option<Value> {
            v.get(camel).or_else(|| v.get(snake)).cloned()
        };
        let mut config = Self {
            specs_dir: get(&value, "specsDir", "specs_dir")
                .and_then(|v| v.as_str().map(str::to_string)),
            ..Self::default()
        };
        if let Some(validation) = value.get("validation") {
            let num = |camel: &str, snake: &str, default: usize| {
                get(validation, camel, snake)
                    .and_then(|v| v.as_u64())
                    .and_then(|n| usize::try_from(n).ok())
                    .unwrap_or(default)
            };
            let d = Limits::default();
            config.limits = Limits {
                max_lines: num("maxLines", "max_lines", d.max_lines),
                warn_lines: num("warnLines", "warn_lines", d.warn_lines),
                max_tokens: num("maxTokens", "max_tokens", d.max_tokens),
                warn_tokens: num("warnTokens", "warn_tokens", d.warn_tokens),
            };
        }
        config.default_template = value
            .get("templates")
            .and_then(|t| t.get("default"))
            .and_then(Value::as_str)
            .map(str::to_string);
        config.draft_status = get(&value, "draftStatus", "draft_status")
            .and_then(|d| d.get("enabled").and_then(Value::as_bool))
            .unwrap_or(false);
        Ok(config)
    }
}

/// The project's specs directory: `override_dir` (the `LEANSPEC_SPECS_DIR` environment
/// variable, relative to the root), else the config's `specsDir`, else the first candidate
/// that exists. `None` when the result is not a directory.
pub fn find_specs_dir(root: &Path, config: &Config, override_dir: Option<&str>) -> Option<PathBuf> {
    let named = override_dir
        .filter(|d| !d.is_empty())
        .or(config.specs_dir.as_deref());
    match named {
        Some(dir) => Some(root.join(dir)).filter(|d| d.is_dir()),
        None => CANDIDATES.iter().map(|c| root.join(c)).find(|d| d.is_dir()),
    }
}

/// A spec folder found by the walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    /// The README's path.
    pub readme: PathBuf,
    /// Relative to the specs directory, `/`-separated.
    pub rel: String,
    /// The folder name.
    pub id: String,
    /// Under the legacy `archived/` folder.
    pub in_archived_folder: bool,
    /// The id of the spec whose folder holds this one.
    pub nested_in: Option<String>,
    /// What stands in the README's place when it is not a regular file (a FIFO, a link, a
    /// device: [`irregular`]): a broken spec, never opened.
    pub irregular: Option<&'static str>,
    /// README size and modification time: the parse cache's key.
    pub size: u64,
    pub mtime: SystemTime,
    /// Other markdown files in the folder.
    pub sub_specs: Vec<SubSpec>,
}

/// How long after a file or folder was last modified its modification time is trusted to
/// reveal the next change. File systems stamp times from a coarse clock (a kernel tick; a
/// whole second or two on some), so a change made within the same tick as our read can leave
/// the time as it was. Anything younger than this is re-read on every call instead (git's
/// "racily clean" rule).
pub(crate) const SETTLE: Duration = Duration::from_secs(2);

/// Whether a modification time seen at `read_at` (taken before the read) is old enough to be
/// trusted: no later change can carry the same time. A time in the future is never trusted.
pub(crate) fn settled(mtime: SystemTime, read_at: SystemTime) -> bool {
    read_at.duration_since(mtime).is_ok_and(|age| age >= SETTLE)
}

/// What one folder's listing gave the walk, kept while the folder's modification time stays
/// the same. Adding, removing or renaming an entry changes a folder's modification time;
/// editing a file inside it does not, which is why READMEs and sub-specs are still `stat`ed
/// on every walk.
#[derive(Debug)]
struct Listing {
    mtime: SystemTime,
    /// The time was settled when listed (see [`settled`]); else the folder is re-listed.
    settled: bool,
    /// Sub-folders, sorted (only below the depth limit).
    dirs: Vec<String>,
    /// The folder has a `README.md` that is not a folder (only in a spec folder): a regular
    /// one, or something else in its place, reported as a broken spec.
    readme: bool,
    /// Other regular `.md` files, sorted (only in a spec folder).
    subs: Vec<String>,
}

/// Listings by folder path. Shared (`Arc`) so a kept listing moves to the new walk's map
/// without being copied while the previous walk's map is still read.
///
/// Keyed by the path's bytes: a `Path` hashes component by component, which was a tenth of a
/// warm walk, and every key here is built the same way, so equal folders have equal bytes.
type Listings = HashMap<OsString, Arc<Listing>>;

/// The walk's folder listings by path, so a warm walk costs a `stat` per folder and file
/// instead of reading every folder.
#[derive(Debug, Default)]
pub(crate) struct WalkCache {
    listings: Listings,
}

impl WalkCache {
    /// Forgets `dir`'s listing (after the pack changed the folder itself: a change within the
    /// same tick as the last listing must still be seen).
    pub(crate) fn forget(&mut self, dir: &Path) {
        self.listings.remove(dir.as_os_str());
    }

    /// Whether a walk now would find exactly `found` (the last walk's result, made with this
    /// cache), without reading a folder: every folder the last walk met still has its settled
    /// modification time (so no entry was added, removed or renamed in any of them), and every
    /// README and sub-spec still has its size and time. It only `stat`s and allocates nothing
    /// per spec: this is the warm path of every read, and a walk's own bookkeeping (paths,
    /// names, a new list to compare with the old) was most of a warm call. Whatever it cannot
    /// confirm, an error included, is a no, and the caller walks for real.
    pub(crate) fn still_valid(&self, found: &[Found]) -> bool {
        if found.is_empty() {
            return false; // nothing to confirm against (first walk, or forgotten)
        }
        let folders_same = self.listings.iter().all(|(dir, listing)| {
            listing.settled
                && fs::symlink_metadata(Path::new(dir)).is_ok_and(|m| mtime(&m) == listing.mtime)
        });
        folders_same
            && found.iter().all(|f| {
                let readme_same = fs::symlink_metadata(&f.readme).is_ok_and(|m| {
                    irregular(&m) == f.irregular && m.len() == f.size && mtime(&m) == f.mtime
                });
                readme_same
                    && f.sub_specs.iter().all(|sub| {
                        let path = f.readme.with_file_name(&sub.name);
                        fs::symlink_metadata(path)
                            .is_ok_and(|m| m.len() == sub.size && mtime(&m) == sub.modified)
                    })
            })
    }
}

/// What a file is in words ([`file_kind`]) when it is not a regular file.
pub(crate) fn irregular(meta: &fs::Metadata) -> Option<&'static str> {
    (!meta.is_file()).then(|| file_kind(meta.file_type()))
}

/// A file's modification time; the epoch where the file system keeps none, so the cache
/// compares something stable instead of failing.
fn mtime(meta: &fs::Metadata) -> SystemTime {
    meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Walks the specs directory as LeanSpec does: `README.md` files at most three levels below
/// it, in folders whose name starts with a digit (so `specs/README.md` and `notes/` are not
/// specs). Symbolic links are never followed: a spec is a real folder inside the directory.
///
/// Folders whose modification time is unchanged (and settled) are not read again, so a warm
/// walk is a `stat` per folder and per spec file. (Spreading those `stat`s over threads was
/// measured slower on a busy two-core machine, so the walk stays on the calling thread.)
pub(crate) fn walk(specs_dir: &Path, cache: &mut WalkCache) -> Result<Vec<Found>, SpecsError> {
    // Only the folders met by this walk stay cached, so removed ones are forgotten.
    let old = std::mem::take(&mut cache.listings);
    let mut found = Vec::new();
    let mut listings = Listings::with_capacity(old.len());
    let at = Walk {
        old: &old,
        listings: &mut listings,
        found: &mut found,
    };
    match at.visit(specs_dir.to_path_buf(), "", 1, None, true) {
        Ok(()) => {
            cache.listings = listings;
            Ok(found)
        }
        Err(e) => {
            // Keep what was known rather than re-reading every folder after one failure.
            cache.listings = old;
            Err(e)
        }
    }
}

/// A walk in progress: the previous walk's listings, and this one's.
struct Walk<'a> {
    old: &'a Listings,
    listings: &'a mut Listings,
    found: &'a mut Vec<Found>,
}

impl Walk<'_> {
    /// Reads `dir` (whose entries are at `depth` below the specs directory). `parent_kept`:
    /// the enclosing folder's listing was reused, so `dir` is the same folder as last time.
    fn visit(
        self,
        dir: PathBuf,
        rel: &str,
        depth: usize,
        enclosing: Option<&str>,
        parent_kept: bool,
    ) -> Result<(), SpecsError> {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let is_spec_dir = depth > 1 && name.starts_with(|c: char| c.is_ascii_digit());
        // A folder whose parent changed may have been replaced (removed and re-created, or
        // another moved in its place) by one with the same modification time: list it afresh.
        let cached = self.old.get(dir.as_os_str()).filter(|_| parent_kept);
        let (listing, kept) = list(&dir, depth, is_spec_dir, cached)?;
        let mut own_id = None;
        if listing.readme {
            let readme = dir.join("README.md");
            match fs::symlink_metadata(&readme) {
                // Replaced by a folder since it was listed: as a fresh listing would see.
                Ok(meta) if meta.is_dir() => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(SpecsError::io(&readme, e)),
                Ok(meta) => {
                    let sub_specs = listing
                        .subs
                        .iter()
                        .map(|sub| {
                            let meta = fs::symlink_metadata(dir.join(sub)).ok();
                            SubSpec {
                                size: meta.as_ref().map_or(0, fs::Metadata::len),
                                modified: meta.as_ref().map_or(SystemTime::UNIX_EPOCH, mtime),
                                name: sub.clone(),
                            }
                        })
                        .collect();
                    let rel_readme = format!("{rel}README.md");
                    self.found.push(Found {
                        readme,
                        in_archived_folder: rel_readme.starts_with("archived/"),
                        rel: rel_readme,
                        id: name.to_string(),
                        nested_in: enclosing.map(str::to_string),
                        irregular: irregular(&meta),
                        size: meta.len(),
                        mtime: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                        sub_specs,
                    });
                    own_id = Some(name.to_string());
                }
            }
        }
        for child in &listing.dirs {
            let child_rel = format!("{rel}{child}/");
            let enclosing = own_id.as_deref().or(enclosing);
            let at = Walk {
                old: self.old,
                listings: &mut *self.listings,
                found: &mut *self.found,
            };
            at.visit(dir.join(child), &child_rel, depth + 1, enclosing, kept)?;
        }
        self.listings.insert(dir.into_os_string(), listing);
        Ok(())
    }
}

/// `dir`'s listing, and whether it is the cached one: kept while the folder's modification
/// time is the same and was settled when listed, else read afresh.
fn list(
    dir: &Path,
    depth: usize,
    is_spec_dir: bool,
    cached: Option<&Arc<Listing>>,
) -> Result<(Arc<Listing>, bool), SpecsError> {
    let read_at = SystemTime::now();
    let mtime = fs::symlink_metadata(dir)
        .map_err(|e| SpecsError::io(dir, e))?
        .modified()
        .unwrap_or(SystemTime::UNIX_EPOCH);
    if let Some(listing) = cached
        && listing.settled
        && listing.mtime == mtime
    {
        return Ok((Arc::clone(listing), true));
    }
    let entries = fs::read_dir(dir).map_err(|e| SpecsError::io(dir, e))?;
    let mut listing = Listing {
        mtime,
        settled: settled(mtime, read_at),
        dirs: Vec::new(),
        readme: false,
        subs: Vec::new(),
    };
    for entry in entries {
        let entry = entry.map_err(|e| SpecsError::io(dir, e))?;
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let Some(file_name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if file_type.is_dir() {
            if depth < 3 {
                listing.dirs.push(file_name);
            }
        } else if is_spec_dir && file_name == "README.md" {
            // Whatever it is: a FIFO or a link in a README's place is a broken spec to report,
            // not a folder without a spec (it is never opened as one).
            listing.readme = true;
        } else if file_type.is_file() && is_spec_dir && file_name.ends_with(".md") {
            listing.subs.push(file_name);
        }
    }
    listing.dirs.sort();
    listing.subs.sort();
    Ok((Arc::new(listing), false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_read_in_both_spellings_and_candidates_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(
            Config::load(&ProjectRoot::new(root).unwrap()).unwrap(),
            Config::default()
        );
        assert_eq!(find_specs_dir(root, &Config::default(), None), None);
        fs::create_dir_all(root.join("docs/specs")).unwrap();
        fs::create_dir_all(root.join(".lean-spec/specs")).unwrap();
        assert_eq!(
            find_specs_dir(root, &Config::default(), None),
            Some(root.join(".lean-spec/specs"))
        );
        fs::write(
            root.join(".lean-spec/config.yaml"),
            "specs_dir: docs/specs\nvalidation:\n  max_lines: 10\nunknown: 1\n",
        )
        .unwrap();
        let config = Config::load(&ProjectRoot::new(root).unwrap()).unwrap();
        assert_eq!(config.specs_dir.as_deref(), Some("docs/specs"));
        assert_eq!(config.limits.max_lines, 10);
        assert_eq!(config.limits.warn_lines, 200);
        assert_eq!(
            find_specs_dir(root, &config, None),
            Some(root.join("docs/specs"))
        );
        fs::write(
            root.join(".lean-spec/config.json"),
            r#"{"specsDir": "nowhere", "draftStatus": {"enabled": true}, "templates": {"default": "t.md"}}"#,
        )
        .unwrap();
        let config = Config::load(&ProjectRoot::new(root).unwrap()).unwrap();
        assert!(config.draft_status);
        assert_eq!(config.default_template.as_deref(), Some("t.md"));
        assert_eq!(find_specs_dir(root, &config, None), None);
        assert_eq!(
            find_specs_dir(root, &config, Some("docs/specs")),
            Some(root.join("docs/specs"))
        );
        fs::write(root.join(".lean-spec/config.json"), "{oops").unwrap();
        let err = Config::load(&ProjectRoot::new(root).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("config.json: key must be a string at line 1 column 2"),
            "{err}"
        );
    }
}
