//! Admission in the registry's write pipelines, in Kubernetes' order: mutating plugins (the
//! webhooks) change an incoming object before its own strategy and schema run; validating
//! plugins (owner-reference permissions, the webhooks) are asked once they accepted it, as
//! Kubernetes runs validating admission inside `Store.Create` and `Store.Update`. A plugin
//! stops a write with a [`Rejection`] and may add warnings.

use std::borrow::Cow;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use serde_json::Value;

use super::definition::ResourceDefinition;
use crate::strategy::Refusal;
use crate::user::UserInfo;

/// Where admission writes the annotations Kubernetes adds to a request's audit events
/// (a webhook's `auditAnnotations`, a policy's, the Audit action's failures): the API layer's
/// audit record of the request.
pub trait AuditAnnotations: Send + Sync + std::fmt::Debug {
    /// Sets `key` to `value` on the request's audit events.
    fn annotate(&self, key: &str, value: &str);
}

pub use crate::admission_policy::Operation;

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
    /// `?dryRun=All`: nothing will be persisted.
    pub dry_run: bool,
    /// The request's audit record, when it is audited.
    pub audit: Option<&'a dyn AuditAnnotations>,
}

impl AdmissionRequest<'_> {
    /// Adds an annotation to the request's audit events (nothing when it is not audited).
    pub fn annotate(&self, key: &str, value: &str) {
        if let Some(audit) = self.audit {
            audit.annotate(key, value);
        }
    }
}

/// Why admission stopped a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Refused as the registry words it (403 `{resource} "{name}" is forbidden: ...`).
    Refused(Refusal),
    /// A `Status` the plugin chose (a webhook's denial: its code, reason and message).
    Denied {
        /// The HTTP code.
        code: u16,
        /// The `Status` reason.
        reason: String,
        /// The message.
        message: String,
    },
    /// The plugin could not decide and fails closed (500 `Internal error occurred: ...`).
    Failed(String),
}

/// What a plugin answers: warnings for the client, or a rejection.
pub type Verdict = Result<Vec<String>, Rejection>;

/// A mutating admission plugin.
#[async_trait]
pub trait MutatingAdmission: Send + Sync {
    /// Its name, for logs.
    fn name(&self) -> &str;

    /// May change `object` (the request's object is its state before this plugin).
    async fn admit(&self, request: &AdmissionRequest<'_>, object: &mut Value) -> Verdict;

    /// Called once more, after every plugin ran, when a later plugin changed the object this
    /// one left: the members that asked for it (`reinvocationPolicy: IfNeeded`) are called
    /// again. By default nothing is.
    async fn reinvoke(&self, _request: &AdmissionRequest<'_>, _object: &mut Value) -> Verdict {
        Ok(Vec::new())
    }
}

/// A validating admission plugin.
#[async_trait]
pub trait ValidatingAdmission: Send + Sync {
    /// Its name, for logs.
    fn name(&self) -> &str;

    /// Accepts the write (with warnings) or rejects it.
    async fn validate(&self, request: &AdmissionRequest<'_>) -> Verdict;
}

/// The plugins every store of a registry asks, in order; the server adds them at startup.
#[derive(Default)]
pub struct AdmissionChain {
    plugins: RwLock<Vec<Arc<dyn ValidatingAdmission>>>,
    mutating: RwLock<Vec<Arc<dyn MutatingAdmission>>>,
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
    /// Appends a validating `plugin`.
    pub fn add(&self, plugin: Arc<dyn ValidatingAdmission>) {
        self.plugins
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(plugin);
    }

    /// Appends a mutating `plugin`.
    pub fn add_mutating(&self, plugin: Arc<dyn MutatingAdmission>) {
        self.mutating
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(plugin);
    }

    /// Lets every mutating plugin change `object` (equal to `request.object` on entry), in
    /// order; then, once, reinvokes each plugin whose result a later one changed (Kubernetes'
    /// `reinvocationPolicy`; a plugin re-calls at once those of its own members a later member
    /// changed). Answers their warnings.
    ///
    /// # Errors
    /// The first rejection.
    pub async fn mutate(&self, request: &AdmissionRequest<'_>, object: &mut Value) -> Verdict {
        let plugins = self
            .mutating
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut warnings = Vec::new();
        // The object as each plugin finds it: the request's until a plugin changes it, so a
        // write no plugin changes is not copied once per plugin.
        let mut before = Cow::Borrowed(request.object);
        // The last plugin that changed the object: every plugin before it may be reinvoked.
        let mut last_change = 0;
        for (i, plugin) in plugins.iter().enumerate() {
            let asked = AdmissionRequest {
                object: &before,
                ..*request
            };
            warnings.extend(plugin.admit(&asked, object).await?);
            if *before != *object {
                last_change = i;
                before = Cow::Owned(object.clone());
            }
        }
        // Changes made while reinvoking do not reinvoke again: each plugin once at most.
        for plugin in &plugins[..last_change] {
            let asked = AdmissionRequest {
                object: &before,
                ..*request
            };
            warnings.extend(plugin.reinvoke(&asked, object).await?);
            if *before != *object {
                before = Cow::Owned(object.clone());
            }
        }
        Ok(warnings)
    }

    fn plugins(&self) -> Vec<Arc<dyn ValidatingAdmission>> {
        self.plugins
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Asks every validating plugin; answers their warnings.
    ///
    /// # Errors
    /// The first rejection.
    pub async fn validate(&self, request: &AdmissionRequest<'_>) -> Verdict {
        let mut warnings = Vec::new();
        for plugin in self.plugins() {
            warnings.extend(plugin.validate(request).await?);
        }
        Ok(warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    /// Sets its label, and records the object each call was asked about.
    struct Labeller {
        label: &'static str,
        asked: Mutex<Vec<Value>>,
    }

    #[async_trait]
    impl MutatingAdmission for Labeller {
        fn name(&self) -> &str {
            self.label
        }

        async fn admit(&self, request: &AdmissionRequest<'_>, object: &mut Value) -> Verdict {
            self.asked.lock().unwrap().push(request.object.clone());
            object["metadata"]["labels"][self.label] = json!("set");
            Ok(Vec::new())
        }

        async fn reinvoke(&self, request: &AdmissionRequest<'_>, object: &mut Value) -> Verdict {
            self.admit(request, object).await
        }
    }

    fn labeller(label: &'static str) -> Arc<Labeller> {
        Arc::new(Labeller {
            label,
            asked: Mutex::default(),
        })
    }

    #[tokio::test]
    async fn each_plugin_is_asked_about_the_object_as_the_plugins_before_it_left_it() {
        let chain = AdmissionChain::default();
        let (a, b) = (labeller("a"), labeller("b"));
        chain.add_mutating(a.clone());
        chain.add_mutating(b.clone());
        let def = crate::apiservice::definition();
        let user = UserInfo::default();
        let sent = json!({"metadata": {"name": "x"}});
        let mut object = sent.clone();
        let request = AdmissionRequest {
            operation: Operation::Create,
            resource: &def,
            version: "v1",
            subresource: None,
            namespace: None,
            name: "x",
            object: &sent,
            old_object: None,
            user: &user,
            dry_run: false,
            audit: None,
        };
        chain.mutate(&request, &mut object).await.unwrap();
        let only_a = json!({"metadata": {"name": "x", "labels": {"a": "set"}}});
        let both = json!({"metadata": {"name": "x", "labels": {"a": "set", "b": "set"}}});
        // `a` ran first, and again once `b` had changed what it left.
        assert_eq!(*a.asked.lock().unwrap(), vec![sent, both.clone()]);
        assert_eq!(*b.asked.lock().unwrap(), vec![only_a]);
        assert_eq!(object, both);
    }
}
