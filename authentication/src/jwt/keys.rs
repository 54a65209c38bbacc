//! An issuer's signing keys: its OpenID configuration read for `jwks_uri`, the key set fetched
//! from there over HTTPS (trusting the issuer's `certificateAuthority`), kept, and fetched again
//! when a token names a key not in it (at most every [`REFRESH_AT_MOST_EVERY`]) or once it is
//! older than [`MAX_AGE`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use tokio::sync::Mutex;

use super::config::Issuer;
use strategy_host_https::webhook::CallError;

/// A token naming an unknown key fetches the key set again, but no more often than this (a
/// flood of forged `kid`s must not become a flood of requests to the identity provider).
const REFRESH_AT_MOST_EVERY: Duration = Duration::from_secs(10);
/// The key set is fetched again when older than this, so a provider's rotation is followed.
const MAX_AGE: Duration = Duration::from_secs(3600);
/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an issuer's key set could not be fetched (go-oidc's words where it has them).
#[derive(Debug, thiserror::Error)]
pub(super) enum KeyFetchError {
    /// The OpenID configuration or the key set could not be got.
    #[error(transparent)]
    Get(#[from] CallError),
    /// The OpenID configuration names another issuer.
    #[error("oidc: issuer did not match the issuer returned by provider, expected {expected:?} got {got:?}")]
    IssuerMismatch {
        /// The issuer configured.
        expected: String,
        /// The issuer the configuration names.
        got: String,
    },
    /// The OpenID configuration names no key set.
    #[error("oidc: the provider's configuration has no jwks_uri")]
    NoJwksUri,
    /// The key set is not a JWK set.
    #[error("oidc: the key set at {uri} does not decode: {source}")]
    KeySet {
        /// Where it was fetched from.
        uri: String,
        /// Why it does not decode.
        #[source]
        source: serde_json::Error,
    },
}

/// Why no key verifies a token: the key set could not be fetched, or has no key the token names.
#[derive(Debug, thiserror::Error)]
pub(super) enum NoVerifyingKey {
    /// The last fetch of the key set failed.
    #[error("oidc: the issuer's keys could not be fetched: {0}")]
    Unfetched(#[source] Arc<KeyFetchError>),
    /// The key set has no key with the token's `kid` (or the token names none and the set has
    /// several).
    #[error("oidc: verify token: no key with id {0:?} in the issuer's key set")]
    UnknownKeyId(String),
}

/// The keys of one issuer.
pub(super) struct IssuerKeys {
    configuration_url: String,
    issuer: String,
    ca: Option<Vec<u8>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    keys: Vec<Jwk>,
    fetched: Option<Instant>,
    last_error: Option<Arc<KeyFetchError>>,
}

impl IssuerKeys {
    /// The keys `issuer` publishes (nothing is fetched until a token needs them).
    pub(super) fn new(issuer: &Issuer) -> Self {
        let configuration_url = issuer.discovery_url.clone().unwrap_or_else(|| {
            format!(
                "{}/.well-known/openid-configuration",
                issuer.url.trim_end_matches('/')
            )
        });
        Self {
            configuration_url,
            issuer: issuer.url.clone(),
            ca: issuer
                .certificate_authority
                .as_ref()
                .map(|pem| pem.as_bytes().to_vec()),
            state: Mutex::default(),
        }
    }

    /// The key `kid` names (any key when the token names none and the set has one), fetching
    /// the set when it is missing, stale, or lacks that key.
    ///
    /// # Errors
    /// The key set cannot be fetched, or has no such key.
    pub(super) async fn key(&self, kid: Option<&str>) -> Result<Jwk, NoVerifyingKey> {
        let mut state = self.state.lock().await;
        let stale = state.fetched.is_none_or(|at| at.elapsed() > MAX_AGE);
        if stale || find(&state.keys, kid).is_none() {
            let may_fetch = state
                .fetched
                .is_none_or(|at| at.elapsed() >= REFRESH_AT_MOST_EVERY);
            if may_fetch {
                match self.fetch().await {
                    Ok(keys) => {
                        state.keys = keys;
                        state.last_error = None;
                    }
                    Err(e) => {
                        tracing::warn!(issuer = %self.issuer, error = %e, "fetching the issuer's keys failed");
                        state.last_error = Some(Arc::new(e));
                    }
                }
                state.fetched = Some(Instant::now());
            }
        }
        match find(&state.keys, kid) {
            Some(key) => Ok(key.clone()),
            None => Err(match &state.last_error {
                Some(e) => NoVerifyingKey::Unfetched(Arc::clone(e)),
                None => NoVerifyingKey::UnknownKeyId(kid.unwrap_or_default().to_owned()),
            }),
        }
    }

    /// The issuer's key set, through its OpenID configuration.
    async fn fetch(&self) -> Result<Vec<Jwk>, KeyFetchError> {
        let ca = self.ca.as_deref();
        let configuration =
            strategy_host_https::webhook::get(&self.configuration_url, ca, FETCH_TIMEOUT).await?;
        // As go-oidc: the configuration must name the issuer configured.
        let named = configuration["issuer"].as_str().unwrap_or_default();
        if named.trim_end_matches('/') != self.issuer.trim_end_matches('/') {
            return Err(KeyFetchError::IssuerMismatch {
                expected: self.issuer.clone(),
                got: named.to_owned(),
            });
        }
        let Some(jwks_uri) = configuration["jwks_uri"].as_str() else {
            return Err(KeyFetchError::NoJwksUri);
        };
        let set = strategy_host_https::webhook::get(jwks_uri, ca, FETCH_TIMEOUT).await?;
        let set: JwkSet = serde_json::from_value(set).map_err(|source| KeyFetchError::KeySet {
            uri: jwks_uri.to_owned(),
            source,
        })?;
        Ok(set.keys)
    }
}

fn find<'a>(keys: &'a [Jwk], kid: Option<&str>) -> Option<&'a Jwk> {
    match kid {
        Some(kid) => keys
            .iter()
            .find(|k| k.common.key_id.as_deref() == Some(kid)),
        None if keys.len() == 1 => keys.first(),
        None => None,
    }
}
