//! The `kms` provider (KMS v2): envelope encryption in kube-apiserver's format. A random seed is
//! sealed once by the plugin's key encryption key (its `Encrypt`), and each write is sealed by a
//! key derived from it (HKDF-SHA256 of the seed and 32 random bytes, then AES-256-GCM bound to the
//! storage key); the value stored is `k8s:enc:kms:v2:<name>:` and the protobuf `EncryptedObject`
//! carrying the data, the key id and the sealed seed. Reads ask the plugin to `Decrypt` a seed
//! only once (then it is cached); a status check every minute notices a new key id and seals a
//! new seed, so that writes move to the new key and older values read as stale.

mod error;
mod plugin;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use aes_gcm::aead::{Aead as _, KeyInit as _, Payload};
use arc_swap::ArcSwapOption;
use prometheus_client::registry::Registry as MetricsRegistry;

pub(crate) use error::KmsError;
use error::{InvalidEnvelope, InvalidKeyId};
use plugin::PluginClient;

/// How often the plugin's status is asked while it is healthy, and while it is not
/// (kube-apiserver's intervals).
const STATUS_EVERY: Duration = Duration::from_secs(60);
const STATUS_RETRY_EVERY: Duration = Duration::from_secs(10);

/// Bounds on what a stored value or a plugin may carry (kube-apiserver's).
const KEY_ID_MAX: usize = 1024;
const ENCRYPTED_DEK_SOURCE_MAX: usize = 1024;
const ANNOTATIONS_MAX: usize = 32 * 1024;

/// How many opened seeds are kept (each key rotation or writer restart adds one).
const SEED_CACHE_MAX: usize = 1000;

/// The sizes of the seed, of the random info a key is derived with, and of AES-GCM's nonce.
const SEED_SIZE: usize = 32;
const INFO_SIZE: usize = 32;
const NONCE_SIZE: usize = 12;

/// The protobuf kube-apiserver stores after the prefix (`EncryptedObject`).
#[derive(Clone, PartialEq, prost::Message)]
struct EncryptedObject {
    #[prost(bytes = "vec", tag = "1")]
    encrypted_data: Vec<u8>,
    #[prost(string, tag = "2")]
    key_id: String,
    #[prost(bytes = "vec", tag = "3")]
    encrypted_dek_source: Vec<u8>,
    #[prost(btree_map = "string, bytes", tag = "4")]
    annotations: BTreeMap<String, Vec<u8>>,
    #[prost(enumeration = "DekSourceType", tag = "5")]
    encrypted_dek_source_type: i32,
}

/// What the sealed `encryptedDEKSource` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
enum DekSourceType {
    /// The AES-GCM key itself (kube-apiserver before 1.29).
    AesGcmKey = 0,
    /// A seed each value's key is derived from (kube-apiserver's default since 1.29).
    HkdfSha256XnonceAesGcmSeed = 1,
}

/// What the current writes are sealed with: the seed, and the plugin's sealing of it.
struct WriteState {
    seed: Arc<[u8]>,
    key_id: String,
    encrypted_seed: Vec<u8>,
    annotations: BTreeMap<String, Vec<u8>>,
}

/// A configured `kms` provider (`apiVersion: v2`).
pub(crate) struct KmsProvider {
    name: String,
    endpoint: String,
    timeout: Duration,
    client: PluginClient,
    /// What writes use; `None` until the plugin has sealed a seed.
    write: ArcSwapOption<WriteState>,
    /// Opened seeds (and AES-GCM keys), by their sealed bytes.
    opened: Mutex<HashMap<Vec<u8>, Arc<[u8]>>>,
    /// Held while the plugin is asked to open a seed, so concurrent reads of values sealed with
    /// the same new seed ask once.
    decrypting: Mutex<()>,
    /// Why the last status check failed, if it did.
    health: Mutex<Option<String>>,
}

impl std::fmt::Debug for KmsProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KmsProvider")
            .field("name", &self.name)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// Two providers are the same when configured alike.
impl PartialEq for KmsProvider {
    fn eq(&self, other: &Self) -> bool {
        self.configured_as(&other.name, &other.endpoint, other.timeout)
    }
}

impl Eq for KmsProvider {}

impl KmsProvider {
    /// A provider named `name` whose plugin listens at `endpoint` (`unix:///path`), checked
    /// once before this returns (waiting at most `timeout`) and then every minute.
    pub(crate) fn start(name: &str, endpoint: &str, timeout: Duration) -> Arc<Self> {
        let socket = endpoint.trim_start_matches("unix://");
        let provider = Arc::new(Self {
            name: name.to_string(),
            endpoint: endpoint.to_string(),
            timeout,
            client: PluginClient::new(name, socket.into(), timeout),
            write: ArcSwapOption::empty(),
            opened: Mutex::new(HashMap::new()),
            decrypting: Mutex::new(()),
            health: Mutex::new(Some("not checked yet".into())),
        });
        let (first, checked) = std::sync::mpsc::sync_channel(1);
        let weak = Arc::downgrade(&provider);
        plugin::runtime().spawn(check_status_forever(weak, first));
        // A plugin that is not up yet leaves writes failing until a later check succeeds.
        let _ = checked.recv_timeout(timeout * 2 + Duration::from_secs(1));
        provider
    }

    /// A provider whose writes use `seed`, sealed as `encrypted_seed` by `key_id`, without a
    /// plugin (reads of other seeds fail).
    #[cfg(test)]
    fn with_seed(name: &str, key_id: &str, seed: &[u8], encrypted_seed: &[u8]) -> Self {
        let timeout = Duration::from_millis(200);
        let provider = Self {
            name: name.to_string(),
            endpoint: "unix:///nonexistent/kms.sock".into(),
            timeout,
            client: PluginClient::new(name, "/nonexistent/kms.sock".into(), timeout),
            write: ArcSwapOption::empty(),
            opened: Mutex::new(HashMap::new()),
            decrypting: Mutex::new(()),
            health: Mutex::new(None),
        };
        provider.remember(encrypted_seed.to_vec(), seed.to_vec().into());
        provider.write.store(Some(Arc::new(WriteState {
            seed: seed.to_vec().into(),
            key_id: key_id.into(),
            encrypted_seed: encrypted_seed.to_vec(),
            annotations: BTreeMap::new(),
        })));
        provider
    }

    /// Whether this provider is the one `name`, `endpoint` and `timeout` configure (a reload
    /// keeps it running).
    pub(crate) fn configured_as(&self, name: &str, endpoint: &str, timeout: Duration) -> bool {
        self.name == name && self.endpoint == endpoint && self.timeout == timeout
    }

    /// The provider's name (written into each value it seals).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Why the plugin is unhealthy, if it is (`None`: its last status check passed).
    pub(crate) fn unhealthy(&self) -> Option<String> {
        self.health.lock().expect("health lock").clone()
    }

    /// `plain` as stored at `storage_key`: `k8s:enc:kms:v2:<name>:` and the `EncryptedObject`.
    pub(crate) fn seal(&self, storage_key: &str, plain: &[u8]) -> Result<Vec<u8>, KmsError> {
        let Some(state) = self.write.load_full() else {
            return Err(KmsError::NotReady(self.name.clone()));
        };
        let info: [u8; INFO_SIZE] = rand::random();
        let nonce: [u8; NONCE_SIZE] = rand::random();
        let key = derive_key(&state.seed, &info)?;
        let cipher = aes_gcm::Aes256Gcm::new_from_slice(&key).expect("32-byte key");
        let sealed = cipher
            .encrypt(
                &nonce.into(),
                Payload {
                    msg: plain,
                    aad: storage_key.as_bytes(),
                },
            )
            .map_err(|_| KmsError::Sealing)?;
        let mut encrypted_data = Vec::with_capacity(INFO_SIZE + NONCE_SIZE + sealed.len());
        encrypted_data.extend_from_slice(&info);
        encrypted_data.extend_from_slice(&nonce);
        encrypted_data.extend(sealed);
        let object = EncryptedObject {
            encrypted_data,
            key_id: state.key_id.clone(),
            encrypted_dek_source: state.encrypted_seed.clone(),
            annotations: state.annotations.clone(),
            encrypted_dek_source_type: DekSourceType::HkdfSha256XnonceAesGcmSeed as i32,
        };
        let mut out = format!("k8s:enc:kms:v2:{}:", self.name).into_bytes();
        prost::Message::encode(&object, &mut out).expect("a Vec grows");
        Ok(out)
    }

    /// The plain bytes of `payload` (what follows this provider's prefix) stored at
    /// `storage_key`, and whether it is sealed as a write would seal it now (the current key
    /// id, a derived key).
    pub(crate) fn open(
        &self,
        storage_key: &str,
        payload: &[u8],
    ) -> Result<(Vec<u8>, bool), KmsError> {
        let object: EncryptedObject = prost::Message::decode(payload)?;
        validate(&object)?;
        let source_type = DekSourceType::try_from(object.encrypted_dek_source_type)
            .map_err(|_| KmsError::UnknownDekSourceType(object.encrypted_dek_source_type))?;
        let source = self.opened_source(&object)?;
        let (key, sealed) = match source_type {
            DekSourceType::HkdfSha256XnonceAesGcmSeed => {
                if object.encrypted_data.len() < INFO_SIZE {
                    return Err(KmsError::TooShort);
                }
                let (info, rest) = object.encrypted_data.split_at(INFO_SIZE);
                (derive_key(&source, info)?.to_vec(), rest)
            }
            DekSourceType::AesGcmKey => (source.to_vec(), object.encrypted_data.as_slice()),
        };
        if sealed.len() < NONCE_SIZE {
            return Err(KmsError::TooShort);
        }
        let (nonce, sealed) = sealed.split_at(NONCE_SIZE);
        let payload = Payload {
            msg: sealed,
            aad: storage_key.as_bytes(),
        };
        let plain = match key.len() {
            16 => aes_gcm::Aes128Gcm::new_from_slice(&key)
                .expect("16 bytes")
                .decrypt(nonce.into(), payload),
            32 => aes_gcm::Aes256Gcm::new_from_slice(&key)
                .expect("32 bytes")
                .decrypt(nonce.into(), payload),
            n => return Err(KmsError::DekLength(n)),
        }
        .map_err(|_| KmsError::Authentication)?;
        let current = self.write.load().as_ref().is_some_and(|w| {
            w.key_id == object.key_id && source_type == DekSourceType::HkdfSha256XnonceAesGcmSeed
        });
        Ok((plain, current))
    }

    /// The opened seed (or key) of `object`: cached, or asked of the plugin once.
    fn opened_source(&self, object: &EncryptedObject) -> Result<Arc<[u8]>, KmsError> {
        if let Some(source) = self.cached(&object.encrypted_dek_source) {
            return Ok(source);
        }
        let _one_at_a_time = self.decrypting.lock().expect("decrypt lock");
        if let Some(source) = self.cached(&object.encrypted_dek_source) {
            return Ok(source);
        }
        let source: Arc<[u8]> = self
            .client
            .decrypt_blocking(
                object.encrypted_dek_source.clone(),
                object.key_id.clone(),
                object.annotations.clone(),
            )
            .map_err(KmsError::DecryptingDek)?
            .into();
        self.remember(object.encrypted_dek_source.clone(), source.clone());
        Ok(source)
    }

    fn cached(&self, sealed: &[u8]) -> Option<Arc<[u8]>> {
        self.opened.lock().expect("seed cache").get(sealed).cloned()
    }

    fn remember(&self, sealed: Vec<u8>, source: Arc<[u8]>) {
        let mut opened = self.opened.lock().expect("seed cache");
        if opened.len() >= SEED_CACHE_MAX {
            opened.clear();
        }
        opened.insert(sealed, source);
    }

    /// One status check: the plugin's health, and a new seed when its key id changed.
    async fn check_status(&self) -> Result<(), KmsError> {
        let status = self.client.status().await?;
        if status.healthz != "ok" {
            return Err(KmsError::Healthz(status.healthz));
        }
        if status.version != "v2" && status.version != "v2beta1" {
            return Err(KmsError::Version(status.version));
        }
        validate_key_id(&status.key_id).map_err(KmsError::StatusKeyId)?;
        let current = self.write.load();
        if current.as_ref().is_some_and(|w| w.key_id == status.key_id) {
            return Ok(());
        }
        let seed: [u8; SEED_SIZE] = rand::random();
        let sealed = self.client.encrypt(seed.to_vec()).await?;
        validate_envelope(&sealed.key_id, &sealed.ciphertext, &sealed.annotations)
            .map_err(KmsError::EncryptResponse)?;
        if sealed.key_id != status.key_id {
            tracing::warn!(
                provider = %self.name,
                status_key_id = %status.key_id,
                encrypt_key_id = %sealed.key_id,
                "the KMS plugin's Encrypt used another key id than its Status reported"
            );
        }
        let seed: Arc<[u8]> = seed.to_vec().into();
        self.remember(sealed.ciphertext.clone(), seed.clone());
        tracing::info!(provider = %self.name, key_id = %sealed.key_id, "KMS provider sealed a new seed: new writes use it");
        self.write.store(Some(Arc::new(WriteState {
            seed,
            key_id: sealed.key_id,
            encrypted_seed: sealed.ciphertext,
            annotations: sealed.annotations,
        })));
        Ok(())
    }
}

/// Checks the plugin's status until the provider is dropped; the first outcome is also sent on
/// `first`.
async fn check_status_forever(provider: Weak<KmsProvider>, first: std::sync::mpsc::SyncSender<()>) {
    let mut first = Some(first);
    loop {
        let Some(p) = provider.upgrade() else { return };
        let outcome = p.check_status().await;
        let wait = match &outcome {
            Ok(()) => STATUS_EVERY,
            Err(e) => {
                tracing::warn!(provider = %p.name, error = %e, "KMS plugin status check failed");
                STATUS_RETRY_EVERY
            }
        };
        *p.health.lock().expect("health lock") = outcome.err().map(|e| e.to_string());
        drop(p);
        if let Some(first) = first.take() {
            let _ = first.send(());
        }
        tokio::time::sleep(wait).await;
    }
}

/// kube-apiserver's checks of a stored (or about to be stored) object.
fn validate(object: &EncryptedObject) -> Result<(), InvalidEnvelope> {
    if object.encrypted_data.is_empty() {
        return Err(InvalidEnvelope::NoData);
    }
    validate_envelope(
        &object.key_id,
        &object.encrypted_dek_source,
        &object.annotations,
    )
}

/// The checks of what the plugin gave: its key id, sealed seed and annotations.
fn validate_envelope(
    key_id: &str,
    source: &[u8],
    annotations: &BTreeMap<String, Vec<u8>>,
) -> Result<(), InvalidEnvelope> {
    if source.is_empty() {
        return Err(InvalidEnvelope::NoDekSource);
    }
    if source.len() > ENCRYPTED_DEK_SOURCE_MAX {
        return Err(InvalidEnvelope::DekSourceSize(source.len()));
    }
    validate_key_id(key_id).map_err(InvalidEnvelope::KeyId)?;
    let mut size = 0;
    for (key, value) in annotations {
        if !is_fully_qualified_domain_name(key) {
            return Err(InvalidEnvelope::AnnotationKey(key.clone()));
        }
        size += key.len() + value.len();
    }
    if size > ANNOTATIONS_MAX {
        return Err(InvalidEnvelope::AnnotationsSize(size));
    }
    Ok(())
}

fn validate_key_id(key_id: &str) -> Result<(), InvalidKeyId> {
    if key_id.is_empty() {
        return Err(InvalidKeyId::Empty);
    }
    if key_id.len() > KEY_ID_MAX {
        return Err(InvalidKeyId::TooLong(key_id.len()));
    }
    Ok(())
}

/// RFC 1123 subdomains of at least two labels (an annotation key such as `kms.example.com`).
fn is_fully_qualified_domain_name(name: &str) -> bool {
    let labels: Vec<&str> = name.split('.').collect();
    name.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// The AES-256 key of one value: HKDF-SHA256's expand step alone, with the seed as its
/// pseudo-random key and the value's random `info`.
fn derive_key(seed: &[u8], info: &[u8]) -> Result<[u8; 32], KmsError> {
    let hkdf =
        hkdf::Hkdf::<sha2::Sha256>::from_prk(seed).map_err(|_| KmsError::SeedLength(seed.len()))?;
    let mut key = [0u8; 32];
    hkdf.expand(info, &mut key)
        .map_err(|_| KmsError::Derivation)?;
    Ok(key)
}

/// Registers kube-apiserver's KMS call latency metric into `registry`.
pub(crate) fn register(registry: &mut MetricsRegistry) {
    registry.register(
        "apiserver_envelope_encryption_kms_operations_latency_seconds",
        "KMS operation duration with gRPC error code status total",
        plugin::operation_latency().clone(),
    );
}

#[cfg(test)]
mod tests;
