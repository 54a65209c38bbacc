//! Calling out to webhooks over HTTPS: a review (`AdmissionReview`, `ConversionReview`,
//! `SubjectAccessReview`) POSTed to a `clientConfig.url` (or a kubeconfig's server), trusting
//! only its `caBundle`, over pooled connections. Admission, conversion and authorization call
//! through here; it knows nothing of any of them.

mod call;
pub mod client_config;
mod error;
pub mod kubeconfig;
mod pool;

pub use call::{get, post, post_as};
pub use client_config::{ClientConfig, Endpoint};
pub use error::{CallError, Failure};
pub use pool::{dial_tcp, tls_config, with_identity};

/// A client certificate and its key (PEM), presented to a webhook that asks for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    /// The certificate chain.
    pub certificate: Vec<u8>,
    /// The private key.
    pub key: Vec<u8>,
}

/// How a webhook is dialled: whom to trust, and which credentials to present.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dial<'a> {
    /// The CA certificates (PEM) the webhook's serving certificate must chain to; without
    /// them (or empty), the system's roots.
    pub ca_bundle: Option<&'a [u8]>,
    /// The client certificate presented in the TLS handshake.
    pub client_certificate: Option<&'a ClientCertificate>,
    /// The bearer token sent in `Authorization`.
    pub bearer_token: Option<&'a str>,
}

impl<'a> Dial<'a> {
    /// Trusting `ca_bundle`, presenting nothing (admission and conversion webhooks).
    pub fn trusting(ca_bundle: Option<&'a [u8]>) -> Self {
        Self {
            ca_bundle,
            ..Self::default()
        }
    }
}
