//! A real OCI registry for the tests: Debian's `docker-registry` (CNCF distribution) on a free
//! loopback port, its storage in a temporary directory, optionally behind TLS and htpasswd
//! authentication; it can be stopped and started again on the same port and storage.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

/// How the registry is protected.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    /// Serve HTTPS with a certificate for 127.0.0.1 signed by a CA of the fixture's own.
    pub tls: bool,
    /// Require this user and password (htpasswd, bcrypt).
    pub user: Option<(String, String)>,
}

/// A running (or stopped) registry.
pub struct OciRegistry {
    child: Option<Child>,
    config: PathBuf,
    /// `127.0.0.1:PORT`.
    pub host: String,
    /// The CA that signed the serving certificate, with `tls`.
    pub ca: Option<PathBuf>,
    dir: tempfile::TempDir,
}

impl OciRegistry {
    /// Starts a registry with `options` and waits until it answers.
    ///
    /// # Errors
    /// The binary is missing, or it did not answer within 20 s.
    pub fn start(options: &RegistryOptions) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let host = format!("127.0.0.1:{port}");
        let mut config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {host}\n",
            dir.path().join("storage").display()
        );
        let mut ca = None;
        if options.tls {
            let (ca_file, cert, key) =
                crate::secure::serving_certificate(dir.path(), &["127.0.0.1", "localhost"]);
            config.push_str(&format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                cert.display(),
                key.display()
            ));
            ca = Some(ca_file);
        }
        if let Some((user, password)) = &options.user {
            let htpasswd = dir.path().join("htpasswd");
            let out = Command::new("htpasswd")
                .args(["-Bbn", user, password])
                .output()
                .context(
                    "running htpasswd (Debian's apache2-utils; scripts/setup.sh installs it)",
                )?;
            if !out.status.success() {
                bail!("htpasswd failed: {}", String::from_utf8_lossy(&out.stderr));
            }
            std::fs::write(&htpasswd, out.stdout)?;
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: registry\n    path: {}\n",
                htpasswd.display()
            ));
        }
        let config_file = dir.path().join("config.yml");
        std::fs::write(&config_file, config)?;
        let mut registry = Self {
            child: None,
            config: config_file,
            host,
            ca,
            dir,
        };
        registry.start_again()?;
        Ok(registry)
    }

    /// Starts the stopped registry again, same port and storage.
    ///
    /// # Errors
    /// It did not answer within 20 s.
    pub fn start_again(&mut self) -> anyhow::Result<()> {
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context(
                "spawning docker-registry (Debian's docker-registry; scripts/setup.sh installs it)",
            )?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(&self.host).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        bail!("docker-registry did not listen on {} within 20s", self.host)
    }

    /// Stops the registry (its storage stays).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `oci://HOST/REPOSITORY:TAG` in this registry.
    pub fn url(&self, repository_and_tag: &str) -> String {
        format!("oci://{}/{repository_and_tag}", self.host)
    }

    /// A scratch directory that lives as long as the registry.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for OciRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}
