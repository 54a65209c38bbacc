//! TLS serving with rustls: the server configuration (certificate chain and key, ALPN `h2` then
//! `http/1.1`, client certificates requested but verified per connection) and the handshake of
//! one accepted connection, which yields the user its client certificate names.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::user::UserInfo;
use strategy_host_authentication::request_header::RequestHeader;
use strategy_host_authentication::x509::{CertificateRefused, ClientCaError, ClientCertificates};
use strategy_host_https::pki::Pki;

/// A handshake that takes longer than this is dropped (a slow or idle client holds no task).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a connection's client certificate proves, verified once at its handshake.
#[derive(Debug, Default)]
pub struct ConnectionIdentity {
    /// The user the certificate names (verified against the client CAs), or why it names
    /// none; `None` without a certificate.
    pub certificate: Option<Result<UserInfo, CertificateRefused>>,
    /// The certificate is a front proxy's (the request header CA, an allowed name): its
    /// requests' headers name their user.
    pub front_proxy: bool,
}

/// Why the server cannot serve TLS with its certificates.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The serving certificate file does not parse.
    #[error("reading the serving certificate: {0}")]
    Certificate(#[source] rustls::pki_types::pem::Error),
    /// It holds no certificate.
    #[error("the serving certificate file holds no certificate")]
    NoCertificate,
    /// The serving key does not parse.
    #[error("reading the serving key: {0}")]
    Key(#[source] rustls::pki_types::pem::Error),
    /// The client CAs cannot be used.
    #[error(transparent)]
    ClientCa(#[from] ClientCaError),
    /// rustls refuses the certificate and key (they do not match, for one).
    #[error("the serving certificate and key: {0}")]
    Config(#[source] rustls::Error),
}

/// Accepts TLS connections.
#[derive(Clone)]
pub struct TlsServing {
    acceptor: TlsAcceptor,
    client_certificates: ClientCertificates,
    request_header: Option<RequestHeader>,
}

impl TlsServing {
    /// Serving `pki`'s certificate, with client certificates checked against its client CAs
    /// and, with `request_header`, against the front proxy's.
    ///
    /// # Errors
    /// The certificate or key is not PEM, or they do not match.
    pub fn new(pki: &Pki, request_header: Option<RequestHeader>) -> Result<Self, TlsError> {
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(pki.serving_cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(TlsError::Certificate)?;
        if chain.is_empty() {
            return Err(TlsError::NoCertificate);
        }
        let key =
            PrivateKeyDer::from_pem_slice(pki.serving_key_pem.as_bytes()).map_err(TlsError::Key)?;
        let client_certificates = ClientCertificates::new(&pki.client_ca_pem)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Config)?
            .with_client_cert_verifier(client_certificates.handshake_verifier())
            .with_single_cert(chain, key)
            .map_err(TlsError::Config)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            client_certificates,
            request_header,
        })
    }

    /// Completes the handshake of `stream` and verifies its client certificate.
    ///
    /// # Errors
    /// The handshake fails or times out.
    pub async fn accept(
        &self,
        stream: TcpStream,
    ) -> std::io::Result<(TlsStream<TcpStream>, ConnectionIdentity)> {
        let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, self.acceptor.accept(stream))
            .await
            .map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, "TLS handshake timed out")
            })??;
        let chain = tls.get_ref().1.peer_certificates();
        let identity = ConnectionIdentity {
            certificate: self.client_certificates.verify(chain),
            front_proxy: self
                .request_header
                .as_ref()
                .is_some_and(|h| h.is_front_proxy(chain)),
        };
        Ok((tls, identity))
    }
}
