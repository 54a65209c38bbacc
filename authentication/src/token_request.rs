//! TokenRequest (`POST .../serviceaccounts/{name}/token`, `kubectl create token`): the request
//! checked as Kubernetes checks it, answered with a token the server signs.

use serde_json::{json, Value};

use super::service_account::{ServiceAccountTokens, DEFAULT_EXPIRATION_SECONDS};
use strategy_host_apimachinery::meta::format_rfc3339;

/// Answers a TokenRequest (`POST .../serviceaccounts/{name}/token`) for the account `account`
/// (its stored object): the response object, or a 422-style message for a bad spec.
///
/// # Errors
/// `expirationSeconds` under ten minutes or over 2^32 seconds, or signing fails.
pub fn token_request(
    tokens: &ServiceAccountTokens,
    account: &Value,
    request: &Value,
) -> Result<Value, TokenRequestError> {
    let meta = &account["metadata"];
    let (ns, name, uid) = (
        meta["namespace"].as_str().unwrap_or_default(),
        meta["name"].as_str().unwrap_or_default(),
        meta["uid"].as_str().unwrap_or_default(),
    );
    let spec = &request["spec"];
    let audiences: Vec<String> = spec["audiences"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let expiration = spec["expirationSeconds"]
        .as_i64()
        .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
    if expiration < 600 {
        return Err(TokenRequestError::Invalid(
            "spec.expirationSeconds",
            "may not specify a duration less than 10 minutes".into(),
        ));
    }
    if expiration > 1 << 32 {
        return Err(TokenRequestError::Invalid(
            "spec.expirationSeconds",
            "may not specify a duration larger than 2^32 seconds".into(),
        ));
    }
    let issued = tokens
        .issue(ns, name, uid, audiences, expiration)
        .map_err(TokenRequestError::Failed)?;
    Ok(json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": null},
        "spec": {
            "audiences": issued.audiences,
            "expirationSeconds": issued.expiration_seconds,
            "boundObjectRef": spec.get("boundObjectRef").cloned().unwrap_or(Value::Null),
        },
        "status": {
            "token": issued.token,
            "expirationTimestamp": format_rfc3339(issued.expires_at as i64),
        },
    }))
}

/// Why a TokenRequest was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenRequestError {
    /// A field of the spec is invalid (422): the field path and why.
    #[error("{0}: Invalid value: {1}")]
    Invalid(&'static str, String),
    /// The token could not be signed (500).
    #[error(transparent)]
    Failed(#[from] super::service_account::Error),
}
