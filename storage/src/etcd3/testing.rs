//! A real etcd for tests and benchmarks: [`EtcdServer`] runs the `etcd` binary on free loopback
//! ports in a temporary data directory, and can stop and restart it to exercise recovery;
//! [`EtcdCluster`] runs several of them as the members of one cluster.

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
/// use strategy_host_storage::etcd3::testing::EtcdServer;
/// let etcd = EtcdServer::start().expect("etcd");
/// println!("etcd at {}", etcd.endpoint());
/// ```
#[derive(Debug)]
pub struct EtcdServer {
    binary: PathBuf,
    dir: tempfile::TempDir,
    /// The member's name (`--name`).
    name: String,
    /// `--initial-cluster`: every member's `name=peer URL`, this one's included.
    initial_cluster: String,
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

    /// [`Self::start`] for async tests: on a blocking thread (the health check blocks).
    ///
    /// # Panics
    /// When etcd does not start.
    pub async fn start_in_test() -> EtcdServer {
        tokio::task::spawn_blocking(Self::start)
            .await
            .expect("the etcd start-up thread")
            .expect("etcd")
    }

    /// A store on this etcd with the default options.
    ///
    /// # Panics
    /// When it cannot connect.
    pub async fn connect_store(&self) -> super::Etcd3Store {
        super::Etcd3Store::connect(super::Etcd3Config::new(vec![self.endpoint()]))
            .await
            .expect("connect to etcd")
    }

    fn start_with(tls: Option<ServerTls>) -> anyhow::Result<EtcdServer> {
        let binary = find_etcd()?;
        let mut last_error = None;
        for _ in 0..PORT_ATTEMPTS {
            let ports = free_ports(3)?;
            let mut server = EtcdServer::member(&binary, "default", &ports, tls.clone())?;
            server.initial_cluster = format!("default={}", server.peer_url());
            match server.spawn_and_wait() {
                Ok(()) => return Ok(server),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow!("etcd did not start")))
    }

    /// A member not yet started, on `ports` (client, peer, metrics), in a fresh temporary
    /// directory; the caller sets `initial_cluster`.
    fn member(
        binary: &Path,
        name: &str,
        ports: &[u16],
        tls: Option<ServerTls>,
    ) -> anyhow::Result<EtcdServer> {
        Ok(EtcdServer {
            binary: binary.to_path_buf(),
            dir: tempfile::Builder::new()
                .prefix("etcd-test-")
                .tempdir()
                .context("creating a temporary directory for etcd")?,
            name: name.to_string(),
            initial_cluster: String::new(),
            client_port: ports[0],
            peer_port: ports[1],
            metrics_port: ports[2],
            tls,
            child: None,
        })
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// True when this member is running and is the cluster's leader (from its metrics).
    pub fn is_leader(&self) -> bool {
        self.child.is_some()
            && metrics(self.metrics_port)
                .is_some_and(|text| text.lines().any(|l| l == "etcd_server_is_leader 1"))
    }

    /// How many gRPC calls of `method` (e.g. `Txn`, `Range`) this process has answered, with
    /// any code, since it started; 0 when its metrics do not answer. Shows which members a
    /// client's requests reach.
    pub fn grpc_calls_handled(&self, method: &str) -> u64 {
        let label = format!("grpc_method=\"{method}\"");
        metrics(self.metrics_port)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("grpc_server_handled_total{") && l.contains(&label))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
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

    /// Freezes etcd in place (SIGSTOP): it keeps its connections and answers nothing, as a
    /// member stalled on its disk or its host does, until [`Self::resume`].
    ///
    /// # Panics
    /// When etcd is not running or the signal cannot be sent.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused etcd run again (SIGCONT).
    ///
    /// # Panics
    /// As [`Self::pause`].
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("etcd is running").id();
        let status = std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} {pid}");
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
        let log_start = self.spawn()?;
        self.wait_ready(log_start)
    }

    /// Starts the etcd process; returns where its log starts for [`Self::wait_ready`].
    fn spawn(&mut self) -> anyhow::Result<u64> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .context("opening the etcd log file")?;
        let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
        let client_url = self.endpoint();
        let peer_url = self.peer_url();
        let mut command = Command::new(&self.binary);
        command
            .arg("--name")
            .arg(&self.name)
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
            .arg(&self.initial_cluster)
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
        Ok(log_start)
    }

    /// Waits until the started process is healthy; otherwise stops it and fails with the tail
    /// of what it logged since `log_start`.
    fn wait_ready(&mut self, log_start: u64) -> anyhow::Result<()> {
        match self.wait_healthy() {
            Ok(()) => Ok(()),
            Err(e) => {
                self.stop();
                let tail = log_tail(&self.log_path(), log_start);
                Err(e.context(format!(
                    "etcd at {} did not become healthy; log tail:\n{tail}",
                    self.endpoint()
                )))
            }
        }
    }

    fn wait_healthy(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + HEALTH_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    self.child = None;
                    bail!("etcd exited early with {status}");
                }
            }
            if health_ok(self.metrics_port) {
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

/// A throwaway etcd cluster of several members on loopback, each an [`EtcdServer`] with its own
/// ports and data directory, to exercise what happens when members die and come back.
///
/// ```no_run
/// use strategy_host_storage::etcd3::testing::EtcdCluster;
/// let mut cluster = EtcdCluster::start(3).expect("etcd cluster");
/// println!("etcd at {:?}", cluster.endpoints());
/// cluster.member_mut(0).stop();
/// ```
#[derive(Debug)]
pub struct EtcdCluster {
    members: Vec<EtcdServer>,
}

impl EtcdCluster {
    /// Starts `size` members as one new cluster and waits until every one is healthy.
    ///
    /// # Errors
    /// As [`EtcdServer::start`].
    pub fn start(size: usize) -> anyhow::Result<EtcdCluster> {
        let binary = find_etcd()?;
        let mut last_error = None;
        for _ in 0..PORT_ATTEMPTS {
            let ports = free_ports(3 * size)?;
            let mut members = ports
                .chunks(3)
                .enumerate()
                .map(|(i, ports)| EtcdServer::member(&binary, &format!("member-{i}"), ports, None))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let initial_cluster = members
                .iter()
                .map(|m| format!("{}={}", m.name, m.peer_url()))
                .collect::<Vec<_>>()
                .join(",");
            for member in &mut members {
                member.initial_cluster = initial_cluster.clone();
            }
            // Every member must be running before any can be healthy: none has a quorum alone.
            match Self::spawn_all(&mut members) {
                Ok(()) => return Ok(EtcdCluster { members }),
                Err(e) => last_error = Some(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow!("the etcd cluster did not start")))
    }

    fn spawn_all(members: &mut [EtcdServer]) -> anyhow::Result<()> {
        let log_starts = members
            .iter_mut()
            .map(EtcdServer::spawn)
            .collect::<anyhow::Result<Vec<_>>>()?;
        for (member, log_start) in members.iter_mut().zip(log_starts) {
            member.wait_ready(log_start)?;
        }
        Ok(())
    }

    /// Every member's client URL, in member order.
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(EtcdServer::endpoint).collect()
    }

    /// The member at `index` (0-based), e.g. to read its endpoint.
    pub fn member(&self, index: usize) -> &EtcdServer {
        &self.members[index]
    }

    /// The member at `index`, to [`stop`](EtcdServer::stop) (SIGKILL) or
    /// [`restart`](EtcdServer::restart) it.
    pub fn member_mut(&mut self, index: usize) -> &mut EtcdServer {
        &mut self.members[index]
    }

    /// The index of the current leader, if a running member says it leads.
    pub fn leader(&self) -> Option<usize> {
        self.members.iter().position(EtcdServer::is_leader)
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

/// `count` distinct free loopback ports (all listeners are held until every port is found, so
/// none repeats).
fn free_ports(count: usize) -> anyhow::Result<Vec<u16>> {
    let listeners = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0").context("finding a free port"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr()?.port()))
        .collect()
}

/// A plain HTTP/1.0 GET of `path` on the loopback `port`; the whole response, headers included.
fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    Ok(response)
}

/// True when etcd's `/health` endpoint answers `"health":"true"`.
fn health_ok(port: u16) -> bool {
    http_get(port, "/health").is_ok_and(|response| {
        response.starts_with("HTTP/1.") && response.contains("\"health\":\"true\"")
    })
}

/// etcd's Prometheus metrics, if its metrics endpoint answers.
fn metrics(port: u16) -> Option<String> {
    http_get(port, "/metrics").ok()
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
