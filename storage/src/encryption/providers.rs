//! The providers of encryption at rest, in kube-apiserver's stored format
//! (`k8s:enc:<provider>:v1:<key name>:<payload>`) so a store written by either reads in the other:
//! `aescbc` (a random 16-byte IV, then AES-CBC with PKCS#7 padding), `aesgcm` (a random 12-byte
//! nonce, then AES-GCM with the storage key as additional data), `secretbox` (a random 24-byte
//! nonce, then NaCl's XSalsa20-Poly1305), `identity` (the plain bytes), and `kms` (KMS v2
//! envelopes, `k8s:enc:kms:v2:<name>:`; see [`super::kms`]).

use aes::cipher::{BlockDecryptMut as _, BlockEncryptMut as _, KeyIvInit as _};
use aes_gcm::aead::{Aead as _, KeyInit as _, Payload};
use crypto_secretbox::XSalsa20Poly1305;

use super::error::TransformError;
use super::kms::KmsProvider;
use std::sync::Arc;

/// One named key of a provider.
#[derive(Clone, PartialEq, Eq, derive_more::Debug)]
pub(super) struct Key {
    /// Its name, written into each value it encrypts.
    pub name: String,
    /// Its bytes (16, 24 or 32 for AES; 32 for secretbox).
    #[debug(skip)]
    pub secret: Vec<u8>,
}

/// One provider of a resource's list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Provider {
    /// AES-CBC with PKCS#7 padding.
    AesCbc(Vec<Key>),
    /// AES-GCM, bound to the storage key.
    AesGcm(Vec<Key>),
    /// XSalsa20-Poly1305.
    Secretbox(Vec<Key>),
    /// No encryption.
    Identity,
    /// Envelope encryption by a KMS v2 plugin.
    Kms(Arc<KmsProvider>),
}

/// What a provider opened: the plain bytes, and whether they are sealed as this provider would
/// seal them now (its first key; a KMS plugin's current key id).
pub(super) struct Opened {
    pub plain: Vec<u8>,
    pub current: bool,
}

/// The prefix every encrypted value starts with.
pub(super) const ENCRYPTED: &[u8] = b"k8s:enc:";

impl Provider {
    /// The provider's name in the stored prefix.
    pub(super) fn name(&self) -> &'static str {
        match self {
            Provider::AesCbc(_) => "aescbc",
            Provider::AesGcm(_) => "aesgcm",
            Provider::Secretbox(_) => "secretbox",
            Provider::Identity => "identity",
            Provider::Kms(_) => "kms",
        }
    }

    /// The format version in the stored prefix (`v2` for KMS v2, `v1` for the others).
    pub(super) fn version(&self) -> &'static str {
        match self {
            Provider::Kms(_) => "v2",
            _ => "v1",
        }
    }

    fn keys(&self) -> &[Key] {
        match self {
            Provider::AesCbc(keys) | Provider::AesGcm(keys) | Provider::Secretbox(keys) => keys,
            Provider::Identity | Provider::Kms(_) => &[],
        }
    }

    /// `plain` as this provider stores it at `storage_key`, with its first key.
    pub(super) fn seal(&self, storage_key: &str, plain: &[u8]) -> Result<Vec<u8>, TransformError> {
        if let Provider::Kms(kms) = self {
            return Ok(kms.seal(storage_key, plain)?);
        }
        let Some(key) = self.keys().first() else {
            return Ok(plain.to_vec());
        };
        let mut out = format!("k8s:enc:{}:v1:{}:", self.name(), key.name).into_bytes();
        let payload = match self {
            Provider::AesCbc(_) => {
                let iv: [u8; 16] = rand::random();
                let mut sealed = iv.to_vec();
                sealed.extend(aes_cbc_encrypt(&key.secret, &iv, plain)?);
                sealed
            }
            Provider::AesGcm(_) => {
                let nonce: [u8; 12] = rand::random();
                let payload = Payload {
                    msg: plain,
                    aad: storage_key.as_bytes(),
                };
                let mut sealed = nonce.to_vec();
                sealed.extend(aes_gcm(&key.secret, Gcm::Seal, &nonce, payload)?);
                sealed
            }
            Provider::Secretbox(_) => {
                let nonce: [u8; 24] = rand::random();
                let mut sealed = nonce.to_vec();
                sealed.extend(
                    secretbox(&key.secret)?
                        .encrypt(&nonce.into(), plain)
                        .map_err(|_| TransformError::Sealing("secretbox"))?,
                );
                sealed
            }
            Provider::Identity | Provider::Kms(_) => unreachable!("no keys"),
        };
        out.extend(payload);
        Ok(out)
    }

    /// The plain bytes of `payload`, encrypted by this provider's key `key_name` (a KMS
    /// provider's name) at `storage_key`; `None` when this provider has no key of that name.
    pub(super) fn open(
        &self,
        key_name: &str,
        storage_key: &str,
        payload: &[u8],
    ) -> Option<Result<Opened, TransformError>> {
        if let Provider::Kms(kms) = self {
            return (kms.name() == key_name).then(|| {
                kms.open(storage_key, payload)
                    .map(|(plain, current)| Opened { plain, current })
                    .map_err(TransformError::from)
            });
        }
        let key = self.keys().iter().find(|k| k.name == key_name)?;
        let current = self.keys().first().is_some_and(|first| first == key);
        let plain = match self {
            Provider::AesCbc(_) => {
                if payload.len() < 16 {
                    return Some(Err(TransformError::TooShort("an IV")));
                }
                let (iv, sealed) = payload.split_at(16);
                aes_cbc_decrypt(&key.secret, iv, sealed)
            }
            Provider::AesGcm(_) => {
                if payload.len() < 12 {
                    return Some(Err(TransformError::TooShort("a nonce")));
                }
                let (nonce, sealed) = payload.split_at(12);
                let payload = Payload {
                    msg: sealed,
                    aad: storage_key.as_bytes(),
                };
                aes_gcm(&key.secret, Gcm::Open, nonce, payload)
            }
            Provider::Secretbox(_) => {
                if payload.len() < 24 {
                    return Some(Err(TransformError::TooShort("a nonce")));
                }
                let (nonce, sealed) = payload.split_at(24);
                secretbox(&key.secret).and_then(|c| {
                    c.decrypt(nonce.into(), sealed)
                        .map_err(|_| TransformError::SecretboxAuthentication)
                })
            }
            Provider::Identity | Provider::Kms(_) => return None,
        };
        Some(plain.map(|plain| Opened { plain, current }))
    }
}

/// The secretbox cipher of `secret`.
fn secretbox(secret: &[u8]) -> Result<XSalsa20Poly1305, TransformError> {
    XSalsa20Poly1305::new_from_slice(secret).map_err(|_| TransformError::KeySize {
        provider: "secretbox",
        sizes: "32",
        len: secret.len(),
    })
}

/// The key-size error of AES-CBC.
fn aes_key_size(len: usize) -> TransformError {
    TransformError::KeySize {
        provider: "AES",
        sizes: "16, 24 or 32",
        len,
    }
}

fn aes_cbc_encrypt(secret: &[u8], iv: &[u8; 16], plain: &[u8]) -> Result<Vec<u8>, TransformError> {
    use aes::cipher::block_padding::Pkcs7;
    let sealed = match secret.len() {
        16 => cbc::Encryptor::<aes::Aes128>::new(secret.into(), iv.into())
            .encrypt_padded_vec_mut::<Pkcs7>(plain),
        24 => cbc::Encryptor::<aes::Aes192>::new(secret.into(), iv.into())
            .encrypt_padded_vec_mut::<Pkcs7>(plain),
        32 => cbc::Encryptor::<aes::Aes256>::new(secret.into(), iv.into())
            .encrypt_padded_vec_mut::<Pkcs7>(plain),
        n => return Err(aes_key_size(n)),
    };
    Ok(sealed)
}

fn aes_cbc_decrypt(secret: &[u8], iv: &[u8], sealed: &[u8]) -> Result<Vec<u8>, TransformError> {
    use aes::cipher::block_padding::Pkcs7;
    let bad = |_| TransformError::AesCbcPadding;
    match secret.len() {
        16 => cbc::Decryptor::<aes::Aes128>::new(secret.into(), iv.into())
            .decrypt_padded_vec_mut::<Pkcs7>(sealed)
            .map_err(bad),
        24 => cbc::Decryptor::<aes::Aes192>::new(secret.into(), iv.into())
            .decrypt_padded_vec_mut::<Pkcs7>(sealed)
            .map_err(bad),
        32 => cbc::Decryptor::<aes::Aes256>::new(secret.into(), iv.into())
            .decrypt_padded_vec_mut::<Pkcs7>(sealed)
            .map_err(bad),
        n => Err(aes_key_size(n)),
    }
}

/// Which way an AES-GCM call goes.
#[derive(Debug, Clone, Copy)]
enum Gcm {
    Seal,
    Open,
}

/// Seals or opens `payload` with `nonce` (12 bytes) and an AES-GCM cipher of `secret`'s size
/// (128 or 256 bits: 24-byte keys have no GCM type here and are refused when the configuration
/// is read).
fn aes_gcm(
    secret: &[u8],
    way: Gcm,
    nonce: &[u8],
    payload: Payload<'_, '_>,
) -> Result<Vec<u8>, TransformError> {
    fn run<C>(
        secret: &[u8],
        way: Gcm,
        nonce: &[u8],
        payload: Payload<'_, '_>,
    ) -> Result<Vec<u8>, aes_gcm::Error>
    where
        C: aes_gcm::aead::Aead<NonceSize = aes_gcm::aead::consts::U12> + aes_gcm::KeyInit,
    {
        let cipher = C::new_from_slice(secret).expect("a key of the size matched");
        let nonce = aes_gcm::Nonce::from_slice(nonce);
        match way {
            Gcm::Seal => cipher.encrypt(nonce, payload),
            Gcm::Open => cipher.decrypt(nonce, payload),
        }
    }
    let done = match secret.len() {
        16 => run::<aes_gcm::Aes128Gcm>(secret, way, nonce, payload),
        32 => run::<aes_gcm::Aes256Gcm>(secret, way, nonce, payload),
        n => {
            return Err(TransformError::KeySize {
                provider: "aesgcm",
                sizes: "16 or 32",
                len: n,
            })
        }
    };
    done.map_err(|_| TransformError::AesGcmAuthentication)
}
