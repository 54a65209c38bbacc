//! The server's keys and certificates: the serving certificate, the client CA and the
//! ServiceAccount signing key, read from flags or generated into `{data-dir}/pki` on first start
//! (as k3s and kubeadm do) and reused after; and the admin kubeconfig written beside them.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use time::{Duration, OffsetDateTime};

pub mod front_proxy;
mod trust_store;
pub use trust_store::{system_roots, trust_store, TrustStoreError};

/// What went wrong reading or generating keys and certificates.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file holds no usable PEM certificate or key.
    #[error("{path}: {problem}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// Generating a key or certificate failed.
    #[error("generating {what}: {source}")]
    Generate {
        /// What was being generated.
        what: &'static str,
        /// The cause.
        #[source]
        source: rcgen::Error,
    },
}

/// `type Result` of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The flags that name key and certificate files; what they leave out is generated.
#[derive(Debug, Clone, Default)]
pub struct PkiFlags {
    /// `--tls-cert-file` (with `--tls-private-key-file`).
    pub tls_cert_file: Option<PathBuf>,
    /// `--tls-private-key-file`.
    pub tls_private_key_file: Option<PathBuf>,
    /// `--client-ca-file`: client certificates signed by these CAs authenticate (the generated
    /// CA is always trusted too, so the admin kubeconfig works).
    pub client_ca_file: Option<PathBuf>,
    /// `--service-account-signing-key-file`: the PEM private key ServiceAccount tokens are
    /// signed with.
    pub service_account_signing_key_file: Option<PathBuf>,
    /// `--service-account-key-file`: further PEM public keys tokens are accepted from (other
    /// replicas' keys during a rotation).
    pub service_account_key_files: Vec<PathBuf>,
}

/// The server's keys and certificates, as PEM.
#[derive(Clone)]
pub struct Pki {
    /// The CA clients should trust for the serving certificate (the generated CA, or the
    /// `--tls-cert-file` chain itself when it was given).
    pub serving_ca_pem: String,
    /// The serving certificate chain.
    pub serving_cert_pem: String,
    /// The serving certificate's private key.
    pub serving_key_pem: String,
    /// Every CA a client certificate may chain to.
    pub client_ca_pem: String,
    /// The ServiceAccount token signing key (PKCS#8).
    pub service_account_key_pem: String,
    /// Every public key ServiceAccount tokens are verified with (the signing key's first).
    pub service_account_public_pems: Vec<String>,
    /// The generated CA, when there is one (signs the admin's client certificate).
    ca: Option<(String, String)>,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki").finish_non_exhaustive()
    }
}

/// A certificate generated here is replaced when it expires within this long.
const RENEW_BEFORE: Duration = Duration::days(90);

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })
}

/// Writes `text` to `path` readable by the owner only (keys and certificates alike).
fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let io = |source| Error::Io {
        path: path.into(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

fn generate(what: &'static str) -> impl Fn(rcgen::Error) -> Error {
    move |source| Error::Generate { what, source }
}

/// The `notAfter` of the first certificate in `pem`, if it parses.
fn not_after(pem: &str) -> Option<OffsetDateTime> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).ok()?;
    let cert = pem.parse_x509().ok()?;
    Some(cert.validity().not_after.to_datetime())
}

/// True when the first certificate in `pem` covers every name in `sans`.
fn covers(pem: &str, sans: &[SanType]) -> bool {
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(pem.as_bytes()) else {
        return false;
    };
    let Ok(cert) = pem.parse_x509() else {
        return false;
    };
    let Ok(Some(ext)) = cert.subject_alternative_name() else {
        return false;
    };
    use x509_parser::extensions::GeneralName;
    sans.iter().all(|want| {
        ext.value
            .general_names
            .iter()
            .any(|have| match (want, have) {
                (SanType::DnsName(w), GeneralName::DNSName(h)) => w.as_str() == *h,
                (SanType::IpAddress(IpAddr::V4(w)), GeneralName::IPAddress(h)) => {
                    *h == w.octets().as_slice()
                }
                (SanType::IpAddress(IpAddr::V6(w)), GeneralName::IPAddress(h)) => {
                    *h == w.octets().as_slice()
                }
                _ => false,
            })
    })
}

fn fresh(pem: &str) -> bool {
    not_after(pem).is_some_and(|t| t - OffsetDateTime::now_utc() > RENEW_BEFORE)
}

fn params(common_name: &str, organizations: &[&str], valid: Duration) -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    for o in organizations {
        dn.push(DnType::OrganizationName, *o);
    }
    dn.push(DnType::CommonName, common_name);
    p.distinguished_name = dn;
    let now = OffsetDateTime::now_utc();
    p.not_before = now - Duration::minutes(5);
    p.not_after = now + valid;
    p.use_authority_key_identifier_extension = true;
    p
}

/// The names the serving certificate is valid for: localhost, the loopback addresses, the
/// listen address (when it is a specific one) and this machine's host name.
fn serving_sans(listen: SocketAddr) -> Vec<SanType> {
    let mut sans = vec![
        SanType::DnsName("localhost".try_into().expect("a valid DNS name")),
        SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        SanType::IpAddress(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)),
    ];
    let ip = listen.ip();
    if !ip.is_unspecified() && !ip.is_loopback() {
        sans.push(SanType::IpAddress(ip));
    }
    if let Ok(host) = std::fs::read_to_string("/etc/hostname") {
        if let Ok(name) = host.trim().to_string().try_into() {
            if !host.trim().is_empty() && host.trim() != "localhost" {
                sans.push(SanType::DnsName(name));
            }
        }
    }
    sans
}

/// The generated CA in `dir`: reused while it is valid, else made.
fn load_or_make_ca(dir: &Path) -> Result<(String, String)> {
    load_or_make_ca_named(dir, "ca", "strategy-host-ca")
}

/// The generated CA `{stem}.crt`/`{stem}.key` in `dir` (subject `common_name`): reused while
/// it is valid, else made.
fn load_or_make_ca_named(dir: &Path, stem: &str, common_name: &str) -> Result<(String, String)> {
    let (cert_path, key_path) = (
        dir.join(format!("{stem}.crt")),
        dir.join(format!("{stem}.key")),
    );
    if cert_path.exists() && key_path.exists() {
        let (cert, key) = (read(&cert_path)?, read(&key_path)?);
        if not_after(&cert).is_some_and(|t| t > OffsetDateTime::now_utc()) {
            return Ok((cert, key));
        }
        tracing::warn!(path = %cert_path.display(), "the generated CA has expired; making a new one");
    }
    let key = KeyPair::generate().map_err(generate("the CA key"))?;
    let mut p = params(common_name, &[], Duration::days(3650));
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = p
        .self_signed(&key)
        .map_err(generate("the CA certificate"))?;
    let (cert, key) = (cert.pem(), key.serialize_pem());
    write_private(&key_path, &key)?;
    write_private(&cert_path, &cert)?;
    tracing::info!(path = %cert_path.display(), "generated a certificate authority");
    Ok((cert, key))
}

fn issuer(ca: &(String, String)) -> Result<Issuer<'static, KeyPair>> {
    let invalid = |problem: String| Error::Invalid {
        path: "ca.key".into(),
        problem,
    };
    let key = KeyPair::from_pem(&ca.1).map_err(|e| invalid(e.to_string()))?;
    Issuer::from_ca_cert_pem(&ca.0, key).map_err(|e| invalid(e.to_string()))
}

/// A leaf certificate signed by `ca`, as (certificate PEM, key PEM).
fn sign_leaf(
    ca: &(String, String),
    mut p: CertificateParams,
    usage: ExtendedKeyUsagePurpose,
    what: &'static str,
) -> Result<(String, String)> {
    let key = KeyPair::generate().map_err(generate(what))?;
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![usage];
    let cert = p.signed_by(&key, &issuer(ca)?).map_err(generate(what))?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Reads the flags' files and fills the rest from `{data_dir}/pki`, generating what is missing
/// or expiring within 90 days (a serving certificate also when it does not cover `listen`).
///
/// # Errors
/// A named file is missing or not PEM; the directory cannot be written.
pub fn load_or_generate(flags: &PkiFlags, data_dir: &Path, listen: SocketAddr) -> Result<Pki> {
    let dir = data_dir.join("pki");
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    let ca = load_or_make_ca(&dir)?;
    let (serving_ca_pem, serving_cert_pem, serving_key_pem) =
        match (&flags.tls_cert_file, &flags.tls_private_key_file) {
            (Some(cert), Some(key)) => {
                let cert = read(cert)?;
                (cert.clone(), cert, read(key)?)
            }
            (Some(path), None) | (None, Some(path)) => {
                return Err(Error::Invalid {
                    path: path.clone(),
                    problem: "--tls-cert-file and --tls-private-key-file go together".into(),
                })
            }
            (None, None) => {
                let sans = serving_sans(listen);
                let (c, k) = (dir.join("serving.crt"), dir.join("serving.key"));
                let reuse = c.exists() && k.exists() && {
                    let pem = read(&c)?;
                    fresh(&pem) && covers(&pem, &sans)
                };
                if !reuse {
                    let mut p = params("strategy-host", &[], Duration::days(365));
                    p.subject_alt_names = sans;
                    let (cert, key) = sign_leaf(
                        &ca,
                        p,
                        ExtendedKeyUsagePurpose::ServerAuth,
                        "the serving certificate",
                    )?;
                    write_private(&k, &key)?;
                    write_private(&c, &cert)?;
                    tracing::info!(path = %c.display(), "generated a serving certificate");
                }
                (ca.0.clone(), read(&c)?, read(&k)?)
            }
        };
    let mut client_ca_pem = ca.0.clone();
    if let Some(path) = &flags.client_ca_file {
        client_ca_pem.push_str(&read(path)?);
    }
    let service_account_key_pem = match &flags.service_account_signing_key_file {
        Some(path) => read(path)?,
        None => {
            let path = dir.join("service-account.key");
            if !path.exists() {
                let key = KeyPair::generate().map_err(generate("the ServiceAccount key"))?;
                write_private(&path, &key.serialize_pem())?;
            }
            read(&path)?
        }
    };
    let signing = KeyPair::from_pem(&service_account_key_pem).map_err(|e| Error::Invalid {
        path: flags
            .service_account_signing_key_file
            .clone()
            .unwrap_or_else(|| dir.join("service-account.key")),
        problem: format!("not a PEM private key: {e}"),
    })?;
    let mut service_account_public_pems = vec![signing.public_key_pem()];
    for path in &flags.service_account_key_files {
        service_account_public_pems.push(read(path)?);
    }
    Ok(Pki {
        serving_ca_pem,
        serving_cert_pem,
        serving_key_pem,
        client_ca_pem,
        service_account_key_pem,
        service_account_public_pems,
        ca: Some(ca),
    })
}

/// Signs a client certificate for `user` in `group` with the generated CA (CN = user, O = the
/// group, as the x509 authenticator reads them), valid for a year.
///
/// # Errors
/// There is no generated CA, or signing fails.
pub fn client_certificate(pki: &Pki, user: &str, group: &str) -> Result<(String, String)> {
    let ca = pki.ca.as_ref().ok_or_else(|| Error::Invalid {
        path: "pki/ca.key".into(),
        problem: "no generated CA to sign client certificates with".into(),
    })?;
    sign_leaf(
        ca,
        params(user, &[group], Duration::days(365)),
        ExtendedKeyUsagePurpose::ClientAuth,
        "a client certificate",
    )
}

/// The admin kubeconfig's path in `data_dir`.
pub fn admin_kubeconfig_path(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.kubeconfig")
}

/// Writes `{data_dir}/admin.kubeconfig`: the serving CA, `server_url`, and a client
/// certificate for `admin` in `system:masters` (reused while it is valid).
///
/// # Errors
/// The files cannot be written, or signing fails.
pub fn write_admin_kubeconfig(pki: &Pki, data_dir: &Path, server_url: &str) -> Result<PathBuf> {
    use base64::Engine as _;
    let dir = data_dir.join("pki");
    let (c, k) = (dir.join("admin.crt"), dir.join("admin.key"));
    let reuse = c.exists() && k.exists() && fresh(&read(&c)?);
    if !reuse {
        let (cert, key) = client_certificate(pki, "admin", "system:masters")?;
        write_private(&k, &key)?;
        write_private(&c, &cert)?;
    }
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "strategy-host", "cluster": {
            "server": server_url,
            "certificate-authority-data": b64(&pki.serving_ca_pem),
        }}],
        "users": [{"name": "admin", "user": {
            "client-certificate-data": b64(&read(&c)?),
            "client-key-data": b64(&read(&k)?),
        }}],
        "contexts": [{"name": "strategy-host", "context": {"cluster": "strategy-host", "user": "admin"}}],
        "current-context": "strategy-host",
    });
    let path = admin_kubeconfig_path(data_dir);
    let text = serde_yaml::to_string(&config).expect("a JSON value is YAML");
    write_private(&path, &text)?;
    Ok(path)
}

/// The URL clients reach `listen` at: a wildcard address becomes 127.0.0.1.
pub fn server_url(listen: SocketAddr, tls: bool) -> String {
    let ip = match listen.ip() {
        ip if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        ip => ip,
    };
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://{}", SocketAddr::new(ip, listen.port()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_start_generates_and_later_starts_reuse() {
        let dir = tempfile::tempdir().unwrap();
        let listen: SocketAddr = "127.0.0.1:6443".parse().unwrap();
        let first = load_or_generate(&PkiFlags::default(), dir.path(), listen).unwrap();
        let again = load_or_generate(&PkiFlags::default(), dir.path(), listen).unwrap();
        assert_eq!(first.serving_cert_pem, again.serving_cert_pem);
        assert_eq!(first.service_account_key_pem, again.service_account_key_pem);
        assert_eq!(first.serving_ca_pem, first.client_ca_pem);
        // A new listen address the certificate does not cover gets a new certificate from
        // the same CA.
        let other = load_or_generate(
            &PkiFlags::default(),
            dir.path(),
            "10.1.2.3:6443".parse().unwrap(),
        )
        .unwrap();
        assert_ne!(other.serving_cert_pem, first.serving_cert_pem);
        assert_eq!(other.serving_ca_pem, first.serving_ca_pem);
        let key = std::fs::metadata(dir.path().join("pki/ca.key")).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(key.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn the_admin_kubeconfig_names_the_server_and_a_masters_certificate() {
        let dir = tempfile::tempdir().unwrap();
        let listen: SocketAddr = "0.0.0.0:6443".parse().unwrap();
        let pki = load_or_generate(&PkiFlags::default(), dir.path(), listen).unwrap();
        let url = server_url(listen, true);
        assert_eq!(url, "https://127.0.0.1:6443");
        let path = write_admin_kubeconfig(&pki, dir.path(), &url).unwrap();
        let config: serde_json::Value =
            serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(config["clusters"][0]["cluster"]["server"], url);
        let cert = std::fs::read_to_string(dir.path().join("pki/admin.crt")).unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(cert.as_bytes()).unwrap();
        let cert = pem.parse_x509().unwrap();
        let subject = cert.subject().to_string();
        assert!(subject.contains("CN=admin"), "{subject}");
        assert!(subject.contains("O=system:masters"), "{subject}");
    }

    #[test]
    fn half_a_pair_of_tls_flags_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let flags = PkiFlags {
            tls_cert_file: Some(dir.path().join("x.crt")),
            ..PkiFlags::default()
        };
        let err = load_or_generate(&flags, dir.path(), "127.0.0.1:1".parse().unwrap());
        assert!(err.unwrap_err().to_string().contains("go together"));
    }
}
