//! Emptying a resource through the registry's verbs, for the controllers that must (the
//! namespace controller, the CustomResourceDefinition cleanup): every object deleted with
//! background propagation, then what is left counted with the finalizers holding it.

use std::collections::BTreeMap;

use crate::registry::system_fields::{finalizers, is_being_deleted, meta_str};
use crate::registry::{DeleteOptions, RequestScope, Result, ServedResource};
use crate::storage::{ListOptions, Preconditions};

/// What is left after one pass.
#[derive(Debug, Default)]
pub(super) struct Remaining {
    /// Objects left, per qualified resource.
    pub(super) objects: BTreeMap<String, usize>,
    /// Objects left per finalizer they carry.
    pub(super) finalizers: BTreeMap<String, usize>,
    /// Deletes that failed, per qualified resource.
    pub(super) failures: Vec<String>,
}

impl Remaining {
    /// Whether nothing is left and nothing failed.
    pub(super) fn is_done(&self) -> bool {
        self.objects.is_empty() && self.failures.is_empty()
    }

    /// Deletes every object of `served` (in `namespace`, or all of them), as `requester`;
    /// a failure is noted rather than returned, so one resource does not stop the others.
    pub(super) async fn delete_all(
        &mut self,
        served: &ServedResource,
        namespace: Option<&str>,
        requester: &str,
    ) {
        if let Err(e) = self.try_delete_all(served, namespace, requester).await {
            let resource = served.store.target("").qualified_resource();
            self.failures.push(format!("{resource}: {e}"));
        }
    }

    async fn try_delete_all(
        &mut self,
        served: &ServedResource,
        namespace: Option<&str>,
        requester: &str,
    ) -> Result<()> {
        let scope = RequestScope {
            version: served.def.storage_version().to_string(),
            namespace: namespace.map(String::from),
            request_id: requester.into(),
            ..Default::default()
        };
        let opts = DeleteOptions {
            preconditions: Preconditions::none(),
            grace_period_seconds: None,
            propagation_policy: Some("Background".into()),
        };
        let listed = served.store.list(&scope, ListOptions::default()).await?;
        for item in &listed.items {
            let obj = item.to_value();
            if is_being_deleted(&obj) {
                continue;
            }
            // A namespaced object listed across namespaces is deleted in its own.
            let in_namespace = RequestScope {
                namespace: meta_str(&obj, "namespace").map(String::from),
                ..scope.clone()
            };
            let name = meta_str(&obj, "name").unwrap_or_default();
            match served.store.delete(&in_namespace, name, &opts).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        let left = served.store.list(&scope, ListOptions::default()).await?;
        if !left.items.is_empty() {
            let resource = served.store.target("").qualified_resource();
            self.objects.insert(resource, left.items.len());
            for item in &left.items {
                for f in finalizers(&item.to_value()) {
                    *self.finalizers.entry(f).or_default() += 1;
                }
            }
        }
        Ok(())
    }
}
