//! The HTTPS client of one APIService's backend: TLS verified against the APIService's
//! `caBundle` for the name `<service>.<namespace>.svc` (or not at all, with
//! `insecureSkipTLSVerify`), the front proxy's client certificate presented, HTTP/2 or
//! HTTP/1.1 as the backend offers, connections pooled, bodies streamed both ways.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, Uri};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;

use strategy_host_https::webhook::{ClientCertificate, Dial, Failure};

/// A request or response body passed through (a client's upload, a backend's stream).
pub type ProxyBody = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// How long a TCP connection and TLS handshake to a backend may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Whom the backend's serving certificate must be issued by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendTrust {
    /// The APIService's `caBundle` (PEM); empty: the system's roots.
    CaBundle(Vec<u8>),
    /// `insecureSkipTLSVerify: true`: any certificate.
    Insecure,
}

/// A pooled client of one backend.
#[derive(Clone)]
pub struct BackendClient {
    client: Client<TlsConnector, ProxyBody>,
}

impl std::fmt::Debug for BackendClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendClient").finish_non_exhaustive()
    }
}

impl BackendClient {
    /// A client verifying the backend by `trust` for `server_name`, presenting `identity`.
    ///
    /// # Errors
    /// The `caBundle` or the client certificate does not parse.
    pub fn new(
        trust: &BackendTrust,
        server_name: &str,
        identity: Option<&ClientCertificate>,
    ) -> Result<Self, Failure> {
        let mut tls = match trust {
            BackendTrust::CaBundle(pem) => {
                let dial = Dial {
                    ca_bundle: Some(pem.as_slice()),
                    client_certificate: identity,
                    bearer_token: None,
                };
                (*strategy_host_https::webhook::tls_config(&dial)?).clone()
            }
            BackendTrust::Insecure => insecure_config(identity)?,
        };
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let server_name =
            ServerName::try_from(server_name.to_owned()).map_err(|source| Failure::ServerName {
                host: server_name.to_owned(),
                source,
            })?;
        let connector = TlsConnector {
            tls: tokio_rustls::TlsConnector::from(Arc::new(tls)),
            server_name,
        };
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(connector);
        Ok(Self { client })
    }

    /// Sends `request` (its URI `https://<address>:<port>/path`) and answers the backend's
    /// response head, its body still streaming.
    ///
    /// # Errors
    /// The backend could not be reached or the connection broke; the text is Go's words for
    /// the step that failed (`dial tcp 10.0.0.1:443: connection refused`).
    pub async fn send(
        &self,
        request: Request<ProxyBody>,
    ) -> Result<Response<Incoming>, BackendUnreachable> {
        self.client
            .request(request)
            .await
            .map_err(|source| BackendUnreachable { source })
    }
}

/// A backend that could not be reached, or whose connection broke; its text is Go's words for
/// the step that failed (the innermost error's).
#[derive(Debug, thiserror::Error)]
#[error("{}", cause(.source))]
pub struct BackendUnreachable {
    source: hyper_util::client::legacy::Error,
}

/// The innermost error's text: the connector's words, not the pool's.
fn cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut last = error;
    while let Some(next) = last.source() {
        // A `Failure` says which step failed; below it are the io details it already names.
        if last.downcast_ref::<Failure>().is_some() {
            break;
        }
        last = next;
    }
    last.to_string()
}

/// A rustls configuration trusting any server certificate (`insecureSkipTLSVerify`).
fn insecure_config(identity: Option<&ClientCertificate>) -> Result<rustls::ClientConfig, Failure> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(AnyCertificate(provider.clone()));
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Failure::Tls)?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    strategy_host_https::webhook::with_identity(builder, identity)
}

/// Accepts every certificate, still checking the handshake's signatures.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Dials `host:port` from the URI and shakes hands for the backend's service name (the
/// address is an endpoint's; the certificate is the Service's).
#[derive(Clone)]
struct TlsConnector {
    tls: tokio_rustls::TlsConnector,
    server_name: ServerName<'static>,
}

/// A TLS connection, telling the pool whether HTTP/2 was agreed.
struct TlsConnection(TokioIo<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>);

impl Connection for TlsConnection {
    fn connected(&self) -> Connected {
        let (_, session) = self.0.inner().get_ref();
        match session.alpn_protocol() {
            Some(b"h2") => Connected::new().negotiated_h2(),
            _ => Connected::new(),
        }
    }
}

impl hyper::rt::Read for TlsConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for TlsConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl tower_service::Service<Uri> for TlsConnector {
    type Response = TlsConnection;
    type Error = Failure;
    type Future = Pin<Box<dyn Future<Output = Result<TlsConnection, Failure>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Failure>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let (tls, name) = (self.tls.clone(), self.server_name.clone());
        Box::pin(async move {
            let host = uri
                .host()
                .unwrap_or_default()
                .trim_matches(['[', ']'])
                .to_owned();
            let port = uri.port_u16().unwrap_or(443);
            let dial = async {
                let tcp = strategy_host_https::webhook::dial_tcp(&host, port).await?;
                let stream = tls.connect(name, tcp).await.map_err(Failure::Handshake)?;
                Ok(TlsConnection(TokioIo::new(stream)))
            };
            match tokio::time::timeout(CONNECT_TIMEOUT, dial).await {
                Ok(result) => result,
                Err(_) => Err(Failure::DeadlineExceeded),
            }
        })
    }
}
