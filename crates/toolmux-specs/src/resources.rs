//! Specs as resources: `spec://NNN-name` for each spec's README, and
//! `spec://NNN-name/FILE.md` for each of its sub-spec files, listed and read from the same
//! cached snapshot the tools use, so a listing over an unchanged directory re-parses nothing.
//!
//! Sub-specs are resources of their own because they are part of the spec (LeanSpec's view
//! counts them, a design often lives in `DESIGN.md`) and a client that attaches a spec by URI
//! should be able to attach them too; a URI path under the spec's own URI says whose they are.
//! The listing shows what a person picks a spec by — name, title, status and priority — and
//! no size, so that `resources/list_changed` means a spec came, went, was renamed or changed
//! its title, status or priority, while any other edit of its text is `resources/updated` for
//! whoever subscribed to it. A URI names one thing exactly: the folder name, never a number or a fragment as the tools
//! accept. Specs whose frontmatter cannot be read are left out, as `spec_list` leaves them out
//! of its list (it reports them as errors).

use toolmux_core::{ResourceContents, ResourceError, ResourceInfo, ResourceProvider};

use crate::SpecsSource;
use crate::file::MAX_SPEC_FILE_BYTES;
use crate::model::Spec;
use crate::tools::SOURCE_ID;

/// The URI scheme of spec resources.
pub const SPEC_SCHEME: &str = "spec";

/// What every spec resource holds.
const MARKDOWN: &str = "text/markdown";

/// The URI of a spec's README.
pub fn spec_uri(id: &str) -> String {
    format!("{SPEC_SCHEME}://{id}")
}

impl ResourceProvider for SpecsSource {
    fn source(&self) -> &str {
        SOURCE_ID
    }

    fn scheme(&self) -> &str {
        SPEC_SCHEME
    }

    fn read_tool(&self) -> &str {
        "spec_view"
    }

    fn resources(&self) -> Result<Vec<ResourceInfo>, ResourceError> {
        let snapshot = self.snapshot().map_err(failed)?;
        let mut seen = std::collections::HashSet::new();
        let mut resources = Vec::new();
        // Two folders of the same name (one under `archived/`) would be two resources with one
        // URI; the first in spec order is the one a read finds.
        for spec in snapshot.specs.iter().filter(|s| seen.insert(s.id.as_str())) {
            resources.push(ResourceInfo {
                uri: spec_uri(&spec.id),
                name: spec.id.clone(),
                title: Some(spec.title().to_string()),
                description: Some(describe(spec)),
                mime_type: Some(MARKDOWN.into()),
                size: None,
            });
            for sub in &spec.sub_specs {
                resources.push(ResourceInfo {
                    uri: format!("{}/{}", spec_uri(&spec.id), sub.name),
                    name: format!("{}/{}", spec.id, sub.name),
                    title: Some(format!("{}: {}", spec.title(), sub.name)),
                    description: Some(format!("A sub-spec file of spec {}.", spec.id)),
                    mime_type: Some(MARKDOWN.into()),
                    size: None,
                });
            }
        }
        Ok(resources)
    }

    fn read(&self, uri: &str) -> Result<Vec<ResourceContents>, ResourceError> {
        let not_found = || ResourceError::NotFound(format!("no spec has the resource `{uri}`"));
        let path = uri
            .strip_prefix(SPEC_SCHEME)
            .and_then(|rest| rest.strip_prefix("://"))
            .ok_or_else(not_found)?
            .trim_end_matches('/');
        let (id, file) = match path.split_once('/') {
            Some((id, file)) => (id, Some(file)),
            None => (path, None),
        };
        let snapshot = self.snapshot().map_err(failed)?;
        let Some(spec) = snapshot.get(id) else {
            // A spec the pack cannot read (too large, bad frontmatter) says why, as `spec_view`
            // does, rather than seeming absent.
            return Err(match snapshot.broken.iter().find(|b| b.id == id) {
                Some(b) => ResourceError::Failed(format!(
                    "cannot read `{uri}`: {}",
                    crate::store::broken_error(b)
                )),
                None => not_found(),
            });
        };
        let text = match file {
            None => spec.doc.raw.clone(),
            Some(file) => {
                // Only a file the walk found (a regular `*.md` beside the README, never a
                // link), read beneath the project root as the workspace tools read.
                let sub = spec
                    .sub_specs
                    .iter()
                    .find(|s| s.name == file)
                    .ok_or_else(not_found)?;
                let rel = spec
                    .file
                    .parent()
                    .and_then(|folder| folder.strip_prefix(self.root()).ok())
                    .map(|folder| folder.join(&sub.name))
                    .and_then(|path| path.to_str().map(str::to_string))
                    .ok_or_else(not_found)?;
                self.inner
                    .project
                    .read_text(&rel, MAX_SPEC_FILE_BYTES)
                    .map_err(|e| ResourceError::Failed(format!("cannot read `{uri}`: {e}")))?
            }
        };
        Ok(vec![ResourceContents {
            uri: uri.to_string(),
            mime_type: Some(MARKDOWN.into()),
            text,
        }])
    }

    fn version(&self) -> Result<u64, ResourceError> {
        SpecsSource::version(self).map_err(failed)
    }
}

/// The spec's status and priority, as a listing shows them.
fn describe(spec: &Spec) -> String {
    let mut text = format!("Spec, status {}", spec.status());
    if let Some(priority) = spec.meta().priority {
        text.push_str(&format!(", priority {priority}"));
    }
    text.push('.');
    text
}

fn failed(error: crate::SpecsError) -> ResourceError {
    ResourceError::Failed(error.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("folders");
        std::fs::write(path, text).expect("written");
    }

    fn readme(title: &str, status: &str) -> String {
        format!(
            "---\nstatus: {status}\ncreated: 2025-01-02\npriority: high\n---\n\n# {title}\n\nBody.\n"
        )
    }

    fn pack(root: &Path) -> SpecsSource {
        SpecsSource::open_with(root, None)
            .expect("opens")
            .expect("a specs directory")
    }

    #[test]
    fn each_spec_and_sub_spec_is_a_markdown_resource_with_its_title_and_status() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            "specs/001-first/README.md",
            &readme("First", "planned"),
        );
        write(dir.path(), "specs/001-first/DESIGN.md", "# Design\n");
        write(
            dir.path(),
            "specs/002-second/README.md",
            &readme("Second", "in-progress"),
        );
        let pack = pack(dir.path());

        let listed = ResourceProvider::resources(&pack).expect("lists");
        let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "spec://001-first",
                "spec://001-first/DESIGN.md",
                "spec://002-second"
            ]
        );
        assert_eq!(listed[0].name, "001-first");
        assert_eq!(listed[0].title.as_deref(), Some("First"));
        assert_eq!(
            listed[0].description.as_deref(),
            Some("Spec, status planned, priority high.")
        );
        assert_eq!(listed[0].mime_type.as_deref(), Some("text/markdown"));
        assert_eq!(
            listed[2].description.as_deref(),
            Some("Spec, status in-progress, priority high.")
        );

        let read = pack.read("spec://001-first").expect("reads");
        assert_eq!(read[0].text, readme("First", "planned"));
        assert_eq!(read[0].uri, "spec://001-first");
        let design = pack.read("spec://001-first/DESIGN.md").expect("reads");
        assert_eq!(design[0].text, "# Design\n");
    }

    #[test]
    fn a_uri_names_one_spec_exactly_or_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            "specs/001-first/README.md",
            &readme("First", "planned"),
        );
        let pack = pack(dir.path());
        for uri in [
            "spec://001",
            "spec://first",
            "spec://999-none",
            "spec://001-first/README.md",
            "spec://001-first/../../secret.md",
            "file://001-first",
        ] {
            assert!(
                matches!(pack.read(uri), Err(ResourceError::NotFound(_))),
                "{uri}: {:?}",
                pack.read(uri)
            );
        }
    }

    #[test]
    fn the_version_moves_when_a_spec_is_added() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(
            dir.path(),
            "specs/001-first/README.md",
            &readme("First", "planned"),
        );
        let pack = pack(dir.path());
        let before = ResourceProvider::version(&pack).expect("a version");
        write(
            dir.path(),
            "specs/002-second/README.md",
            &readme("Second", "planned"),
        );
        assert_ne!(ResourceProvider::version(&pack).expect("a version"), before);
    }
}
