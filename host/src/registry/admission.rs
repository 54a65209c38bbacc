//! Validating admission in the registry's write pipelines: plugins the server installs (the
//! owner-reference permission check today) are asked about every create and update once the
//! object's own strategy and schema accepted it, as Kubernetes runs validating admission inside
//! `Store.Create` and `Store.Update`. A plugin refuses with a [`Refusal`] (403 Forbidden, ...).

use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use serde_json::Value;

use super::definition::ResourceDefinition;
use crate::strategy::{Refusal, UserInfo};

/// The write admission is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A create (or a create on update).
    Create,
    /// An update, patch or apply of an existing object.
    Update,
}

/// One write, as a plugin sees it.
#[derive(Debug, Clone, Copy)]
pub struct AdmissionRequest<'a> {
    /// Create or update.
    pub operation: Operation,
    /// The resource written.
    pub resource: &'a ResourceDefinition,
    /// The version the request speaks.
    pub version: &'a str,
    /// The subresource written (`status`), if any.
    pub subresource: Option<&'a str>,
    /// The namespace of the object, for a namespaced resource.
    pub namespace: Option<&'a str>,
    /// The object's name.
    pub name: &'a str,
    /// The object as it would be stored.
    pub object: &'a Value,
    /// The object before an update.
    pub old_object: Option<&'a Value>,
    /// Who writes.
    pub user: &'a UserInfo,
}

/// A validating admission plugin.
#[async_trait]
pub trait ValidatingAdmission: Send + Sync {
    /// Its name, for logs.
    fn name(&self) -> &str;

    /// Accepts the write or refuses it.
    async fn validate(&self, request: &AdmissionRequest<'_>) -> Result<(), Refusal>;
}

/// The plugins every store of a registry asks, in order; the server adds them at startup.
#[derive(Default)]
pub struct AdmissionChain {
    plugins: RwLock<Vec<Arc<dyn ValidatingAdmission>>>,
}

impl std::fmt::Debug for AdmissionChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .plugins()
            .iter()
            .map(|p| p.name().to_string())
            .collect();
        f.debug_struct("AdmissionChain")
            .field("plugins", &names)
            .finish()
    }
}

impl AdmissionChain {
    /// Appends `plugin`.
    pub fn add(&self, plugin: Arc<dyn ValidatingAdmission>) {
        self.plugins
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(plugin);
    }

    fn plugins(&self) -> Vec<Arc<dyn ValidatingAdmission>> {
        self.plugins
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Asks every plugin; the first refusal wins.
    ///
    /// # Errors
    /// The refusal.
    pub async fn validate(&self, request: &AdmissionRequest<'_>) -> Result<(), Refusal> {
        for plugin in self.plugins() {
            plugin.validate(request).await?;
        }
        Ok(())
    }
}
