//! The storage layer: one `Storage` trait (Kubernetes' `storage.Interface`) and its
//! implementations.
//!
//! - `embedded/`: an in-process store durable on local disk, with etcd's semantics (the default);
//! - `etcd3/`: etcd v3 through `etcd-client`;
//! - `cacher/`: one resource prefix of another store, served from memory;
//! - `informer.rs`: the one list-then-watch with relist and backoff over a `ListerWatcher` (a
//!   prefix of a store, for the cacher; a resource through the registry, for every follower);
//! - `instrumented.rs`: a store that times every call of the store it wraps;
//! - `pager.rs`: one page of a list, filled the same way by every store;
//! - `request.rs`: the requests of the two conditional writes (`guaranteed_update`, `delete`);
//! - `snapshot.rs`: the portable snapshot of a whole store (backup, restore, migration);
//! - `testing/` (feature `testing`): the conformance suite every implementation passes.
//!
//! Objects are JSON values on the write path; lists and watch events carry them shared, as
//! their serialized bytes ([`SharedObject`]). Keys are
//! `/{group}/{plural}/{namespace}/{name}` (no namespace segment for cluster-scoped resources);
//! each store joins them under its own prefix (`/registry`).
//! A resourceVersion is the store revision of an object's last write.

pub mod cacher;
pub mod continue_token;
pub mod embedded;
pub mod encryption;
pub mod error;
pub mod etcd3;
pub mod informer;
pub mod instrumented;
pub mod key;
pub mod object;
pub mod options;
pub mod pager;
pub(crate) mod periodic;
pub mod predicate;
pub mod request;
pub mod snapshot;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod txn;
pub mod versioner;
pub mod watch;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

pub use error::{BoxError, Result, StorageError};
pub use options::{GetOptions, ListOptions, ObjectList, Preconditions, ResourceVersionMatch};
pub use predicate::{FieldSelector, LabelSelector, SelectionPredicate};
pub use request::{ConditionalDelete, GuaranteedUpdate, TryUpdate, ValidateDeletion};
pub use watch::{SharedObject, WatchEvent, WatchStream};

/// The storage interface every layer above talks to.
///
/// All keys are relative to the store's prefix and validated by [`key::prepare_key`].
#[async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Stores a new object at `key` and returns it with its resourceVersion set.
    ///
    /// # Errors
    /// `AlreadyExists` when the key is taken; `InvalidObject` when the object already carries a
    /// resourceVersion or is not a JSON object.
    async fn create(&self, key: &str, obj: Value) -> Result<Value>;

    /// Deletes the object at `key` once the request's preconditions and validation accept the
    /// current state, and returns its last state stamped with the deletion's revision. The
    /// request's cached copy is a hint that saves a read; it is re-read when stale.
    ///
    /// # Errors
    /// `NotFound`, `Conflict` (preconditions), `Aborted` (validation).
    async fn delete(&self, key: &str, request: ConditionalDelete<'_>) -> Result<Value>;

    /// Watches `key` (or everything under it when `opts.recursive`) for changes after
    /// `opts.resource_version`; `""` or `"0"` first replays the current state as ADDED events.
    ///
    /// # Errors
    /// `Expired` when the revision was compacted; `TooLargeResourceVersion`.
    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchStream>;

    /// Reads one object.
    ///
    /// # Errors
    /// `NotFound` unless `opts.ignore_not_found`; `TooLargeResourceVersion` when a minimum
    /// resourceVersion is newer than the store.
    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Value>>;

    /// [`Storage::get`] as shared bytes, for a read that only forwards the object (a GET's
    /// response): a store that holds objects as [`SharedObject`]s hands over its own, with no
    /// tree parsed or serialized. By default, the tree `get` reads, wrapped.
    ///
    /// # Errors
    /// As [`Storage::get`].
    async fn get_shared(&self, key: &str, opts: GetOptions) -> Result<Option<Arc<SharedObject>>> {
        Ok(self
            .get(key, opts)
            .await?
            .map(|obj| Arc::new(SharedObject::new(obj))))
    }

    /// Lists the objects at `key` (recursively under it when `opts.recursive`).
    ///
    /// # Errors
    /// `Expired` for compacted revisions and continue tokens, `BadRequest` for invalid options,
    /// `TooLargeResourceVersion`.
    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ObjectList>;

    /// Reads, transforms with the request's `try_update` and writes back, retrying on conflict
    /// until the write lands; writes nothing when the new object equals the stored one.
    ///
    /// # Errors
    /// `NotFound` (unless `ignore_not_found`), `Conflict` (preconditions), `Aborted`.
    async fn guaranteed_update(&self, key: &str, request: GuaranteedUpdate<'_>) -> Result<Value>;

    /// Counts the objects under `key`.
    async fn count(&self, key: &str) -> Result<u64>;

    /// The store's current revision, read cheaply (what a consistent read must reach).
    async fn current_revision(&self) -> Result<u64>;

    /// Asks every open watch that allows bookmarks to send a BOOKMARK with the revision it has
    /// reached, as soon as everything before it was delivered (etcd's RequestProgress). A cache
    /// uses it to learn it has seen every change up to a revision even when none of those
    /// changes were under its prefix. Answers whether such bookmarks will come; the default,
    /// `false`, means watches report progress only periodically.
    async fn request_watch_progress(&self) -> Result<bool> {
        Ok(false)
    }

    /// Proves, in one small request, that nothing under `key` changed after `revision`: no
    /// object there was written since, and `count` objects are still there (so none was
    /// deleted). Answers the store's current revision when so, `None` when something changed
    /// or the store cannot tell (the default). A cache holding `count` objects at `revision`
    /// then holds the state at the answered revision too, without a progress notification.
    async fn unchanged_since(&self, key: &str, revision: u64, count: u64) -> Result<Option<u64>> {
        let _ = (key, revision, count);
        Ok(None)
    }

    /// Every object under the store's prefix as of one revision, streamed (see [`snapshot`]).
    ///
    /// # Errors
    /// `BadRequest` from a store that takes no snapshots (the default: caches, test stores).
    async fn snapshot(&self) -> Result<snapshot::Snapshot> {
        Err(StorageError::BadRequest(
            "this store takes no snapshots".into(),
        ))
    }
}
