//! Modules by URL: a `StrategyModule`'s `spec.url` fetched from an OCI registry (`oci.rs`) or by
//! a plain download (`download.rs`), checked against the digests that pin it, and kept on this
//! host by digest ([`ModuleStore`]) so the module in force survives a registry outage.

pub mod credentials;
mod download;
mod metrics;
mod oci;
mod store;
mod url;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};

pub use metrics::PullMetrics;
pub use oci::{WASM_CONFIG, WASM_LAYER, WASM_LAYERS};
pub use oci_client::secrets::RegistryAuth;
pub use store::ModuleStore;
pub use url::{plain_http_allowed, ModuleUrl, UrlError};

/// How this host pulls modules.
#[derive(Debug, Clone)]
pub struct PullConfig {
    /// Where pulled modules are kept (`None`: nowhere).
    pub store_dir: Option<PathBuf>,
    /// Registries and download hosts reached over plain HTTP besides loopback ones
    /// (`--insecure-registry`).
    pub insecure_registries: Vec<String>,
    /// PEM CA certificates trusted for one host each (`--registry-ca HOST=FILE`), beside the
    /// system roots; a host with one is always reached over HTTPS.
    pub registry_cas: BTreeMap<String, Vec<u8>>,
    /// The largest module pulled, in bytes (the runtime's module size limit).
    pub max_module_bytes: usize,
    /// How long a connection may take to open, and a read to answer.
    pub timeout: Duration,
}

impl Default for PullConfig {
    fn default() -> Self {
        Self {
            store_dir: None,
            insecure_registries: Vec::new(),
            registry_cas: BTreeMap::new(),
            max_module_bytes: 64 << 20,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Why a module could not be pulled.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PullError {
    /// The registry or server could not give the module now (network, credentials, missing
    /// tag, an error status); worth trying again.
    #[error("cannot pull {url}: {detail}")]
    Unavailable {
        /// The module's URL.
        url: String,
        /// What went wrong.
        detail: String,
    },
    /// The manifest holds no layer of a wasm media type.
    #[error("{url} is not a wasm module: {found}, none of types {}", WASM_LAYERS.join(", "))]
    NoWasmLayer {
        /// The module's URL.
        url: String,
        /// What the manifest holds instead.
        found: String,
    },
    /// The layer's bytes are not those its manifest names.
    #[error(
        "{url}: the wasm layer's bytes have digest {actual}, not the {expected} its manifest names"
    )]
    LayerDigest {
        /// The module's URL.
        url: String,
        /// The manifest's digest for the layer.
        expected: String,
        /// The pulled bytes'.
        actual: String,
    },
    /// The module is not the one `spec.digest` (or the digest the replicas agreed on) pins.
    #[error("{url}: the module's digest is {actual}, not the {expected} {pinned_by}")]
    DigestMismatch {
        /// The module's URL.
        url: String,
        /// The pinned digest.
        expected: String,
        /// The pulled module's.
        actual: String,
        /// What pins it (`spec.digest`, `status.resolved.digest`).
        pinned_by: &'static str,
    },
    /// The module is larger than this host runs.
    #[error("{url}: the module is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// The module's URL.
        url: String,
        /// Its size (so far).
        size: usize,
        /// The limit.
        limit: usize,
    },
}

impl PullError {
    /// Whether the same pull can never give a module that may run (a wrong digest, no wasm
    /// layer): such a version is refused rather than retried.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            Self::NoWasmLayer { .. } | Self::LayerDigest { .. } | Self::DigestMismatch { .. }
        )
    }

    fn result_label(&self) -> &'static str {
        match self {
            Self::Unavailable { .. } => "unavailable",
            Self::NoWasmLayer { .. } => "no_wasm_layer",
            Self::LayerDigest { .. } | Self::DigestMismatch { .. } => "digest_mismatch",
            Self::TooLarge { .. } => "too_large",
        }
    }
}

/// What to pull.
#[derive(Debug, Clone)]
pub struct PullRequest {
    /// Where the module is.
    pub url: ModuleUrl,
    /// `spec.digest`: the SHA-256 (hex) the module's bytes must have.
    pub pinned: Option<String>,
    /// What the replicas agreed the URL resolved to (`sha256:…` of the manifest, or of a
    /// download): pulled by it instead of the tag.
    pub resolved: Option<String>,
    /// Credentials for the registry.
    pub auth: RegistryAuth,
}

/// A pulled (or held) module.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The module's bytes (shared: the follower keeps them for as long as the version is
    /// offered, and a watch event must not copy megabytes).
    pub bytes: Arc<[u8]>,
    /// Their SHA-256, in hex.
    pub digest: String,
    /// What the URL resolved to (`sha256:…`), when known.
    pub resolved: Option<String>,
}

/// Pulls modules, one client per host (each with its own CA and scheme), keeping what it pulled.
#[derive(derive_more::Debug)]
pub struct Puller {
    config: PullConfig,
    #[debug(skip)]
    store: ModuleStore,
    #[debug(skip)]
    oci_clients: Mutex<HashMap<String, oci_client::Client>>,
    #[debug(skip)]
    http_clients: Mutex<HashMap<String, reqwest::Client>>,
    #[debug(skip)]
    metrics: PullMetrics,
}

impl Puller {
    /// A puller with `config`.
    pub fn new(config: PullConfig) -> Self {
        // reqwest (under oci-client too) builds its TLS from the process's default provider.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            store: ModuleStore::new(config.store_dir.clone()),
            config,
            oci_clients: Mutex::default(),
            http_clients: Mutex::default(),
            metrics: PullMetrics::default(),
        }
    }

    /// The pull metrics.
    pub fn metrics(&self) -> &PullMetrics {
        &self.metrics
    }

    /// The module `request` names if this host holds it (by the pinned digest, or by what the
    /// URL resolved to), without reaching the network.
    pub fn held(&self, request: &PullRequest) -> Option<Pulled> {
        let held = match (&request.pinned, &request.resolved) {
            (Some(pinned), resolved) => self
                .store
                .pulled_from(&request.url.to_string(), pinned)
                .map(|bytes| Pulled {
                    bytes: bytes.into(),
                    digest: pinned.clone(),
                    resolved: resolved.clone(),
                }),
            (None, Some(resolved)) => self.store.resolved(resolved).map(|(digest, bytes)| Pulled {
                bytes: bytes.into(),
                digest,
                resolved: Some(resolved.clone()),
            }),
            (None, None) => None,
        };
        if held.is_some() {
            self.metrics.record_cache_hit();
        }
        held
    }

    /// The module whose SHA-256 is `digest`, if this host holds it.
    pub fn held_digest(&self, digest: &str) -> Option<Vec<u8>> {
        self.store.module(digest)
    }

    /// Pulls the module `request` names, checks it against the digests that pin it, and keeps
    /// it.
    ///
    /// # Errors
    /// Why it could not be pulled, or may not run.
    pub async fn pull(&self, request: &PullRequest) -> Result<Pulled, PullError> {
        let started = Instant::now();
        let result = self.pull_unrecorded(request).await;
        let label = match &result {
            Ok(_) => "success",
            Err(e) => e.result_label(),
        };
        self.metrics.record_pull(label, started.elapsed());
        result
    }

    async fn pull_unrecorded(&self, request: &PullRequest) -> Result<Pulled, PullError> {
        let limit = self.config.max_module_bytes;
        let url = request.url.to_string();
        let (bytes, resolved) = match &request.url {
            ModuleUrl::Oci(reference) => {
                let target = match &request.resolved {
                    Some(resolved) => reference.clone_with_digest(resolved.clone()),
                    None => reference.clone(),
                };
                let client = self.oci_client(&request.url.host());
                oci::pull(&client, &target, &request.auth, limit).await?
            }
            ModuleUrl::Download(address) => {
                let client = self.http_client(&request.url.host())?;
                let bytes = download::download(&client, address, limit).await?;
                let resolved = format!("sha256:{}", strategy_host_wasm_runtime::digest(&bytes));
                if let Some(agreed) = request.resolved.as_ref().filter(|r| **r != resolved) {
                    return Err(PullError::DigestMismatch {
                        url,
                        expected: agreed.clone(),
                        actual: resolved,
                        pinned_by: "the replicas resolved it to (status.resolved.digest); set spec.digest to run what the URL serves now",
                    });
                }
                (bytes, resolved)
            }
        };
        let digest = strategy_host_wasm_runtime::digest(&bytes);
        if let Some(pinned) = request.pinned.as_ref().filter(|p| **p != digest) {
            return Err(PullError::DigestMismatch {
                url,
                expected: format!("sha256:{pinned}"),
                actual: format!("sha256:{digest}"),
                pinned_by: "spec.digest pins",
            });
        }
        if let Err(e) = self.store.keep(&url, &resolved, &digest, &bytes) {
            tracing::warn!(%url, error = %e, "could not keep a pulled module on disk");
        }
        Ok(Pulled {
            bytes: bytes.into(),
            digest,
            resolved: Some(resolved),
        })
    }

    /// Pushes `module` to the OCI `reference` as a CNCF Wasm artifact; returns the manifest's
    /// digest.
    ///
    /// # Errors
    /// The URL is not `oci://`, or the registry refused the push.
    pub async fn push(
        &self,
        url: &ModuleUrl,
        auth: &RegistryAuth,
        module: Vec<u8>,
    ) -> Result<String, PullError> {
        let ModuleUrl::Oci(reference) = url else {
            return Err(PullError::Unavailable {
                url: url.to_string(),
                detail: "modules are pushed to oci:// references only".into(),
            });
        };
        oci::push(&self.oci_client(&url.host()), reference, auth, module).await
    }

    fn ca(&self, host: &str) -> Option<&Vec<u8>> {
        self.config.registry_cas.get(host)
    }

    fn plain_http(&self, host: &str) -> bool {
        self.ca(host).is_none() && plain_http_allowed(host, &self.config.insecure_registries)
    }

    fn oci_client(&self, host: &str) -> oci_client::Client {
        let mut clients = self.oci_clients.lock().expect("oci clients");
        clients
            .entry(host.to_owned())
            .or_insert_with(|| {
                oci_client::Client::new(ClientConfig {
                    protocol: if self.plain_http(host) {
                        ClientProtocol::Http
                    } else {
                        ClientProtocol::Https
                    },
                    extra_root_certificates: self
                        .ca(host)
                        .map(|pem| Certificate {
                            encoding: CertificateEncoding::Pem,
                            data: pem.clone(),
                        })
                        .into_iter()
                        .collect(),
                    connect_timeout: Some(self.config.timeout),
                    read_timeout: Some(self.config.timeout),
                    ..Default::default()
                })
            })
            .clone()
    }

    fn http_client(&self, host: &str) -> Result<reqwest::Client, PullError> {
        let mut clients = self.http_clients.lock().expect("http clients");
        if let Some(c) = clients.get(host) {
            return Ok(c.clone());
        }
        let failed = |detail: String| PullError::Unavailable {
            url: format!("https://{host}"),
            detail,
        };
        let mut builder = reqwest::Client::builder()
            .connect_timeout(self.config.timeout)
            .read_timeout(self.config.timeout)
            .https_only(!plain_http_allowed(host, &self.config.insecure_registries));
        if let Some(pem) = self.ca(host) {
            let ca = reqwest::Certificate::from_pem(pem)
                .map_err(|e| failed(download::error_chain(&e)))?;
            builder = builder.add_root_certificate(ca);
        }
        let client = builder
            .build()
            .map_err(|e| failed(download::error_chain(&e)))?;
        clients.insert(host.to_owned(), client.clone());
        Ok(client)
    }
}
