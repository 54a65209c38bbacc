//! The requests of the two conditional writes, `guaranteed_update` and `delete`: what the
//! current object must satisfy, the callback that decides the write, and a cached copy to start
//! from. One value per call keeps every `Storage` implementation's signature short and alike.

use futures::future::BoxFuture;
use serde_json::Value;

use super::error::BoxError;
use super::options::Preconditions;

/// No preconditions, borrowable for any lifetime (the requests' default).
static NO_PRECONDITIONS: Preconditions = Preconditions {
    uid: None,
    resource_version: None,
};

/// The callback of `guaranteed_update`: given the current object (`None` when it does not exist
/// and `ignore_not_found` was set), return the object to store. Called again with fresh state
/// whenever the write loses a race; an error aborts the update and comes back as
/// `StorageError::Aborted`.
pub type TryUpdate<'a> =
    Box<dyn FnMut(Option<Value>) -> BoxFuture<'static, Result<Value, BoxError>> + Send + 'a>;

/// The callback of `delete`: may refuse the deletion of the current object. Re-run on fresh
/// state whenever the delete loses a race.
pub type ValidateDeletion<'a> =
    Box<dyn FnMut(Value) -> BoxFuture<'static, Result<(), BoxError>> + Send + 'a>;

/// What [`Storage::guaranteed_update`](super::Storage::guaranteed_update) is asked to do.
///
/// # Examples
/// ```
/// # use strategy_host_storage::{GuaranteedUpdate, Preconditions, TryUpdate};
/// let rename: TryUpdate<'_> = Box::new(|current| {
///     let mut obj = current.unwrap_or_default();
///     obj["metadata"]["name"] = "renamed".into();
///     Box::pin(async move { Ok(obj) })
/// });
/// let only_this_version = Preconditions {
///     resource_version: Some("7".into()),
///     ..Preconditions::none()
/// };
/// let request = GuaranteedUpdate::new(rename).preconditions(&only_this_version);
/// assert!(!request.ignore_not_found);
/// ```
pub struct GuaranteedUpdate<'a> {
    /// Checked against the current object before every attempt.
    pub preconditions: &'a Preconditions,
    /// When set, a missing object is no error: `try_update` sees `None` and its answer is
    /// created.
    pub ignore_not_found: bool,
    /// Turns the current object into the one to store.
    pub try_update: TryUpdate<'a>,
    /// A copy of the current object (from a cache) that saves the first read; re-read when it
    /// turns out stale.
    pub cached_existing: Option<Value>,
}

impl<'a> GuaranteedUpdate<'a> {
    /// An update by `try_update` of an object that must exist, with no preconditions and no
    /// cached copy.
    pub fn new(try_update: TryUpdate<'a>) -> Self {
        Self {
            preconditions: &NO_PRECONDITIONS,
            ignore_not_found: false,
            try_update,
            cached_existing: None,
        }
    }

    /// The same request, checking `preconditions`.
    pub fn preconditions(self, preconditions: &'a Preconditions) -> Self {
        Self {
            preconditions,
            ..self
        }
    }

    /// The same request, creating the object when it is missing if `ignore` is set.
    pub fn ignore_not_found(self, ignore: bool) -> Self {
        Self {
            ignore_not_found: ignore,
            ..self
        }
    }

    /// The same request, starting from `cached` when there is one.
    pub fn cached_existing(self, cached: Option<Value>) -> Self {
        Self {
            cached_existing: cached,
            ..self
        }
    }
}

/// What [`Storage::delete`](super::Storage::delete) is asked to do. The default deletes
/// whatever is there.
///
/// # Examples
/// ```
/// # use strategy_host_storage::{ConditionalDelete, Preconditions};
/// let same_uid = Preconditions {
///     uid: Some("4f0c".into()),
///     ..Preconditions::none()
/// };
/// let request = ConditionalDelete::default().preconditions(&same_uid);
/// assert!(request.cached_existing.is_none());
/// ```
pub struct ConditionalDelete<'a> {
    /// Checked against the current object before every attempt.
    pub preconditions: &'a Preconditions,
    /// May refuse the deletion of the current object.
    pub validate: ValidateDeletion<'a>,
    /// A copy of the current object (from a cache) that saves the first read; re-read when it
    /// turns out stale.
    pub cached_existing: Option<Value>,
}

impl Default for ConditionalDelete<'_> {
    fn default() -> Self {
        Self::new(Box::new(|_| Box::pin(async { Ok(()) })))
    }
}

impl<'a> ConditionalDelete<'a> {
    /// A deletion that `validate` may refuse, with no preconditions and no cached copy.
    pub fn new(validate: ValidateDeletion<'a>) -> Self {
        Self {
            preconditions: &NO_PRECONDITIONS,
            validate,
            cached_existing: None,
        }
    }

    /// The same request, checking `preconditions`.
    pub fn preconditions(self, preconditions: &'a Preconditions) -> Self {
        Self {
            preconditions,
            ..self
        }
    }

    /// The same request, starting from `cached` when there is one.
    pub fn cached_existing(self, cached: Option<Value>) -> Self {
        Self {
            cached_existing: cached,
            ..self
        }
    }
}
