//! Calling a webhook: an `AdmissionReview` POSTed over HTTPS to `clientConfig.url`, trusting
//! only the webhook's `caBundle`, within its timeout; failures worded as Go's HTTP client words
//! them (`Post "https://...": context deadline exceeded`), since clients match on them.

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

/// The largest response read from a webhook.
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;

/// POSTs `review` to `url` (with `?timeout=`), trusting `ca_bundle`; answers the response.
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

fn tls_config(ca_bundle: Option<&[u8]>) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_bundle.unwrap_or_default()) {
        let cert = cert.map_err(|e| format!("reading the webhook's caBundle: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("reading the webhook's caBundle: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

async fn exchange(target: &str, ca_bundle: Option<&[u8]>, review: &Value) -> Result<Value, String> {
    let uri: hyper::Uri = target.parse().map_err(|e| format!("invalid URL: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err("webhook URLs must use the https scheme".into());
    }
    let host = uri.host().ok_or("the URL has no host")?.to_string();
    let port = uri.port_u16().unwrap_or(443);
    let tcp = tokio::net::TcpStream::connect((host.trim_matches(['[', ']']), port))
        .await
        .map_err(|e| format!("dial tcp {host}:{port}: {e}"))?;
    let name = ServerName::try_from(host.trim_matches(['[', ']']).to_string())
        .map_err(|e| format!("invalid server name {host}: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(tls_config(ca_bundle)?)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: failed to verify certificate: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let request = hyper::Request::post(path)
        .header(hyper::header::HOST, format!("{host}:{port}"))
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::ACCEPT, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let bytes = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
        .collect()
        .await
        .map_err(|e| format!("reading the response: {e}"))?
        .to_bytes();
    if !status.is_success() {
        return Err(format!("the server answered {status}"));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| format!("the response is not an AdmissionReview: {e}"))
}
