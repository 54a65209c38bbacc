//! Authorization: whether a user may do what a request asks (Kubernetes' `authorizer.Authorizer`).
//!
//! The API layer turns every request into [`Attributes`] and asks one [`Authorizer`]; RBAC
//! (`rbac/`) is the real one, [`AlwaysAllow`] the `--authorization-mode=AlwaysAllow` one. Members
//! of `system:masters` are always allowed, before any mode is asked, as kube-apiserver's
//! privileged-group authorizer does.
//!
//! A crate above the registry, below the api that asks it; it knows neither the api nor the
//! wasm modules.

pub use strategy_host_contract::{authorizer, strategy, user};

pub mod delegated;
pub mod owner_references;
pub mod rbac;
pub mod review;
pub mod structured;

use std::sync::Arc;

use crate::user::UserInfo;

/// The group whose members every request is allowed for (`user.SystemPrivilegedGroup`).
pub const PRIVILEGED_GROUP: &str = "system:masters";

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
    /// No authorizer allowed and one failed (a webhook that did not answer): kube-apiserver
    /// answers such a request 500 with the error, not 403.
    Error(String),
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
            Decision::Error(_) => "",
        }
    }

    /// The authorizer's error, if one failed.
    pub fn error(&self) -> Option<&str> {
        match self {
            Decision::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// Decides whether a request may proceed. Asynchronous: a webhook authorizer asks over the
/// network (RBAC and the others answer at once).
#[async_trait::async_trait]
pub trait Authorizer: Send + Sync {
    /// The decision for `attributes`.
    async fn authorize(&self, attributes: &Attributes) -> Decision;
}

/// `--authorization-mode=AlwaysAllow`: every request is allowed.
#[derive(Debug, Clone, Copy, Default)]
pub struct AlwaysAllow;

#[async_trait::async_trait]
impl Authorizer for AlwaysAllow {
    async fn authorize(&self, _: &Attributes) -> Decision {
        Decision::Allow(String::new())
    }
}

/// Members of `groups` are allowed everything before `inner` is asked (kube-apiserver's
/// privileged-group authorizer, with `system:masters`).
#[derive(Clone, derive_more::Debug)]
pub struct PrivilegedGroups {
    groups: Vec<String>,
    #[debug(skip)]
    inner: Arc<dyn Authorizer>,
}

/// `inner`, with members of `system:masters` allowed first (reason empty, as Kubernetes).
pub fn with_privileged_groups(inner: Arc<dyn Authorizer>) -> PrivilegedGroups {
    PrivilegedGroups {
        groups: vec![PRIVILEGED_GROUP.to_string()],
        inner,
    }
}

#[async_trait::async_trait]
impl Authorizer for PrivilegedGroups {
    async fn authorize(&self, attributes: &Attributes) -> Decision {
        if attributes
            .user
            .groups
            .iter()
            .any(|g| self.groups.contains(g))
        {
            return Decision::Allow(String::new());
        }
        self.inner.authorize(attributes).await
    }
}

/// An authorizer set once the one it stands for is built (RBAC's escalation checks ask the
/// server's whole chain, which is built after RBAC); until then it has no opinion.
#[derive(Default)]
pub struct Deferred(std::sync::OnceLock<Arc<dyn Authorizer>>);

impl std::fmt::Debug for Deferred {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Deferred")
            .field(&self.0.get().is_some())
            .finish()
    }
}

impl Deferred {
    /// Stands for `authorizer` from now on (the first call wins).
    pub fn set(&self, authorizer: Arc<dyn Authorizer>) {
        let _ = self.0.set(authorizer);
    }
}

#[async_trait::async_trait]
impl Authorizer for Deferred {
    async fn authorize(&self, attributes: &Attributes) -> Decision {
        match self.0.get() {
            Some(authorizer) => authorizer.authorize(attributes).await,
            None => Decision::NoOpinion("the authorizer chain is not built yet".into()),
        }
    }
}

/// A resource rule a user holds, as a `SelfSubjectRulesReview` lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRule {
    /// The verbs.
    pub verbs: Vec<String>,
    /// The API groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    /// The resources.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// The names it is limited to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
}

/// A non-resource rule a user holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NonResourceRule {
    /// The verbs.
    pub verbs: Vec<String>,
    /// The URLs.
    #[serde(rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    pub non_resource_urls: Vec<String>,
}

/// Everything a user may do in a namespace, as far as an authorizer can list it
/// (Kubernetes' `authorizer.RuleResolver.RulesFor`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserRules {
    /// Rules on resources.
    pub resource_rules: Vec<ResourceRule>,
    /// Rules on non-resource URLs.
    pub non_resource_rules: Vec<NonResourceRule>,
    /// True when the authorizer may allow more than it listed.
    pub incomplete: bool,
    /// Errors met while listing (the rules listed still hold).
    pub evaluation_error: String,
}

/// Lists the rules a user holds (for `SelfSubjectRulesReview`).
pub trait RuleResolver: Send + Sync {
    /// The rules `user` holds in `namespace` (cluster-wide rules included).
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules;
}

impl RuleResolver for AlwaysAllow {
    fn rules_for(&self, _: &UserInfo, _: &str) -> UserRules {
        UserRules {
            resource_rules: vec![ResourceRule {
                verbs: vec!["*".into()],
                api_groups: vec!["*".into()],
                resources: vec!["*".into()],
                resource_names: vec![],
            }],
            non_resource_rules: vec![NonResourceRule {
                verbs: vec!["*".into()],
                non_resource_urls: vec!["*".into()],
            }],
            incomplete: false,
            evaluation_error: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Never;
    #[async_trait::async_trait]
    impl Authorizer for Never {
        async fn authorize(&self, _: &Attributes) -> Decision {
            Decision::NoOpinion("no".into())
        }
    }

    #[tokio::test]
    async fn masters_are_allowed_before_the_inner_authorizer() {
        let a = with_privileged_groups(Arc::new(Never));
        let mut attrs = Attributes {
            verb: "delete".into(),
            ..Attributes::default()
        };
        assert_eq!(a.authorize(&attrs).await, Decision::NoOpinion("no".into()));
        attrs.user = UserInfo::server();
        assert_eq!(a.authorize(&attrs).await, Decision::Allow(String::new()));
    }
}
