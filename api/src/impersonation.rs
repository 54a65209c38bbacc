//! Impersonation (`kubectl --as`, `--as-group`, `--as-uid`): the `Impersonate-User`,
//! `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-<key>` headers turn the
//! authenticated user into the one they name, once the authorizer allows the `impersonate` verb
//! on each thing named, as kube-apiserver's impersonation filter does.

use hyper::HeaderMap;

use super::audit::AuditContext;
use super::filters::Security;
use super::status::Status;
use crate::user::UserInfo;
use strategy_host_authentication::{ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP};
use strategy_host_authorization::{Attributes, Authorizer};

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_HEADER_PREFIX: &str = "impersonate-extra-";

/// The group a ServiceAccount user name is impersonated with, when no groups are named.
const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// One thing a request asks to act as; each needs its own `impersonate` permission.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// A user name (`users`).
    User(String),
    /// A ServiceAccount's user name, `system:serviceaccount:<namespace>:<name>`
    /// (`serviceaccounts` in the namespace).
    ServiceAccount { namespace: String, name: String },
    /// A group (`groups`).
    Group(String),
    /// One value of an extra attribute (`userextras/<key>`).
    Extra { key: String, value: String },
    /// A uid (`uids`).
    Uid(String),
}

impl Target {
    /// The authorization attributes of impersonating this target as `requester`.
    fn attributes(&self, requester: &UserInfo) -> Attributes {
        let (group, resource, namespace, name, subresource) = match self {
            Target::User(name) => ("", "users", "", name.as_str(), ""),
            Target::ServiceAccount { namespace, name } => {
                ("", "serviceaccounts", namespace.as_str(), name.as_str(), "")
            }
            Target::Group(name) => ("", "groups", "", name.as_str(), ""),
            Target::Extra { key, value } => (
                "authentication.k8s.io",
                "userextras",
                "",
                value.as_str(),
                key.as_str(),
            ),
            Target::Uid(uid) => ("authentication.k8s.io", "uids", "", uid.as_str(), ""),
        };
        Attributes {
            user: requester.clone(),
            verb: "impersonate".into(),
            resource_request: true,
            api_group: group.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Attributes::default()
        }
    }

    fn describe(&self) -> String {
        match self {
            Target::User(name) => format!("user {name:?}"),
            Target::ServiceAccount { namespace, name } => {
                format!("serviceaccount {namespace}/{name}")
            }
            Target::Group(name) => format!("group {name:?}"),
            Target::Extra { key, value } => format!("extra {key}={value:?}"),
            Target::Uid(uid) => format!("uid {uid:?}"),
        }
    }
}

/// What the impersonation headers of a request ask for, in kube-apiserver's order: the user,
/// the groups, the extras, the uid. Empty when there are none.
fn requested(headers: &HeaderMap) -> Result<Vec<Target>, Status> {
    let text = |value: &hyper::header::HeaderValue| -> Result<String, Status> {
        value
            .to_str()
            .map(str::to_string)
            .map_err(|_| Status::bad_request("an impersonation header is not valid text"))
    };
    let mut targets = Vec::new();
    let user = match headers.get(USER_HEADER) {
        Some(value) => Some(text(value)?).filter(|u| !u.is_empty()),
        None => None,
    };
    if let Some(user) = &user {
        targets.push(match service_account(user) {
            Some((namespace, name)) => Target::ServiceAccount {
                namespace: namespace.into(),
                name: name.into(),
            },
            None => Target::User(user.clone()),
        });
    }
    for value in headers.get_all(GROUP_HEADER) {
        targets.push(Target::Group(text(value)?));
    }
    for (header, value) in headers {
        let Some(escaped) = header.as_str().strip_prefix(EXTRA_HEADER_PREFIX) else {
            continue;
        };
        // Header names cannot carry every key's characters: clients percent-encode them.
        let key = percent_encoding::percent_decode_str(escaped)
            .decode_utf8_lossy()
            .to_lowercase();
        targets.push(Target::Extra {
            key,
            value: text(value)?,
        });
    }
    if let Some(value) = headers.get(UID_HEADER) {
        let uid = text(value)?;
        if !uid.is_empty() {
            targets.push(Target::Uid(uid));
        }
    }
    if user.is_none() && !targets.is_empty() {
        // kube-apiserver answers this 500 InternalError, with its own wording.
        let named: Vec<String> = targets.iter().map(Target::describe).collect();
        return Err(Status::internal(format!(
            "requested [{}] without impersonating a user",
            named.join(", ")
        )));
    }
    Ok(targets)
}

/// `system:serviceaccount:<namespace>:<name>` split, when `user` is one.
fn service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

/// `attributes` as the user `req` impersonates, once `security` allows it: recorded in the
/// request's audit event, and the impersonation headers removed. As they are when the request
/// impersonates no one.
///
/// # Errors
/// As [`impersonate`].
pub(crate) async fn act_as<B>(
    req: &mut hyper::Request<B>,
    security: &Security,
    attributes: Attributes,
) -> Result<Attributes, Status> {
    let Some(acting) = security
        .impersonate(req.headers(), &attributes.user)
        .await?
    else {
        return Ok(attributes);
    };
    tracing::debug!(user = %attributes.user.username, as_user = %acting.username, "impersonating");
    AuditContext::of(req.extensions()).log_impersonated_user(&acting);
    strip(req.headers_mut());
    Ok(Attributes {
        user: acting,
        ..attributes
    })
}

/// The user `requester` acts as once every impersonation `headers` asks for is allowed by
/// `authorizer`; `None` when the request impersonates no one.
///
/// # Errors
/// 403 (Kubernetes' message for the first target not allowed); 500 for groups, extras or a uid
/// without a user, as kube-apiserver; 400 for a header that is not text.
pub async fn impersonate(
    headers: &HeaderMap,
    requester: &UserInfo,
    authorizer: &dyn Authorizer,
) -> Result<Option<UserInfo>, Status> {
    let targets = requested(headers)?;
    if targets.is_empty() {
        return Ok(None);
    }
    let mut user = UserInfo::default();
    let mut groups_named = false;
    for target in &targets {
        let attributes = target.attributes(requester);
        let decision = authorizer.authorize(&attributes).await;
        if !decision.allowed() {
            return Err(super::filters::forbidden(&attributes, decision.reason()));
        }
        match target {
            Target::User(name) => user.username = name.clone(),
            Target::ServiceAccount { namespace, name } => {
                user.username = format!("system:serviceaccount:{namespace}:{name}");
            }
            Target::Group(name) => {
                groups_named = true;
                user.groups.push(name.clone());
            }
            Target::Extra { key, value } => {
                user.extra
                    .entry(key.clone())
                    .or_default()
                    .push(value.clone());
            }
            Target::Uid(uid) => user.uid = uid.clone(),
        }
    }
    if let Some(Target::ServiceAccount { namespace, .. }) = targets.first() {
        if !groups_named {
            user.groups = vec![
                SERVICE_ACCOUNTS_GROUP.into(),
                format!("{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
            ];
        }
    }
    // Whoever is impersonated is authenticated, but the anonymous user.
    let implied = if user.username == ANONYMOUS_USER {
        UNAUTHENTICATED_GROUP
    } else {
        AUTHENTICATED_GROUP
    };
    if !user.groups.iter().any(|g| g == implied) {
        user.groups.push(implied.into());
    }
    Ok(Some(user))
}

/// Removes the impersonation headers, so nothing the request reaches later sees them.
fn strip(headers: &mut HeaderMap) {
    let names: Vec<_> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("impersonate-"))
        .cloned()
        .collect();
    for name in names {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strategy_host_authorization::Decision;

    /// Allows impersonating anything but the user `root` and the group `wheel`.
    struct Rules;

    #[async_trait::async_trait]
    impl Authorizer for Rules {
        async fn authorize(&self, a: &Attributes) -> Decision {
            assert_eq!(a.verb, "impersonate");
            if a.name == "root" || a.name == "wheel" {
                Decision::NoOpinion(String::new())
            } else {
                Decision::Allow(String::new())
            }
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    fn alice() -> UserInfo {
        UserInfo {
            username: "alice".into(),
            ..UserInfo::default()
        }
    }

    #[tokio::test]
    async fn a_user_with_groups_extras_and_uid_is_impersonated_as_named() {
        let h = headers(&[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "dev"),
            ("Impersonate-Group", "qa"),
            ("Impersonate-Extra-Scopes%2Fa", "view"),
            ("Impersonate-Uid", "u-1"),
        ]);
        let user = impersonate(&h, &alice(), &Rules).await.unwrap().unwrap();
        assert_eq!(user.username, "bob");
        assert_eq!(user.groups, ["dev", "qa", "system:authenticated"]);
        assert_eq!(user.extra["scopes/a"], ["view"]);
        assert_eq!(user.uid, "u-1");
        assert_eq!(
            impersonate(&HeaderMap::new(), &alice(), &Rules)
                .await
                .unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn a_service_account_gets_its_groups_unless_groups_are_named() {
        let h = headers(&[("Impersonate-User", "system:serviceaccount:team:robot")]);
        let user = impersonate(&h, &alice(), &Rules).await.unwrap().unwrap();
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:team",
                "system:authenticated"
            ]
        );
        let anonymous = headers(&[("Impersonate-User", "system:anonymous")]);
        let user = impersonate(&anonymous, &alice(), &Rules)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(user.groups, ["system:unauthenticated"]);
    }

    #[tokio::test]
    async fn each_target_needs_permission_and_groups_need_a_user() {
        let denied = impersonate(&headers(&[("Impersonate-User", "root")]), &alice(), &Rules)
            .await
            .unwrap_err();
        assert_eq!(denied.code, 403);
        assert_eq!(
            denied.message,
            r#"users "root" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
        let group = headers(&[("Impersonate-User", "bob"), ("Impersonate-Group", "wheel")]);
        let denied = impersonate(&group, &alice(), &Rules).await.unwrap_err();
        assert!(denied
            .message
            .contains(r#"cannot impersonate resource "groups""#));
        let orphan = impersonate(&headers(&[("Impersonate-Group", "dev")]), &alice(), &Rules)
            .await
            .unwrap_err();
        assert_eq!(orphan.code, 500);
        assert!(
            orphan.message.contains("without impersonating a user"),
            "{}",
            orphan.message
        );
    }
}
