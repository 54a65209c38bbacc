//! Kubernetes' apimachinery vocabulary, which every layer of Strategy Host speaks and none owns:
//! label selectors (the query syntax and `metav1.LabelSelector`), field selectors, the
//! reading of an `apiVersion`, uids and timestamps, Go's durations, configuration files reloaded
//! as they change, and a cache whose entries expire.
//!
//! A leaf crate: it knows nothing of storage, the registry or the API above it.

pub mod config_file;
pub mod expiring_cache;
pub mod fields;
pub mod go_duration;
pub mod labels;
pub mod meta;

pub use fields::FieldSelector;
pub use labels::LabelSelector;

/// A selector that does not parse; its text is Kubernetes' message (a 400 BadRequest).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

/// The group and version of an `apiVersion`: `apps/v1` → (`apps`, `v1`); the core group's `v1`
/// → (`""`, `v1`). The one reading of an apiVersion every layer uses.
///
/// ```
/// use strategy_host_apimachinery::group_version;
/// assert_eq!(group_version("apps/v1"), ("apps", "v1"));
/// assert_eq!(group_version("v1"), ("", "v1"));
/// ```
pub fn group_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}
