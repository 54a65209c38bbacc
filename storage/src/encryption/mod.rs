//! Encryption at rest (`--encryption-provider-config`, `apiserver.config.k8s.io/v1`
//! `EncryptionConfiguration`): per resource, an ordered list of providers; a write is sealed by
//! the first, a read opened by whichever provider and key its stored prefix names (so keys can
//! be rotated: a new key first, the old one still listed). Both stores call it on the bytes they
//! write and read, below the watch cache: decrypted objects live only in memory, while the
//! stores' files, etcd and snapshots hold ciphertext.

mod config;
mod error;
mod kms;
mod providers;

use std::borrow::Cow;
use std::sync::Arc;

use crate::error::{Result, StorageError};
use providers::{Provider, ENCRYPTED};
use strategy_host_apimachinery::config_file::{InvalidConfiguration, LoadError, ReloadedFile};

/// (which keys, relative to a store's prefix, their providers), in the file's order: the first
/// entry naming a resource decides.
#[derive(Debug, Default, PartialEq, Eq)]
struct Rules(Vec<(Selector, Arc<[Provider]>)>);

/// Which keys an entry's resource names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Selector {
    /// Keys under a prefix: `secrets/`, `example.com/widgets/`, `example.com/`, or every key.
    Prefix(String),
    /// `*.`: every resource of the core group, stored at `<plural>/...`.
    CoreGroup,
}

/// The core group's resources (Kubernetes' `v1` kinds), whose keys start with the plural alone;
/// a group's start with the group, and no group is named like one of these.
const CORE_PLURALS: [&str; 17] = [
    "bindings",
    "componentstatuses",
    "configmaps",
    "endpoints",
    "events",
    "limitranges",
    "namespaces",
    "nodes",
    "persistentvolumeclaims",
    "persistentvolumes",
    "pods",
    "podtemplates",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "serviceaccounts",
    "services",
];

impl Selector {
    fn selects(&self, relative_key: &str) -> bool {
        match self {
            Selector::Prefix(prefix) => relative_key.starts_with(prefix.as_str()),
            Selector::CoreGroup => relative_key
                .split_once('/')
                .is_some_and(|(first, _)| CORE_PLURALS.contains(&first)),
        }
    }
}

/// Where the rules come from: read once, or a file read again when it changes
/// (`--encryption-provider-config-automatic-reload`).
#[derive(Debug, Clone)]
enum Source {
    Fixed(Arc<Rules>),
    File(Arc<ReloadedFile<Rules>>),
}

impl Source {
    fn current(&self) -> Arc<Rules> {
        match self {
            Source::Fixed(rules) => rules.clone(),
            Source::File(file) => file.current(),
        }
    }
}

/// The configuration as read: which resources, which providers.
#[derive(Debug, Clone)]
pub struct EncryptionConfig {
    source: Source,
}

/// Equal when they hold the same rules now (a watched file equals only itself).
impl PartialEq for EncryptionConfig {
    fn eq(&self, other: &Self) -> bool {
        match (&self.source, &other.source) {
            (Source::File(a), Source::File(b)) => Arc::ptr_eq(a, b),
            (a, b) => a.current() == b.current(),
        }
    }
}

impl Eq for EncryptionConfig {}

/// The configuration bound to one store's key prefix.
#[derive(Debug, Clone)]
pub struct Encryption {
    /// The store's key prefix (`/registry/`), which the rules' prefixes are relative to.
    store_prefix: String,
    source: Source,
}

impl Default for Encryption {
    /// Nothing encrypted.
    fn default() -> Self {
        Self {
            store_prefix: String::new(),
            source: Source::Fixed(Arc::default()),
        }
    }
}

/// Reads an `EncryptionConfiguration`.
///
/// # Errors
/// Not YAML or JSON of this kind, or an invalid field (each named, as kube-apiserver names it).
pub fn parse(text: &str) -> std::result::Result<EncryptionConfig, InvalidConfiguration> {
    Ok(EncryptionConfig {
        source: Source::Fixed(Arc::new(config::rules(text, None)?)),
    })
}

/// The configuration at `path`, read again when it changes once
/// [`EncryptionConfig::spawn_reloader`] is called (a file that no longer reads keeps the last
/// good keys).
///
/// # Errors
/// The file cannot be read or is not a valid configuration.
pub fn watch(path: &std::path::Path) -> std::result::Result<EncryptionConfig, LoadError> {
    let file = ReloadedFile::load(path, "encryption", config::rules)?;
    Ok(EncryptionConfig {
        source: Source::File(file),
    })
}

impl EncryptionConfig {
    /// The configuration for a store whose keys start with `store_prefix` (`/registry/`).
    pub fn bind(&self, store_prefix: &str) -> Encryption {
        Encryption {
            store_prefix: crate::key::normalize_prefix(store_prefix),
            source: self.source.clone(),
        }
    }

    /// Looks at the file every second, for a configuration from [`watch`] (kube-apiserver's
    /// `--encryption-provider-config-automatic-reload`).
    pub fn spawn_reloader(&self) {
        if let Source::File(file) = &self.source {
            file.spawn_reloader();
        }
    }

    /// Registers kube-apiserver's metrics into `registry`: the KMS plugins' call latencies, and
    /// for a configuration from [`watch`] its reloads.
    pub fn register(&self, registry: &mut prometheus_client::registry::Registry) {
        kms::register(registry);
        if let Source::File(file) = &self.source {
            file.register(registry, "apiserver_encryption_config_controller");
        }
    }

    /// Why a configured KMS plugin is unhealthy (its last status check failed, or it has not
    /// sealed a key for writes yet), naming each; `None` when all are healthy.
    pub fn kms_failure(&self) -> Option<String> {
        let rules = self.source.current();
        let mut failures: Vec<String> = Vec::new();
        for (_, chain) in &rules.0 {
            for provider in chain.iter() {
                if let Provider::Kms(kms) = provider {
                    let line = kms
                        .unhealthy()
                        .map(|why| format!("kms-provider {:?}: {why}", kms.name()));
                    if let Some(line) = line.filter(|l| !failures.contains(l)) {
                        failures.push(line);
                    }
                }
            }
        }
        (!failures.is_empty()).then(|| failures.join("; "))
    }
}

impl Encryption {
    /// Whether any resource is configured.
    pub fn is_configured(&self) -> bool {
        !self.source.current().0.is_empty()
    }

    /// The providers of the resource `full_key` belongs to, as the configuration says now.
    fn providers(&self, full_key: &str) -> Option<Arc<[Provider]>> {
        let relative = full_key.strip_prefix(self.store_prefix.as_str())?;
        self.source
            .current()
            .0
            .iter()
            .find(|(selector, _)| selector.selects(relative))
            .map(|(_, chain)| chain.clone())
    }

    /// `plain` as it is stored at `full_key`: sealed by the first provider of its resource.
    ///
    /// # Errors
    /// `Internal` when encryption fails.
    pub fn seal(&self, full_key: &str, plain: Vec<u8>) -> Result<Vec<u8>> {
        let chain = self.providers(full_key);
        match chain.as_deref().and_then(<[Provider]>::first) {
            None | Some(Provider::Identity) => Ok(plain),
            Some(provider) => provider
                .seal(full_key, &plain)
                .map_err(|e| transform_error(full_key, e)),
        }
    }

    /// The plain bytes of what is stored at `full_key`.
    ///
    /// # Errors
    /// `Internal` (kube-apiserver's words) when no configured provider and key opens it: a
    /// removed key, encrypted data for a resource without providers, or plain data where
    /// `identity` is not listed.
    pub fn open<'a>(&self, full_key: &str, stored: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        self.open_checked(full_key, stored).map(|(plain, _)| plain)
    }

    /// What is stored at `full_key` (at `mod_revision`) as the shared update and delete loops
    /// see it: opened, and marked stale when an update must rewrite it.
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_raw(
        &self,
        full_key: &str,
        stored: &[u8],
        mod_revision: u64,
    ) -> Result<crate::txn::RawValue> {
        let (data, stale) = self.open_checked(full_key, stored)?;
        Ok(crate::txn::RawValue {
            data: data.into_owned(),
            mod_revision,
            stale,
        })
    }

    /// [`Self::open`], also telling whether the value is stale: stored otherwise than a write
    /// would store it now (by another provider or key than the first), so that an update
    /// rewrites it even when nothing changed.
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_checked<'a>(
        &self,
        full_key: &str,
        stored: &'a [u8],
    ) -> Result<(Cow<'a, [u8]>, bool)> {
        let Some(chain) = self.providers(full_key) else {
            if stored.starts_with(ENCRYPTED) {
                return Err(transform_error(full_key, "no matching prefix found"));
            }
            return Ok((Cow::Borrowed(stored), false));
        };
        let Some(rest) = stored.strip_prefix(ENCRYPTED) else {
            return if chain.iter().any(|p| matches!(p, Provider::Identity)) {
                let stale = !matches!(chain.first(), Some(Provider::Identity));
                Ok((Cow::Borrowed(stored), stale))
            } else {
                Err(transform_error(full_key, "no matching prefix found"))
            };
        };
        // `<provider>:<version>:<key name>:<payload>` (a KMS provider's name for its key's)
        let mut parts = rest.splitn(4, |b| *b == b':');
        let (Some(provider), Some(version), Some(key_name), Some(payload)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(transform_error(full_key, "no matching prefix found"));
        };
        let key_name = String::from_utf8_lossy(key_name);
        for (position, candidate) in chain.iter().enumerate() {
            if candidate.name().as_bytes() != provider || candidate.version().as_bytes() != version
            {
                continue;
            }
            if let Some(opened) = candidate.open(&key_name, full_key, payload) {
                return opened
                    .map(|o| (Cow::Owned(o.plain), position > 0 || !o.current))
                    .map_err(|e| transform_error(full_key, e));
            }
        }
        Err(transform_error(full_key, "no matching prefix found"))
    }
}

fn transform_error(full_key: &str, reason: impl std::fmt::Display) -> StorageError {
    StorageError::Internal(format!("unable to transform key {full_key:?}: {reason}"))
}

#[cfg(test)]
mod stores_tests;
#[cfg(test)]
mod tests;
