//! Why a webhook call failed, worded as Go's HTTP client words it, since clients and tests
//! match on those words (`Post "https://...": context deadline exceeded`).

/// A webhook call that did not answer a review.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The POST failed at `reason`'s step.
    #[error("Post \"{target}\": {reason}")]
    Post {
        /// The URL posted to, with its `?timeout=`.
        target: String,
        /// The step that failed.
        #[source]
        reason: Failure,
    },
    /// A GET (an identity provider's document) failed at `reason`'s step.
    #[error("Get \"{target}\": {reason}")]
    Get {
        /// The URL.
        target: String,
        /// The step that failed.
        #[source]
        reason: Failure,
    },
    /// A `service` endpoint, which this server cannot reach.
    #[error("service {0} cannot be reached from this server (no cluster network): give the webhook a clientConfig.url")]
    Unreachable(String),
}

/// The step of a webhook call that failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// No answer within the webhook's timeout.
    #[error("context deadline exceeded")]
    DeadlineExceeded,
    /// `clientConfig.url` does not parse.
    #[error("invalid URL: {0}")]
    InvalidUrl(#[source] hyper::http::uri::InvalidUri),
    /// `clientConfig.url` is not `https://`.
    #[error("webhook URLs must use the https scheme")]
    NotHttps,
    /// `clientConfig.url` names no host.
    #[error("the URL has no host")]
    NoHost,
    /// The `caBundle` does not parse.
    #[error(transparent)]
    CaBundle(#[from] crate::pki::TrustStoreError),
    /// The client certificate or key (a kubeconfig's) does not parse.
    #[error("reading the client certificate: {0}")]
    ClientCertificate(String),
    /// rustls refused the client configuration.
    #[error("{0}")]
    Tls(#[source] rustls::Error),
    /// The TCP connection failed.
    #[error("dial tcp {host}:{port}: {source}")]
    Dial {
        /// The webhook's host.
        host: String,
        /// Its port.
        port: u16,
        /// Why.
        source: std::io::Error,
    },
    /// The host is not a valid TLS server name.
    #[error("invalid server name {host}: {source}")]
    ServerName {
        /// The webhook's host.
        host: String,
        /// Why.
        source: rustls::pki_types::InvalidDnsNameError,
    },
    /// The TLS handshake failed (most often: the certificate is not trusted by the `caBundle`).
    #[error("tls: failed to verify certificate: {0}")]
    Handshake(#[source] std::io::Error),
    /// HTTP failed on the connection.
    #[error("{0}")]
    Http(#[from] hyper::Error),
    /// The response body could not be read whole (cut, or past the size limit).
    #[error("reading the response: {0}")]
    ReadBody(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The webhook answered a status other than 2xx.
    #[error("the server answered {0}")]
    Status(hyper::StatusCode),
    /// The body is not the review sent.
    #[error("the response is not a {kind}: {source}")]
    NotAReview {
        /// The review's kind (`AdmissionReview`, `ConversionReview`).
        kind: String,
        /// Why it does not decode.
        source: serde_json::Error,
    },
    /// The review could not be encoded.
    #[error("{0}")]
    Encode(#[source] serde_json::Error),
    /// The endpoint's connections were closed while this call waited for one.
    #[error("{0}")]
    Closed(#[from] tokio::sync::AcquireError),
}
