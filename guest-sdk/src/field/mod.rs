//! Field paths and field errors, in Kubernetes' vocabulary and wording
//! (`k8s.io/apimachinery/.../field`).

use std::fmt;

use crate::abi;

mod value;

pub use value::FieldValue;

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

/// One field error: which field, what kind, and why, worded as kube-apiserver words it.
///
/// Make it with the constructors, which take the arguments of Kubernetes' `field` package
/// (`field.Invalid(path, value, detail)`, ...) and render the bad value as Go renders it (see
/// [`FieldValue`]), so a Rust module, a Go module and kube-apiserver report the same mistake in
/// the same words.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::{FieldError, FieldPath};
/// let e = FieldError::invalid(
///     &FieldPath::new("spec").child("replicas"),
///     -1,
///     "must be greater than or equal to 0",
/// );
/// assert_eq!(e.field, "spec.replicas");
/// assert_eq!(
///     e.to_string(),
///     "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The kind.
    pub kind: FieldErrorKind,
    /// The rendered field path.
    pub field: String,
    /// What follows the kind in the message: the bad value, rendered, and the reason
    /// (`-1: must be greater than or equal to 0`).
    pub detail: String,
}

impl FieldError {
    /// A field error of any kind with a detail written by hand.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{FieldError, FieldErrorKind, FieldPath};
    /// let e = FieldError::new(FieldErrorKind::Forbidden, &FieldPath::new("spec"), "not here");
    /// assert_eq!(e.to_string(), "spec: Forbidden: not here");
    /// ```
    pub fn new(kind: FieldErrorKind, field: &FieldPath, detail: impl Into<String>) -> Self {
        Self {
            kind,
            field: field.to_string(),
            detail: detail.into(),
        }
    }

    /// `Required value[: detail]`: a field that must be set is not.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{FieldError, FieldPath};
    /// let e = FieldError::required(&FieldPath::new("spec").child("selector"), "");
    /// assert_eq!(e.to_string(), "spec.selector: Required value");
    /// ```
    pub fn required(field: &FieldPath, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Required, field, detail)
    }

    /// `Invalid value: <value>: detail`: the value is malformed or out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{FieldError, FieldPath};
    /// let e = FieldError::invalid(&FieldPath::new("spec").child("size"), "big", "must be an integer");
    /// assert_eq!(e.to_string(), r#"spec.size: Invalid value: "big": must be an integer"#);
    /// ```
    pub fn invalid(
        field: &FieldPath,
        value: impl Into<FieldValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(
            FieldErrorKind::Invalid,
            field,
            with_value(value.into(), detail.into()),
        )
    }

    /// Kubernetes' `Invalid value: <value>: field is immutable`, for a field an update may not
    /// change; `value` is the new value.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{FieldError, FieldPath};
    /// let e = FieldError::immutable(&FieldPath::new("spec").child("region"), "us");
    /// assert_eq!(e.to_string(), r#"spec.region: Invalid value: "us": field is immutable"#);
    /// ```
    pub fn immutable(field: &FieldPath, value: impl Into<FieldValue>) -> Self {
        Self::invalid(field, value, "field is immutable")
    }

    /// `Forbidden: detail`: the field may not be set, or not by this request.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{FieldError, FieldPath};
    /// let e = FieldError::forbidden(&FieldPath::new("data"), "may not be changed");
    /// assert_eq!(e.to_string(), "data: Forbidden: may not be changed");
    /// ```
    pub fn forbidden(field: &FieldPath, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Forbidden, field, detail)
    }

    /// `Duplicate value: <value>`: the value repeats one that must be unique.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{FieldError, FieldPath};
    /// let e = FieldError::duplicate(&FieldPath::new("ports").index(1), 80);
    /// assert_eq!(e.to_string(), "ports[1]: Duplicate value: 80");
    /// ```
    pub fn duplicate(field: &FieldPath, value: impl Into<FieldValue>) -> Self {
        Self::new(FieldErrorKind::Duplicate, field, value.into().to_string())
    }

    /// `Unsupported value: <value>: supported values: "a", "b"`: the value is not one of
    /// `supported`.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{FieldError, FieldPath};
    /// let e = FieldError::not_supported(&FieldPath::new("spec").child("region"), "mars", &["eu", "us"]);
    /// assert_eq!(
    ///     e.to_string(),
    ///     r#"spec.region: Unsupported value: "mars": supported values: "eu", "us""#
    /// );
    /// ```
    pub fn not_supported(
        field: &FieldPath,
        value: impl Into<FieldValue>,
        supported: &[&str],
    ) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| value::go_quote(s)).collect();
        let detail = match quoted.is_empty() {
            true => String::new(),
            false => format!("supported values: {}", quoted.join(", ")),
        };
        Self::new(
            FieldErrorKind::NotSupported,
            field,
            with_value(value.into(), detail),
        )
    }

    /// `Too long: may not be more than <max_bytes> bytes` (the value is not shown).
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{FieldError, FieldPath};
    /// let e = FieldError::too_long(&FieldPath::new("metadata").child("name"), 63);
    /// assert_eq!(e.to_string(), "metadata.name: Too long: may not be more than 63 bytes");
    /// ```
    pub fn too_long(field: &FieldPath, max_bytes: usize) -> Self {
        let detail = format!(
            "may not be more than {max_bytes} {}",
            plural(max_bytes, "byte")
        );
        Self::new(FieldErrorKind::TooLong, field, detail)
    }

    /// `Too many: <actual>: must have at most <max> items`: a list or map holds too many
    /// entries.
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{FieldError, FieldPath};
    /// let e = FieldError::too_many(&FieldPath::new("spec").child("hosts"), 12, 10);
    /// assert_eq!(e.to_string(), "spec.hosts: Too many: 12: must have at most 10 items");
    /// ```
    pub fn too_many(field: &FieldPath, actual: usize, max: usize) -> Self {
        let detail = format!("{actual}: must have at most {max} {}", plural(max, "item"));
        Self::new(FieldErrorKind::TooMany, field, detail)
    }

    /// The error as a Status cause's message shows it, without the field
    /// (`Invalid value: -1: must be greater than or equal to 0`).
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::{FieldError, FieldPath};
    /// let e = FieldError::required(&FieldPath::new("spec"), "spec is required");
    /// assert_eq!(e.message(), "Required value: spec is required");
    /// ```
    pub fn message(&self) -> String {
        let head = match self.kind {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
        };
        match self.detail.is_empty() {
            true => head.to_string(),
            false => format!("{head}: {}", self.detail),
        }
    }

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

impl fmt::Display for FieldError {
    /// `field: message`, as kube-apiserver lists a cause (the message alone without a field).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field.is_empty() {
            true => f.write_str(&self.message()),
            false => write!(f, "{}: {}", self.field, self.message()),
        }
    }
}

fn with_value(value: FieldValue, detail: String) -> String {
    match detail.is_empty() {
        true => value.to_string(),
        false => format!("{value}: {detail}"),
    }
}

fn plural(n: usize, unit: &str) -> String {
    match n {
        1 => unit.to_string(),
        _ => format!("{unit}s"),
    }
}
