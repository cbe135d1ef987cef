//! The parse cache and the snapshot of all specs.
//!
//! Every read first checks the last walk against the disk (`WalkCache::still_valid`: a `stat`
//! per folder and per spec file, nothing else); when it holds, the previous snapshot — specs
//! sorted, parents resolved, children and dependents indexed, and the list and stats answers
//! once made — is handed out again as it is, so a warm `spec_list` over a thousand specs costs
//! those `stat`s and a copy of the answer. Otherwise the specs directory is walked, re-reading
//! only folders whose modification time moved (see `discovery::walk`) and re-parsing only the
//! READMEs whose size or modification time changed. Times younger than `discovery::SETTLE`
//! are not trusted: such files and folders are read again on every call until they settle.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use serde_json::Value;
use sha2::{Digest, Sha256};
use toolmux_workspace::ProjectRoot;

use crate::discovery::{self, Found, WalkCache};
use crate::error::SpecsError;
use crate::file::{self, Capped};
use crate::frontmatter;
use crate::model::{BrokenSpec, Doc, SearchText, Spec};

/// All specs at one moment.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Changes whenever any spec file (README or sub-spec) is added, removed or changed.
    pub version: u64,
    /// Every readable spec, in LeanSpec's order: by number, then folder name.
    pub specs: Vec<Spec>,
    /// Spec files whose frontmatter cannot be read, with the reason.
    pub broken: Vec<BrokenSpec>,
    /// Each spec's position in `specs`, by id.
    positions: HashMap<String, usize>,
    children: HashMap<String, Vec<usize>>,
    required_by: HashMap<String, Vec<usize>>,
    /// Answers that depend on nothing but the specs, made on first use and kept with the
    /// snapshot, so a warm call over an unchanged directory does only its own work.
    pub(crate) derived: Derived,
}

/// What the read tools derive from a whole snapshot.
#[derive(Debug, Default)]
pub(crate) struct Derived {
    /// `spec_list`'s row for each spec, in spec order.
    pub(crate) rows: OnceLock<Vec<Value>>,
    /// `spec_list` without filters.
    pub(crate) list: OnceLock<(Value, String)>,
    /// `spec_stats`.
    pub(crate) stats: OnceLock<(Value, String)>,
}

impl Snapshot {
    /// The spec with exactly this id.
    pub fn get(&self, id: &str) -> Option<&Spec> {
        self.positions.get(id).map(|&i| &self.specs[i])
    }

    /// Finds a spec the way the pack documents it: the exact folder name; else the number
    /// (`42` and `042` alike); else a fragment of the folder name that only one spec has.
    /// A broken spec that matches is an error naming its file and line. Unlike LeanSpec,
    /// which takes whichever match its directory walk meets first, an ambiguous reference is
    /// refused with the candidates.
    pub fn lookup<'a>(&'a self, reference: &str) -> Result<&'a Spec, SpecsError> {
        let reference = reference.trim().trim_end_matches('/');
        let reference = reference
            .strip_suffix("/README.md")
            .unwrap_or(reference)
            .rsplit('/')
            .next()
            .unwrap_or(reference);
        if reference.is_empty() {
            return Err(SpecsError::Invalid("an empty spec reference".into()));
        }
        let all = || {
            self.specs
                .iter()
                .map(|s| (s.id.as_str(), Hit::Spec(s)))
                .chain(self.broken.iter().map(|b| (b.id.as_str(), Hit::Broken(b))))
        };
        let pick = |hits: Vec<(&'a str, Hit<'a>)>| pick(reference, hits);
        if let Some(found) = pick(all().filter(|(id, _)| *id == reference).collect()) {
            return found;
        }
        if reference.bytes().all(|b| b.is_ascii_digit())
            && let Ok(number) = reference.parse::<u32>()
        {
            let hits = all()
                .filter(|(id, _)| number_of(id) == Some(number))
                .collect();
            if let Some(found) = pick(hits) {
                return found;
            }
        }
        let lower = reference.to_lowercase();
        let hits = all()
            .filter(|(id, _)| id.to_lowercase().contains(&lower))
            .collect();
        pick(hits).unwrap_or_else(|| Err(SpecsError::NotFound(reference.to_string())))
    }

    /// The specs whose (resolved) parent is `id`, in order.
    pub fn children(&self, id: &str) -> Vec<&Spec> {
        self.children
            .get(id)
            .map(|ix| ix.iter().map(|&i| &self.specs[i]).collect())
            .unwrap_or_default()
    }

    /// The specs that list `id` in `depends_on`, in order.
    pub fn required_by(&self, id: &str) -> Vec<&Spec> {
        self.required_by
            .get(id)
            .map(|ix| ix.iter().map(|&i| &self.specs[i]).collect())
            .unwrap_or_default()
    }
}

/// A spec or a broken spec that a reference matched.
enum Hit<'a> {
    Spec(&'a Spec),
    Broken(&'a BrokenSpec),
}

/// The one match, an ambiguity, or nothing.
fn pick<'a>(
    reference: &str,
    hits: Vec<(&'a str, Hit<'a>)>,
) -> Option<Result<&'a Spec, SpecsError>> {
    match hits.len() {
        0 => None,
        1 => Some(match hits.into_iter().next() {
            Some((_, Hit::Spec(s))) => Ok(s),
            Some((_, Hit::Broken(b))) => Err(broken_error(b)),
            None => Err(SpecsError::NotFound(reference.to_string())),
        }),
        _ => Some(Err(SpecsError::Ambiguous {
            reference: reference.to_string(),
            candidates: hits.iter().map(|(id, _)| id.to_string()).collect(),
        })),
    }
}

/// The error for a spec whose frontmatter cannot be read.
pub(crate) fn broken_error(b: &BrokenSpec) -> SpecsError {
    SpecsError::Frontmatter {
        path: PathBuf::from(&b.rel_file),
        line: b.line,
        message: b.message.clone(),
    }
}

/// The number prefix of a folder name.
pub(crate) fn number_of(id: &str) -> Option<u32> {
    id.split('-').next()?.parse().ok()
}

/// Why a README is not a spec: the line, the validation rule it breaks and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Unreadable {
    line: usize,
    rule: &'static str,
    message: String,
}

impl Unreadable {
    fn frontmatter((line, message): (usize, String)) -> Self {
        Self {
            line,
            rule: "frontmatter",
            message,
        }
    }
}

/// A README's parse: the document, or why it is not a spec.
type Parsed = Result<Arc<Doc>, Unreadable>;

/// One README's parse, valid while its size and modification time stay the same.
#[derive(Debug)]
struct Entry {
    size: u64,
    mtime: SystemTime,
    /// The modification time was settled when the file was read (see
    /// [`discovery::settled`]); else a same-size change in the same clock tick could hide
    /// behind it, so the file is read again on the next call.
    settled: bool,
    parsed: Parsed,
}

#[derive(Debug, Default)]
struct State {
    /// By the README's path bytes (see `discovery::Listings` for why not by `Path`).
    entries: HashMap<OsString, Entry>,
    listings: WalkCache,
    walk: Vec<Found>,
    snapshot: Arc<Snapshot>,
    version: u64,
    /// Every README in `walk` was read with a settled time, so an unchanged size and time
    /// mean unchanged text (see `Entry::settled`).
    all_settled: bool,
}

/// The specs of one directory, cached.
#[derive(Debug)]
pub(crate) struct Store {
    specs_dir: PathBuf,
    /// What spec files are opened beneath.
    project: ProjectRoot,
    state: Mutex<State>,
}

impl Store {
    pub(crate) fn new(specs_dir: PathBuf, project: ProjectRoot) -> Self {
        Self {
            specs_dir,
            project,
            state: Mutex::new(State::default()),
        }
    }

    /// The project root spec files are read beneath.
    pub(crate) fn project(&self) -> &ProjectRoot {
        &self.project
    }

    pub(crate) fn specs_dir(&self) -> &Path {
        &self.specs_dir
    }

    /// The current snapshot, re-parsing only what changed.
    pub(crate) fn snapshot(&self) -> Result<Arc<Snapshot>, SpecsError> {
        let mut guard = self
            .state
            .lock()
            .map_err(|_| SpecsError::Invalid("the spec cache is poisoned by a crash".into()))?;
        let state = &mut *guard;
        if state.all_settled && state.listings.still_valid(&state.walk) {
            return Ok(Arc::clone(&state.snapshot));
        }
        let walk = discovery::walk(&self.specs_dir, &mut state.listings)?;
        let mut changed = state.version == 0 || state.walk != walk;
        for found in &walk {
            let known = state
                .entries
                .get(found.readme.as_os_str())
                .filter(|e| e.size == found.size && e.mtime == found.mtime);
            if known.is_some_and(|e| e.settled) {
                continue;
            }
            let read_at = SystemTime::now();
            let parsed = read_doc(&self.project, found)?;
            // A file read again only because its time was not yet settled keeps its parse
            // (and the snapshot its version) when its text is the same.
            let parsed = match known {
                Some(e) if same_parse(&e.parsed, &parsed) => e.parsed.clone(),
                _ => {
                    changed = true;
                    parsed
                }
            };
            state.entries.insert(
                found.readme.clone().into_os_string(),
                Entry {
                    size: found.size,
                    mtime: found.mtime,
                    settled: discovery::settled(found.mtime, read_at),
                    parsed,
                },
            );
        }
        state.all_settled = walk.iter().all(|found| {
            state
                .entries
                .get(found.readme.as_os_str())
                .is_some_and(|e| e.settled)
        });
        if !changed {
            return Ok(Arc::clone(&state.snapshot));
        }
        let docs = walk
            .iter()
            .map(|found| {
                state
                    .entries
                    .get(found.readme.as_os_str())
                    .map(|e| e.parsed.clone())
            })
            .collect();
        // Forget files that are gone.
        let live: std::collections::HashSet<&std::ffi::OsStr> =
            walk.iter().map(|f| f.readme.as_os_str()).collect();
        state
            .entries
            .retain(|path, _| live.contains(path.as_os_str()));
        state.version += 1;
        let snapshot = build(&walk, docs, state.version);
        state.snapshot = Arc::new(snapshot);
        state.walk = walk;
        Ok(Arc::clone(&state.snapshot))
    }

    /// Drops one README, its folder's listing and the folder's parent's from the cache
    /// (after the pack wrote or created it: a write within the same timestamp tick and of the
    /// same size must still be seen).
    pub(crate) fn forget(&self, readme: &Path) {
        if let Ok(mut state) = self.state.lock() {
            state.entries.remove(readme.as_os_str());
            for dir in readme.ancestors().skip(1).take(2) {
                state.listings.forget(dir);
            }
            state.walk.clear();
            state.all_settled = false;
        }
    }
}

/// Whether two parses of a README are of the same text (a broken one: the same problem,
/// which is all a snapshot shows of it).
fn same_parse(a: &Parsed, b: &Parsed) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => a.raw == b.raw,
        (Err(a), Err(b)) => a == b,
        _ => false,
    }
}

/// Reads and parses one README, never more of it than the pack reads (see `file`). A file
/// that cannot be opened is an error of the call; one that is not a valid spec (not a regular
/// file, too large, not text, bad frontmatter) is a broken spec, reported with its line. One
/// the walk found not to be a regular file is not opened at all.
fn read_doc(project: &ProjectRoot, found: &Found) -> Result<Parsed, SpecsError> {
    let unreadable = |rule, message| {
        Ok(Err(Unreadable {
            line: 1,
            rule,
            message,
        }))
    };
    if let Some(kind) = found.irregular {
        return unreadable("file", file::not_regular(kind));
    }
    match file::read_spec_file(project, &found.readme)? {
        Capped::Text(raw) => Ok(parse_doc(raw, &found.id)
            .map(Arc::new)
            .map_err(Unreadable::frontmatter)),
        Capped::TooLarge(size) => unreadable("size", file::too_large(size)),
        Capped::NotUtf8 => unreadable("frontmatter", "the file is not valid UTF-8".into()),
        Capped::NotRegular(kind) => unreadable("file", file::not_regular(kind)),
    }
}

/// Parses a README's text.
pub(crate) fn parse_doc(raw: String, id: &str) -> Result<Doc, (usize, String)> {
    let split = frontmatter::split(&raw)?;
    let meta = frontmatter::parse_meta(&split)?;
    let body_start = split.body_start;
    let body_line = raw[..body_start].matches('\n').count() + 1;
    let body = &raw[body_start..];
    let title = body
        .lines()
        .find(|l| l.starts_with("# "))
        .map(|l| l.trim_start_matches("# ").to_string())
        .unwrap_or_else(|| id.to_string());
    let tags: Vec<String> = meta.tags.iter().map(|t| t.to_ascii_lowercase()).collect();
    let search = SearchText {
        title: title.to_ascii_lowercase(),
        path: id.to_ascii_lowercase(),
        tags_text: tags.join(" "),
        tags,
        content: body.to_ascii_lowercase(),
    };
    let content_hash = hash_body(body);
    Ok(Doc {
        title,
        meta,
        body_start,
        body_line,
        content_hash,
        search,
        raw,
        tokens: std::sync::OnceLock::new(),
    })
}

/// The hex SHA-256 of a body: LeanSpec's content hash.
pub(crate) fn hash_body(body: &str) -> String {
    let digest = Sha256::digest(body.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn build(walk: &[Found], docs: Vec<Option<Parsed>>, version: u64) -> Snapshot {
    let mut specs = Vec::new();
    let mut broken = Vec::new();
    for (found, doc) in walk.iter().zip(docs) {
        match doc {
            Some(Ok(doc)) => specs.push(Spec {
                id: found.id.clone(),
                number: number_of(&found.id),
                file: found.readme.clone(),
                rel_file: found.rel.clone(),
                in_archived_folder: found.in_archived_folder,
                nested_in: found.nested_in.clone(),
                sub_specs: found.sub_specs.clone(),
                parent: doc.meta.parent.clone(),
                doc,
            }),
            Some(Err(Unreadable {
                line,
                rule,
                message,
            })) => broken.push(BrokenSpec {
                id: found.id.clone(),
                rel_file: found.rel.clone(),
                line,
                rule,
                message,
            }),
            None => {}
        }
    }
    specs.sort_by(|a, b| {
        let an = a.number.unwrap_or(u32::MAX);
        let bn = b.number.unwrap_or(u32::MAX);
        an.cmp(&bn).then_with(|| a.id.cmp(&b.id))
    });
    broken.sort_by(|a, b| a.rel_file.cmp(&b.rel_file));
    // LeanSpec resolves a `parent` that is no spec's id to an id containing it (or contained
    // in it); it takes the first of an unordered set, we take the first in order.
    // Two folders can share an id (one under `archived/`, or nested): the first in order is the
    // one every lookup finds, as the listing and the resources show it.
    let mut positions: HashMap<String, usize> = HashMap::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        positions.entry(spec.id.clone()).or_insert(i);
    }
    let ids: Vec<String> = specs.iter().map(|s| s.id.clone()).collect();
    for spec in &mut specs {
        if let Some(parent) = spec.parent.clone()
            && !positions.contains_key(&parent)
            && let Some(resolved) = ids
                .iter()
                .find(|id| id.contains(parent.as_str()) || parent.contains(id.as_str()))
        {
            spec.parent = Some(resolved.clone());
        }
    }
    let mut children: HashMap<String, Vec<usize>> = HashMap::new();
    let mut required_by: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, spec) in specs.iter().enumerate() {
        if let Some(parent) = &spec.parent {
            children.entry(parent.clone()).or_default().push(i);
        }
        for dep in &spec.meta().depends_on {
            if dep != &spec.id {
                let list = required_by.entry(dep.clone()).or_default();
                if !list.contains(&i) {
                    list.push(i);
                }
            }
        }
    }
    Snapshot {
        version,
        specs,
        broken,
        positions,
        children,
        required_by,
        derived: Derived::default(),
    }
}
