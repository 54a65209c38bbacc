//! Helpers for the end-to-end tests: start the real `strategy-host` binary on a free port and
//! talk to it over HTTP.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};

/// The `strategy-host` binary cargo built beside this test (`cargo test --workspace` builds it).
pub fn host_binary() -> anyhow::Result<PathBuf> {
    if let Ok(path) = std::env::var("STRATEGY_HOST_BIN") {
        return Ok(PathBuf::from(path));
    }
    // The test executable lives in target/<profile>/deps; the binary in target/<profile>.
    let exe = std::env::current_exe()?;
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .ok_or_else(|| anyhow!("unexpected test executable path {}", exe.display()))?;
    let bin = profile_dir.join("strategy-host");
    if !bin.exists() {
        bail!(
            "{} is missing: run the tests with `cargo test --workspace` (which builds it) or set STRATEGY_HOST_BIN",
            bin.display()
        );
    }
    Ok(bin)
}

/// A running `strategy-host` process, killed when dropped.
pub struct HostProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    log: mpsc::Receiver<String>,
    log_lines: Vec<String>,
}

impl HostProcess {
    /// Starts the binary with `args` (plus `--listen 127.0.0.1:0`) and waits until it listens.
    pub fn start(args: &[&str]) -> anyhow::Result<Self> {
        let mut child = Command::new(host_binary()?)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "info")
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
                host.log_lines.push(line);
                if let (true, Some(address)) = (listening, address) {
                    host.base_url = format!("http://{address}");
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
