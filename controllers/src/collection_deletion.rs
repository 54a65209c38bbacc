//! Emptying a resource through the registry's verbs, for the controllers that must (the
//! namespace controller, the CustomResourceDefinition cleanup): every object deleted with
//! background propagation, then what is left counted with the finalizers holding it.

use std::collections::BTreeMap;

use strategy_host_registry::client::{Client, ObjectRef};
use strategy_host_registry::system_fields::{finalizers, is_being_deleted, meta_str};
use strategy_host_registry::Preconditions;
use strategy_host_registry::{Result, ServedResource};

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

    /// Deletes every object of `served` (in `namespace`, or all of them) through `client`;
    /// a failure is noted rather than returned, so one resource does not stop the others.
    pub(super) async fn delete_all(
        &mut self,
        client: &Client,
        served: &ServedResource,
        namespace: Option<&str>,
    ) {
        if let Err(e) = self.try_delete_all(client, served, namespace).await {
            let resource = served.store.target("").qualified_resource();
            self.failures.push(format!("{resource}: {e}"));
        }
    }

    async fn try_delete_all(
        &mut self,
        client: &Client,
        served: &ServedResource,
        namespace: Option<&str>,
    ) -> Result<()> {
        let def = &served.def;
        let (group, version, plural) = (&def.group, def.storage_version(), &def.plural);
        for obj in client.list(group, version, plural, namespace).await? {
            if is_being_deleted(&obj) {
                continue;
            }
            // A namespaced object listed across namespaces is deleted in its own.
            let name = meta_str(&obj, "name").unwrap_or_default();
            let target = ObjectRef::new(group, version, plural, meta_str(&obj, "namespace"), name);
            client
                .delete(&target, Preconditions::none(), Some("Background"))
                .await?;
        }
        let left = client.list(group, version, plural, namespace).await?;
        if !left.is_empty() {
            let resource = served.store.target("").qualified_resource();
            self.objects.insert(resource, left.len());
            for item in &left {
                for f in finalizers(item) {
                    *self.finalizers.entry(f).or_default() += 1;
                }
            }
        }
        Ok(())
    }
}
