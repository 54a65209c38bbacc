//! The `Authorizer` trait an author implements for an authorizer module (ABI 1.5): asked, where
//! the server's authorization configuration names it, whether a request may proceed — the
//! question an authorization webhook is sent as a `SubjectAccessReview` — and answering allow,
//! deny or no opinion.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::context::Context;

/// What is asked about (Kubernetes' `SubjectAccessReviewSpec`): who, and a resource request or
/// a non-resource one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct AccessRequest {
    /// The user, e.g. `alice` or `system:serviceaccount:team:builder`.
    #[serde(default)]
    pub user: String,
    /// The user's groups.
    #[serde(default)]
    pub groups: Vec<String>,
    /// The user's uid, if the authenticator gave one.
    #[serde(default)]
    pub uid: String,
    /// Further attributes of the user.
    #[serde(default)]
    pub extra: BTreeMap<String, Vec<String>>,
    /// A request for a resource (under `/api` or `/apis`).
    #[serde(default, rename = "resourceAttributes")]
    pub resource: Option<ResourceAttributes>,
    /// A request for a path that names no resource (`/healthz`, `/version`).
    #[serde(default, rename = "nonResourceAttributes")]
    pub non_resource: Option<NonResourceAttributes>,
}

/// A resource request's attributes; empty strings for what does not apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ResourceAttributes {
    /// The namespace (empty: cluster-scoped, or every namespace).
    pub namespace: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, ...
    pub verb: String,
    /// The API group (`""` is the core group).
    pub group: String,
    /// The API version.
    pub version: String,
    /// The plural resource, e.g. `pods`.
    pub resource: String,
    /// The subresource, e.g. `status`.
    pub subresource: String,
    /// The object's name (empty for collections and creates).
    pub name: String,
}

/// A non-resource request's attributes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct NonResourceAttributes {
    /// The path, e.g. `/healthz`.
    pub path: String,
    /// The lower-case HTTP verb, e.g. `get`.
    pub verb: String,
}

impl AccessRequest {
    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// An authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The request may proceed; the reason is recorded (audit, access reviews).
    Allow(String),
    /// The request is refused, whatever later authorizers would say; the reason is in the 403.
    Deny(String),
    /// Not this authorizer's to decide: the next one in the chain decides.
    NoOpinion,
}

/// What a failed call of the authorizer decides (as an authorization webhook's
/// `failurePolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorizerFailurePolicy {
    /// The next authorizer decides.
    NoOpinion,
    /// The chain ends; the request answers 500.
    Deny,
}

/// An authorizer module: one function from a request to a decision.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::{AccessRequest, Authorizer, Context, Decision};
///
/// #[derive(Default)]
/// struct ReadOnlyAuditors;
/// impl Authorizer for ReadOnlyAuditors {
///     const NAME: &'static str = "read-only-auditors";
///     fn authorize(&self, _: &Context, r: &AccessRequest) -> Decision {
///         let reads = r.resource.as_ref().is_some_and(|a| matches!(a.verb.as_str(), "get" | "list" | "watch"));
///         match r.in_group("auditors") && reads {
///             true => Decision::Allow("auditors read everything".into()),
///             false => Decision::NoOpinion,
///         }
///     }
/// }
/// ```
pub trait Authorizer {
    /// The module's name: the `name` of its entry in the authorization configuration.
    const NAME: &'static str;
    /// What a failed call decides.
    const FAILURE_POLICY: AuthorizerFailurePolicy = AuthorizerFailurePolicy::NoOpinion;

    /// The decision about `request`.
    fn authorize(&self, ctx: &Context, request: &AccessRequest) -> Decision;
}
