//! The filters every request passes before it is dispatched, in kube-apiserver's order:
//! authentication (who asks: a front proxy's headers, else the credentials; 401 when they
//! prove no one), then impersonation (who
//! they act as), then authorization (may they: 403 with Kubernetes' message). Development mode
//! skips authentication and authorization and acts as an admin.

use std::sync::Arc;

use super::query::Query;
use super::route::{Route, Verb};
use super::status::{Details, Status};
use super::tls::ConnectionIdentity;
use crate::user::UserInfo;
use strategy_host_apimachinery::FieldSelector;
use strategy_host_authentication::request_header::RequestHeader;
use strategy_host_authentication::{
    bearer_token, AuthenticatorChain, Credentials, Unauthorized, AUTHENTICATED_GROUP,
};
use strategy_host_authorization::{
    AlwaysAllow, Attributes, Authorizer, Decision, PRIVILEGED_GROUP,
};

/// How requests are authenticated and authorized.
pub enum Security {
    /// `--dev-mode`: no credentials are read; every request acts as [`dev_admin`].
    Development,
    /// The authenticator chain and the authorizer.
    Enforced {
        /// Who asks.
        authentication: AuthenticatorChain,
        /// May they (`system:masters` always may: the authorizer is wrapped in
        /// `authorization::with_privileged_groups`).
        authorizer: Arc<dyn Authorizer>,
        /// The headers a front proxy names users with (`--requestheader-*`), read only on a
        /// front proxy's connections.
        request_header: Option<RequestHeader>,
    },
}

/// Why a `TokenReview`'s token authenticates no one: its `status.error`, worded as
/// kube-apiserver words it (which does not say why an invalid token is invalid: the source does,
/// for the log).
#[derive(Debug, thiserror::Error)]
pub enum TokenReviewError {
    /// Development mode reads no tokens.
    #[error("development mode authenticates no tokens")]
    DevelopmentMode,
    /// Every authenticator rejected or ignored the token.
    #[error("[invalid bearer token]")]
    Invalid(#[source] Unauthorized),
}

/// The user every request acts as in development mode.
pub fn dev_admin() -> UserInfo {
    UserInfo {
        username: "admin".into(),
        groups: vec![PRIVILEGED_GROUP.into(), "system:authenticated".into()],
        ..UserInfo::default()
    }
}

/// Kubernetes' 401.
pub fn unauthorized() -> Status {
    Status::new(401, "Unauthorized", "Unauthorized")
}

impl Security {
    /// Who makes the request on a connection whose client certificate proved `certificate`.
    ///
    /// # Errors
    /// 401 when a credential is invalid, or there is none and anonymous access is off.
    pub async fn authenticate(
        &self,
        headers: &hyper::HeaderMap,
        path: &str,
        connection: &ConnectionIdentity,
    ) -> Result<UserInfo, Status> {
        let Security::Enforced {
            authentication,
            request_header,
            ..
        } = self
        else {
            return Ok(dev_admin());
        };
        // A front proxy's request is its user's, as its headers say (kube-apiserver's
        // request header authenticator comes first in its union).
        if let (true, Some(request_header)) = (connection.front_proxy, request_header) {
            let pairs: Vec<(&str, &str)> = headers
                .iter()
                .filter_map(|(n, v)| v.to_str().ok().map(|v| (n.as_str(), v)))
                .collect();
            if let Some(mut user) = request_header.user(pairs.iter().copied()) {
                if !user.groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
                    user.groups.push(AUTHENTICATED_GROUP.into());
                }
                return Ok(user);
            }
        }
        let certificate = connection.certificate.as_ref();
        let header = headers
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let credentials = Credentials {
            bearer_token: header.and_then(bearer_token),
            client_certificate: certificate,
            path,
        };
        // A header that is not a bearer token is a credential nobody can check: 401, not
        // anonymous (kube-apiserver has no basic auth either).
        if header.is_some() && credentials.bearer_token.is_none() {
            return Err(unauthorized());
        }
        authentication
            .authenticate(&credentials)
            .await
            .map_err(|e| {
                tracing::info!(reason = %e.0, %path, "authentication failed");
                unauthorized()
            })
    }

    /// The user bearer `token` authenticates (a `TokenReview`).
    ///
    /// # Errors
    /// The token authenticates no one (or this is development mode, which reads no tokens).
    pub async fn authenticate_token(&self, token: &str) -> Result<UserInfo, TokenReviewError> {
        let Security::Enforced { authentication, .. } = self else {
            return Err(TokenReviewError::DevelopmentMode);
        };
        let credentials = Credentials {
            bearer_token: Some(token),
            client_certificate: None,
            path: "",
        };
        authentication
            .authenticate(&credentials)
            .await
            .map_err(TokenReviewError::Invalid)
    }

    /// The user `requester` acts as when the request's impersonation headers ask for one
    /// (see [`super::impersonation`]); in development mode every impersonation is allowed.
    ///
    /// # Errors
    /// As [`super::impersonation::impersonate`].
    pub async fn impersonate(
        &self,
        headers: &hyper::HeaderMap,
        requester: &UserInfo,
    ) -> Result<Option<UserInfo>, Status> {
        let authorizer: &dyn Authorizer = match self {
            Security::Development => &AlwaysAllow,
            Security::Enforced { authorizer, .. } => authorizer.as_ref(),
        };
        super::impersonation::impersonate(headers, requester, authorizer).await
    }

    /// Whether `attributes` may proceed; anything but `Allow` answers [`forbidden`].
    pub async fn authorize(&self, attributes: &Attributes) -> Decision {
        let Security::Enforced { authorizer, .. } = self else {
            return Decision::Allow("development mode".into());
        };
        authorizer.authorize(attributes).await
    }
}

/// The authorization attributes of a routed request. A list or watch whose field selector
/// requires one `metadata.name` is about that object, as Kubernetes' request info reads it: a
/// Role granting `resourceNames` allows it.
pub fn attributes(
    route: &Route,
    method: &hyper::Method,
    path: &str,
    query: &Query,
    user: UserInfo,
) -> Attributes {
    let (p, verb) = match route {
        Route::Resource(p, verb) => (p, Some(*verb)),
        Route::ResourceMethodNotAllowed(p) => (p, None),
        _ => {
            return Attributes {
                user,
                verb: method.as_str().to_ascii_lowercase(),
                resource_request: false,
                path: path.to_string(),
                ..Attributes::default()
            }
        }
    };
    Attributes {
        user,
        verb: verb.map_or_else(
            || method.as_str().to_ascii_lowercase(),
            |v| v.name().to_string(),
        ),
        resource_request: true,
        path: path.to_string(),
        api_group: p.group.clone(),
        api_version: p.version.clone(),
        resource: p.plural.clone(),
        subresource: p.subresource.clone().unwrap_or_default(),
        namespace: p.namespace.clone().unwrap_or_default(),
        name: p
            .name
            .clone()
            .or_else(|| selected_name(verb, query))
            .unwrap_or_default(),
    }
}

/// The name a list's or watch's field selector requires, when it is one a path could hold.
fn selected_name(verb: Option<Verb>, query: &Query) -> Option<String> {
    if !matches!(verb, Some(Verb::List | Verb::Watch)) {
        return None;
    }
    let name = FieldSelector::exact_match(query.get("fieldSelector")?, "metadata.name")?;
    let path_segment =
        !name.is_empty() && strategy_host_registry::names::path_segment_name_error(&name).is_none();
    path_segment.then_some(name)
}

/// Kubernetes' 403 for `attributes` (`responsewriters.Forbidden`).
pub fn forbidden(attributes: &Attributes, reason: &str) -> Status {
    let a = attributes;
    let user = &a.user.username;
    let mut message = if !a.resource_request {
        format!("User {user:?} cannot {} path {:?}", a.verb, a.path)
    } else {
        let resource = if a.subresource.is_empty() {
            a.resource.clone()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        let scope = if a.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {:?}", a.namespace)
        };
        format!(
            "User {user:?} cannot {} resource {resource:?} in API group {:?} {scope}",
            a.verb, a.api_group
        )
    };
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let qualified = match (a.resource.as_str(), a.api_group.as_str()) {
        ("", _) => String::new(),
        (r, "") => r.to_string(),
        (r, g) => format!("{r}.{g}"),
    };
    let message = match (qualified.is_empty(), a.name.is_empty()) {
        (true, _) => format!("forbidden: {message}"),
        (false, true) => format!("{qualified} is forbidden: {message}"),
        (false, false) => format!("{qualified} {:?} is forbidden: {message}", a.name),
    };
    let mut status = Status::new(403, "Forbidden", message);
    status.details = Some(Box::new(Details {
        name: a.name.clone(),
        group: a.api_group.clone(),
        kind: a.resource.clone(),
        causes: Vec::new(),
    }));
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bob() -> UserInfo {
        UserInfo {
            username: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        }
    }

    #[test]
    fn forbidden_messages_read_as_kubernetes_writes_them() {
        let mut a = Attributes {
            user: bob(),
            verb: "list".into(),
            resource_request: true,
            resource: "secrets".into(),
            namespace: "default".into(),
            ..Attributes::default()
        };
        assert_eq!(
            forbidden(&a, "").message,
            r#"secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "default""#
        );
        a.verb = "get".into();
        a.name = "db".into();
        a.api_group = "coordination.k8s.io".into();
        a.resource = "leases".into();
        a.subresource = "status".into();
        a.namespace.clear();
        assert_eq!(
            forbidden(&a, "").message,
            r#"leases.coordination.k8s.io "db" is forbidden: User "bob" cannot get resource "leases/status" in API group "coordination.k8s.io" at the cluster scope"#
        );
        let path = Attributes {
            user: bob(),
            verb: "get".into(),
            path: "/metrics".into(),
            ..Attributes::default()
        };
        let status = forbidden(&path, "");
        assert_eq!(status.code, 403);
        assert_eq!(
            status.message,
            r#"forbidden: User "bob" cannot get path "/metrics""#
        );
    }
}
