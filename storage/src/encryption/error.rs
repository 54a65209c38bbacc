//! Why a value could not be sealed or opened by a provider, in the words kube-apiserver's
//! providers use (they end up in the `Internal` error of the read or write that failed).

use super::kms::KmsError;

/// Why a provider could not seal or open a value.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TransformError {
    /// The stored payload ends before its IV or nonce does.
    #[error("the data is too short to hold {0}")]
    TooShort(&'static str),
    /// A key of the wrong size (the configuration's checks make this unreachable).
    #[error("{provider} keys are {sizes} bytes, not {len}")]
    KeySize {
        /// Which cipher.
        provider: &'static str,
        /// The sizes it takes.
        sizes: &'static str,
        /// The key's size.
        len: usize,
    },
    /// AES-CBC's padding is wrong: another key sealed the value.
    #[error("aescbc: the data does not decrypt with the key (invalid padding)")]
    AesCbcPadding,
    /// AES-GCM's tag does not match: another key sealed the value, or it was altered.
    #[error("aesgcm: the data does not decrypt with the key")]
    AesGcmAuthentication,
    /// Poly1305's tag does not match: another key sealed the value, or it was altered.
    #[error("secretbox: the data does not open with the key")]
    SecretboxAuthentication,
    /// The cipher refused to seal.
    #[error("{0} encryption failed")]
    Sealing(&'static str),
    /// The KMS provider's failure.
    #[error(transparent)]
    Kms(#[from] KmsError),
}
