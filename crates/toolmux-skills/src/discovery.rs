//! Where skills are found, and finding them: each root holds one folder per skill, and a folder
//! is a skill when it holds a `SKILL.md`.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::SkillError;
use crate::skill::{self, Origin, SKILL_FILE, Skill};

/// How many bundled files a skill's listing shows at most, and how deep it looks: enough for
/// `scripts/`, `references/` and `assets/`, bounded for a folder someone filled by mistake.
const MAX_FILES: usize = 200;
const MAX_DEPTH: usize = 4;

/// A folder that holds skills.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillRoot {
    /// The folder.
    pub path: PathBuf,
    /// What kind of place it is.
    pub origin: Origin,
}

/// The places skills are looked for, in precedence order: the configured paths (relative ones
/// from the project), the project's `.toolmux/skills/` then `.claude/skills/` (where Claude
/// Code keeps a project's skills, so they work here unchanged), then the user's
/// `skills/` beside `~/.config/toolmux/config.json`.
pub fn default_roots(project: &Path, configured: &[PathBuf]) -> Vec<SkillRoot> {
    let mut roots: Vec<SkillRoot> = configured
        .iter()
        .map(|p| SkillRoot {
            path: project.join(p),
            origin: Origin::Configured,
        })
        .collect();
    for dir in [".toolmux/skills", ".claude/skills"] {
        roots.push(SkillRoot {
            path: project.join(dir),
            origin: Origin::Project,
        });
    }
    if let Some(user) = toolmux_config::user_config_path()
        .as_deref()
        .and_then(Path::parent)
    {
        roots.push(SkillRoot {
            path: user.join("skills"),
            origin: Origin::User,
        });
    }
    roots
}

/// Every skill under `roots`.
#[derive(Debug, Default)]
pub struct Found {
    /// The valid skills, by name; a name is taken by its first root.
    pub skills: Vec<Skill>,
    /// The `SKILL.md` files that break the format (never offered to a model).
    pub invalid: Vec<SkillError>,
    /// Valid skills hidden by a skill of the same name in an earlier root.
    pub shadowed: Vec<PathBuf>,
}

/// Reads every root (a missing one is no error: most projects have none of them).
pub fn discover(roots: &[SkillRoot]) -> Result<Found, SkillError> {
    let mut found = Found::default();
    for root in roots {
        let entries = match fs::read_dir(&root.path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(&root.path, e)),
        };
        let mut dirs = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io(&root.path, e))?;
            let path = entry.path();
            // A project's skill folder that is a link is not followed: a cloned repository could
            // point it anywhere. The user's own and configured places may link to a shared
            // collection, as people keep them.
            let (is_dir, has_skill) = if root.origin == Origin::Project {
                let is_file =
                    fs::symlink_metadata(path.join(SKILL_FILE)).is_ok_and(|m| m.is_file());
                (entry.file_type().is_ok_and(|t| t.is_dir()), is_file)
            } else {
                (path.is_dir(), path.join(SKILL_FILE).is_file())
            };
            if is_dir && has_skill {
                dirs.push(path);
            }
        }
        dirs.sort();
        for dir in dirs {
            let file = dir.join(SKILL_FILE);
            let text = match read_skill_file(&file) {
                Ok(text) => text,
                // Too large to offer: reported like any other broken skill, the rest still load.
                Err(e @ SkillError::Invalid { .. }) => {
                    found.invalid.push(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            match skill::parse(&dir, root.origin, &text) {
                Ok(skill) if found.skills.iter().any(|s| s.name == skill.name) => {
                    found.shadowed.push(skill.file());
                }
                Ok(skill) => found.skills.push(skill),
                Err(e) => found.invalid.push(e),
            }
        }
    }
    Ok(found)
}

/// The files a skill bundles besides `SKILL.md`, relative to its folder, sorted; links are
/// listed but not followed. `true` when the listing was cut at its cap.
pub fn bundled_files(dir: &Path) -> Result<(Vec<String>, bool), SkillError> {
    let mut files = Vec::new();
    let mut cut = false;
    let mut pending = vec![(dir.to_path_buf(), 0)];
    while let Some((folder, depth)) = pending.pop() {
        for entry in fs::read_dir(&folder).map_err(|e| io(&folder, e))? {
            let entry = entry.map_err(|e| io(&folder, e))?;
            let path = entry.path();
            let file_type = entry.file_type().map_err(|e| io(&path, e))?;
            if file_type.is_dir() {
                if depth + 1 < MAX_DEPTH {
                    pending.push((path, depth + 1));
                }
                continue;
            }
            let Ok(rel) = path.strip_prefix(dir) else {
                continue;
            };
            let rel = rel.to_string_lossy().into_owned();
            if rel == SKILL_FILE {
                continue;
            }
            if files.len() == MAX_FILES {
                cut = true;
                break;
            }
            files.push(rel);
        }
    }
    files.sort();
    Ok((files, cut))
}

/// The largest `SKILL.md` read: its instructions go into a model's context whole.
const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// Reads a `SKILL.md`, refusing one over [`MAX_SKILL_BYTES`] with its file named.
fn read_skill_file(file: &Path) -> Result<String, SkillError> {
    let Some(bytes) = fs::File::open(file)
        .and_then(|f| toolmux_files::read_capped(f, MAX_SKILL_BYTES))
        .map_err(|e| io(file, e))?
    else {
        return Err(SkillError::Invalid {
            file: file.to_path_buf(),
            line: 1,
            field: None,
            message: format!("SKILL.md is larger than {} KiB", MAX_SKILL_BYTES / 1024),
        });
    };
    String::from_utf8(bytes).map_err(|e| {
        io(
            file,
            std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        )
    })
}

fn io(path: &Path, source: std::io::Error) -> SkillError {
    SkillError::Io {
        path: path.to_path_buf(),
        source,
    }
}
