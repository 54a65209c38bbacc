//! Registry errors: what a generic store answers with, carrying enough about the resource and
//! object (group, plural, kind, name) for the API layer to render Kubernetes' exact `Status`.

use crate::strategy::{FieldError, Refusal, StrategyError};
use strategy_host_storage::StorageError;

/// The result type of registry operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The object a request is about, for error messages and `Status.details`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    /// API group (`""` for core).
    pub group: String,
    /// Plural resource name.
    pub plural: String,
    /// The kind, e.g. `Widget`.
    pub kind: String,
    /// The object's name (may be empty for collection requests).
    pub name: String,
}

impl Target {
    /// `widgets.example.com` (or `namespaces` for the core group), as Kubernetes prints it.
    pub fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `Widget.example.com`, as Kubernetes prints it in Invalid errors.
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }
}

/// What went wrong in a registry operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The storage layer failed; `target` names the object for the message.
    #[error("{source}")]
    Storage {
        /// The storage error.
        #[source]
        source: StorageError,
        /// The object the request was about.
        target: Box<Target>,
    },
    /// The object does not exist.
    #[error("{} {:?} not found", .0.qualified_resource(), .0.name)]
    NotFound(Box<Target>),
    /// The object was modified since the client read it.
    #[error("Operation cannot be fulfilled on {} {:?}: {message}", .target.qualified_resource(), .target.name)]
    Conflict {
        /// The object.
        target: Box<Target>,
        /// Kubernetes' explanation.
        message: String,
    },
    /// The object fails validation (422 Invalid with causes).
    #[error("{} {:?} is invalid", .target.qualified_kind(), .target.name)]
    Invalid {
        /// The object.
        target: Box<Target>,
        /// One cause per field.
        causes: Vec<FieldError>,
    },
    /// A server-side apply would change fields other managers own (409 with one
    /// `FieldManagerConflict` cause per field).
    #[error("{}", super::fieldmanager::conflicts_message(.conflicts))]
    ApplyConflict {
        /// The object.
        target: Box<Target>,
        /// The fields, their owners.
        conflicts: Vec<super::fieldmanager::Conflict>,
    },
    /// The write is refused by policy (403 Forbidden).
    #[error("{} {:?} is forbidden: {message}", .target.qualified_resource(), .target.name)]
    Forbidden {
        /// The object.
        target: Box<Target>,
        /// Why.
        message: String,
    },
    /// Admission denied the write with a `Status` of its own (a webhook's code and reason).
    #[error("{message}")]
    Denied {
        /// The HTTP code.
        code: u16,
        /// The `Status` reason.
        reason: String,
        /// The message.
        message: String,
    },
    /// The verb is not allowed on the resource now (405 MethodNotAllowed).
    #[error("{verb} not allowed while custom resource definition is terminating")]
    Terminating {
        /// The resource.
        target: Box<Target>,
        /// The verb refused (`create`).
        verb: &'static str,
    },
    /// The request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// The strategy module could not run.
    #[error(transparent)]
    Strategy(#[from] StrategyError),
    /// An invariant broke.
    #[error("{0}")]
    Internal(String),
    /// A create carried `metadata.resourceVersion`. Kubernetes answers a bare 500 (reason
    /// Unknown) with this text, and clients match on it.
    #[error("resourceVersion should not be set on objects to be created")]
    ResourceVersionSetOnCreate,
}

impl Error {
    /// Wraps a storage error for `target`, turning the codes that name an object into the
    /// registry's own variants.
    pub fn storage(source: StorageError, target: &Target) -> Self {
        match source {
            StorageError::NotFound { .. } => Self::NotFound(Box::new(target.clone())),
            StorageError::Conflict { message, .. } => Self::Conflict {
                target: Box::new(target.clone()),
                message,
            },
            source => Self::Storage {
                source,
                target: Box::new(target.clone()),
            },
        }
    }

    /// A `Conflict` with Kubernetes' "the object has been modified" wording.
    pub fn modified(target: &Target) -> Self {
        Self::Conflict {
            target: Box::new(target.clone()),
            message: "the object has been modified; please apply your changes to the latest version and try again".into(),
        }
    }

    /// An `Invalid` with one cause.
    pub fn invalid(target: &Target, cause: FieldError) -> Self {
        Self::Invalid {
            target: Box::new(target.clone()),
            causes: vec![cause],
        }
    }

    /// The error for a strategy's refusal of a write to `target`.
    pub fn refused(target: &Target, refusal: Refusal) -> Self {
        match refusal {
            Refusal::Forbidden(message) => Self::Forbidden {
                target: Box::new(target.clone()),
                message,
            },
            Refusal::NotFound {
                group,
                plural,
                name,
            } => Self::NotFound(Box::new(Target {
                group,
                plural,
                kind: String::new(),
                name,
            })),
        }
    }

    /// True for `NotFound` (also a storage `NotFound`).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound(_))
            || matches!(self, Self::Storage { source, .. } if source.is_not_found())
    }

    /// True for a Conflict (409): the object changed since it was read.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }

    /// True for a Conflict from a uid precondition (the object was replaced by another of the
    /// same name).
    pub fn is_uid_conflict(&self) -> bool {
        matches!(self, Self::Conflict { message, .. } if message.contains("UID in precondition"))
    }

    /// True for a refusal by policy (403), such as a create in a terminating namespace.
    pub fn is_forbidden(&self) -> bool {
        matches!(self, Self::Forbidden { .. })
    }

    /// True for a storage `AlreadyExists`.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Self::Storage { source, .. } if source.is_already_exists())
    }
}

/// Carries a registry error through a storage callback (`TryUpdate`, `ValidateDeletion`), so it
/// can be recovered intact from `StorageError::Aborted`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Carried(pub Error);

impl Error {
    /// Recovers an error carried through a storage callback, or wraps the storage error.
    pub fn from_storage_call(err: StorageError, target: &Target) -> Self {
        match err {
            StorageError::Aborted(boxed) => match boxed.downcast::<Carried>() {
                Ok(carried) => carried.0,
                Err(other) => Self::Internal(other.to_string()),
            },
            other => Self::storage(other, target),
        }
    }
}
