//! The tools' inputs, one struct each (`spec_create`'s and `spec_update`'s are in `update`):
//! each tool parses its arguments into its struct and its `inputSchema` is derived from it
//! (`toolmux_core::input_schema`). [`SpecFilter`] and [`SpecBoard`] are public because the
//! same structs are `GET /api/specs`'s query and `toolmux specs list`'s flags (with the `cli`
//! feature), so a filter added here appears on every surface.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::model::{Priority, Status};
use crate::update::LinkType;

/// The canonical statuses, as a filter or a new spec takes them.
pub(crate) fn statuses() -> Vec<&'static str> {
    Status::ALL.map(Status::as_str).to_vec()
}

/// The canonical priorities.
pub(crate) fn priorities() -> Vec<&'static str> {
    Priority::ALL.map(Priority::as_str).to_vec()
}

/// The statuses `spec_update` takes: the canonical ones and LeanSpec's aliases.
pub(crate) fn written_statuses() -> Vec<&'static str> {
    Status::WRITTEN.map(|(form, _)| form).to_vec()
}

/// The priorities `spec_update` takes, aliases included.
pub(crate) fn written_priorities() -> Vec<&'static str> {
    Priority::WRITTEN.map(|(form, _)| form).to_vec()
}

/// clap's checks of the canonical values, so a typo is a usage error that lists them.
#[cfg(feature = "cli")]
pub mod cli {
    use clap::builder::PossibleValuesParser;

    /// The canonical statuses.
    pub fn status_parser() -> PossibleValuesParser {
        PossibleValuesParser::new(super::statuses())
    }

    /// The canonical priorities.
    pub fn priority_parser() -> PossibleValuesParser {
        PossibleValuesParser::new(super::priorities())
    }
}

/// The filters of `spec_list` and `spec_board` (LeanSpec 0.3.0's: exact, canonical values).
/// Every filter that is set must match.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct SpecFilter {
    /// Only specs with this status. Archived specs are never listed (as in LeanSpec 0.3.0).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = statuses()))]
    #[cfg_attr(feature = "cli", arg(short, long, value_parser = cli::status_parser()))]
    pub status: Option<String>,
    /// Only specs with all of these tags (exact, case-sensitive); see `tagMatch`. On the
    /// command line and in a query string, comma-separated values are several tags.
    #[serde(
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "list_or_commas"
    )]
    #[schemars(with = "Vec<String>")]
    #[cfg_attr(
        feature = "cli",
        arg(
            short,
            long,
            visible_alias = "tag",
            value_name = "TAG",
            value_delimiter = ','
        )
    )]
    pub tags: Vec<String>,
    /// `all` (default): a spec must have every tag in `tags`; `any`: one is enough (LeanSpec
    /// 0.3.0's `-t a -t b`).
    #[cfg_attr(
        feature = "cli",
        arg(
            long,
            value_enum,
            default_value = "all",
            alias = "any-tag",
            num_args = 0..=1,
            default_missing_value = "any"
        )
    )]
    pub tag_match: TagMatch,
    /// Only specs with this priority.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = priorities()))]
    #[cfg_attr(feature = "cli", arg(short, long, value_parser = cli::priority_parser()))]
    pub priority: Option<String>,
    /// Only specs assigned to exactly this person.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "cli", arg(short, long))]
    pub assignee: Option<String>,
    /// Only children of this spec (number, folder name or fragment).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "cli", arg(long, value_name = "SPEC"))]
    pub parent: Option<String>,
}

/// How several tags of a filter match a spec: `all` of them (the rule, and what a
/// filter that narrows means), or `any` one (LeanSpec 0.3.0's rule).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum TagMatch {
    #[default]
    All,
    Any,
}

/// A list of strings from JSON (an array) or from a query string (`a,b`: blanks around each
/// value dropped, empty ones left out).
fn list_or_commas<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrText {
        List(Vec<String>),
        Text(String),
    }
    // A query string's list arrives already split at its commas (`tags=auth,%20billing`), so
    // items are trimmed whichever way they came.
    let items = match ListOrText::deserialize(deserializer)? {
        ListOrText::List(list) => list,
        ListOrText::Text(text) => text.split(',').map(String::from).collect(),
    };
    Ok(items
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect())
}

/// `spec_board`'s arguments: what to group by, and the filters of [`SpecFilter`].
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SpecBoard {
    /// What to group by. Default `status`.
    #[serde(default)]
    #[cfg_attr(
        feature = "cli",
        arg(short, long, value_enum, default_value = "status")
    )]
    pub group_by: GroupBy,
    #[serde(flatten)]
    #[cfg_attr(feature = "cli", command(flatten))]
    pub filter: SpecFilter,
}

/// What `spec_board` groups by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    #[default]
    Status,
    Priority,
    Assignee,
    #[cfg_attr(feature = "cli", value(alias = "tags"))]
    Tag,
    Parent,
}

/// `spec_view`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ViewArgs {
    /// The spec: its number (`42` or `042`), folder name, or a fragment of the name only one spec has.
    pub spec: String,
}

/// `spec_search`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    /// The query, e.g. `auth NOT legacy`, `tag:api status:planned`, `"token refresh"`, `gatway~2`.
    pub query: String,
    /// The most results. Default 10.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u64,
}

fn default_limit() -> u64 {
    10
}

/// `spec_validate`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ValidateArgs {
    /// One spec; all when absent.
    pub spec: Option<String>,
}

/// `spec_tokens`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TokensArgs {
    /// One spec.
    pub spec: Option<String>,
    /// A file path relative to the project root (instead of a spec).
    pub file: Option<String>,
}

/// `spec_stats` takes no arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoArgs {}

/// What `spec_relationships` does.
#[derive(Deserialize, Serialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LinkAction {
    #[default]
    View,
    Add,
    Remove,
}

/// `spec_relationships`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RelationshipArgs {
    /// The spec: its number (`42` or `042`), folder name, or a fragment of the name only one spec has.
    pub spec: String,
    /// Default `view`.
    #[serde(default)]
    pub action: LinkAction,
    /// The link (for add and remove).
    #[serde(rename = "type")]
    pub link: Option<LinkType>,
    /// The other spec (for add and remove).
    pub target: Option<String>,
}
