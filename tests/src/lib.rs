//! Helpers for the end-to-end tests: start the real `strategy-host` binary on a free port and
//! talk to it over HTTP.
//! The HTTP client (`client.rs`) and kubectl and Helm (`tools.rs`) are re-exported from here.

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

mod client;
pub mod history;
pub mod load;
pub mod native;
pub mod oci_registry;
pub mod pyjwt;
pub mod secure;
mod tools;
pub mod webhook_server;

pub use client::{call, call_raw, call_with, get, request, RawReply, Reply, WatchReader};
pub(crate) use tools::run_kubectl;
pub use tools::{
    helm, helm_path, kubectl, kubectl_path, kubectl_with, latest_kubectl_path, KubeFixture,
    LatestKubectl,
};

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
        // The server gives its connections 10 s to finish; the rest is room for a machine busy
        // with other tests (CI once saw a stop take over 20 s beside a Go build).
        let deadline = Instant::now() + Duration::from_secs(45);
        loop {
            if let Some(status) = self.child.try_wait()? {
                self.drain_log();
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!(
                    "strategy-host did not exit within 45s of SIGTERM; its threads (name, state, \
                     kernel wait):\n{}\nits log:\n{}",
                    threads_of(self.child.id()),
                    self.log_text()
                );
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

/// Each thread of process `pid` as `name state wait-channel`, from `/proc`: where a process
/// that will not stop is stuck.
fn threads_of(pid: u32) -> String {
    let read = |path: std::path::PathBuf| std::fs::read_to_string(path).unwrap_or_default();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return "(gone)".into();
    };
    tasks
        .flatten()
        .map(|task| {
            let stat = read(task.path().join("stat"));
            // The state is the field after the parenthesised name.
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next();
            format!(
                "{} {} {}",
                read(task.path().join("comm")).trim(),
                state.unwrap_or("?"),
                read(task.path().join("wchan")).trim()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
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
