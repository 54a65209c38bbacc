//! Authentication: who makes a request (Kubernetes' `authenticator.Request`).
//!
//! Each way of proving an identity is one [`Authenticator`]: client certificates (`x509`,
//! verified once per connection), a static token file (`token_file`), ServiceAccount tokens
//! (`service_account`). [`AuthenticatorChain`] tries them in order as kube-apiserver's union
//! does: the first that recognises the credential decides; a credential every authenticator
//! rejects answers 401; a request with no credential is `system:anonymous` when anonymous
//! access is on. Everyone authenticated is also in `system:authenticated`.
//!
//! A crate below the api that asks it, beside the registry: it knows the HTTPS client and PKI,
//! CEL and apimachinery, never storage, the registry, the api or the wasm modules.

pub use strategy_host_contract::user;

pub mod issuer_discovery;
pub mod jwt;
pub mod request_header;
pub mod service_account;
mod service_account_error;
pub mod token_file;
pub mod token_request;
pub mod token_review;
pub mod x509;

use async_trait::async_trait;
use base64::Engine as _;
use serde_json::Value;

use crate::user::UserInfo;

/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The anonymous user.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The anonymous user's group.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";

/// The credentials a request carries.
#[derive(Debug, Clone, Copy, Default)]
pub struct Credentials<'a> {
    /// The token of an `Authorization: Bearer` header.
    pub bearer_token: Option<&'a str>,
    /// The connection's client certificate, already verified (once per connection) into the
    /// user it names or why it was refused.
    pub client_certificate: Option<&'a Result<UserInfo, x509::CertificateRefused>>,
    /// The request's path (anonymous access may be limited to some paths).
    pub path: &'a str,
}

/// What one authenticator makes of a request's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The credential proves this user.
    Authenticated(UserInfo),
    /// This authenticator does not handle the request's credentials.
    NotApplicable,
    /// The credential is this authenticator's kind but invalid (why, for the log).
    Rejected(String),
}

/// One way of proving an identity.
#[async_trait]
pub trait Authenticator: Send + Sync {
    /// What the credentials prove, if they are this authenticator's kind.
    async fn authenticate(&self, credentials: &Credentials<'_>) -> Outcome;
}

/// A shared authenticator (the ServiceAccount tokens TokenRequest also signs with).
#[async_trait]
impl<A: Authenticator + ?Sized> Authenticator for std::sync::Arc<A> {
    async fn authenticate(&self, credentials: &Credentials<'_>) -> Outcome {
        (**self).authenticate(credentials).await
    }
}

/// The authenticators in order, and whether a request without credentials is anonymous.
pub struct AuthenticatorChain {
    authenticators: Vec<Box<dyn Authenticator>>,
    anonymous: AnonymousAccess,
}

/// Whether a request to a path without credentials acts as `system:anonymous`: the
/// `--anonymous-auth` flag, or the authentication configuration's `anonymous` (which may limit
/// it to some paths, and is read again when the file changes).
pub type AnonymousAccess = std::sync::Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// A request whose credentials authenticate no one: 401, with the reasons for the log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Unauthorized: {0}")]
pub struct Unauthorized(pub String);

impl AuthenticatorChain {
    /// A chain trying `authenticators` in order; `anonymous` as `--anonymous-auth`.
    pub fn new(authenticators: Vec<Box<dyn Authenticator>>, anonymous: bool) -> Self {
        Self {
            authenticators,
            anonymous: std::sync::Arc::new(move |_| anonymous),
        }
    }

    /// The chain with anonymous access decided by `access` instead.
    pub fn with_anonymous(self, access: AnonymousAccess) -> Self {
        Self {
            anonymous: access,
            ..self
        }
    }

    /// The user `credentials` prove.
    ///
    /// # Errors
    /// A credential was presented and every authenticator rejected or ignored it, or there
    /// was none and anonymous access is off.
    pub async fn authenticate(
        &self,
        credentials: &Credentials<'_>,
    ) -> Result<UserInfo, Unauthorized> {
        let mut rejections = Vec::new();
        for authenticator in &self.authenticators {
            match authenticator.authenticate(credentials).await {
                Outcome::Authenticated(mut user) => {
                    if !user.groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
                        user.groups.push(AUTHENTICATED_GROUP.to_string());
                    }
                    return Ok(user);
                }
                Outcome::Rejected(why) => rejections.push(why),
                Outcome::NotApplicable => {}
            }
        }
        let presented =
            credentials.bearer_token.is_some() || credentials.client_certificate.is_some();
        if !rejections.is_empty() || presented {
            // As kube-apiserver: an invalid credential is never downgraded to anonymous.
            if rejections.is_empty() {
                rejections.push("no authenticator recognised the credential".into());
            }
            return Err(Unauthorized(rejections.join("; ")));
        }
        if (self.anonymous)(credentials.path) {
            return Ok(UserInfo {
                username: ANONYMOUS_USER.into(),
                groups: vec![UNAUTHENTICATED_GROUP.into()],
                ..UserInfo::default()
            });
        }
        Err(Unauthorized(
            "no credentials and anonymous access is off".into(),
        ))
    }
}

/// The issuer claim of a JWT, read without verifying it: `None` when `token` is no JWT.
pub(crate) fn unverified_issuer(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("iss")?.as_str().map(String::from)
}

/// The bearer token of an `Authorization` header value (`Bearer <token>`, case-insensitive
/// scheme), if it is one.
pub fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Outcome);

    #[async_trait]
    impl Authenticator for Fixed {
        async fn authenticate(&self, _: &Credentials<'_>) -> Outcome {
            self.0.clone()
        }
    }

    #[tokio::test]
    async fn the_first_authenticator_that_recognises_the_credential_decides() {
        let alice = UserInfo {
            username: "alice".into(),
            ..UserInfo::default()
        };
        let chain = AuthenticatorChain::new(
            vec![
                Box::new(Fixed(Outcome::NotApplicable)),
                Box::new(Fixed(Outcome::Rejected("bad".into()))),
                Box::new(Fixed(Outcome::Authenticated(alice))),
            ],
            true,
        );
        let creds = Credentials {
            bearer_token: Some("t"),
            ..Credentials::default()
        };
        let alice = chain.authenticate(&creds).await.unwrap();
        assert_eq!(alice.username, "alice");
        assert_eq!(alice.groups, vec![AUTHENTICATED_GROUP]);
    }

    #[tokio::test]
    async fn an_invalid_credential_is_401_never_anonymous() {
        let chain = AuthenticatorChain::new(
            vec![Box::new(Fixed(Outcome::Rejected("expired".into())))],
            true,
        );
        let creds = Credentials {
            bearer_token: Some("t"),
            ..Credentials::default()
        };
        assert_eq!(chain.authenticate(&creds).await.unwrap_err().0, "expired");
        let ignored = AuthenticatorChain::new(vec![Box::new(Fixed(Outcome::NotApplicable))], true);
        assert!(ignored.authenticate(&creds).await.is_err());
    }

    #[tokio::test]
    async fn no_credential_is_anonymous_only_when_allowed() {
        let none = Credentials::default();
        let open = AuthenticatorChain::new(vec![], true);
        let anon = open.authenticate(&none).await.unwrap();
        assert_eq!(
            (anon.username.as_str(), anon.groups.as_slice()),
            (ANONYMOUS_USER, &[UNAUTHENTICATED_GROUP.to_string()][..])
        );
        let closed = AuthenticatorChain::new(vec![], false);
        assert!(closed.authenticate(&none).await.is_err());
        let health_only = AuthenticatorChain::new(vec![], false)
            .with_anonymous(std::sync::Arc::new(|p| p == "/livez"));
        let livez = Credentials {
            path: "/livez",
            ..Credentials::default()
        };
        assert!(health_only.authenticate(&livez).await.is_ok());
        assert!(health_only.authenticate(&none).await.is_err());
    }

    #[test]
    fn bearer_tokens_are_read_from_the_header() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
    }
}
