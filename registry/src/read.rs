//! Reads of a `RegistryStore`: get, list and watch, answered at the request's version.

use std::sync::Arc;

use futures::{FutureExt as _, StreamExt as _};
use serde_json::{json, Value};

use super::conversion_memo::{Batch, MemoKey};
use super::error::{Error, Result};
use super::list::ListPage;
use super::store::{RegistryStore, RequestScope};
use strategy_host_storage::{
    GetOptions, ListOptions, ObjectList, SharedObject, WatchEvent, WatchStream,
};

/// The most watch events converted in one call.
const WATCH_CONVERSION_BATCH: usize = 256;

impl RegistryStore {
    /// What a read of `name` found: a storage error as the registry's, nothing as NotFound.
    fn found<T>(&self, name: &str, read: strategy_host_storage::Result<Option<T>>) -> Result<T> {
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
        self.at_version(self.found(name, read)?, &scope.version)
            .await
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
        let mut at = self.shared_at_version(vec![obj], &scope.version).await?;
        Ok(at.pop().expect("one object in, one out"))
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
        self.list_object(list, &scope.version).await
    }

    /// A storage list as a Kubernetes list at `version`: items already at that version are
    /// shared as they are, the others converted (together: one webhook call per page).
    async fn list_object(&self, list: ObjectList, version: &str) -> Result<ListPage> {
        let api_version = self.def.api_version(version);
        let items = self.shared_at_version(list.items, version).await?;
        Ok(ListPage {
            api_version,
            kind: self.def.list_kind.clone(),
            resource_version: list.resource_version,
            continue_token: list.continue_token,
            remaining_item_count: list.remaining_item_count,
            items,
        })
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
        let api_version: Arc<str> = self.def.api_version(&scope.version).into();
        let version: Arc<str> = scope.version.as_str().into();
        let this = self.clone();
        if self.converts_versions() {
            // A converter is a call away: events that arrive together (a watch's initial events,
            // a burst of writes) are converted together, one call per batch.
            let batches = events.ready_chunks(WATCH_CONVERSION_BATCH);
            return Ok(Box::pin(
                batches
                    .then(move |batch| {
                        let flagged: Vec<(WatchEvent, bool)> = batch
                            .into_iter()
                            .map(|event| {
                                let end = matches!(event, WatchEvent::Bookmark(_))
                                    && std::mem::take(&mut initial_end_pending);
                                (event, end)
                            })
                            .collect();
                        let (this, version, api_version) =
                            (this.clone(), version.clone(), api_version.clone());
                        async move {
                            this.events_at_version(flagged, &version, &api_version)
                                .await
                        }
                    })
                    .flat_map(futures::stream::iter),
            ));
        }
        Ok(Box::pin(events.then(move |event| {
            let (this, version, api_version) = (this.clone(), version.clone(), api_version.clone());
            let initial_end = matches!(event, WatchEvent::Bookmark(_))
                && std::mem::take(&mut initial_end_pending);
            async move {
                this.event_at_version(event, &version, &api_version, initial_end)
                    .await
            }
        })))
    }

    /// Storage watch events that arrived together, at `version`, their objects converted in one
    /// call (shared with the resource's other watchers); bookmarks and objects already at
    /// `version` as [`RegistryStore::event_at_version`] has them. A failed conversion ends the
    /// batch with an ERROR event (the watch ends there).
    async fn events_at_version(
        &self,
        events: Vec<(WatchEvent, bool)>,
        version: &str,
        api_version: &str,
    ) -> Vec<WatchEvent> {
        let pending: Vec<usize> = (0..events.len())
            .filter(|&i| {
                let object = events[i].0.object();
                object.is_some_and(|o| !self.is_at(o, api_version))
            })
            .collect();
        let objects: Vec<Arc<SharedObject>> = pending
            .iter()
            .filter_map(|&i| events[i].0.object().cloned())
            .collect();
        let converted = match self.shared_conversions(objects, version).await {
            Ok(converted) => converted,
            Err(e) => {
                let mut sent: Vec<WatchEvent> = Vec::new();
                for (i, (event, end)) in events.into_iter().enumerate() {
                    if pending.first() == Some(&i) {
                        let why = strategy_host_storage::StorageError::Internal(e.to_string());
                        sent.push(WatchEvent::error(why));
                        break;
                    }
                    sent.push(
                        self.event_at_version(event, version, api_version, end)
                            .await,
                    );
                }
                return sent;
            }
        };
        let mut converted = converted.into_iter();
        let mut pending = pending.into_iter().peekable();
        let mut out = Vec::with_capacity(events.len());
        for (i, (event, end)) in events.into_iter().enumerate() {
            if pending.next_if_eq(&i).is_some() {
                let object = converted.next().expect("one object out per object in");
                out.push(event.map_object(|_| object));
            } else {
                out.push(
                    self.event_at_version(event, version, api_version, end)
                        .await,
                );
            }
        }
        out
    }

    /// A storage watch event at `version` (whose apiVersion is `api_version`); `initial_end`
    /// marks the bookmark that ends a watch's initial events. Watchers at the same version share
    /// each event's conversion; one that fails ends the watch with an ERROR event.
    async fn event_at_version(
        &self,
        event: WatchEvent,
        version: &str,
        api_version: &str,
        initial_end: bool,
    ) -> WatchEvent {
        match event {
            WatchEvent::Bookmark(marker) => {
                let mut metadata = json!({"resourceVersion": marker.revision().to_string()});
                if initial_end {
                    metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                }
                WatchEvent::Bookmark(Arc::new(SharedObject::new(json!({
                    "kind": self.def.kind,
                    "apiVersion": api_version,
                    "metadata": metadata,
                }))))
            }
            // Errors, and objects already at the version (and its defaults), pass as they are.
            other => {
                let as_read = |o: &&Arc<SharedObject>| {
                    self.is_at(o, api_version) && o.revision() >= self.def.defaults_revision
                };
                let Some(object) = other.object().filter(|o| !as_read(o)) else {
                    return other;
                };
                let object = object.clone();
                match self.shared_conversions(vec![object], version).await {
                    Ok(mut converted) => {
                        let converted = converted.pop().expect("one object in, one out");
                        other.map_object(|_| converted)
                    }
                    Err(e) => WatchEvent::error(strategy_host_storage::StorageError::Internal(
                        e.to_string(),
                    )),
                }
            }
        }
    }

    /// `objects` (none at `version`) converted to it, each conversion shared with the
    /// resource's other watchers: remembered or under way ones awaited, the rest in one call.
    async fn shared_conversions(
        &self,
        objects: Vec<Arc<SharedObject>>,
        version: &str,
    ) -> Result<Vec<Arc<SharedObject>>> {
        // Conversions with other defaults are other answers.
        let converter: Box<str> = format!(
            "{}@{}",
            self.strategy.converter_id(),
            self.def.defaults_revision
        )
        .into();
        let keys: Vec<MemoKey> = objects
            .iter()
            .map(|o| MemoKey {
                namespace: o.namespace().unwrap_or_default().into(),
                name: o.name().unwrap_or_default().into(),
                revision: o.revision(),
                version: version.into(),
                converter: converter.clone(),
            })
            .collect();
        let (this, version_owned) = (self.clone(), version.to_owned());
        let convert = move |misses: Vec<usize>| -> Batch {
            let chosen: Vec<Arc<SharedObject>> =
                misses.iter().map(|&i| objects[i].clone()).collect();
            async move {
                this.shared_at_version(chosen, &version_owned)
                    .await
                    .map_err(|e| e.to_string())
            }
            .boxed()
        };
        self.conversions
            .get_or_convert(&keys, convert)
            .await
            .map_err(Error::Internal)
    }

    /// A resource served over another's stored objects selects by the stored field names.
    fn select_stored_fields(&self, opts: &mut ListOptions) {
        if let Some(stored) = &self.def.stored_as {
            let field = std::mem::take(&mut opts.predicate.field);
            opts.predicate.field = field.renamed(|f| stored.stored_field(f));
        }
    }
}
