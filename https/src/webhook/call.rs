//! Calling a webhook: a review POSTed over HTTPS to `clientConfig.url`, trusting
//! only the webhook's `caBundle`, within its timeout; failures worded as Go's HTTP client words
//! them (`Post "https://...": context deadline exceeded`), since clients match on them. The
//! connection comes from `pool.rs`.

use std::time::Duration;

use hyper::body::Bytes;
use serde_json::Value;

use super::{pool, CallError, Dial, Failure};

/// POSTs `review` (whose `kind` the errors name) to `url` (with `?timeout=`), trusting `ca_bundle`; answers the response.
///
/// # Errors
/// What went wrong, as `Post "URL": reason`.
pub async fn post(
    url: &str,
    ca_bundle: Option<&[u8]>,
    review: &Value,
    timeout: Duration,
) -> Result<Value, CallError> {
    let target = format!(
        "{url}{}timeout={}s",
        if url.contains('?') { '&' } else { '?' },
        timeout.as_secs()
    );
    let body = serde_json::to_vec(review).map_err(|e| CallError::Post {
        target: target.clone(),
        reason: Failure::Encode(e),
    })?;
    let kind = review["kind"].as_str().unwrap_or("review");
    let dial = Dial::trusting(ca_bundle);
    let post = exchange(
        &hyper::Method::POST,
        &target,
        &dial,
        Bytes::from(body),
        kind,
    );
    within(timeout, post)
        .await
        .map_err(|reason| CallError::Post { target, reason })
}

/// POSTs `review` to `url` as it is (no `?timeout=`: an authorization webhook's kubeconfig
/// `server`), dialled as `dial` says, within `timeout`; answers the response.
///
/// # Errors
/// What went wrong, as `Post "URL": reason`.
pub async fn post_as(
    url: &str,
    dial: &Dial<'_>,
    review: &Value,
    timeout: Duration,
) -> Result<Value, CallError> {
    let body = serde_json::to_vec(review).map_err(|e| CallError::Post {
        target: url.to_owned(),
        reason: Failure::Encode(e),
    })?;
    let kind = review["kind"].as_str().unwrap_or("review");
    let post = exchange(&hyper::Method::POST, url, dial, Bytes::from(body), kind);
    within(timeout, post)
        .await
        .map_err(|reason| CallError::Post {
            target: url.to_owned(),
            reason,
        })
}

/// GETs the JSON document at `url` over HTTPS, trusting what `crate::pki::trust_store` makes of
/// `ca_bundle` (as for webhooks), within `timeout`: an identity provider's OpenID configuration
/// or key set.
///
/// # Errors
/// What went wrong, as `Get "URL": reason`.
pub async fn get(
    url: &str,
    ca_bundle: Option<&[u8]>,
    timeout: Duration,
) -> Result<Value, CallError> {
    let dial = Dial::trusting(ca_bundle);
    let get = exchange(
        &hyper::Method::GET,
        url,
        &dial,
        Bytes::new(),
        "JSON document",
    );
    within(timeout, get).await.map_err(|reason| CallError::Get {
        target: url.to_owned(),
        reason,
    })
}

/// `call`'s answer, or `DeadlineExceeded` once `timeout` has passed.
async fn within(
    timeout: Duration,
    call: impl std::future::Future<Output = Result<Value, Failure>>,
) -> Result<Value, Failure> {
    tokio::time::timeout(timeout, call)
        .await
        .unwrap_or(Err(Failure::DeadlineExceeded))
}

/// Sends `body` with `method` to the https URL `target`, trusting `ca_bundle`; the answer's
/// JSON (`kind` names what was expected, in the error when it is not that).
async fn exchange(
    method: &hyper::Method,
    target: &str,
    dial: &Dial<'_>,
    body: Bytes,
    kind: &str,
) -> Result<Value, Failure> {
    let uri: hyper::Uri = target.parse().map_err(Failure::InvalidUrl)?;
    if uri.scheme_str() != Some("https") {
        return Err(Failure::NotHttps);
    }
    let host = uri.host().ok_or(Failure::NoHost)?;
    let host = host.trim_matches(['[', ']']);
    let port = uri.port_u16().unwrap_or(443);
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let (status, bytes) = pool::send(method, host, port, dial, path, body).await?;
    if !status.is_success() {
        return Err(Failure::Status(status));
    }
    serde_json::from_slice(&bytes).map_err(|source| Failure::NotAReview {
        kind: kind.to_owned(),
        source,
    })
}
