//! Where a `StrategyModule`'s `spec.url` points: an OCI artifact (`oci://HOST/REPO:TAG` or
//! `oci://HOST/REPO@sha256:…`) or a plain download (`https://…`), and whether this host may reach
//! it over plain HTTP.

use std::fmt;
use std::str::FromStr;

use oci_client::Reference;

/// A parsed `spec.url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleUrl {
    /// An artifact in an OCI registry.
    Oci(Reference),
    /// A plain download over HTTPS (or HTTP to a loopback or listed insecure host).
    Download(String),
}

/// Why a `spec.url` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Neither `oci://`, `https://` nor `http://`.
    #[error("must start with oci://, https:// or http://")]
    Scheme,
    /// The OCI reference does not parse.
    #[error("is not an OCI reference (oci://HOST/REPOSITORY:TAG or oci://HOST/REPOSITORY@sha256:DIGEST): {0}")]
    Reference(String),
    /// A download URL without a host.
    #[error("has no host")]
    NoHost,
}

impl FromStr for ModuleUrl {
    type Err = UrlError;

    fn from_str(url: &str) -> Result<Self, UrlError> {
        if let Some(reference) = url.strip_prefix("oci://") {
            return Reference::from_str(reference)
                .map(Self::Oci)
                .map_err(|e| UrlError::Reference(e.to_string()));
        }
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
            .ok_or(UrlError::Scheme)?;
        if rest.split('/').next().unwrap_or("").is_empty() {
            return Err(UrlError::NoHost);
        }
        Ok(Self::Download(url.to_owned()))
    }
}

impl fmt::Display for ModuleUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Oci(r) => write!(f, "oci://{}", r.whole()),
            Self::Download(u) => f.write_str(u),
        }
    }
}

impl ModuleUrl {
    /// The host (with port) the module comes from: the registry, or the download's host.
    pub fn host(&self) -> String {
        match self {
            Self::Oci(r) => r.resolve_registry().to_owned(),
            Self::Download(u) => {
                let rest = u.split_once("://").map_or(u.as_str(), |(_, r)| r);
                let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
                // Credentials in the URL are not part of the host.
                authority.rsplit('@').next().unwrap_or("").to_owned()
            }
        }
    }
}

/// Whether `host` (`name` or `name:port`) may be reached over plain HTTP: a loopback host, or
/// one listed (with or without its port) in `insecure` — docker's and containerd's rule.
pub fn plain_http_allowed(host: &str, insecure: &[String]) -> bool {
    let name = host_name(host);
    let loopback = name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback || insecure.iter().any(|i| i == host || i == name)
}

/// `host` without its port (and without the brackets of an IPv6 literal).
fn host_name(host: &str) -> &str {
    if let Some(v6) = host.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oci_references_keep_registry_repository_tag_and_digest() {
        let url: ModuleUrl = "oci://127.0.0.1:5000/strategies/deployment:v2"
            .parse()
            .unwrap();
        let ModuleUrl::Oci(r) = &url else {
            panic!("not oci")
        };
        assert_eq!(r.registry(), "127.0.0.1:5000");
        assert_eq!(r.repository(), "strategies/deployment");
        assert_eq!(r.tag(), Some("v2"));
        assert_eq!(url.host(), "127.0.0.1:5000");
        assert_eq!(
            url.to_string(),
            "oci://127.0.0.1:5000/strategies/deployment:v2"
        );
        let pinned = format!("oci://ghcr.io/o/m@sha256:{}", "a".repeat(64));
        let ModuleUrl::Oci(r) = pinned.parse().unwrap() else {
            panic!("not oci")
        };
        assert_eq!(
            r.digest(),
            Some(format!("sha256:{}", "a".repeat(64)).as_str())
        );
    }

    #[test]
    fn downloads_and_bad_urls() {
        let url: ModuleUrl = "https://user:pw@example.com:8443/m.wasm".parse().unwrap();
        assert_eq!(url.host(), "example.com:8443");
        assert_eq!("ftp://x/m.wasm".parse::<ModuleUrl>(), Err(UrlError::Scheme));
        assert_eq!(
            "https:///m.wasm".parse::<ModuleUrl>(),
            Err(UrlError::NoHost)
        );
        assert!(matches!(
            "oci://UPPER/Case:tag".parse::<ModuleUrl>(),
            Err(UrlError::Reference(_))
        ));
    }

    #[test]
    fn plain_http_only_for_loopback_and_listed_registries() {
        let listed = vec!["registry.lan:5000".to_owned(), "mirror.lan".to_owned()];
        for host in [
            "localhost:5000",
            "127.0.0.1:5000",
            "[::1]:5000",
            "127.0.0.2",
        ] {
            assert!(plain_http_allowed(host, &[]), "{host}");
        }
        assert!(plain_http_allowed("registry.lan:5000", &listed));
        assert!(plain_http_allowed("mirror.lan:80", &listed));
        assert!(!plain_http_allowed("registry.lan:6000", &listed));
        assert!(!plain_http_allowed("ghcr.io", &listed));
    }
}
