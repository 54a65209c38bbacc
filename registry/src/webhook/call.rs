//! Calling a webhook: a review POSTed over HTTPS to `clientConfig.url`, trusting
//! only the webhook's `caBundle`, within its timeout; failures worded as Go's HTTP client words
//! them (`Post "https://...": context deadline exceeded`), since clients match on them. The
//! connection comes from `pool.rs`.

use std::time::Duration;

use hyper::body::Bytes;
use serde_json::Value;

use super::{pool, CallError, Failure};

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
    match tokio::time::timeout(timeout, exchange(&target, ca_bundle, review)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(reason)) => Err(CallError::Post { target, reason }),
        Err(_) => Err(CallError::Post {
            target,
            reason: Failure::DeadlineExceeded,
        }),
    }
}

async fn exchange(
    target: &str,
    ca_bundle: Option<&[u8]>,
    review: &Value,
) -> Result<Value, Failure> {
    let uri: hyper::Uri = target.parse().map_err(Failure::InvalidUrl)?;
    if uri.scheme_str() != Some("https") {
        return Err(Failure::NotHttps);
    }
    let host = uri.host().ok_or(Failure::NoHost)?;
    let host = host.trim_matches(['[', ']']);
    let port = uri.port_u16().unwrap_or(443);
    let body = serde_json::to_vec(review).map_err(Failure::Encode)?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let post = hyper::Method::POST;
    let (status, bytes) = pool::send(&post, host, port, ca_bundle, path, Bytes::from(body)).await?;
    if !status.is_success() {
        return Err(Failure::Status(status));
    }
    let kind = review["kind"].as_str().unwrap_or("review");
    serde_json::from_slice(&bytes).map_err(|source| Failure::NotAReview {
        kind: kind.to_owned(),
        source,
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
    let fetch = async {
        let uri: hyper::Uri = url.parse().map_err(Failure::InvalidUrl)?;
        if uri.scheme_str() != Some("https") {
            return Err(Failure::NotHttps);
        }
        let host = uri.host().ok_or(Failure::NoHost)?;
        let host = host.trim_matches(['[', ']']);
        let port = uri.port_u16().unwrap_or(443);
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let get = hyper::Method::GET;
        let (status, bytes) = pool::send(&get, host, port, ca_bundle, path, Bytes::new()).await?;
        if !status.is_success() {
            return Err(Failure::Status(status));
        }
        serde_json::from_slice(&bytes).map_err(|source| Failure::NotAReview {
            kind: "JSON document".to_owned(),
            source,
        })
    };
    let target = url.to_owned();
    match tokio::time::timeout(timeout, fetch).await {
        Ok(Ok(document)) => Ok(document),
        Ok(Err(reason)) => Err(CallError::Get { target, reason }),
        Err(_) => Err(CallError::Get {
            target,
            reason: Failure::DeadlineExceeded,
        }),
    }
}
