//! ServiceAccount tokens: JWTs the server signs for `serviceaccounts/{name}/token`
//! (TokenRequest, `kubectl create token`) and accepts as bearer tokens while their issuer,
//! audience, lifetime and signature hold and the account still exists with the uid they name.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

pub use super::service_account_error::Error;
use super::x509::CREDENTIAL_ID;
use super::{Authenticator, Credentials, Outcome};
use crate::user::UserInfo;

/// Kubernetes' default `--service-account-issuer`.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// A TokenRequest without `expirationSeconds` gets an hour, as in Kubernetes.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// Tokens slightly past `exp` or before `nbf` are accepted, for clock skew between replicas.
const LEEWAY_SECONDS: u64 = 60;

/// Finds a ServiceAccount's uid (from the watch cache), so a deleted or recreated account's
/// tokens stop working.
#[async_trait]
pub trait ServiceAccountLookup: Send + Sync {
    /// The uid of `namespace/name`, `None` when it does not exist.
    async fn uid(&self, namespace: &str, name: &str) -> Option<String>;

    /// The uid of the Secret `namespace/name`, `None` when it does not exist (a token bound
    /// to a Secret dies with it).
    async fn secret_uid(&self, namespace: &str, name: &str) -> Option<String>;
}

/// How long a Secret-bound token is issued for: it lives as long as its Secret (Kubernetes'
/// legacy tokens carry no expiry; ours carry a distant one, which the verifier requires).
const SECRET_BOUND_LIFETIME_SECONDS: u64 = 100 * 365 * 86_400;

/// The private claims Kubernetes puts under `kubernetes.io`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct KubernetesClaims {
    namespace: String,
    serviceaccount: Reference,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pod: Option<Reference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secret: Option<Reference>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Reference {
    name: String,
    uid: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Claims {
    iss: String,
    sub: String,
    aud: Vec<String>,
    exp: u64,
    iat: u64,
    nbf: u64,
    jti: String,
    #[serde(rename = "kubernetes.io")]
    kubernetes: KubernetesClaims,
}

/// One key tokens are verified with.
struct VerifyingKey {
    key: DecodingKey,
    algorithms: Vec<Algorithm>,
}

/// Issues and verifies ServiceAccount tokens.
pub struct ServiceAccountTokens {
    issuer: String,
    api_audiences: Vec<String>,
    max_expiration: Option<Duration>,
    signing: (EncodingKey, Algorithm),
    /// The signing key's id (its SPKI digest), in each token's `kid` header, so verifiers pick
    /// it from the published key set.
    key_id: String,
    verifying: Vec<VerifyingKey>,
    accounts: Arc<dyn ServiceAccountLookup>,
}

/// The JWT algorithm for a PEM key rcgen (ring) can read: ES256/ES384 for EC, RS256 for RSA.
fn algorithm_of(private_pem: &str) -> Result<Algorithm, Error> {
    let key = rcgen::KeyPair::from_pem(private_pem).map_err(Error::SigningKeyNotPem)?;
    let alg = key.algorithm();
    if alg == &rcgen::PKCS_ECDSA_P256_SHA256 {
        Ok(Algorithm::ES256)
    } else if alg == &rcgen::PKCS_ECDSA_P384_SHA384 {
        Ok(Algorithm::ES384)
    } else if alg == &rcgen::PKCS_RSA_SHA256 {
        Ok(Algorithm::RS256)
    } else {
        Err(Error::SigningKeyType)
    }
}

fn decoding_key(public_pem: &str) -> Result<VerifyingKey, Error> {
    if let Ok(key) = DecodingKey::from_ec_pem(public_pem.as_bytes()) {
        let algorithms = vec![Algorithm::ES256, Algorithm::ES384];
        return Ok(VerifyingKey { key, algorithms });
    }
    DecodingKey::from_rsa_pem(public_pem.as_bytes())
        .map(|key| VerifyingKey {
            key,
            algorithms: vec![Algorithm::RS256],
        })
        .map_err(Error::PublicKey)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A token the server issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    /// The JWT.
    pub token: String,
    /// When it expires (seconds since the epoch).
    pub expires_at: u64,
    /// The audiences it is valid for.
    pub audiences: Vec<String>,
    /// Its lifetime.
    pub expiration_seconds: i64,
}

impl ServiceAccountTokens {
    /// Tokens issued as `issuer` for `api_audiences` (empty: the issuer), signed with
    /// `signing_key_pem`, verified with `public_key_pems`, accounts found with `accounts`.
    ///
    /// # Errors
    /// A key is not PEM or of an unsupported type.
    pub fn new(
        issuer: String,
        api_audiences: Vec<String>,
        max_expiration: Option<Duration>,
        signing_key_pem: &str,
        public_key_pems: &[String],
        accounts: Arc<dyn ServiceAccountLookup>,
    ) -> Result<Self, Error> {
        let algorithm = algorithm_of(signing_key_pem)?;
        let key_id = rcgen::KeyPair::from_pem(signing_key_pem)
            .map(|k| {
                super::issuer_discovery::key_id(&rcgen::PublicKeyData::subject_public_key_info(&k))
            })
            .map_err(Error::SigningKeyNotPem)?;
        let key = match algorithm {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(signing_key_pem.as_bytes()),
            _ => EncodingKey::from_ec_pem(signing_key_pem.as_bytes()),
        }
        .map_err(Error::SigningKey)?;
        let verifying = public_key_pems
            .iter()
            .map(|p| decoding_key(p))
            .collect::<Result<_, _>>()?;
        let api_audiences = if api_audiences.is_empty() {
            vec![issuer.clone()]
        } else {
            api_audiences
        };
        Ok(Self {
            issuer,
            api_audiences,
            max_expiration,
            signing: (key, algorithm),
            key_id,
            verifying,
            accounts,
        })
    }

    /// The `iss` of the tokens.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Signs a token for `namespace/name` (whose uid is `uid`), valid for `audiences` (empty:
    /// the API audiences) and `expiration_seconds`, capped by `--service-account-max-token-expiration`.
    ///
    /// # Errors
    /// Signing fails.
    pub fn issue(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        audiences: Vec<String>,
        expiration_seconds: i64,
    ) -> Result<IssuedToken, Error> {
        let audiences = if audiences.is_empty() {
            self.api_audiences.clone()
        } else {
            audiences
        };
        let mut lifetime = expiration_seconds.max(0) as u64;
        if let Some(max) = self.max_expiration {
            lifetime = lifetime.min(max.as_secs());
        }
        let account = Reference {
            name: name.into(),
            uid: uid.into(),
        };
        self.sign(namespace, account, None, audiences, lifetime)
    }

    /// Signs the token a `kubernetes.io/service-account-token` Secret holds: bound to the
    /// Secret (`secret_name`, `secret_uid`), valid while it and the account exist.
    ///
    /// # Errors
    /// Signing fails.
    pub fn issue_for_secret(
        &self,
        namespace: &str,
        account: (&str, &str),
        secret: (&str, &str),
    ) -> Result<String, Error> {
        let account = Reference {
            name: account.0.into(),
            uid: account.1.into(),
        };
        let secret = Reference {
            name: secret.0.into(),
            uid: secret.1.into(),
        };
        let audiences = self.api_audiences.clone();
        self.sign(
            namespace,
            account,
            Some(secret),
            audiences,
            SECRET_BOUND_LIFETIME_SECONDS,
        )
        .map(|issued| issued.token)
    }

    fn sign(
        &self,
        namespace: &str,
        account: Reference,
        secret: Option<Reference>,
        audiences: Vec<String>,
        lifetime: u64,
    ) -> Result<IssuedToken, Error> {
        let iat = now();
        let claims = Claims {
            iss: self.issuer.clone(),
            sub: format!("system:serviceaccount:{namespace}:{}", account.name),
            aud: audiences.clone(),
            exp: iat + lifetime,
            iat,
            nbf: iat,
            jti: strategy_host_apimachinery::meta::new_uid(),
            kubernetes: KubernetesClaims {
                namespace: namespace.into(),
                serviceaccount: account,
                pod: None,
                secret,
            },
        };
        let header = Header {
            kid: Some(self.key_id.clone()),
            ..Header::new(self.signing.1)
        };
        let token =
            jsonwebtoken::encode(&header, &claims, &self.signing.0).map_err(Error::Signing)?;
        Ok(IssuedToken {
            token,
            expires_at: claims.exp,
            audiences,
            expiration_seconds: lifetime as i64,
        })
    }

    /// The verified claims of `token`, or why it is refused.
    fn verify(&self, token: &str) -> Result<Claims, Error> {
        let mut last = Error::NoVerifyingKey;
        for key in &self.verifying {
            let mut validation = Validation::new(key.algorithms[0]);
            validation.algorithms = key.algorithms.clone();
            validation.leeway = LEEWAY_SECONDS;
            validation.validate_nbf = true;
            validation.validate_aud = false;
            validation.set_required_spec_claims(&["exp", "iss", "sub"]);
            match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(e) => match e.kind() {
                    jsonwebtoken::errors::ErrorKind::ExpiredSignature => {
                        return Err(Error::Expired)
                    }
                    jsonwebtoken::errors::ErrorKind::ImmatureSignature => {
                        return Err(Error::NotYetValid)
                    }
                    _ => last = Error::Invalid(e),
                },
            }
        }
        Err(last)
    }
}

#[async_trait]
impl Authenticator for ServiceAccountTokens {
    async fn authenticate(&self, credentials: &Credentials<'_>) -> Outcome {
        let Some(token) = credentials.bearer_token else {
            return Outcome::NotApplicable;
        };
        // Only tokens this server issued are judged here; another issuer's JWT (or an
        // opaque token) is for another authenticator.
        if crate::unverified_issuer(token).as_deref() != Some(self.issuer.as_str()) {
            return Outcome::NotApplicable;
        }
        let claims = match self.verify(token) {
            Ok(c) => c,
            Err(why) => return Outcome::Rejected(why.to_string()),
        };
        if !claims.aud.iter().any(|a| self.api_audiences.contains(a)) {
            return Outcome::Rejected(format!(
                "token audiences {:?} is invalid for the target audiences {:?}",
                claims.aud, self.api_audiences
            ));
        }
        let k = &claims.kubernetes;
        let (ns, name) = (&k.namespace, &k.serviceaccount.name);
        if let Some(secret) = &k.secret {
            if self.accounts.secret_uid(ns, &secret.name).await.as_deref()
                != Some(secret.uid.as_str())
            {
                return Outcome::Rejected("token has been invalidated".into());
            }
        }
        match self.accounts.uid(ns, name).await {
            None => Outcome::Rejected(format!("service account {ns}/{name} has been deleted")),
            Some(uid) if uid != k.serviceaccount.uid => Outcome::Rejected(format!(
                "service account UID ({uid}) does not match claim ({})",
                k.serviceaccount.uid
            )),
            Some(uid) => Outcome::Authenticated(UserInfo {
                username: format!("system:serviceaccount:{ns}:{name}"),
                uid,
                groups: vec![
                    "system:serviceaccounts".into(),
                    format!("system:serviceaccounts:{ns}"),
                ],
                extra: [(
                    CREDENTIAL_ID.to_string(),
                    vec![format!("JTI={}", claims.jti)],
                )]
                .into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token_request::{token_request, TokenRequestError};
    use base64::Engine as _;
    use serde_json::json;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Accounts(Mutex<Option<String>>);

    #[async_trait]
    impl ServiceAccountLookup for Accounts {
        async fn uid(&self, _: &str, _: &str) -> Option<String> {
            self.0.lock().unwrap().clone()
        }

        async fn secret_uid(&self, _: &str, _: &str) -> Option<String> {
            None
        }
    }

    fn tokens(key: &rcgen::KeyPair, accounts: Arc<Accounts>) -> ServiceAccountTokens {
        ServiceAccountTokens::new(
            DEFAULT_ISSUER.into(),
            vec![],
            None,
            &key.serialize_pem(),
            &[key.public_key_pem()],
            accounts,
        )
        .unwrap()
    }

    fn bearer(token: &str) -> Credentials<'_> {
        Credentials {
            bearer_token: Some(token),
            ..Credentials::default()
        }
    }

    #[tokio::test]
    async fn an_issued_token_authenticates_its_account_until_the_account_is_gone() {
        let key = rcgen::KeyPair::generate().unwrap();
        let accounts = Arc::new(Accounts(Mutex::new(Some("uid-1".into()))));
        let t = tokens(&key, accounts.clone());
        let issued = t.issue("team", "robot", "uid-1", vec![], 3600).unwrap();
        assert_eq!(issued.audiences, [DEFAULT_ISSUER]);
        let Outcome::Authenticated(user) = t.authenticate(&bearer(&issued.token)).await else {
            panic!("not authenticated")
        };
        assert_eq!(user.username, "system:serviceaccount:team:robot");
        assert_eq!(
            user.groups,
            ["system:serviceaccounts", "system:serviceaccounts:team"]
        );
        assert_eq!(user.uid, "uid-1");
        // Recreated under the same name: another uid.
        *accounts.0.lock().unwrap() = Some("uid-2".into());
        assert!(
            matches!(t.authenticate(&bearer(&issued.token)).await, Outcome::Rejected(w) if w.contains("does not match"))
        );
        *accounts.0.lock().unwrap() = None;
        assert!(
            matches!(t.authenticate(&bearer(&issued.token)).await, Outcome::Rejected(w) if w.contains("deleted"))
        );
    }

    #[tokio::test]
    async fn wrong_audience_other_key_and_expired_tokens_are_rejected() {
        let key = rcgen::KeyPair::generate().unwrap();
        let accounts = Arc::new(Accounts(Mutex::new(Some("u".into()))));
        let t = tokens(&key, accounts.clone());
        let vault = t
            .issue("ns", "sa", "u", vec!["vault".into()], 3600)
            .unwrap();
        assert!(
            matches!(t.authenticate(&bearer(&vault.token)).await, Outcome::Rejected(w) if w.contains("audiences"))
        );

        let other = tokens(&rcgen::KeyPair::generate().unwrap(), accounts.clone());
        let forged = other.issue("ns", "sa", "u", vec![], 3600).unwrap();
        assert!(matches!(
            t.authenticate(&bearer(&forged.token)).await,
            Outcome::Rejected(_)
        ));

        let expired = t.issue("ns", "sa", "u", vec![], 0).unwrap();
        // Past the leeway.
        let mut claims: Claims = {
            let payload = expired.token.split('.').nth(1).unwrap();
            serde_json::from_slice(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(payload)
                    .unwrap(),
            )
            .unwrap()
        };
        claims.exp = now() - 3600;
        let stale =
            jsonwebtoken::encode(&Header::new(Algorithm::ES256), &claims, &t.signing.0).unwrap();
        assert!(
            matches!(t.authenticate(&bearer(&stale)).await, Outcome::Rejected(w) if w.contains("expired"))
        );

        // Not a JWT of this issuer: someone else's to judge.
        assert_eq!(
            t.authenticate(&bearer("opaque-token")).await,
            Outcome::NotApplicable
        );
    }

    #[test]
    fn token_requests_are_checked_like_kubernetes() {
        let key = rcgen::KeyPair::generate().unwrap();
        let t = tokens(&key, Arc::new(Accounts::default()));
        let account = json!({"metadata": {"name": "sa", "namespace": "ns", "uid": "u"}});
        let short = token_request(&t, &account, &json!({"spec": {"expirationSeconds": 60}}));
        assert!(matches!(short, Err(TokenRequestError::Invalid(_, m)) if m.contains("10 minutes")));
        let ok = token_request(&t, &account, &json!({"spec": {"audiences": ["a"]}})).unwrap();
        assert_eq!(ok["spec"]["expirationSeconds"], 3600);
        assert_eq!(ok["spec"]["audiences"], json!(["a"]));
        assert!(ok["status"]["token"].as_str().unwrap().split('.').count() == 3);
    }
}
