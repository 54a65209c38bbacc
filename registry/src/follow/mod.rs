//! The registry-level watch: every follower (controllers, admission configuration, RBAC, module
//! sources) follows a resource through the registry's own list and watch, objects as the
//! registry serves them at one version, never the storage below it; and the reflector store
//! ([`Writer`] and cloneable [`Store`] readers) that keeps a follower's copy of what it follows.

mod event;
mod store;

use async_trait::async_trait;
use futures::{Stream, StreamExt as _};

pub use event::{Event, EventStreamExt, Object};
pub use store::{Indexer, Store, Writer};

use super::error::Error;
use super::served::ServedResource;
use super::store::{RegistryStore, RequestScope};
use strategy_host_storage::informer::{informer, InformerConfig, InformerEvent, ListerWatcher};
use strategy_host_storage::{ListOptions, ObjectList, StorageError, WatchStream};

/// One resource at one version, listed and watched through its registry store.
struct RegistryListerWatcher {
    store: RegistryStore,
    scope: RequestScope,
    described: String,
}

/// A registry error as the informer's: storage errors as they are (an `Expired` watch relists),
/// anything else (a conversion that failed) as unavailable, so the informer retries.
fn storage_error(e: Error) -> StorageError {
    match e {
        Error::Storage { source, .. } => source,
        other => StorageError::Unavailable(other.to_string()),
    }
}

#[async_trait]
impl ListerWatcher for RegistryListerWatcher {
    async fn list(&self, opts: ListOptions) -> strategy_host_storage::Result<ObjectList> {
        let page = self
            .store
            .list(&self.scope, opts)
            .await
            .map_err(storage_error)?;
        Ok(ObjectList {
            items: page.items,
            resource_version: page.resource_version,
            continue_token: page.continue_token,
            remaining_item_count: page.remaining_item_count,
        })
    }

    async fn watch(&self, opts: ListOptions) -> strategy_host_storage::Result<WatchStream> {
        self.store
            .watch(&self.scope, opts)
            .await
            .map_err(storage_error)
    }

    fn describe(&self) -> String {
        self.described.clone()
    }
}

impl ServedResource {
    /// Follows every object of the resource, at `version`, through the registry-level watch:
    /// list, then watch, relisting when needed; dropping the stream stops it.
    pub fn follow(&self, version: &str) -> impl Stream<Item = Event> + Send + 'static {
        self.follow_revisions(version)
            .filter_map(|event| std::future::ready(Event::from_informer(event)))
    }

    /// [`ServedResource::follow`] with the revisions the informer reaches (its lists' and
    /// bookmarks'), for the registry's own table of served resources.
    pub(crate) fn follow_revisions(
        &self,
        version: &str,
    ) -> impl Stream<Item = InformerEvent> + Send + 'static {
        let source = RegistryListerWatcher {
            store: self.store.clone(),
            scope: RequestScope {
                version: version.into(),
                request_id: "follower".into(),
                ..RequestScope::default()
            },
            described: format!("{}/{}", self.def.api_version(version), self.def.plural),
        };
        informer(std::sync::Arc::new(source), InformerConfig::default())
    }

    /// Keeps `writer`'s store current from [`ServedResource::follow`] at `version`, in a task
    /// of its own (abort it to stop); answers a reader of the store and the task.
    pub fn reflect(&self, version: &str, writer: Writer) -> (Store, tokio::task::JoinHandle<()>) {
        let reader = writer.reader();
        let events = self.follow(version).reflect(writer);
        let task = tokio::spawn(events.for_each(|_| std::future::ready(())));
        (reader, task)
    }

    /// [`ServedResource::follow`] at the storage version: objects as stored, no conversion
    /// (what the garbage collector reads of every resource).
    pub fn follow_stored(&self) -> impl Stream<Item = Event> + Send + 'static {
        self.follow(self.def.storage_version())
    }
}
