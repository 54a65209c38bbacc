//! What goes wrong with ServiceAccount tokens: their keys, signing, or a token refused, in the
//! words the authenticator and TokenRequest answer with.

/// What went wrong with ServiceAccount tokens: their keys, signing, or a token refused.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The signing key is not a PKCS#8 PEM key.
    #[error("the ServiceAccount signing key is not a PKCS#8 PEM key: {0}")]
    SigningKeyNotPem(#[source] rcgen::Error),
    /// The signing key is of a type tokens cannot be signed with.
    #[error("the ServiceAccount signing key must be ECDSA P-256/P-384 or RSA")]
    SigningKeyType,
    /// The signing key could not be read for signing.
    #[error("reading the ServiceAccount signing key: {0}")]
    SigningKey(#[source] jsonwebtoken::errors::Error),
    /// A public key is not PEM.
    #[error("a ServiceAccount public key is not PEM: {0}")]
    PublicKey(#[source] jsonwebtoken::errors::Error),
    /// Signing a token failed.
    #[error("signing a ServiceAccount token: {0}")]
    Signing(#[source] jsonwebtoken::errors::Error),
    /// A token past its expiry.
    #[error("service account token has expired")]
    Expired,
    /// A token before its not-before time.
    #[error("service account token is not valid yet")]
    NotYetValid,
    /// A token no key verifies.
    #[error("invalid service account token: {0}")]
    Invalid(#[source] jsonwebtoken::errors::Error),
    /// No key to verify tokens with.
    #[error("no key to verify ServiceAccount tokens with")]
    NoVerifyingKey,
}
