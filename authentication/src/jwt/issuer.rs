//! One JWT issuer of the configuration as an authenticator: a token whose `iss` is this issuer
//! is verified (signature by a published key, audience, expiry), its claims checked against
//! the claim validation rules and mapped to the user, as Kubernetes' JWT authenticator does.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::claim_expressions::{ClaimExpressions, ExpressionError};
use super::config::{JwtAuthenticator, PrefixedClaim};
use super::keys::{IssuerKeys, NoVerifyingKey};
use super::metrics::{issuer_hash, JwtMetrics};
use crate::user::UserInfo;
use crate::Outcome;
use strategy_host_apimachinery::expiring_cache::ExpiringCache;

/// Tokens slightly past `exp` or before `nbf` are accepted, for clock skew (Kubernetes: 60 s).
const LEEWAY_SECONDS: u64 = 60;

/// The algorithms Kubernetes accepts for JWT authenticators (what this JWT library verifies of
/// them).
const ALGORITHMS: [Algorithm; 8] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
];

/// How long a verified token's user is remembered (kube-apiserver caches successful token
/// authentications for 10 s), and never past the token's expiry.
const CACHE_TTL: Duration = Duration::from_secs(10);
/// Tokens remembered at most; the cache is emptied when full.
const CACHE_MAX: usize = 4096;

/// Why a token whose `iss` is this issuer authenticates no one (Kubernetes' `oidc:` words; the
/// 401's log says it after `jwt authenticator <issuer>: `).
#[derive(Debug, thiserror::Error)]
pub(super) enum TokenRefused {
    /// It is not a JWT.
    #[error("oidc: malformed jwt: {0}")]
    Malformed(#[source] jsonwebtoken::errors::Error),
    /// It is signed with an algorithm Kubernetes does not accept.
    #[error("oidc: malformed jwt: the algorithm {0:?} is not accepted")]
    Algorithm(Algorithm),
    /// No key of the issuer's can verify it.
    #[error(transparent)]
    NoKey(#[from] NoVerifyingKey),
    /// The issuer's key cannot verify anything.
    #[error("oidc: the issuer's key cannot be used: {0}")]
    UnusableKey(#[source] jsonwebtoken::errors::Error),
    /// It is past its `exp` (and the leeway).
    #[error("oidc: verify token: token is expired")]
    Expired,
    /// Its `aud` names none of the configured audiences.
    #[error("oidc: verify token: expected audience in {0:?}")]
    Audience(Vec<String>),
    /// Its signature is not the key's.
    #[error("oidc: verify token: failed to verify signature")]
    Signature,
    /// It does not verify for another reason (`iss`, `nbf`, a missing claim...).
    #[error("oidc: verify token: {0}")]
    Invalid(#[source] jsonwebtoken::errors::Error),
    /// It verifies, but its claims map to no user.
    #[error(transparent)]
    Claims(#[from] ClaimError),
}

/// Why a verified token's claims map to no user.
#[derive(Debug, thiserror::Error)]
pub(super) enum ClaimError {
    /// A claim validation rule's claim does not have its required value.
    #[error("oidc: required claim {claim} value does not match. Got = {got}, want = {want}")]
    Mismatch {
        /// The claim.
        claim: String,
        /// Its value (`<nil>` when absent).
        got: String,
        /// The value required.
        want: String,
    },
    /// The user name's claim is absent.
    #[error("oidc: parse username claims {0:?}: claim not present")]
    NoUsername(String),
    /// The user name is the `email` claim and `email_verified` is not true.
    #[error("oidc: email not verified")]
    EmailNotVerified,
    /// The user name's claim is "".
    #[error("oidc: claim {0:?} is empty")]
    Empty(String),
    /// The groups claim is a list of something else than strings.
    #[error("oidc: parse groups claim {0:?}: not a list of strings")]
    GroupsNotStrings(String),
    /// The groups claim is neither a string nor a list.
    #[error("oidc: parse groups claim {0:?}: not a string or list of strings")]
    GroupsNotStringOrList(String),
    /// The uid claim is absent.
    #[error("oidc: uid claim {0:?} not present")]
    NoUid(String),
    /// A CEL rule or mapping refused the claims or the user.
    #[error(transparent)]
    Expression(#[from] ExpressionError),
}

/// One configured issuer.
pub(super) struct IssuerAuthenticator {
    config: JwtAuthenticator,
    expressions: ClaimExpressions,
    keys: IssuerKeys,
    metrics: JwtMetrics,
    /// The issuer's label in the metrics.
    issuer_hash: String,
    /// Verified tokens by SHA-256, with their user and until when they may be taken as is.
    verified: ExpiringCache<[u8; 32], UserInfo>,
}

impl IssuerAuthenticator {
    pub(super) fn new(config: JwtAuthenticator, metrics: JwtMetrics) -> Self {
        let keys = IssuerKeys::new(&config.issuer);
        Self {
            expressions: ClaimExpressions::compile(&config),
            issuer_hash: issuer_hash(&config.issuer.url),
            config,
            keys,
            metrics,
            verified: ExpiringCache::new(CACHE_MAX),
        }
    }

    /// What it was built from.
    pub(super) fn config(&self) -> &JwtAuthenticator {
        &self.config
    }

    /// The configured `iss`.
    pub(super) fn issuer(&self) -> &str {
        &self.config.issuer.url
    }

    /// The verified claims of `token`.
    async fn verify(&self, token: &str) -> Result<Value, TokenRefused> {
        let header = jsonwebtoken::decode_header(token).map_err(TokenRefused::Malformed)?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(TokenRefused::Algorithm(header.alg));
        }
        let jwk = self.keys.key(header.kid.as_deref()).await?;
        let key = DecodingKey::from_jwk(&jwk).map_err(TokenRefused::UnusableKey)?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.set_issuer(&[self.issuer()]);
        validation.set_audience(&self.config.issuer.audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        jsonwebtoken::decode::<Value>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|e| {
                use jsonwebtoken::errors::ErrorKind;
                match e.kind() {
                    ErrorKind::ExpiredSignature => TokenRefused::Expired,
                    ErrorKind::InvalidAudience => {
                        TokenRefused::Audience(self.config.issuer.audiences.clone())
                    }
                    ErrorKind::InvalidSignature => TokenRefused::Signature,
                    _ => TokenRefused::Invalid(e),
                }
            })
    }

    /// The user `claims` map to, once the claim validation rules pass.
    fn user(&self, claims: &Value) -> Result<UserInfo, ClaimError> {
        for rule in &self.config.claim_validation_rules {
            let (Some(claim), Some(required)) = (&rule.claim, &rule.required_value) else {
                continue;
            };
            if claims.get(claim).and_then(Value::as_str) != Some(required.as_str()) {
                return Err(ClaimError::Mismatch {
                    claim: claim.clone(),
                    got: claims
                        .get(claim)
                        .map_or_else(|| "<nil>".to_string(), render),
                    want: required.clone(),
                });
            }
        }
        self.expressions.check_claims(claims)?;
        let mapped = self.expressions.map(claims)?;
        let mappings = &self.config.claim_mappings;
        let username = match mapped.username {
            Some(username) => username,
            None => username(&mappings.username, claims)?,
        };
        let groups = match (mapped.groups, &mappings.groups) {
            (Some(groups), _) => groups,
            (None, Some(groups)) => prefixed_values(groups, claims)?,
            (None, None) => Vec::new(),
        };
        let uid = match (
            mapped.uid,
            mappings.uid.as_ref().and_then(|u| u.claim.as_ref()),
        ) {
            (Some(uid), _) => uid,
            (None, Some(claim)) => claims
                .get(claim)
                .and_then(Value::as_str)
                .ok_or_else(|| ClaimError::NoUid(claim.clone()))?
                .to_string(),
            (None, None) => String::new(),
        };
        let user = UserInfo {
            username,
            uid,
            groups,
            extra: mapped.extra,
        };
        self.expressions.check_user(&user)?;
        Ok(user)
    }
}

fn render(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The user name: the claim's value after its prefix. The `email` claim counts only when
/// `email_verified`, if present, is true (as Kubernetes).
fn username(mapping: &PrefixedClaim, claims: &Value) -> Result<String, ClaimError> {
    let claim = mapping.claim.as_deref().unwrap_or("sub");
    let Some(value) = claims.get(claim).and_then(Value::as_str) else {
        return Err(ClaimError::NoUsername(claim.to_owned()));
    };
    if claim == "email" {
        if let Some(verified) = claims.get("email_verified") {
            if verified != &Value::Bool(true) {
                return Err(ClaimError::EmailNotVerified);
            }
        }
    }
    if value.is_empty() {
        return Err(ClaimError::Empty(claim.to_owned()));
    }
    Ok(format!(
        "{}{value}",
        mapping.prefix.as_deref().unwrap_or_default()
    ))
}

/// The groups: the claim's string or strings, each after the prefix; none when absent.
fn prefixed_values(mapping: &PrefixedClaim, claims: &Value) -> Result<Vec<String>, ClaimError> {
    let Some(claim) = &mapping.claim else {
        return Ok(Vec::new());
    };
    let prefix = mapping.prefix.as_deref().unwrap_or_default();
    let values = match claims.get(claim) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many
            .iter()
            .map(|v| {
                v.as_str()
                    .map(String::from)
                    .ok_or_else(|| ClaimError::GroupsNotStrings(claim.clone()))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(ClaimError::GroupsNotStringOrList(claim.clone())),
    };
    Ok(values.into_iter().map(|g| format!("{prefix}{g}")).collect())
}

impl IssuerAuthenticator {
    /// Remembers `user` for `CACHE_TTL`, never past the token's expiry.
    fn remember(&self, digest: [u8; 32], user: &UserInfo, claims: &Value) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let left = claims["exp"].as_u64().unwrap_or(0).saturating_sub(now);
        let ttl = CACHE_TTL.min(Duration::from_secs(left));
        self.verified.insert(digest, user.clone(), ttl);
    }
}

impl IssuerAuthenticator {
    /// What `token`, whose `iss` is this issuer, proves.
    pub(super) async fn authenticate(&self, token: &str) -> Outcome {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(user) = self.verified.get(&digest) {
            return Outcome::Authenticated(user);
        }
        let started = Instant::now();
        let verified = self.verify(token).await;
        let judged = verified.and_then(|claims| Ok((self.user(&claims)?, claims)));
        self.metrics
            .observe(&self.issuer_hash, judged.is_ok(), started.elapsed());
        match judged {
            Ok((user, claims)) => {
                self.remember(digest, &user, &claims);
                Outcome::Authenticated(user)
            }
            Err(why) => Outcome::Rejected(format!("jwt authenticator {}: {why}", self.issuer())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use serde_json::json;

    fn issuer(yaml: &str) -> IssuerAuthenticator {
        let text = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {{url: 'https://idp', audiences: [k]}}\n{yaml}"
        );
        let config = super::super::config::parse(&text).unwrap();
        IssuerAuthenticator::new(config.jwt[0].clone(), JwtMetrics::default())
    }

    #[test]
    fn claims_map_to_the_user_with_prefixes() {
        let idp = issuer(
            "  claimMappings:\n    username: {claim: email, prefix: 'oidc:'}\n    groups: {claim: groups, prefix: 'g:'}\n    uid: {claim: sub}\n",
        );
        let user = idp
            .user(&json!({"email": "a@x", "email_verified": true, "groups": ["dev", "qa"], "sub": "42"}))
            .unwrap();
        assert_eq!(user.username, "oidc:a@x");
        assert_eq!(user.groups, ["g:dev", "g:qa"]);
        assert_eq!(user.uid, "42");
        let one = idp
            .user(&json!({"email": "a@x", "groups": "dev", "sub": "1"}))
            .unwrap();
        assert_eq!(one.groups, ["g:dev"]);
        let unverified = idp.user(&json!({"email": "a@x", "email_verified": false, "sub": "1"}));
        assert_eq!(
            unverified.unwrap_err().to_string(),
            "oidc: email not verified"
        );
    }

    #[tokio::test]
    async fn refusals_are_worded_as_kubernetes_words_them() {
        let idp = issuer("  claimMappings:\n    username: {claim: sub, prefix: ''}\n");
        let malformed = idp.verify("not-a-jwt").await.unwrap_err();
        assert!(
            matches!(malformed, TokenRefused::Malformed(_)),
            "{malformed:?}"
        );
        assert!(malformed.to_string().starts_with("oidc: malformed jwt: "));
        for (refused, text) in [
            (
                TokenRefused::Expired,
                "oidc: verify token: token is expired",
            ),
            (
                TokenRefused::Audience(vec!["k".into()]),
                r#"oidc: verify token: expected audience in ["k"]"#,
            ),
            (
                NoVerifyingKey::UnknownKeyId("x".into()).into(),
                r#"oidc: verify token: no key with id "x" in the issuer's key set"#,
            ),
            (
                ClaimError::NoUid("sub".into()).into(),
                r#"oidc: uid claim "sub" not present"#,
            ),
        ] {
            assert_eq!(refused.to_string(), text);
        }
    }

    #[test]
    fn a_claim_validation_rule_must_hold() {
        let idp = issuer(
            "  claimValidationRules: [{claim: hd, requiredValue: example.com}]\n  claimMappings:\n    username: {claim: sub, prefix: ''}\n",
        );
        assert_eq!(
            idp.user(&json!({"sub": "a", "hd": "example.com"}))
                .unwrap()
                .username,
            "a"
        );
        let wrong = idp
            .user(&json!({"sub": "a", "hd": "evil.com"}))
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("required claim hd value does not match"),
            "{wrong}"
        );
    }

    #[test]
    fn cel_expressions_validate_claims_map_the_user_and_validate_it() {
        let idp = issuer(
            "  claimValidationRules:\n  - {expression: 'claims.hd == \"example.com\"', message: 'wrong domain'}\n  claimMappings:\n    username: {expression: 'claims.email_verified ? claims.email : \"\"'}\n    groups: {expression: 'claims.roles.map(r, \"role:\" + r)'}\n    uid: {expression: 'claims.sub'}\n    extra:\n    - {key: 'example.com/tenant', valueExpression: 'claims.tenant'}\n    - {key: 'example.com/none', valueExpression: '\"\"'}\n  userValidationRules:\n  - {expression: '!user.username.startsWith(\"system:\")', message: 'no system users'}\n",
        );
        let claims = json!({"hd": "example.com", "email": "a@x", "email_verified": true, "roles": ["dev", "qa"], "sub": "42", "tenant": "blue"});
        let user = idp.user(&claims).unwrap();
        assert_eq!(user.username, "a@x");
        assert_eq!(user.groups, ["role:dev", "role:qa"]);
        assert_eq!(user.uid, "42");
        assert_eq!(
            user.extra,
            BTreeMap::from([("example.com/tenant".to_string(), vec!["blue".to_string()])])
        );
        let mut other = claims.clone();
        other["hd"] = json!("evil.com");
        let refused = idp.user(&other).unwrap_err().to_string();
        assert!(refused.ends_with("failed: wrong domain"), "{refused}");
        let mut unverified = claims.clone();
        unverified["email_verified"] = json!(false);
        assert_eq!(
            idp.user(&unverified).unwrap_err().to_string(),
            "oidc: empty username via CEL expression is not allowed"
        );
        let mut system = claims.clone();
        system["email"] = json!("system:admin");
        let refused = idp.user(&system).unwrap_err().to_string();
        assert!(refused.ends_with("failed: no system users"), "{refused}");
    }
}
