//! Calling a webhook: a review POSTed over HTTPS to `clientConfig.url`, trusting
//! only the webhook's `caBundle`, within its timeout; failures worded as Go's HTTP client words
//! them (`Post "https://...": context deadline exceeded`), since clients match on them. The
//! connection comes from `pool.rs`.

use std::time::Duration;

use hyper::body::Bytes;
use serde_json::Value;

use super::pool;

/// POSTs `review` (whose `kind` the errors name) to `url` (with `?timeout=`), trusting `ca_bundle`; answers the response.
///
/// # Errors
/// What went wrong, as `Post "URL": reason`.
pub async fn post(
    url: &str,
    ca_bundle: Option<&[u8]>,
    review: &Value,
    timeout: Duration,
) -> Result<Value, String> {
    let target = format!(
        "{url}{}timeout={}s",
        if url.contains('?') { '&' } else { '?' },
        timeout.as_secs()
    );
    let failed = |why: String| format!("Post \"{target}\": {why}");
    match tokio::time::timeout(timeout, exchange(&target, ca_bundle, review)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(why)) => Err(failed(why)),
        Err(_) => Err(failed("context deadline exceeded".into())),
    }
}

async fn exchange(target: &str, ca_bundle: Option<&[u8]>, review: &Value) -> Result<Value, String> {
    let uri: hyper::Uri = target.parse().map_err(|e| format!("invalid URL: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err("webhook URLs must use the https scheme".into());
    }
    let host = uri.host().ok_or("the URL has no host")?;
    let host = host.trim_matches(['[', ']']);
    let port = uri.port_u16().unwrap_or(443);
    let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let (status, bytes) = pool::post(host, port, ca_bundle, path, Bytes::from(body)).await?;
    if !status.is_success() {
        return Err(format!("the server answered {status}"));
    }
    let kind = review["kind"].as_str().unwrap_or("review");
    serde_json::from_slice(&bytes).map_err(|e| format!("the response is not a {kind}: {e}"))
}
