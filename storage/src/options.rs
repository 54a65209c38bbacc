//! Options of storage calls: preconditions, get and list options, and the list result.

use std::sync::Arc;

use serde_json::Value;

use super::error::{Result, StorageError};
use super::object::SharedObject;
use super::predicate::SelectionPredicate;
use super::versioner::{object_resource_version, object_uid, parse_resource_version};

/// How a list interprets its resourceVersion (Kubernetes' `resourceVersionMatch`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ResourceVersionMatch {
    /// At least as fresh as the given revision (the default).
    #[default]
    NotOlderThan,
    /// Exactly at the given revision.
    Exact,
}

/// Conditions the stored object must meet before an update or delete proceeds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The object's uid must equal this.
    pub uid: Option<String>,
    /// The object's resourceVersion must equal this.
    pub resource_version: Option<String>,
}

impl Preconditions {
    /// No preconditions.
    pub fn none() -> Self {
        Self::default()
    }

    /// The object's uid must be `uid` (it was not replaced by another of the same name).
    pub fn uid(uid: impl Into<String>) -> Self {
        Self {
            uid: Some(uid.into()),
            resource_version: None,
        }
    }

    /// The object's resourceVersion must be `resource_version` (it did not change).
    pub fn resource_version(resource_version: impl Into<String>) -> Self {
        Self {
            uid: None,
            resource_version: Some(resource_version.into()),
        }
    }

    /// Checks the preconditions against `current`.
    ///
    /// # Errors
    /// `Conflict` with Kubernetes' wording when one does not hold.
    pub fn check(&self, key: &str, current: &Value) -> Result<()> {
        if let Some(uid) = &self.uid {
            let actual = object_uid(current).unwrap_or_default();
            if uid != actual {
                return Err(StorageError::conflict(
                    key,
                    format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                    ),
                ));
            }
        }
        if let Some(rv) = &self.resource_version {
            let actual = object_resource_version(current)?
                .map(|r| r.to_string())
                .unwrap_or_default();
            if rv != &actual {
                return Err(StorageError::conflict(
                    key,
                    format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Options of a single-object read.
#[derive(Debug, Clone, Default)]
pub struct GetOptions {
    /// `""` for the latest state, `"0"` for any state, `N` for state at least as fresh as N.
    pub resource_version: String,
    /// Answer `Ok(None)` instead of `NotFound`.
    pub ignore_not_found: bool,
}

/// Options of a list or a watch.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// `""` for the latest state, `"0"` for any state, `N` per `resource_version_match`.
    pub resource_version: String,
    /// How `resource_version` is read.
    pub resource_version_match: Option<ResourceVersionMatch>,
    /// Which objects to return.
    pub predicate: SelectionPredicate,
    /// Treat the key as a prefix (`key/`) instead of a single object.
    pub recursive: bool,
    /// The most items to return in one page (0 = all).
    pub limit: u64,
    /// A token from the previous page.
    pub continue_token: Option<String>,
    /// Watches only: send BOOKMARK events with the current revision when the store reports
    /// progress.
    pub allow_bookmarks: bool,
    /// Watches only (`sendInitialEvents`, KEP-3157): start with the current state as ADDED
    /// events, then a BOOKMARK at the revision they are consistent at (the end of the initial
    /// events). Served by the cacher; the stores below ignore it.
    pub send_initial_events: bool,
    /// Lists only: leave `remainingItemCount` out. Counting the keys after a page reads all of
    /// them on the embedded store; a caller that pages through everything (the watch cache's
    /// informer) would pay that once per page, quadratic in the resource's size.
    pub skip_remaining_count: bool,
}

impl GetOptions {
    /// A read of the latest state that answers `Ok(None)` for a missing object.
    pub fn ignoring_not_found() -> Self {
        Self {
            ignore_not_found: true,
            ..Self::default()
        }
    }
}

impl ListOptions {
    /// A list or watch of every object under the key (a prefix), all else default.
    pub fn recursive() -> Self {
        Self {
            recursive: true,
            ..Self::default()
        }
    }

    /// Parses the resourceVersion (`None` for `""`).
    ///
    /// # Errors
    /// `BadRequest` when it is not a number.
    pub fn parsed_resource_version(&self) -> Result<Option<u64>> {
        parse_resource_version(&self.resource_version)
    }
}

/// One page of a list.
#[derive(Debug, Clone, Default)]
pub struct ObjectList {
    /// The objects, in key order, each stamped with its resourceVersion, shared as they are
    /// held (a cache's list copies no object).
    pub items: Vec<Arc<SharedObject>>,
    /// The revision the list is consistent at.
    pub resource_version: u64,
    /// A token for the next page, when there is one.
    pub continue_token: Option<String>,
    /// How many matching objects remain after this page, when the store knows cheaply.
    pub remaining_item_count: Option<u64>,
}

/// Where a list starts reading and at which revision, after the resourceVersion rules applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPlan {
    /// The revision to read at; `None` means "the latest".
    pub revision: Option<u64>,
    /// The first key to read (inclusive), from a continue token, if any.
    pub start_key: Option<String>,
    /// For NotOlderThan reads: the revision the answer must be at least as fresh as.
    pub min_revision: Option<u64>,
}

/// Applies Kubernetes' rules for a list's resourceVersion, resourceVersionMatch and continue token.
///
/// # Errors
/// `BadRequest` for a continue token combined with a resourceVersion, an `Exact` match without a
/// revision, or an unparsable token.
pub fn plan_list(opts: &ListOptions, list_prefix: &str) -> Result<ListPlan> {
    let rv = opts.parsed_resource_version()?;
    if let Some(token) = &opts.continue_token {
        if matches!(rv, Some(r) if r > 0) {
            return Err(StorageError::BadRequest(
                "specifying resource version is not allowed when using continue".into(),
            ));
        }
        if opts.resource_version_match.is_some() {
            return Err(StorageError::BadRequest(
                "resourceVersionMatch is forbidden when continue is provided".into(),
            ));
        }
        let t = super::continue_token::ContinueToken::decode(token, list_prefix)?;
        return Ok(ListPlan {
            revision: Some(t.revision),
            start_key: Some(t.start_key),
            min_revision: None,
        });
    }
    match (opts.resource_version_match, rv) {
        (Some(ResourceVersionMatch::Exact), None | Some(0)) => Err(StorageError::BadRequest(
            "resourceVersionMatch=Exact requires a non-zero resourceVersion".into(),
        )),
        (Some(ResourceVersionMatch::Exact), Some(r)) => Ok(ListPlan {
            revision: Some(r),
            start_key: None,
            min_revision: None,
        }),
        (_, Some(r)) if r > 0 => Ok(ListPlan {
            revision: None,
            start_key: None,
            min_revision: Some(r),
        }),
        _ => Ok(ListPlan {
            revision: None,
            start_key: None,
            min_revision: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn preconditions_conflict_with_kubernetes_wording() {
        let obj = json!({"metadata": {"uid": "u1", "resourceVersion": "5"}});
        assert!(Preconditions::none().check("/k", &obj).is_ok());
        let p = Preconditions {
            uid: Some("u2".into()),
            ..Default::default()
        };
        let err = p.check("/k", &obj).unwrap_err();
        assert!(err.is_conflict());
        assert!(err.to_string().contains("UID in precondition: u2"));
        let p = Preconditions {
            resource_version: Some("4".into()),
            ..Default::default()
        };
        assert!(p.check("/k", &obj).unwrap_err().is_conflict());
    }

    #[test]
    fn list_plans() {
        let mut o = ListOptions {
            resource_version: "5".into(),
            continue_token: Some("x".into()),
            ..Default::default()
        };
        assert!(plan_list(&o, "/p/").unwrap_err().is_bad_request());
        o.continue_token = None;
        assert_eq!(plan_list(&o, "/p/").unwrap().min_revision, Some(5));
        o.resource_version_match = Some(ResourceVersionMatch::Exact);
        assert_eq!(plan_list(&o, "/p/").unwrap().revision, Some(5));
        o.resource_version = "0".into();
        assert!(plan_list(&o, "/p/").is_err());
    }
}
