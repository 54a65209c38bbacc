//! What a call is told about its request: the resource, whether it is a dry run, the request's
//! id, and who makes it.

use std::collections::BTreeMap;

use crate::abi;

/// The resource a call is about, as the host describes it.
///
/// # Examples
///
/// ```
/// let info = strategy_guest_sdk::ResourceInfo { kind: "Widget".into(), ..Default::default() };
/// assert_eq!(info.kind, "Widget");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group.
    pub group: String,
    /// The version the request was made at.
    pub version: String,
    /// The kind.
    pub kind: String,
    /// The plural name.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

/// Who makes a request, as the host's authentication established it (Kubernetes' `user.Info`):
/// a client, or the server itself (`system:apiserver`, in `system:masters`) for the writes it
/// makes on its own.
///
/// Hosts tell it since ABI 1.1. A host older than that never does: every field is then empty,
/// so a strategy should treat an empty [`Self::username`] as "unknown", never as a user.
///
/// # Examples
///
/// ```
/// use strategy_guest_sdk::UserInfo;
///
/// let alice = UserInfo {
///     username: "alice".into(),
///     groups: vec!["system:authenticated".into(), "admins".into()],
///     ..Default::default()
/// };
/// assert!(alice.in_group("admins"));
/// assert!(!UserInfo::default().in_group("admins"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name: `alice`, `system:serviceaccount:<namespace>:<name>`, `system:anonymous`;
    /// empty when the host did not say (one older than ABI 1.1).
    pub username: String,
    /// A unique id (a ServiceAccount's uid); empty when the authenticator has none.
    pub uid: String,
    /// The groups: `system:authenticated`, `system:masters`, `system:serviceaccounts`, ...
    pub groups: Vec<String>,
    /// Further attributes an authenticator adds (a ServiceAccount token's pod name, ...).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// Whether the user is in `group`.
    ///
    /// # Examples
    ///
    /// ```
    /// let admin = strategy_guest_sdk::UserInfo {
    ///     username: "admin".into(),
    ///     groups: vec!["system:masters".into()],
    ///     ..Default::default()
    /// };
    /// assert!(admin.in_group("system:masters"));
    /// ```
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    fn from_abi(user: abi::UserInfo) -> Self {
        Self {
            username: user.username,
            uid: user.uid,
            groups: user.groups,
            extra: user
                .extra
                .into_iter()
                .map(|(key, value)| (key, value.values))
                .collect(),
        }
    }
}

/// What every call is told about the request.
///
/// # Examples
///
/// A strategy that lets only members of `release-managers` change a Release's version, and
/// stamps who created each one:
///
/// ```
/// use serde_json::{json, Value};
/// use strategy_guest_sdk::{Context, FieldError, FieldPath, Resource, Scope, Strategy, UserInfo};
///
/// struct Releases;
///
/// impl Strategy for Releases {
///     type Object = Value;
///     const NAME: &'static str = "releases";
///     const RESOURCES: &'static [Resource] =
///         &[Resource::new("example.com", "v1", "Release", "releases", Scope::Namespaced)];
///
///     fn prepare_for_create(&self, ctx: &Context, obj: &mut Value) {
///         if !ctx.user.username.is_empty() {
///             obj["metadata"]["annotations"]["example.com/created-by"] =
///                 ctx.user.username.clone().into();
///         }
///     }
///
///     fn validate_update(&self, ctx: &Context, new: &Value, old: &Value) -> Vec<FieldError> {
///         let version = FieldPath::new("spec").child("version");
///         if new["spec"]["version"] != old["spec"]["version"]
///             && !ctx.user.in_group("release-managers")
///         {
///             return vec![FieldError::forbidden(&version, "only release-managers may change it")];
///         }
///         Vec::new()
///     }
/// }
///
/// let alice = Context {
///     user: UserInfo { username: "alice".into(), ..Default::default() },
///     ..Default::default()
/// };
/// let mut release = json!({"metadata": {}, "spec": {"version": "1.0"}});
/// Releases.prepare_for_create(&alice, &mut release);
/// assert_eq!(release["metadata"]["annotations"]["example.com/created-by"], "alice");
///
/// let bumped = json!({"metadata": {}, "spec": {"version": "2.0"}});
/// assert_eq!(Releases.validate_update(&alice, &bumped, &release).len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The resource.
    pub resource: ResourceInfo,
    /// `?dryRun=All`: nothing will be persisted (hooks should not act).
    pub dry_run: bool,
    /// The request's id, which the host also tags this module's log lines with.
    pub request_id: String,
    /// Who makes the request (since ABI 1.1; empty from an older host).
    pub user: UserInfo,
}

impl Context {
    pub(crate) fn from_abi(ctx: Option<abi::Context>) -> Self {
        let ctx = ctx.unwrap_or_default();
        let r = ctx.resource.unwrap_or_default();
        Self {
            resource: ResourceInfo {
                namespaced: r.scope() != abi::Scope::Cluster,
                group: r.group,
                version: r.version,
                kind: r.kind,
                plural: r.plural,
            },
            dry_run: ctx.dry_run,
            request_id: ctx.request_id,
            user: ctx.user.map(UserInfo::from_abi).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_is_read_from_the_request_context() {
        let ctx = Context::from_abi(Some(abi::Context {
            request_id: "r1".into(),
            user: Some(abi::UserInfo {
                username: "system:serviceaccount:ns:builder".into(),
                uid: "u-1".into(),
                groups: vec!["system:serviceaccounts".into()],
                extra: [(
                    "authentication.kubernetes.io/pod-name".to_owned(),
                    abi::ExtraValue {
                        values: vec!["builder-0".into()],
                    },
                )]
                .into(),
            }),
            ..Default::default()
        }));
        assert_eq!(ctx.request_id, "r1");
        assert_eq!(ctx.user.username, "system:serviceaccount:ns:builder");
        assert_eq!(ctx.user.uid, "u-1");
        assert!(ctx.user.in_group("system:serviceaccounts"));
        assert_eq!(
            ctx.user.extra["authentication.kubernetes.io/pod-name"],
            ["builder-0"]
        );
    }

    #[test]
    fn a_host_before_abi_1_1_tells_no_user() {
        // What a 1.0 host encodes: a context without field 4.
        let ctx = Context::from_abi(Some(abi::Context {
            request_id: "r1".into(),
            ..Default::default()
        }));
        assert_eq!(ctx.user, UserInfo::default());
    }
}
