//! A real etcd for tests and benchmarks: [`EtcdServer`] runs the `etcd` binary on free loopback
//! ports in a temporary data directory, and can stop and restart it to exercise recovery.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};

/// How long `start` and `restart` wait for etcd to answer its health check.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(20);
/// How many times `start` picks fresh ports when etcd could not bind the first ones.
const PORT_ATTEMPTS: usize = 3;

/// A throwaway single-member etcd cluster on loopback.
///
/// The data directory lives in a temporary directory removed on drop; the process is killed on
/// drop. `etcd` is looked up in `$ETCD_BIN`, then on `PATH`. Its log is `etcd.log` in that
/// directory. History is never compacted automatically, and watch progress notifications come
/// every second (so bookmarks can be tested quickly).
///
/// ```no_run
/// use strategy_host::storage::etcd3::testing::EtcdServer;
/// let etcd = EtcdServer::start().expect("etcd");
/// println!("etcd at {}", etcd.endpoint());
/// ```
#[derive(Debug)]
pub struct EtcdServer {
    binary: PathBuf,
    dir: tempfile::TempDir,
    client_port: u16,
    peer_port: u16,
    /// Serves `/health` and `/metrics` over plain HTTP, also when clients use TLS.
    metrics_port: u16,
    tls: Option<ServerTls>,
    child: Option<Child>,
}

/// PEM files for [`EtcdServer::start_tls`]: etcd serves its client URL with `cert_file` and
/// `key_file` and accepts only client certificates signed by `ca_file`.
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// etcd's serving certificate (valid for `127.0.0.1`).
    pub cert_file: PathBuf,
    /// The serving certificate's private key.
    pub key_file: PathBuf,
    /// The CA that client certificates must be signed by.
    pub ca_file: PathBuf,
}

impl EtcdServer {
    /// Starts etcd on free loopback ports (client, peer, metrics) and waits until it is healthy.
    ///
    /// # Errors
    /// When `etcd` is not installed (the message says how to install it), cannot start, or is not
    /// healthy within 20 s (the message carries the tail of its log).
    pub fn start() -> anyhow::Result<EtcdServer> {
        Self::start_with(None)
    }

    /// Like [`Self::start`], but etcd serves its client URL over TLS (`https://127.0.0.1:PORT`)
    /// and requires client certificates.
    ///
    /// # Errors
    /// As [`Self::start`].
    pub fn start_tls(tls: ServerTls) -> anyhow::Result<EtcdServer> {
        Self::start_with(Some(tls))
    }

    fn start_with(tls: Option<ServerTls>) -> anyhow::Result<EtcdServer> {
        let binary = find_etcd()?;
        let mut last_error = None;
        for _ in 0..PORT_ATTEMPTS {
            let [client_port, peer_port, metrics_port] = free_ports()?;
            let mut server = EtcdServer {
                binary: binary.clone(),
                dir: tempfile::Builder::new()
                    .prefix("etcd-test-")
                    .tempdir()
                    .context("creating a temporary directory for etcd")?,
                client_port,
                peer_port,
                metrics_port,
                tls: tls.clone(),
                child: None,
            };
            match server.spawn_and_wait() {
                Ok(()) => return Ok(server),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow!("etcd did not start")))
    }

    /// The client URL, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// The plain-HTTP URL serving `/health` and `/metrics`.
    pub fn metrics_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.metrics_port)
    }

    /// Kills etcd and waits for it to exit; the data directory is kept for [`Self::restart`].
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same ports and data directory and waits until it is healthy.
    ///
    /// # Errors
    /// As [`Self::start`].
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.stop();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut result = self.spawn_and_wait();
        // The old process may hold the ports for a moment after it exits.
        while result.is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            result = self.spawn_and_wait();
        }
        result
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    fn spawn_and_wait(&mut self) -> anyhow::Result<()> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .context("opening the etcd log file")?;
        let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
        let client_url = self.endpoint();
        let peer_url = format!("http://127.0.0.1:{}", self.peer_port);
        let mut command = Command::new(&self.binary);
        command
            .arg("--name")
            .arg("default")
            .arg("--data-dir")
            .arg(self.dir.path().join("data"))
            .arg("--listen-client-urls")
            .arg(&client_url)
            .arg("--advertise-client-urls")
            .arg(&client_url)
            .arg("--listen-peer-urls")
            .arg(&peer_url)
            .arg("--initial-advertise-peer-urls")
            .arg(&peer_url)
            .arg("--initial-cluster")
            .arg(format!("default={peer_url}"))
            .arg("--initial-cluster-state")
            .arg("new")
            .arg("--quota-backend-bytes")
            .arg((8u64 << 30).to_string())
            .arg("--auto-compaction-retention")
            .arg("0")
            .arg("--experimental-watch-progress-notify-interval")
            .arg("1s")
            .arg("--logger")
            .arg("zap")
            .arg("--log-outputs")
            .arg("stderr")
            .arg("--listen-metrics-urls")
            .arg(self.metrics_url());
        if let Some(tls) = &self.tls {
            command
                .arg("--cert-file")
                .arg(&tls.cert_file)
                .arg("--key-file")
                .arg(&tls.key_file)
                .arg("--trusted-ca-file")
                .arg(&tls.ca_file)
                .arg("--client-cert-auth");
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(log.try_clone().context("duplicating the log handle")?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("running {}", self.binary.display()))?;
        self.child = Some(child);
        match self.wait_healthy() {
            Ok(()) => Ok(()),
            Err(e) => {
                self.stop();
                let tail = log_tail(&self.log_path(), log_start);
                Err(e.context(format!(
                    "etcd at {client_url} did not become healthy; log tail:\n{tail}"
                )))
            }
        }
    }

    fn wait_healthy(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + HEALTH_TIMEOUT;
        let addr = SocketAddr::from(([127, 0, 0, 1], self.metrics_port));
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    self.child = None;
                    bail!("etcd exited early with {status}");
                }
            }
            if health_ok(addr) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("etcd not healthy after {HEALTH_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `$ETCD_BIN`, or `etcd` found on `PATH`.
fn find_etcd() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os("ETCD_BIN") {
        let bin = PathBuf::from(bin);
        if bin.is_file() {
            return Ok(bin);
        }
        bail!("$ETCD_BIN={} is not a file", bin.display());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("etcd"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            anyhow!(
                "etcd not found on PATH (or $ETCD_BIN): install etcd-server (apt-get install etcd-server)"
            )
        })
}

/// Distinct free loopback ports (client, peer, metrics).
fn free_ports() -> anyhow::Result<[u16; 3]> {
    let listeners = [(); 3].map(|()| TcpListener::bind("127.0.0.1:0"));
    let mut ports = [0; 3];
    for (port, listener) in ports.iter_mut().zip(listeners) {
        *port = listener
            .context("finding a free port")?
            .local_addr()?
            .port();
    }
    Ok(ports)
}

/// True when etcd's `/health` endpoint answers `"health":"true"`.
fn health_ok(addr: SocketAddr) -> bool {
    let attempt = || -> std::io::Result<bool> {
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.set_write_timeout(Some(Duration::from_secs(2)))?;
        stream.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        Ok(response.starts_with("HTTP/1.") && response.contains("\"health\":\"true\""))
    };
    attempt().unwrap_or(false)
}

/// The last few lines etcd logged since `from` (a byte offset in the log file).
fn log_tail(path: &Path, from: u64) -> String {
    let read = || -> std::io::Result<String> {
        let mut file = File::open(path)?;
        file.seek(SeekFrom::Start(from))?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        Ok(text)
    };
    match read() {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(30)..].join("\n")
        }
        Err(e) => format!("(log unreadable: {e})"),
    }
}
