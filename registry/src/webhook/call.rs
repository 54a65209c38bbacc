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
    let (status, bytes) = pool::post(host, port, ca_bundle, path, Bytes::from(body)).await?;
    if !status.is_success() {
        return Err(Failure::Status(status));
    }
    let kind = review["kind"].as_str().unwrap_or("review");
    serde_json::from_slice(&bytes).map_err(|source| Failure::NotAReview {
        kind: kind.to_owned(),
        source,
    })
}
