//! Typed storage errors: the codes every `Storage` implementation answers with, so the API layer
//! can map each one to a Kubernetes `Status` in one place.

use std::error::Error as StdError;

/// A boxed error raised by a caller's callback (a try-update or a validate-deletion closure).
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// The result type of every storage operation.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// What went wrong in a storage operation.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The key does not exist (at the requested revision).
    #[error("key not found: {key}")]
    NotFound {
        /// The key that was asked for.
        key: String,
    },
    /// A create found the key already present.
    #[error("key already exists: {key}")]
    AlreadyExists {
        /// The key that was being created.
        key: String,
    },
    /// A precondition (uid or resourceVersion) did not hold against the stored object.
    #[error("conflict on {key}: {message}")]
    Conflict {
        /// The key whose precondition failed.
        key: String,
        /// Why, in the words Kubernetes uses.
        message: String,
    },
    /// The object handed to the store cannot be stored as it is.
    #[error("invalid object at {key}: {message}")]
    InvalidObject {
        /// The key the object was meant for.
        key: String,
        /// What is wrong with it.
        message: String,
    },
    /// The request itself is malformed: a bad key, resourceVersion or continue token.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// The requested revision has been compacted away (HTTP 410 Gone).
    #[error("{message}")]
    Expired {
        /// Kubernetes' wording for the situation.
        message: String,
    },
    /// The requested revision is newer than anything the store has seen yet.
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion {
        /// The revision asked for.
        requested: u64,
        /// The newest revision the store knows.
        current: u64,
    },
    /// The store below is unreachable or timed out; retrying later may succeed.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The caller's try-update or validate-deletion callback refused; its error is passed through.
    #[error("{0}")]
    Aborted(#[source] BoxError),
    /// An invariant of the store was broken (corrupt data, an unexpected response).
    #[error("internal storage error: {0}")]
    Internal(String),
}

/// Defines one `is_*` test per variant, for callers that branch on the kind of failure.
macro_rules! is_variant {
    ($($name:ident => $variant:ident,)*) => {$(
        #[doc = concat!("True for `", stringify!($variant), "`.")]
        pub fn $name(&self) -> bool {
            matches!(self, Self::$variant { .. })
        }
    )*};
}

/// A selector that does not parse is a bad request.
impl From<strategy_host_apimachinery::SelectorError> for StorageError {
    fn from(e: strategy_host_apimachinery::SelectorError) -> Self {
        Self::BadRequest(e.0)
    }
}

impl StorageError {
    /// Builds a `NotFound` for `key`.
    pub fn not_found(key: impl Into<String>) -> Self {
        Self::NotFound { key: key.into() }
    }

    /// Builds an `AlreadyExists` for `key`.
    pub fn already_exists(key: impl Into<String>) -> Self {
        Self::AlreadyExists { key: key.into() }
    }

    /// Builds a `Conflict` for `key`.
    pub fn conflict(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Conflict {
            key: key.into(),
            message: message.into(),
        }
    }

    /// Builds an `InvalidObject` for `key`.
    pub fn invalid_object(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidObject {
            key: key.into(),
            message: message.into(),
        }
    }

    /// The `Expired` answer for a read or watch at a compacted revision.
    pub fn compacted(requested: u64, compacted: u64) -> Self {
        Self::Expired {
            message: format!(
                "The resourceVersion for the provided watch is too old: requested {requested}, oldest available {}",
                compacted + 1
            ),
        }
    }

    /// The `Expired` answer for a continue token whose revision has been compacted.
    pub fn continue_expired() -> Self {
        Self::Expired {
            message:
                "The provided continue parameter is too old to display a consistent list result. \
                      You can start a new list without the continue parameter, or use the continue \
                      value from the response."
                    .to_string(),
        }
    }

    is_variant! {
        is_not_found => NotFound,
        is_already_exists => AlreadyExists,
        is_conflict => Conflict,
        is_invalid_object => InvalidObject,
        is_bad_request => BadRequest,
        is_expired => Expired,
        is_too_large_resource_version => TooLargeResourceVersion,
        is_unavailable => Unavailable,
        is_aborted => Aborted,
    }

    /// A copy of this error for fan-out to several receivers (an `Aborted` source is rendered to
    /// text, since boxed errors cannot be cloned).
    pub fn duplicate(&self) -> Self {
        match self {
            Self::NotFound { key } => Self::not_found(key.clone()),
            Self::AlreadyExists { key } => Self::already_exists(key.clone()),
            Self::Conflict { key, message } => Self::conflict(key.clone(), message.clone()),
            Self::InvalidObject { key, message } => {
                Self::invalid_object(key.clone(), message.clone())
            }
            Self::BadRequest(m) => Self::BadRequest(m.clone()),
            Self::Expired { message } => Self::Expired {
                message: message.clone(),
            },
            Self::TooLargeResourceVersion { requested, current } => Self::TooLargeResourceVersion {
                requested: *requested,
                current: *current,
            },
            Self::Unavailable(m) => Self::Unavailable(m.clone()),
            Self::Aborted(e) => Self::Internal(e.to_string()),
            Self::Internal(m) => Self::Internal(m.clone()),
        }
    }
}
