//! The front proxy's keys (kube-apiserver's aggregation layer): the client certificate this
//! server presents to extension API servers (`--proxy-client-cert-file`,
//! `--proxy-client-key-file`), the CA they check it against (`--requestheader-client-ca-file`)
//! and the request header settings they read — from flags, or generated into `{data-dir}/pki`
//! as kubeadm's `front-proxy-ca` and `front-proxy-client` with kubeadm's header names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rcgen::ExtendedKeyUsagePurpose;
use time::Duration;

use super::{fresh, load_or_make_ca_named, params, read, sign_leaf, write_private, Error, Result};

/// The common name of the generated client certificate, and so the allowed name by default.
const CLIENT_NAME: &str = "front-proxy-client";

/// The flags that name the front proxy's files and headers (kube-apiserver's).
#[derive(Debug, Clone, Default)]
pub struct FrontProxyFlags {
    /// `--proxy-client-cert-file`.
    pub proxy_client_cert_file: Option<PathBuf>,
    /// `--proxy-client-key-file`.
    pub proxy_client_key_file: Option<PathBuf>,
    /// `--requestheader-client-ca-file`.
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// `--requestheader-allowed-names` (empty: any name the CA signed).
    pub requestheader_allowed_names: Vec<String>,
    /// `--requestheader-username-headers`.
    pub requestheader_username_headers: Vec<String>,
    /// `--requestheader-group-headers`.
    pub requestheader_group_headers: Vec<String>,
    /// `--requestheader-extra-headers-prefix`.
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// `--requestheader-uid-headers`.
    pub requestheader_uid_headers: Vec<String>,
}

/// The front proxy's identity and what extension servers are told about it.
#[derive(Clone, derive_more::Debug)]
pub struct FrontProxy {
    /// The client certificate presented to extension servers.
    #[debug(skip)]
    pub client_cert_pem: String,
    /// Its key.
    #[debug(skip)]
    pub client_key_pem: String,
    /// The CA extension servers check the client certificate against.
    #[debug(skip)]
    pub requestheader_ca_pem: String,
    /// The common names a front proxy's certificate may have.
    pub allowed_names: Vec<String>,
    /// The headers carrying the user's name.
    pub username_headers: Vec<String>,
    /// The headers carrying the user's groups.
    pub group_headers: Vec<String>,
    /// The prefixes of the headers carrying the user's extra attributes.
    pub extra_headers_prefix: Vec<String>,
    /// The headers carrying the user's uid.
    pub uid_headers: Vec<String>,
}

fn or_default(given: &[String], default: &str) -> Vec<String> {
    if given.is_empty() {
        vec![default.to_string()]
    } else {
        given.to_vec()
    }
}

/// Reads the flags' files, or generates the front proxy CA and client certificate into
/// `{data_dir}/pki` (renewed within 90 days of expiry); headers not given are kubeadm's
/// (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-`).
///
/// # Errors
/// A named file is missing or not PEM; only one of the client certificate and key is named;
/// the directory cannot be written.
pub fn load_or_generate(flags: &FrontProxyFlags, data_dir: &Path) -> Result<FrontProxy> {
    let dir = data_dir.join("pki");
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    let (client_cert_pem, client_key_pem, generated_ca) = match (
        &flags.proxy_client_cert_file,
        &flags.proxy_client_key_file,
    ) {
        (Some(cert), Some(key)) => (read(cert)?, read(key)?, None),
        (Some(path), None) | (None, Some(path)) => {
            return Err(Error::Invalid {
                path: path.clone(),
                problem: "--proxy-client-cert-file and --proxy-client-key-file go together".into(),
            })
        }
        (None, None) => {
            let ca = load_or_make_ca_named(&dir, "front-proxy-ca", "front-proxy-ca")?;
            let (c, k) = (
                dir.join("front-proxy-client.crt"),
                dir.join("front-proxy-client.key"),
            );
            let reuse = c.exists() && k.exists() && fresh(&read(&c)?);
            if !reuse {
                let (cert, key) = sign_leaf(
                    &ca,
                    params(CLIENT_NAME, &[], Duration::days(365)),
                    ExtendedKeyUsagePurpose::ClientAuth,
                    "the front proxy's client certificate",
                )?;
                write_private(&k, &key)?;
                write_private(&c, &cert)?;
                tracing::info!(path = %c.display(), "generated the front proxy's client certificate");
            }
            (read(&c)?, read(&k)?, Some(ca.0))
        }
    };
    let requestheader_ca_pem = match (&flags.requestheader_client_ca_file, generated_ca) {
        (Some(path), _) => read(path)?,
        (None, Some(ca)) => ca,
        (None, None) => String::new(),
    };
    let allowed_names = match (
        flags.requestheader_allowed_names.is_empty(),
        flags.proxy_client_cert_file.is_none(),
    ) {
        (true, true) => vec![CLIENT_NAME.to_string()],
        _ => flags.requestheader_allowed_names.clone(),
    };
    Ok(FrontProxy {
        client_cert_pem,
        client_key_pem,
        requestheader_ca_pem,
        allowed_names,
        username_headers: or_default(&flags.requestheader_username_headers, "X-Remote-User"),
        group_headers: or_default(&flags.requestheader_group_headers, "X-Remote-Group"),
        extra_headers_prefix: or_default(
            &flags.requestheader_extra_headers_prefix,
            "X-Remote-Extra-",
        ),
        uid_headers: flags.requestheader_uid_headers.clone(),
    })
}

impl FrontProxy {
    /// The data of `kube-system/extension-apiserver-authentication` as kube-apiserver publishes
    /// it: `client-ca-file` (`client_ca_pem`, the CAs client certificates are checked against),
    /// and the request header CA, names and headers (lists as JSON).
    pub fn extension_apiserver_authentication(
        &self,
        client_ca_pem: &str,
    ) -> BTreeMap<String, String> {
        let list = |items: &[String]| serde_json::to_string(items).expect("strings encode");
        let mut data = BTreeMap::from([
            ("client-ca-file".to_string(), client_ca_pem.to_string()),
            (
                "requestheader-allowed-names".to_string(),
                list(&self.allowed_names),
            ),
            (
                "requestheader-extra-headers-prefix".to_string(),
                list(&self.extra_headers_prefix),
            ),
            (
                "requestheader-group-headers".to_string(),
                list(&self.group_headers),
            ),
            (
                "requestheader-username-headers".to_string(),
                list(&self.username_headers),
            ),
        ]);
        if !self.uid_headers.is_empty() {
            data.insert(
                "requestheader-uid-headers".to_string(),
                list(&self.uid_headers),
            );
        }
        if !self.requestheader_ca_pem.is_empty() {
            data.insert(
                "requestheader-client-ca-file".to_string(),
                self.requestheader_ca_pem.clone(),
            );
        }
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_front_proxy_is_kubeadms_and_kept_across_starts() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_generate(&FrontProxyFlags::default(), dir.path()).unwrap();
        assert!(first.client_cert_pem.contains("BEGIN CERTIFICATE"));
        assert!(first.requestheader_ca_pem.contains("BEGIN CERTIFICATE"));
        let (_, pem) = x509_parser::pem::parse_x509_pem(first.client_cert_pem.as_bytes()).unwrap();
        let cert = pem.parse_x509().unwrap();
        assert_eq!(cert.subject().to_string(), "CN=front-proxy-client");
        assert_eq!(cert.issuer().to_string(), "CN=front-proxy-ca");
        let second = load_or_generate(&FrontProxyFlags::default(), dir.path()).unwrap();
        assert_eq!(second.client_cert_pem, first.client_cert_pem);
        let data = first.extension_apiserver_authentication("CLIENT CA");
        assert_eq!(data["client-ca-file"], "CLIENT CA");
        assert_eq!(
            data["requestheader-allowed-names"],
            r#"["front-proxy-client"]"#
        );
        assert_eq!(
            data["requestheader-username-headers"],
            r#"["X-Remote-User"]"#
        );
        assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
        assert_eq!(
            data["requestheader-extra-headers-prefix"],
            r#"["X-Remote-Extra-"]"#
        );
        assert_eq!(
            data["requestheader-client-ca-file"],
            first.requestheader_ca_pem
        );
        assert!(!data.contains_key("requestheader-uid-headers"));
    }

    #[test]
    fn half_a_client_identity_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let flags = FrontProxyFlags {
            proxy_client_cert_file: Some(dir.path().join("c.pem")),
            ..FrontProxyFlags::default()
        };
        let error = load_or_generate(&flags, dir.path())
            .unwrap_err()
            .to_string();
        assert!(error.contains("go together"), "{error}");
    }
}
