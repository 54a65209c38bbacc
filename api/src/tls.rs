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

use crate::authentication::x509::ClientCertificates;
use crate::pki::Pki;
use crate::user::UserInfo;

/// A handshake that takes longer than this is dropped (a slow or idle client holds no task).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a TLS connection's client certificate proved: nothing (none sent), a user, or why the
/// certificate was refused (every request on the connection then answers 401).
pub type ConnectionIdentity = Option<Result<UserInfo, String>>;

/// Accepts TLS connections.
#[derive(Clone)]
pub struct TlsServing {
    acceptor: TlsAcceptor,
    client_certificates: ClientCertificates,
}

impl TlsServing {
    /// Serving `pki`'s certificate, with client certificates checked against its client CAs.
    ///
    /// # Errors
    /// The certificate or key is not PEM, or they do not match.
    pub fn new(pki: &Pki) -> Result<Self, String> {
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(pki.serving_cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| format!("reading the serving certificate: {e}"))?;
        if chain.is_empty() {
            return Err("the serving certificate file holds no certificate".into());
        }
        let key = PrivateKeyDer::from_pem_slice(pki.serving_key_pem.as_bytes())
            .map_err(|e| format!("reading the serving key: {e}"))?;
        let client_certificates = ClientCertificates::new(&pki.client_ca_pem)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_client_cert_verifier(client_certificates.handshake_verifier())
            .with_single_cert(chain, key)
            .map_err(|e| format!("the serving certificate and key: {e}"))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            client_certificates,
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
        let identity = self
            .client_certificates
            .verify(tls.get_ref().1.peer_certificates());
        Ok((tls, identity))
    }
}
