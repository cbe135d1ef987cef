//! The prompt a session's runner gets: the caller's text, or one built from specs as LeanSpec
//! builds it ("Implement the following specs:" then each spec's README), read through the spec
//! pack so that its lookup rules (number, folder name, unique fragment) apply.

use toolmux_specs::SpecsSource;

use crate::error::SessionError;

/// LeanSpec's default template; `{specs}` is replaced by the specs' text.
pub const DEFAULT_TEMPLATE: &str = "Implement the following specs:\n\n{specs}";

/// The prompt for `prompt` and `specs`, with the ids of the specs it names. With specs, a
/// prompt holding `{specs}` is their template; another prompt comes before them; no prompt
/// takes [`DEFAULT_TEMPLATE`].
pub fn build(
    prompt: Option<&str>,
    specs: &[String],
    source: Option<&SpecsSource>,
) -> Result<(String, Vec<String>), SessionError> {
    let prompt = prompt.map(str::trim).filter(|p| !p.is_empty());
    if specs.is_empty() {
        let prompt =
            prompt.ok_or_else(|| SessionError::Invalid("give a `prompt` or `specs`".into()))?;
        return Ok((prompt.to_string(), Vec::new()));
    }
    let source = source.ok_or_else(|| {
        SessionError::Invalid(
            "`specs` names specs, but this project has no specs directory (specs/, docs/specs/ \
             or where .lean-spec/config.json says)"
                .into(),
        )
    })?;
    let mut ids = Vec::new();
    let mut text = String::new();
    for reference in specs {
        let spec = source
            .spec(reference)
            .map_err(|e| SessionError::Invalid(format!("spec `{reference}`: {e}")))?;
        let body = spec.doc.raw.get(spec.doc.body_start..).unwrap_or_default();
        let file = spec
            .file
            .strip_prefix(source.root())
            .unwrap_or(&spec.file)
            .display()
            .to_string();
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&format!(
            "## {}: {}\n\n(file: {file})\n\n{}",
            spec.id,
            spec.title(),
            body.trim_end()
        ));
        ids.push(spec.id.clone());
    }
    let built = match prompt {
        Some(p) if p.contains("{specs}") => p.replace("{specs}", &text),
        Some(p) => format!("{p}\n\n{text}"),
        None => DEFAULT_TEMPLATE.replace("{specs}", &text),
    };
    Ok((built, ids))
}
