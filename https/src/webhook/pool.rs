//! Connections to webhooks, kept open between calls: per endpoint (host, port and `caBundle`)
//! at most [`MAX_CONNECTIONS`] in use at once — a hung webhook holds that many sockets, never
//! more, and the calls beyond them wait within their own deadline — and at most [`MAX_IDLE`] kept
//! for the next calls, so a call costs one request, not a TCP and TLS handshake.
//!
//! Written here rather than taken from hyper-util's pooled client: the errors must keep the
//! words Go's HTTP client uses (`dial tcp ...`, `tls: failed to verify certificate ...`), which
//! clients and tests match on, and a pooled client's errors hide which step failed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use sha2::{Digest as _, Sha256};
use tokio::sync::Semaphore;

use super::{Dial, Failure};

/// Connections one endpoint may have in use at once.
pub(super) const MAX_CONNECTIONS: usize = 64;
/// Idle connections kept per endpoint.
pub(super) const MAX_IDLE: usize = 16;
/// The largest response read from a webhook.
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;
/// Endpoints remembered before the table is emptied (configurations come and go).
const MAX_ENDPOINTS: usize = 256;

type Sender = SendRequest<Full<Bytes>>;

/// A webhook's status and body, or why the body could not be read whole.
type Answer = (hyper::StatusCode, Result<Bytes, Failure>);

/// One webhook endpoint's connections.
struct Endpoint {
    host: String,
    port: u16,
    tls: Arc<rustls::ClientConfig>,
    idle: Mutex<Vec<Sender>>,
    in_use: Semaphore,
}

/// An endpoint: host, port and the SHA-256 of how it is dialled (`caBundle`, client identity).
type EndpointKey = (String, u16, [u8; 32]);

/// Every endpoint called, process-wide (each webhook configuration's calls share them).
type Endpoints = Mutex<HashMap<EndpointKey, Arc<Endpoint>>>;

fn endpoints() -> &'static Endpoints {
    static ENDPOINTS: OnceLock<Endpoints> = OnceLock::new();
    ENDPOINTS.get_or_init(Mutex::default)
}

/// The rustls configuration `dial` describes: whom to trust, which identity to present.
pub fn tls_config(dial: &Dial<'_>) -> Result<Arc<rustls::ClientConfig>, Failure> {
    let roots = match dial.ca_bundle.filter(|pem| !pem.is_empty()) {
        Some(pem) => crate::pki::trust_store(pem, "the webhook's caBundle")?,
        // Without a caBundle the system's roots are trusted, as kube-apiserver trusts them.
        None => crate::pki::system_roots().clone(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Failure::Tls)?
        .with_root_certificates(roots);
    Ok(Arc::new(with_identity(builder, dial.client_certificate)?))
}

/// `builder` finished presenting `identity` (none: no client certificate).
pub fn with_identity(
    builder: rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert>,
    identity: Option<&super::ClientCertificate>,
) -> Result<rustls::ClientConfig, Failure> {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let Some(identity) = identity else {
        return Ok(builder.with_no_client_auth());
    };
    let chain = CertificateDer::pem_slice_iter(&identity.certificate)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::ClientCertificate(e.to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(&identity.key)
        .map_err(|e| Failure::ClientCertificate(e.to_string()))?;
    builder
        .with_client_auth_cert(chain, key)
        .map_err(Failure::Tls)
}

fn endpoint(host: &str, port: u16, dial: &Dial<'_>) -> Result<Arc<Endpoint>, Failure> {
    let mut digest = Sha256::new();
    digest.update(dial.ca_bundle.unwrap_or_default());
    if let Some(identity) = dial.client_certificate {
        digest.update(&identity.certificate);
        digest.update(&identity.key);
    }
    let key = (host.to_owned(), port, digest.finalize().into());
    let mut all = endpoints().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = all.get(&key) {
        return Ok(e.clone());
    }
    if all.len() >= MAX_ENDPOINTS {
        // Calls in flight keep their endpoint alive; later ones start afresh.
        all.clear();
    }
    let made = Arc::new(Endpoint {
        host: host.to_owned(),
        port,
        tls: tls_config(dial)?,
        idle: Mutex::default(),
        in_use: Semaphore::new(MAX_CONNECTIONS),
    });
    all.insert(key, made.clone());
    Ok(made)
}

/// A TCP connection to `host`:`port`, sending each write at once (no Nagle delay); failing in
/// Go's words (`dial tcp …`).
pub async fn dial_tcp(host: &str, port: u16) -> Result<tokio::net::TcpStream, Failure> {
    let tcp = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|source| Failure::Dial {
            host: host.to_owned(),
            port,
            source,
        })?;
    let _ = tcp.set_nodelay(true);
    Ok(tcp)
}

impl Endpoint {
    async fn connect(&self) -> Result<Sender, Failure> {
        let (host, port) = (self.host.as_str(), self.port);
        let tcp = dial_tcp(host, port).await?;
        let name = ServerName::try_from(host.to_owned()).map_err(|source| Failure::ServerName {
            host: host.to_owned(),
            source,
        })?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .map_err(Failure::Handshake)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        tokio::spawn(connection);
        Ok(sender)
    }

    /// An idle connection that is still open and ready for a request, if any.
    async fn reuse(&self) -> Option<Sender> {
        loop {
            let popped = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let mut sender = popped?;
            // Just after an answer the connection's task may not have marked it idle yet.
            if !sender.is_closed() && sender.ready().await.is_ok() {
                return Some(sender);
            }
        }
    }

    fn give_back(&self, sender: Sender) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE && !sender.is_closed() {
            idle.push(sender);
        }
    }

    /// One exchange on `sender`: the status and the whole body (or why it could not be read).
    async fn exchange(
        &self,
        sender: &mut Sender,
        method: &hyper::Method,
        path: &str,
        bearer_token: Option<&str>,
        body: &Bytes,
    ) -> Result<Answer, hyper::Error> {
        let mut request = hyper::Request::builder()
            .method(method.clone())
            .uri(path)
            .header(hyper::header::HOST, format!("{}:{}", self.host, self.port))
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json");
        if let Some(token) = bearer_token {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request
            .body(Full::new(body.clone()))
            .expect("a request of valid parts");
        let response = sender.send_request(request).await?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map(|collected| collected.to_bytes())
            .map_err(Failure::ReadBody);
        Ok((status, bytes))
    }
}

/// Sends `body` with `method` (POST, or GET with an empty body) to `path` on `host:port`,
/// dialled as `dial` says, over a kept connection when one is idle; answers the status and body.
/// A kept connection the server closed meanwhile is replaced by a new one once.
///
/// # Errors
/// What went wrong, worded as Go's HTTP client words it (without the `Post "URL":` prefix).
pub(super) async fn send(
    method: &hyper::Method,
    host: &str,
    port: u16,
    dial: &Dial<'_>,
    path: &str,
    body: Bytes,
) -> Result<(hyper::StatusCode, Bytes), Failure> {
    let endpoint = endpoint(host, port, dial)?;
    let token = dial.bearer_token;
    let _permit = endpoint.in_use.acquire().await?;
    if let Some(mut kept) = endpoint.reuse().await {
        match endpoint
            .exchange(&mut kept, method, path, token, &body)
            .await
        {
            Ok(answer) => return keep(&endpoint, kept, answer),
            // Closed by the webhook while idle: nothing was answered; try a new connection.
            Err(e) if e.is_closed() || e.is_canceled() || e.is_incomplete_message() => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut fresh = endpoint.connect().await?;
    let answer = endpoint
        .exchange(&mut fresh, method, path, token, &body)
        .await?;
    keep(&endpoint, fresh, answer)
}

/// Keeps `sender` for the next call when the answer was read whole (a cut or oversized body
/// leaves the connection unusable: it is dropped).
fn keep(
    endpoint: &Endpoint,
    sender: Sender,
    (status, bytes): Answer,
) -> Result<(hyper::StatusCode, Bytes), Failure> {
    let bytes = bytes?;
    endpoint.give_back(sender);
    Ok((status, bytes))
}
