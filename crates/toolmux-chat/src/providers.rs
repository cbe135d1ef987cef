//! The configured providers, by name.

use std::collections::BTreeMap;
use std::sync::Arc;

use toolmux_config::{ChatSettings, ProviderKind, Providers as ProviderSettingsMap};

use crate::error::{ChatError, ProviderError};
use crate::genai_provider::GenaiProvider;
use crate::provider::ChatProvider;

/// Every configured provider, and which one a chat uses when it names none.
#[derive(Clone, Default)]
pub struct Providers {
    entries: BTreeMap<String, (ProviderKind, Arc<dyn ChatProvider>)>,
    default: Option<String>,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Providers")
            .field("names", &self.entries.keys().collect::<Vec<_>>())
            .field("default", &self.default)
            .finish()
    }
}

impl Providers {
    /// The providers of a configuration.
    pub fn from_config(
        settings: &ProviderSettingsMap,
        chat: &ChatSettings,
    ) -> Result<Self, ProviderError> {
        let mut providers = Self::default();
        for (name, settings) in settings {
            providers.insert(
                name,
                settings.kind,
                Arc::new(GenaiProvider::new(name, settings)?),
            );
        }
        providers.default = chat.default_provider.clone();
        Ok(providers)
    }

    /// Adds (or replaces) a provider.
    pub fn insert(&mut self, name: &str, kind: ProviderKind, provider: Arc<dyn ChatProvider>) {
        self.entries.insert(name.to_string(), (kind, provider));
    }

    /// Sets the default provider's name.
    pub fn set_default(&mut self, name: Option<String>) {
        self.default = name;
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// The provider a chat uses: the one named, else the configured default, else the only one.
    pub fn resolve(
        &self,
        name: Option<&str>,
    ) -> Result<(ProviderKind, Arc<dyn ChatProvider>), ChatError> {
        let name = match name.or(self.default.as_deref()) {
            Some(name) => name.to_string(),
            None if self.entries.len() == 1 => {
                self.entries.keys().next().cloned().unwrap_or_default()
            }
            None if self.entries.is_empty() => {
                return Err(ChatError::NoProvider(
                    "no chat provider is configured; add one under `providers` in \
                     .toolmux/config.json (kind, baseUrl, apiKey, defaultModel)"
                        .into(),
                ));
            }
            None => {
                return Err(ChatError::NoProvider(format!(
                    "several providers are configured ({}); name one, or set `chat.defaultProvider`",
                    self.names().collect::<Vec<_>>().join(", ")
                )));
            }
        };
        self.entries
            .get(&name)
            .map(|(kind, p)| (*kind, Arc::clone(p)))
            .ok_or_else(|| {
                ChatError::NoProvider(format!(
                    "no provider `{name}` is configured (configured: {})",
                    if self.entries.is_empty() {
                        "none".to_string()
                    } else {
                        self.names().collect::<Vec<_>>().join(", ")
                    }
                ))
            })
    }
}
