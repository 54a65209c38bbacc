//! Authorization: whether a user may do what a request asks (Kubernetes' `authorizer.Authorizer`).
//!
//! The API layer turns every request into [`Attributes`] and asks one [`Authorizer`]; RBAC
//! (`rbac/`) is the real one, [`AlwaysAllow`] the `--authorization-mode=AlwaysAllow` one. Members
//! of `system:masters` are always allowed, before any mode is asked, as kube-apiserver's
//! privileged-group authorizer does.

use crate::strategy::UserInfo;

/// What a request asks to do (Kubernetes' `authorizer.AttributesRecord`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    /// Who asks.
    pub user: UserInfo,
    /// The Kubernetes verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection` (and `escalate`, `bind`, `impersonate` in reviews); for non-resource
    /// requests the lower-case HTTP method (`get`, `post`, ...).
    pub verb: String,
    /// True for a request under `/api/{v}` or `/apis/{g}/{v}` naming a resource.
    pub resource_request: bool,
    /// The request path (non-resource requests are authorized by it).
    pub path: String,
    /// The API group (`""` for core).
    pub api_group: String,
    /// The API version.
    pub api_version: String,
    /// The plural resource (`pods`).
    pub resource: String,
    /// The subresource (`status`, `token`), empty for none.
    pub subresource: String,
    /// The namespace, empty for cluster-scoped requests and all-namespace lists.
    pub namespace: String,
    /// The object name, empty for collections.
    pub name: String,
}

/// An authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, with the reason (e.g. which binding allowed it).
    Allow(String),
    /// Explicitly denied, with the reason.
    Deny(String),
    /// No rule applies; the next authorizer (if any) decides, else the request is denied.
    NoOpinion(String),
}

impl Decision {
    /// True for `Allow`.
    pub fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    /// The reason given, whatever the decision.
    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow(r) | Decision::Deny(r) | Decision::NoOpinion(r) => r,
        }
    }
}

/// Decides whether a request may proceed.
pub trait Authorizer: Send + Sync {
    /// The decision for `attributes`.
    fn authorize(&self, attributes: &Attributes) -> Decision;
}

/// `--authorization-mode=AlwaysAllow`: every request is allowed.
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _: &Attributes) -> Decision {
        Decision::Allow(String::new())
    }
}
