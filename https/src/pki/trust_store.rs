//! CA certificates in PEM as a rustls trust store: the client CA, a webhook's `caBundle`; and
//! the system's roots, which a webhook without a `caBundle` is trusted by (as Kubernetes does).

/// A trust store's certificates that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TrustStoreError {
    /// A PEM block that does not parse.
    #[error("reading {what}: {source}")]
    Pem {
        /// What the certificates are (`the client CA`).
        what: &'static str,
        /// Why.
        source: rustls::pki_types::pem::Error,
    },
    /// A certificate rustls refuses as a trust anchor.
    #[error("reading {what}: {source}")]
    Certificate {
        /// What the certificates are.
        what: &'static str,
        /// Why.
        source: rustls::Error,
    },
}

/// The certificates in `pem` as a rustls trust store (`what` names them in errors).
///
/// # Errors
/// A certificate that does not parse or that rustls refuses.
pub fn trust_store(
    pem: &[u8],
    what: &'static str,
) -> Result<rustls::RootCertStore, TrustStoreError> {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem) {
        let cert = cert.map_err(|source| TrustStoreError::Pem { what, source })?;
        roots
            .add(cert)
            .map_err(|source| TrustStoreError::Certificate { what, source })?;
    }
    Ok(roots)
}

/// The system's trusted roots (`/etc/ssl/certs`, or `SSL_CERT_FILE` / `SSL_CERT_DIR` when set),
/// read once; certificates that do not load are logged and left out.
pub fn system_roots() -> &'static rustls::RootCertStore {
    static ROOTS: std::sync::OnceLock<rustls::RootCertStore> = std::sync::OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        for error in &found.errors {
            tracing::warn!(%error, "a system root certificate could not be loaded");
        }
        let mut roots = rustls::RootCertStore::empty();
        let (added, ignored) = roots.add_parsable_certificates(found.certs);
        tracing::debug!(added, ignored, "system root certificates loaded");
        roots
    })
}
