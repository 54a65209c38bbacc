//! Reading an `EncryptionConfiguration` (`apiserver.config.k8s.io/v1`): its resources and
//! their providers, checked with kube-apiserver's field errors.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

use super::kms::KmsProvider;
use super::providers::{Key, Provider};
use super::{Rules, Selector};
use strategy_host_apimachinery::config_file::InvalidConfiguration;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    api_version: String,
    kind: String,
    #[serde(default)]
    resources: Vec<ResourceEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceEntry {
    resources: Vec<String>,
    providers: Vec<ProviderEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderEntry {
    aescbc: Option<KeysEntry>,
    aesgcm: Option<KeysEntry>,
    secretbox: Option<KeysEntry>,
    identity: Option<serde_json::Value>,
    kms: Option<KmsEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct KmsEntry {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    endpoint: String,
    cachesize: Option<i64>,
    timeout: Option<String>,
}

/// How long a KMS call may take when the configuration does not say (kube-apiserver's).
const KMS_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysEntry {
    keys: Vec<KeyEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyEntry {
    name: String,
    secret: String,
}

/// The rules `text` configures; KMS providers configured as in `previous` are kept running.
pub(super) fn rules(text: &str, previous: Option<&Rules>) -> Result<Rules, InvalidConfiguration> {
    let file: File = InvalidConfiguration::decode(text)?;
    if file.kind != "EncryptionConfiguration" || file.api_version != "apiserver.config.k8s.io/v1" {
        return Err(InvalidConfiguration::Kind {
            kind: file.kind,
            api_version: file.api_version,
            expected: "apiserver.config.k8s.io/v1 EncryptionConfiguration",
        });
    }
    let mut errors = Vec::new();
    let mut rules = Vec::new();
    let mut kms_names = HashSet::new();
    for (i, entry) in file.resources.iter().enumerate() {
        let mut chain = Vec::new();
        let providers = format!("resources[{i}].providers");
        require_some(&mut errors, &entry.providers, &providers, "provider");
        for (p, provider) in entry.providers.iter().enumerate() {
            let at = format!("resources[{i}].providers[{p}]");
            if let Some(kms) = &provider.kms {
                if !kms.name.is_empty() && !kms_names.insert(kms.name.clone()) {
                    errors.push(format!(
                        "{at}.kms.name: Invalid value: {:?}: duplicate KMS provider name {}, names must be unique",
                        kms.name, kms.name
                    ));
                }
            }
            match provider_of(provider, &at, previous) {
                Ok(made) => chain.push(made),
                Err(e) => errors.extend(e),
            }
        }
        let chain: Arc<[Provider]> = chain.into();
        let resources = format!("resources[{i}].resources");
        require_some(&mut errors, &entry.resources, &resources, "resource");
        for (r, resource) in entry.resources.iter().enumerate() {
            match selector(resource) {
                Ok(selector) => rules.push((selector, chain.clone())),
                Err(e) => errors.push(format!(
                    "resources[{i}].resources[{r}]: Invalid value: {resource:?}: {e}"
                )),
            }
        }
    }
    InvalidConfiguration::check(errors)?;
    Ok(Rules(rules))
}

/// Adds to `errors` that the list at `field` needs at least one `what` when `list` is empty.
fn require_some<T>(errors: &mut Vec<String>, list: &[T], field: &str, what: &str) {
    if list.is_empty() {
        errors.push(format!(
            "{field}: Required value: at least one {what} is required"
        ));
    }
}

/// The provider one entry names (exactly one of its fields).
fn provider_of(
    entry: &ProviderEntry,
    at: &str,
    previous: Option<&Rules>,
) -> Result<Provider, Vec<String>> {
    let named = [
        entry.aescbc.is_some(),
        entry.aesgcm.is_some(),
        entry.secretbox.is_some(),
        entry.identity.is_some(),
        entry.kms.is_some(),
    ];
    if named.iter().filter(|n| **n).count() != 1 {
        return Err(vec![format!(
            "{at}: Invalid value: \"\": exactly one provider must be specified for each provider"
        )]);
    }
    if let Some(kms) = &entry.kms {
        return kms_provider(kms, &format!("{at}.kms"), previous).map(Provider::Kms);
    }
    if entry.identity.is_some() {
        return Ok(Provider::Identity);
    }
    let (name, keys, sizes): (&str, &KeysEntry, &[usize]) = if let Some(k) = &entry.aescbc {
        ("aescbc", k, &[16, 24, 32])
    } else if let Some(k) = &entry.aesgcm {
        ("aesgcm", k, &[16, 32])
    } else {
        (
            "secretbox",
            entry.secretbox.as_ref().expect("one provider"),
            &[32],
        )
    };
    let mut errors = Vec::new();
    let mut made = Vec::new();
    require_some(&mut errors, &keys.keys, &format!("{at}.{name}.keys"), "key");
    for (k, key) in keys.keys.iter().enumerate() {
        let field = format!("{at}.{name}.keys[{k}]");
        if key.name.is_empty() || key.name.contains(':') {
            errors.push(format!(
                "{field}.name: Invalid value: {:?}: a key name is required and may not contain ':'",
                key.name
            ));
        }
        match base64::engine::general_purpose::STANDARD.decode(key.secret.trim()) {
            Ok(secret) if sizes.contains(&secret.len()) => made.push(Key {
                name: key.name.clone(),
                secret,
            }),
            Ok(secret) => errors.push(format!(
                "{field}.secret: Invalid value: \"REDACTED\": secret is not of the expected length, got {}, expected one of {sizes:?}",
                secret.len()
            )),
            Err(_) => errors.push(format!(
                "{field}.secret: Invalid value: \"REDACTED\": secrets must be base64 encoded"
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(match name {
        "aescbc" => Provider::AesCbc(made),
        "aesgcm" => Provider::AesGcm(made),
        _ => Provider::Secretbox(made),
    })
}

/// A resource name with a wildcard elsewhere than where kube-apiserver allows one.
#[derive(Debug, thiserror::Error)]
#[error("resource names with wildcards must be '*.<group>', '*.' or '*.*'")]
struct WildcardMisplaced;

/// A resource's keys, relative to a store's prefix: `secrets` → `secrets/`,
/// `widgets.example.com` → `example.com/widgets/`, `*.example.com` → `example.com/`, `*.` → the
/// core group's resources, `*.*` → everything.
fn selector(resource: &str) -> Result<Selector, WildcardMisplaced> {
    let prefix = |p: String| Ok(Selector::Prefix(p));
    match resource {
        "*.*" => prefix(String::new()),
        "*." => Ok(Selector::CoreGroup),
        _ => match resource.split_once('.') {
            None if resource.is_empty() || resource.contains(['*', '/']) => Err(WildcardMisplaced),
            None => prefix(format!("{resource}/")),
            Some(("*", group)) => prefix(format!("{group}/")),
            Some((plural, group)) if !plural.contains('*') && !group.contains('*') => {
                prefix(format!("{group}/{plural}/"))
            }
            _ => Err(WildcardMisplaced),
        },
    }
}

/// A `kms` entry's provider, checked as kube-apiserver checks it: only `apiVersion: v2` (KMS v1
/// is off by default since Kubernetes 1.29), a name without `:`, a `unix://` endpoint, a
/// positive timeout. One configured as in `previous` is kept rather than started again.
fn kms_provider(
    kms: &KmsEntry,
    at: &str,
    previous: Option<&Rules>,
) -> Result<Arc<KmsProvider>, Vec<String>> {
    let mut errors = Vec::new();
    match kms.api_version.as_str() {
        "v2" => {}
        "" | "v1" => errors.push(format!(
            "{at}.apiVersion: Invalid value: \"v1\": KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead.  Set --feature-gates=KMSv1=true to use the deprecated KMSv1 feature."
        )),
        other => errors.push(format!(
            "{at}.apiVersion: Unsupported value: {other:?}: supported values: \"v1\", \"v2\""
        )),
    }
    if kms.name.is_empty() {
        errors.push(format!("{at}.name: Required value"));
    } else if kms.name.contains(':') {
        errors.push(format!(
            "{at}.name: Invalid value: {:?}: should not contain ':'",
            kms.name
        ));
    }
    if let Some(size) = kms.cachesize {
        errors.push(format!(
            "{at}.cachesize: Invalid value: {size}: cachesize is not supported in v2"
        ));
    }
    let timeout = match kms.timeout.as_deref() {
        None => KMS_TIMEOUT,
        Some(text) => match strategy_host_apimachinery::go_duration::parse(text) {
            Some(t) if !t.is_zero() => t,
            _ => {
                errors.push(format!(
                    "{at}.timeout: Invalid value: {text:?}: should be a positive value"
                ));
                KMS_TIMEOUT
            }
        },
    };
    match kms.endpoint.split_once("://") {
        _ if kms.endpoint.is_empty() => errors.push(format!("{at}.endpoint: Required value")),
        Some(("unix", path)) if !path.is_empty() => {}
        Some((scheme, _)) if scheme != "unix" => errors.push(format!(
            "{at}.endpoint: Invalid value: {:?}: unsupported scheme {scheme:?} for KMS provider, only unix is supported",
            kms.endpoint
        )),
        _ => errors.push(format!(
            "{at}.endpoint: Invalid value: {:?}: KMS provider endpoint must be a unix socket: unix:///path",
            kms.endpoint
        )),
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let running = previous
        .into_iter()
        .flat_map(|rules| rules.0.iter())
        .flat_map(|(_, chain)| chain.iter())
        .find_map(|provider| match provider {
            Provider::Kms(p) if p.configured_as(&kms.name, &kms.endpoint, timeout) => {
                Some(p.clone())
            }
            _ => None,
        });
    Ok(running.unwrap_or_else(|| KmsProvider::start(&kms.name, &kms.endpoint, timeout)))
}
