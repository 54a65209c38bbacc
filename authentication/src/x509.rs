//! Client certificates: the TLS handshake asks for one and checks only that the client holds
//! its key; the chain is verified against the client CAs once per connection, here, so a
//! certificate from another CA answers 401 with a `Status` (as kube-apiserver, which requests
//! but does not require certificates) instead of a failed handshake. CN = user, O = groups.

use std::sync::Arc;

use async_trait::async_trait;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use sha2::Digest as _;

use super::{Authenticator, Credentials, Outcome};
use crate::user::UserInfo;

/// The `extra` key naming the credential a user authenticated with (Kubernetes 1.31+).
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// Why the client CAs cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ClientCaError {
    /// The CA file does not parse.
    #[error(transparent)]
    Read(#[from] strategy_host_https::pki::TrustStoreError),
    /// rustls refuses the CAs (none given, for one).
    #[error("building the client certificate verifier: {0}")]
    Verifier(#[source] rustls::server::VerifierBuilderError),
}

/// Why a connection's client certificate proves no user (every request on it answers 401).
#[derive(Debug, Clone, thiserror::Error)]
pub enum CertificateRefused {
    /// The chain does not lead to a client CA, or the certificate is expired or not for clients.
    #[error("x509: verifying the client certificate: {0}")]
    Verify(#[source] rustls::Error),
    /// The certificate is not X.509 DER.
    #[error("x509: parsing the client certificate: {0}")]
    Parse(#[source] x509_parser::nom::Err<x509_parser::error::X509Error>),
    /// The subject has no common name to be the user's name.
    #[error("x509: the client certificate has no common name")]
    NoCommonName,
}

/// Asks for a client certificate during the handshake, verifies the client's signature with
/// it, and leaves the chain to [`ClientCertificates::verify`].
#[derive(Debug)]
pub struct RequestClientCertificate {
    webpki: Arc<dyn ClientCertVerifier>,
}

/// Verifies client certificate chains against the client CAs.
#[derive(Debug, Clone)]
pub struct ClientCertificates {
    webpki: Arc<dyn ClientCertVerifier>,
}

impl ClientCertificates {
    /// Trusts the CA certificates in `ca_pem`.
    ///
    /// # Errors
    /// `ca_pem` holds no usable certificate.
    pub fn new(ca_pem: &str) -> Result<Self, ClientCaError> {
        let roots = strategy_host_https::pki::trust_store(ca_pem.as_bytes(), "the client CA")?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let webpki =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(ClientCaError::Verifier)?;
        Ok(Self { webpki })
    }

    /// The handshake half: request a certificate, check possession of its key.
    pub fn handshake_verifier(&self) -> Arc<dyn ClientCertVerifier> {
        Arc::new(RequestClientCertificate {
            webpki: self.webpki.clone(),
        })
    }

    /// The user a connection's certificate chain names, or why it is refused; `None` when the
    /// client sent no certificate.
    pub fn verify(
        &self,
        chain: Option<&[CertificateDer<'_>]>,
    ) -> Option<Result<UserInfo, CertificateRefused>> {
        let (leaf, intermediates) = chain?.split_first()?;
        Some(self.user_of(leaf, intermediates))
    }

    fn user_of(
        &self,
        leaf: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
    ) -> Result<UserInfo, CertificateRefused> {
        self.webpki
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .map_err(CertificateRefused::Verify)?;
        let (_, cert) =
            x509_parser::parse_x509_certificate(leaf).map_err(CertificateRefused::Parse)?;
        let subject = cert.subject();
        let username = subject
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .unwrap_or_default()
            .to_string();
        if username.is_empty() {
            return Err(CertificateRefused::NoCommonName);
        }
        let groups = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(String::from))
            .collect();
        let digest = sha2::Sha256::digest(leaf.as_ref());
        let id = digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>();
        Ok(UserInfo {
            username,
            groups,
            extra: [(CREDENTIAL_ID.to_string(), vec![format!("X509SHA256={id}")])].into(),
            ..UserInfo::default()
        })
    }
}

impl ClientCertVerifier for RequestClientCertificate {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.webpki.root_hint_subjects()
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // Verified per connection by `ClientCertificates::verify`, so a bad chain gets a 401.
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// The authenticator reading the connection's verified certificate.
#[derive(Debug, Default)]
pub struct X509Authenticator;

#[async_trait]
impl Authenticator for X509Authenticator {
    async fn authenticate(&self, credentials: &Credentials<'_>) -> Outcome {
        match credentials.client_certificate {
            Some(Ok(user)) => Outcome::Authenticated(user.clone()),
            Some(Err(why)) => Outcome::Rejected(why.to_string()),
            None => Outcome::NotApplicable,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rustls::pki_types::pem::PemObject as _;
    use strategy_host_https::pki::{client_certificate, load_or_generate, PkiFlags};

    /// The certificates of a PEM chain (the request-header tests use it too).
    pub(crate) fn der(pem: &str) -> Vec<CertificateDer<'static>> {
        CertificateDer::pem_slice_iter(pem.as_bytes())
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn a_certificate_from_the_ca_names_its_user_and_another_ca_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let listen = "127.0.0.1:1".parse().unwrap();
        let pki = load_or_generate(&PkiFlags::default(), dir.path(), listen).unwrap();
        let certs = ClientCertificates::new(&pki.client_ca_pem).unwrap();
        let (alice, _) = client_certificate(&pki, "alice", "dev").unwrap();
        let user = certs.verify(Some(&der(&alice))).unwrap().unwrap();
        assert_eq!(user.username, "alice");
        assert_eq!(user.groups, ["dev"]);
        assert!(user.extra[CREDENTIAL_ID][0].starts_with("X509SHA256="));

        let other_dir = tempfile::tempdir().unwrap();
        let other = load_or_generate(&PkiFlags::default(), other_dir.path(), listen).unwrap();
        let (mallory, _) = client_certificate(&other, "admin", "system:masters").unwrap();
        let err = certs
            .verify(Some(&der(&mallory)))
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("x509:"), "{err}");
        assert!(certs.verify(None).is_none());
    }
}
