//! Reads of a `RegistryStore`: get, list and watch, answered at the request's version.

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{json, Value};

use super::error::{Error, Result};
use super::list::ListPage;
use super::store::{RegistryStore, RequestScope};
use crate::storage::{GetOptions, ListOptions, ObjectList, SharedObject, WatchEvent, WatchStream};

impl RegistryStore {
    /// What a read of `name` found: a storage error as the registry's, nothing as NotFound.
    fn found<T>(&self, name: &str, read: crate::storage::Result<Option<T>>) -> Result<T> {
        let target = self.target(name);
        read.map_err(|e| Error::storage(e, &target))?
            .ok_or_else(|| Error::NotFound(target.into()))
    }

    /// Reads one object.
    ///
    /// # Errors
    /// `NotFound`; storage errors.
    pub async fn get(&self, scope: &RequestScope, name: &str, opts: GetOptions) -> Result<Value> {
        let read = self.storage.get(&self.key(scope, name), opts).await;
        Ok(self.to_version(self.found(name, read)?, &scope.version))
    }

    /// [`RegistryStore::get`] as shared bytes, for a response that forwards the object: the
    /// stored object itself when it is already at the request's version.
    ///
    /// # Errors
    /// As [`RegistryStore::get`].
    pub async fn get_shared(
        &self,
        scope: &RequestScope,
        name: &str,
        opts: GetOptions,
    ) -> Result<Arc<SharedObject>> {
        let read = self.storage.get_shared(&self.key(scope, name), opts).await;
        let obj = self.found(name, read)?;
        let api_version = self.def.api_version(&scope.version);
        Ok(self.shared_at_version(obj, &scope.version, &api_version))
    }

    /// Lists objects (one page) as a `{Kind}List`.
    ///
    /// # Errors
    /// Storage errors (bad options → BadRequest, compacted → Expired).
    pub async fn list(&self, scope: &RequestScope, mut opts: ListOptions) -> Result<ListPage> {
        opts.recursive = true;
        self.select_stored_fields(&mut opts);
        let key = self.def.collection_key(scope.namespace.as_deref());
        let list = self
            .storage
            .get_list(&key, opts)
            .await
            .map_err(|e| Error::storage(e, &self.target("")))?;
        Ok(self.list_object(list, &scope.version))
    }

    /// A storage list as a Kubernetes list at `version`: items already at that version are
    /// shared as they are, the others converted.
    pub fn list_object(&self, list: ObjectList, version: &str) -> ListPage {
        let api_version = self.def.api_version(version);
        let items = list
            .items
            .into_iter()
            .map(|o| self.shared_at_version(o, version, &api_version))
            .collect();
        ListPage {
            api_version,
            kind: self.def.list_kind.clone(),
            resource_version: list.resource_version,
            continue_token: list.continue_token,
            remaining_item_count: list.remaining_item_count,
            items,
        }
    }

    /// Watches the collection (selectors in `opts` narrow it, e.g. to one name), with every
    /// event already at the request's version: objects stamped with its apiVersion and kind
    /// (shared as they are when the stored version is the one asked for), bookmarks as
    /// Kubernetes sends them, and the first bookmark of a watch with `sendInitialEvents`
    /// annotated `k8s.io/initial-events-end: "true"`.
    ///
    /// # Errors
    /// Storage errors (`Expired` for a compacted resourceVersion).
    pub async fn watch(&self, scope: &RequestScope, mut opts: ListOptions) -> Result<WatchStream> {
        opts.recursive = true;
        self.select_stored_fields(&mut opts);
        let key = self.def.collection_key(scope.namespace.as_deref());
        let mut initial_end_pending = opts.send_initial_events;
        let events = self
            .storage
            .watch(&key, opts)
            .await
            .map_err(|e| Error::storage(e, &self.target("")))?;
        // Formatted once per watch, not per event.
        let api_version = self.def.api_version(&scope.version);
        let (this, version) = (self.clone(), scope.version.clone());
        Ok(Box::pin(events.map(move |event| match event {
            WatchEvent::Bookmark(marker) => {
                let mut metadata = json!({"resourceVersion": marker.revision().to_string()});
                if std::mem::take(&mut initial_end_pending) {
                    metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                }
                WatchEvent::Bookmark(Arc::new(SharedObject::new(json!({
                    "kind": this.def.kind,
                    "apiVersion": api_version,
                    "metadata": metadata,
                }))))
            }
            other => other.map_object(|o| this.shared_at_version(o, &version, &api_version)),
        })))
    }

    /// A resource served over another's stored objects selects by the stored field names.
    fn select_stored_fields(&self, opts: &mut ListOptions) {
        if let Some(stored) = &self.def.stored_as {
            let field = std::mem::take(&mut opts.predicate.field);
            opts.predicate.field = field.renamed(|f| stored.stored_field(f));
        }
    }

    /// `obj` at `version` (whose apiVersion is `api_version`): the same shared object when it
    /// already is, else a stamped copy.
    fn shared_at_version(
        &self,
        obj: Arc<SharedObject>,
        version: &str,
        api_version: &str,
    ) -> Arc<SharedObject> {
        let stamped =
            obj.api_version() == Some(api_version) && obj.kind() == Some(self.def.kind.as_str());
        if stamped {
            return obj;
        }
        Arc::new(SharedObject::new(
            self.to_version(obj.into_value(), version),
        ))
    }
}
