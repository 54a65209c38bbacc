//! Field paths and field errors, in Kubernetes' vocabulary (`k8s.io/apimachinery/.../field`).

use std::fmt;

use crate::abi;

/// A path to a field, rendered the way Kubernetes does: `spec.template.metadata.labels[app]`,
/// `spec.containers[0].name`.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::FieldPath;
/// let p = FieldPath::new("spec").child("containers").index(0).child("name");
/// assert_eq!(p.to_string(), "spec.containers[0].name");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldPath(String);

impl FieldPath {
    /// A path starting at a top-level field.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(strategy_guest_sdk::FieldPath::new("data").as_str(), "data");
    /// ```
    pub fn new(root: &str) -> Self {
        Self(root.to_owned())
    }

    /// The path of a named child field.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = strategy_guest_sdk::FieldPath::new("spec").child("replicas");
    /// assert_eq!(p.as_str(), "spec.replicas");
    /// ```
    pub fn child(&self, name: &str) -> Self {
        Self(format!("{}.{}", self.0, name))
    }

    /// The path of a list element.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = strategy_guest_sdk::FieldPath::new("items").index(3);
    /// assert_eq!(p.as_str(), "items[3]");
    /// ```
    pub fn index(&self, i: usize) -> Self {
        Self(format!("{}[{}]", self.0, i))
    }

    /// The path of a map entry.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = strategy_guest_sdk::FieldPath::new("metadata").child("labels").key("app");
    /// assert_eq!(p.as_str(), "metadata.labels[app]");
    /// ```
    pub fn key(&self, key: &str) -> Self {
        Self(format!("{}[{}]", self.0, key))
    }

    /// The rendered path.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(strategy_guest_sdk::FieldPath::new("spec").as_str(), "spec");
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Kubernetes' field error kinds.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::{FieldError, FieldErrorKind, FieldPath};
/// let e = FieldError::required(&FieldPath::new("spec"), "spec is required");
/// assert_eq!(e.kind, FieldErrorKind::Required);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// A required field is missing.
    Required,
    /// The value is malformed or out of range.
    Invalid,
    /// The field may not be set (or changed).
    Forbidden,
    /// The value duplicates another.
    Duplicate,
    /// The value is not one of the supported ones.
    NotSupported,
    /// The value is too long.
    TooLong,
    /// The list or map has too many entries.
    TooMany,
}

/// One field error: which field, what kind, and why.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::{FieldError, FieldPath};
/// let e = FieldError::invalid(&FieldPath::new("spec").child("replicas"), "must be >= 0");
/// assert_eq!(e.field, "spec.replicas");
/// assert_eq!(e.detail, "must be >= 0");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The kind.
    pub kind: FieldErrorKind,
    /// The rendered field path.
    pub field: String,
    /// A human-readable detail.
    pub detail: String,
}

macro_rules! constructor {
    ($(#[$doc:meta])* $name:ident, $kind:ident) => {
        $(#[$doc])*
        pub fn $name(field: &FieldPath, detail: impl Into<String>) -> Self {
            Self::new(FieldErrorKind::$kind, field, detail)
        }
    };
}

impl FieldError {
    /// A field error of any kind.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{FieldError, FieldErrorKind, FieldPath};
    /// let e = FieldError::new(FieldErrorKind::TooMany, &FieldPath::new("items"), "at most 10");
    /// assert_eq!(e.kind, FieldErrorKind::TooMany);
    /// ```
    pub fn new(kind: FieldErrorKind, field: &FieldPath, detail: impl Into<String>) -> Self {
        Self {
            kind,
            field: field.to_string(),
            detail: detail.into(),
        }
    }

    constructor!(
        /// A `Required` error.
        ///
        /// # Examples
        ///
        /// ```
        /// use strategy_guest_sdk::{FieldError, FieldPath};
        /// let e = FieldError::required(&FieldPath::new("spec").child("selector"), "required");
        /// assert_eq!(e.field, "spec.selector");
        /// ```
        required, Required
    );
    constructor!(
        /// An `Invalid` error.
        ///
        /// # Examples
        ///
        /// ```
        /// use strategy_guest_sdk::{FieldError, FieldPath};
        /// let e = FieldError::invalid(&FieldPath::new("spec"), "bad");
        /// assert_eq!(e.detail, "bad");
        /// ```
        invalid, Invalid
    );
    constructor!(
        /// A `Forbidden` error.
        ///
        /// # Examples
        ///
        /// ```
        /// use strategy_guest_sdk::{FieldError, FieldErrorKind, FieldPath};
        /// let e = FieldError::forbidden(&FieldPath::new("data"), "immutable");
        /// assert_eq!(e.kind, FieldErrorKind::Forbidden);
        /// ```
        forbidden, Forbidden
    );
    constructor!(
        /// A `Duplicate` error.
        ///
        /// # Examples
        ///
        /// ```
        /// use strategy_guest_sdk::{FieldError, FieldErrorKind, FieldPath};
        /// let e = FieldError::duplicate(&FieldPath::new("ports").index(1), "port 80");
        /// assert_eq!(e.kind, FieldErrorKind::Duplicate);
        /// ```
        duplicate, Duplicate
    );
    constructor!(
        /// A `NotSupported` error.
        ///
        /// # Examples
        ///
        /// ```
        /// use strategy_guest_sdk::{FieldError, FieldErrorKind, FieldPath};
        /// let e = FieldError::not_supported(&FieldPath::new("spec").child("type"), "use A or B");
        /// assert_eq!(e.kind, FieldErrorKind::NotSupported);
        /// ```
        not_supported, NotSupported
    );
    constructor!(
        /// A `TooLong` error.
        ///
        /// # Examples
        ///
        /// ```
        /// use strategy_guest_sdk::{FieldError, FieldErrorKind, FieldPath};
        /// let e = FieldError::too_long(&FieldPath::new("data"), "at most 1 MiB");
        /// assert_eq!(e.kind, FieldErrorKind::TooLong);
        /// ```
        too_long, TooLong
    );
    constructor!(
        /// A `TooMany` error.
        ///
        /// # Examples
        ///
        /// ```
        /// use strategy_guest_sdk::{FieldError, FieldErrorKind, FieldPath};
        /// let e = FieldError::too_many(&FieldPath::new("items"), "at most 10");
        /// assert_eq!(e.kind, FieldErrorKind::TooMany);
        /// ```
        too_many, TooMany
    );

    pub(crate) fn to_abi(&self) -> abi::FieldError {
        let kind = match self.kind {
            FieldErrorKind::Required => abi::FieldErrorKind::Required,
            FieldErrorKind::Invalid => abi::FieldErrorKind::Invalid,
            FieldErrorKind::Forbidden => abi::FieldErrorKind::Forbidden,
            FieldErrorKind::Duplicate => abi::FieldErrorKind::Duplicate,
            FieldErrorKind::NotSupported => abi::FieldErrorKind::NotSupported,
            FieldErrorKind::TooLong => abi::FieldErrorKind::TooLong,
            FieldErrorKind::TooMany => abi::FieldErrorKind::TooMany,
        };
        abi::FieldError {
            kind: kind as i32,
            field: self.field.clone(),
            detail: self.detail.clone(),
        }
    }
}
