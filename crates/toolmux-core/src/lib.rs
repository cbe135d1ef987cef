//! The heart of toolmux: the tool model, the versioned catalog, and the one pipeline every call
//! goes through, whichever channel it comes from.
//!
//! This crate deliberately knows no wire format: no MCP, HTTP or provider types appear here.
//! Channels (the MCP server, the REST API, chat, code mode) convert their wire types into the
//! types below at their edge, so that a call behaves the same everywhere.

mod approval;
mod backchannel;
mod bytes;
mod catalog;
mod context;
mod duration;
mod endpoint;
mod error;
mod hub;
mod human;
mod input;
mod model;
mod overrides;
mod page;
mod pattern;
mod policy;
pub mod process_env;
mod record;
mod relay;
mod resources;
mod rights;
mod scope;
mod secret;
mod shape;
mod source;
mod validate;
mod yaml_bounds;

pub use approval::{
    AnswerApprovalError, AnswerError, AnswerSchema, Approval, ApprovalQueue, ApprovalRequest,
    ApprovalScope, ApprovalTemplate, Approver, AskError, Asker, CannotAsk, HumanAnswer,
    HumanQuestion, MAX_ANSWER_BYTES, MAX_ANSWER_DEPTH, MAX_FORM_SCHEMA_BYTES,
    MAX_FORM_SCHEMA_DEPTH, NoSuchApproval, Outcome as WaitOutcome, PendingApproval, PendingInput,
    PersonEvent, PersonEvents, Resolved, TemplateError, TurnEnd, WaitingItem, Watched,
    approve_within, ask_within, field_value,
};
pub use backchannel::{Backchannel, BackchannelError, LogLevel, LogMessage, Progress};
pub use bytes::human_bytes;
pub use catalog::{Catalog, Filters, HiddenReason, SourceInfo, ToolEntry, ToolOverride, ToolView};
pub use context::{CallContext, Channel};
pub use duration::{DurationParseError, format_duration, parse_duration};
pub use endpoint::{Endpoint, EndpointFilter, Endpoints, unknown_endpoint};
pub use error::{CallError, SourceError};
pub use hub::{BatchCall, CallReport, Hub, HubSettings, WeakHub};
pub use human::{
    ANSWER_FIELD, HUMAN_INPUT_TOOL, HUMAN_SOURCE_ID, HumanInputSource, fill_form_defaults,
    free_text_schema,
};
pub use input::{arguments_of, input_schema, parse_arguments, value_kind};
pub use model::{
    Content, ContentBody, EmbeddedResource, RateLimit, ToolAnnotations, ToolDescriptor,
    ToolErrorKind, ToolResult,
};
pub use overrides::{
    ArgumentOverride, DerivedTool, DescriptionChange, Presentation, StaleOverride,
};
pub use page::Page;
pub use pattern::{NamePattern, PatternError, admitted_by};
pub use policy::{Policy, PolicyOrigin, PolicyRules};
pub use record::{ExecutionRecord, ExecutionSink, NullSink, Outcome};
pub use relay::{RelayError, Unknown};
pub use resources::{
    BuiltinResources, PromptContents, PromptInfo, RESOURCE_POLL_INTERVAL, ResourceContents,
    ResourceError, ResourceInfo, ResourceProvider,
};
pub use rights::{Principals, Rights, Role, UNKNOWN_CALLER};
pub use scope::{
    CALL_TOOL, CODE_MODE_TOOLS, DESCRIBE_TOOL, DISCOVERY_TOOLS, RUN_CODE, SEARCH_TOOLS, ToolScope,
    entry_points,
};
pub use secret::{is_secret, is_secret_name};
pub use shape::{ResultShaper, ShapedCall};
pub use source::{
    ChangeNotifier, Source, SourceCall, SourceKind, SourceState, SourceStatus, run_blocking,
};
pub use validate::{CompiledSchema, Violation, serializes_longer_than};
pub use yaml_bounds::{MAX_YAML_BYTES, MAX_YAML_DEPTH, YamlBoundsError, check_yaml_bounds};
