//! A server run as users run it — HTTPS with its generated certificates, authentication and
//! RBAC — and the clients of its users: kubectl with the generated admin kubeconfig or a
//! user's token or certificate, and raw HTTPS requests carrying any credential.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::{latest_kubectl_path, HostProcess, Reply};

/// A secure server on the embedded store in a temporary directory.
pub struct SecureFixture {
    /// The server.
    pub host: HostProcess,
    /// Its data directory's parent (kubectl caches live here too).
    pub dir: tempfile::TempDir,
    /// kubectl 1.35.
    pub kubectl: PathBuf,
}

/// Who a request or kubectl run acts as.
#[derive(Debug, Clone)]
pub enum Credential {
    /// The generated admin kubeconfig.
    Admin,
    /// No credential at all.
    Anonymous,
    /// An `Authorization: Bearer` token.
    Token(String),
    /// A client certificate and key (PEM files).
    Certificate(PathBuf, PathBuf),
}

impl Credential {
    /// An `Authorization: Bearer` token.
    pub fn token(t: &str) -> Self {
        Credential::Token(t.to_string())
    }
}

impl SecureFixture {
    /// Starts a secure server with `--token-auth-file` naming a file that holds `tokens`
    /// (kube-apiserver's CSV: `token,user,uid,"group1,group2"`) and `args`; the file's
    /// directory lives as long as the one returned.
    ///
    /// # Panics
    /// When the file cannot be written or the server does not start.
    pub fn start_with_tokens(tokens: &str, args: &[&str]) -> (Self, tempfile::TempDir) {
        let files = tempfile::tempdir().expect("a temporary directory");
        let path = files.path().join("tokens.csv");
        std::fs::write(&path, tokens).expect("the token file is written");
        let path = path.display().to_string();
        let mut all = vec!["--token-auth-file", path.as_str()];
        all.extend_from_slice(args);
        (Self::start(&all), files)
    }

    /// Starts a secure server with `args` (its data directory is chosen here).
    ///
    /// # Panics
    /// When the server does not start.
    pub fn start(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("data").display().to_string();
        let mut all = vec!["--data-dir", data.as_str()];
        all.extend_from_slice(args);
        let host = HostProcess::start_secure(&all).expect("the server starts");
        assert!(host.base_url.starts_with("https://"), "{}", host.base_url);
        let kubectl = latest_kubectl_path().expect("kubectl 1.35 (scripts/setup.sh)");
        Self { host, dir, kubectl }
    }

    /// The data directory.
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The generated CA certificate's path.
    pub fn ca_file(&self) -> PathBuf {
        self.data().join("pki/ca.crt")
    }

    /// Runs kubectl as `who`; (success, stdout, stderr).
    ///
    /// # Panics
    /// When kubectl cannot be run.
    pub fn kubectl(&self, who: &Credential, args: &[&str]) -> (bool, String, String) {
        self.kubectl_with(who, args, None)
    }

    /// [`Self::kubectl`] with `stdin`.
    ///
    /// # Panics
    /// When kubectl cannot be run.
    pub fn kubectl_with(
        &self,
        who: &Credential,
        args: &[&str],
        stdin: Option<&str>,
    ) -> (bool, String, String) {
        let cache = self.dir.path().join("kubectl-cache");
        let mut cmd = std::process::Command::new(&self.kubectl);
        cmd.arg("--cache-dir").arg(&cache);
        match who {
            Credential::Admin => {
                cmd.env("KUBECONFIG", self.data().join("admin.kubeconfig"));
            }
            other => {
                let empty = self.dir.path().join("empty.kubeconfig");
                std::fs::write(&empty, "apiVersion: v1\nkind: Config\n").expect("write");
                cmd.env("KUBECONFIG", &empty)
                    .arg("--server")
                    .arg(&self.host.base_url)
                    .arg("--certificate-authority")
                    .arg(self.ca_file());
                match other {
                    Credential::Token(t) => {
                        cmd.arg("--token").arg(t);
                    }
                    Credential::Certificate(c, k) => {
                        cmd.arg("--client-certificate")
                            .arg(c)
                            .arg("--client-key")
                            .arg(k);
                    }
                    _ => {}
                }
            }
        }
        cmd.args(args);
        crate::run_kubectl(cmd, stdin).expect("kubectl runs")
    }

    /// kubectl as `who`, which must succeed; its stdout.
    ///
    /// # Panics
    /// When kubectl fails.
    pub fn ok(&self, who: &Credential, args: &[&str]) -> String {
        let (ok, out, err) = self.kubectl(who, args);
        assert!(ok, "kubectl {args:?} as {who:?} failed:\n{out}\n{err}");
        out
    }

    /// kubectl as `who`, which must fail; its stderr.
    ///
    /// # Panics
    /// When kubectl succeeds.
    pub fn fails(&self, who: &Credential, args: &[&str]) -> String {
        let (ok, out, err) = self.kubectl(who, args);
        assert!(!ok, "kubectl {args:?} as {who:?} should fail:\n{out}");
        err
    }

    /// Sends an HTTPS request as `who` (the admin is its client certificate).
    ///
    /// # Errors
    /// The connection fails (not an HTTP error code).
    pub fn call(
        &self,
        who: &Credential,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> anyhow::Result<Reply> {
        let identity = match who {
            Credential::Admin => Some((
                self.data().join("pki/admin.crt"),
                self.data().join("pki/admin.key"),
            )),
            Credential::Certificate(c, k) => Some((c.clone(), k.clone())),
            _ => None,
        };
        let agent = https_agent(
            &self.ca_file(),
            identity.as_ref().map(|(c, k)| (c.as_path(), k.as_path())),
        )?;
        let mut req = agent.request(method, &self.host.url(path));
        if let Credential::Token(t) = who {
            req = req.set("Authorization", &format!("Bearer {t}"));
        }
        let result = match body {
            Some(b) => req
                .set("Content-Type", "application/json")
                .send_string(&b.to_string()),
            None => req.call(),
        };
        match result {
            Ok(r) | Err(ureq::Error::Status(_, r)) => Reply::read(r),
            Err(e) => Err(e.into()),
        }
    }

    /// Sends a request with a raw `Authorization` header value.
    ///
    /// # Errors
    /// The connection fails.
    pub fn call_with_authorization(
        &self,
        path: &str,
        authorization: &str,
    ) -> anyhow::Result<Reply> {
        let agent = https_agent(&self.ca_file(), None)?;
        match agent
            .get(&self.host.url(path))
            .set("Authorization", authorization)
            .call()
        {
            Ok(r) | Err(ureq::Error::Status(_, r)) => Reply::read(r),
            Err(e) => Err(e.into()),
        }
    }

    /// Signs a client certificate for `user` in `group` with the server's generated CA
    /// (`signed_by_server = true`) or with a CA of its own; answers (certificate, key) files.
    ///
    /// # Panics
    /// When signing fails.
    pub fn client_certificate(
        &self,
        user: &str,
        group: &str,
        signed_by_server: bool,
    ) -> Credential {
        let issuer_key = if signed_by_server {
            rcgen::KeyPair::from_pem(
                &std::fs::read_to_string(self.data().join("pki/ca.key")).unwrap(),
            )
            .unwrap()
        } else {
            rcgen::KeyPair::generate().unwrap()
        };
        let mut ca_params = rcgen::CertificateParams::default();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let issuer = if signed_by_server {
            let ca_pem = std::fs::read_to_string(self.ca_file()).unwrap();
            rcgen::Issuer::from_ca_cert_pem(&ca_pem, issuer_key).unwrap()
        } else {
            ca_params
                .distinguished_name
                .push(rcgen::DnType::CommonName, "strategy-host-ca");
            rcgen::Issuer::new(ca_params, issuer_key)
        };
        let key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::default();
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name
            .push(rcgen::DnType::OrganizationName, group);
        p.distinguished_name.push(rcgen::DnType::CommonName, user);
        p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        p.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        let cert = p.signed_by(&key, &issuer).unwrap();
        let tag = if signed_by_server { "ours" } else { "foreign" };
        let c = self.dir.path().join(format!("{user}-{tag}.crt"));
        let k = self.dir.path().join(format!("{user}-{tag}.key"));
        std::fs::write(&c, cert.pem()).unwrap();
        std::fs::write(&k, key.serialize_pem()).unwrap();
        Credential::Certificate(c, k)
    }

    /// Waits (up to 10 s) until `check` holds; RBAC changes reach the authorizer through a watch.
    pub fn eventually(&self, what: &str, check: impl FnMut() -> bool) {
        crate::eventually(what, Duration::from_secs(10), check);
    }
}

/// A ureq agent trusting `ca` and presenting `identity` (certificate and key files).
///
/// # Errors
/// The files are unreadable or not PEM.
pub fn https_agent(ca: &Path, identity: Option<(&Path, &Path)>) -> anyhow::Result<ureq::Agent> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).context("the CA file")? {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert)?.collect::<Result<Vec<_>, _>>()?;
            builder.with_client_auth_cert(chain, PrivateKeyDer::from_pem_file(key)?)?
        }
        None => builder.with_no_client_auth(),
    };
    Ok(ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .tls_config(Arc::new(config))
        .build())
}

/// A CA of its own and a serving certificate it signed for `names` (DNS names or IP
/// addresses), written into `dir`: (ca.crt, tls.crt, tls.key). What an extension API server
/// serves with, its CA going into an APIService's `caBundle`.
///
/// # Panics
/// When signing or writing fails.
pub fn serving_certificate(dir: &Path, names: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::default();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "serving-ca");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| (*n).to_string()).collect();
    let cert = rcgen::CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let write = |name: &str, pem: String| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path
    };
    (
        write("ca.crt", ca_cert.pem()),
        write("tls.crt", cert.pem()),
        write("tls.key", key.serialize_pem()),
    )
}
