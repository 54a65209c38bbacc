//! Why the KMS v2 provider could not seal or open a value, or finds its plugin unhealthy, in
//! kube-apiserver's words.

use super::{ANNOTATIONS_MAX, ENCRYPTED_DEK_SOURCE_MAX, KEY_ID_MAX};

/// A failure of the KMS provider.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KmsError {
    /// No write can be sealed before the plugin has sealed a seed.
    #[error("failed to encrypt with KMS provider {0:?}: encryption state is missing: the plugin has not sealed a key yet")]
    NotReady(String),
    /// AES-GCM refused to seal.
    #[error("AES-GCM encryption failed")]
    Sealing,
    /// What follows the prefix is not an `EncryptedObject`.
    #[error("invalid encrypted object: {0}")]
    NotAnEncryptedObject(#[from] prost::DecodeError),
    /// The stored object breaks kube-apiserver's checks.
    #[error(transparent)]
    Invalid(#[from] InvalidEnvelope),
    /// The stored object names a way of sealing its key this server does not know.
    #[error("unknown encryptedDEKSourceType: {0}")]
    UnknownDekSourceType(i32),
    /// The stored data ends before its info or nonce does.
    #[error("the stored data was shorter than the required size")]
    TooShort,
    /// The opened key is not an AES key.
    #[error("invalid DEK length {0}")]
    DekLength(usize),
    /// AES-GCM's tag does not match: another key sealed the value, or it was altered.
    #[error("cipher: message authentication failed")]
    Authentication,
    /// The plugin could not open the value's key.
    #[error("failed to decrypt DEK, error: {0}")]
    DecryptingDek(#[source] PluginError),
    /// A key cannot be derived from the seed.
    #[error("invalid seed length {0} used for key generation")]
    SeedLength(usize),
    /// HKDF gave no key.
    #[error("failed to read a derived key from KDF")]
    Derivation,
    /// The plugin's `Status` says it is not healthy.
    #[error("got unexpected healthz status: {0}")]
    Healthz(String),
    /// The plugin speaks another version of the API.
    #[error("expected KMSv2 API version v2, got {0}")]
    Version(String),
    /// The plugin's `Status` gave an unusable key id.
    #[error(transparent)]
    StatusKeyId(InvalidKeyId),
    /// The plugin's `Encrypt` answer breaks kube-apiserver's checks.
    #[error("the KMS plugin's Encrypt response is invalid: {0}")]
    EncryptResponse(#[source] InvalidEnvelope),
    /// A call to the plugin failed.
    #[error(transparent)]
    Plugin(#[from] PluginError),
}

/// A stored object, or the plugin's answer, breaking kube-apiserver's checks.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InvalidEnvelope {
    /// No data.
    #[error("encrypted data is empty")]
    NoData,
    /// No sealed key.
    #[error("failed to validate encrypted DEK source: encrypted DEK source is empty")]
    NoDekSource,
    /// A sealed key over the bound.
    #[error("failed to validate encrypted DEK source: encrypted DEK source is {0} bytes, which exceeds the max size of {ENCRYPTED_DEK_SOURCE_MAX}")]
    DekSourceSize(usize),
    /// An unusable key id.
    #[error("failed to validate key id: {0}")]
    KeyId(#[source] InvalidKeyId),
    /// An annotation key that is not a domain.
    #[error("failed to validate annotations: annotations: Invalid value: {0:?}: should be a domain with at least two segments separated by dots")]
    AnnotationKey(String),
    /// Annotations over the bound.
    #[error("failed to validate annotations: total size of annotations is {0}, which exceeds the max size of {ANNOTATIONS_MAX}")]
    AnnotationsSize(usize),
}

/// An unusable key id.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InvalidKeyId {
    /// None given.
    #[error("keyID is empty")]
    Empty,
    /// One over the bound.
    #[error("keyID is {0} bytes, which exceeds the max size of {KEY_ID_MAX}")]
    TooLong(usize),
}

/// A call to the plugin that failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PluginError {
    /// The plugin (or the connection to it) answered with a gRPC error.
    #[error("rpc error: code = {code:?} desc = {message}")]
    Rpc {
        /// The gRPC status code.
        code: tonic::Code,
        /// The status message.
        message: String,
    },
    /// No answer came within the timeout and a little more.
    #[error("the KMS plugin did not answer in time")]
    NoAnswer,
}
