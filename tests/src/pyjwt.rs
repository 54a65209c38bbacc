//! The test programs under `tests/python` that need PyJWT, `cryptography` or grpcio (which
//! scripts/setup.sh installs into `.tools/pyjwt`): a command running one, and one serving from a
//! directory of its own until dropped.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `python3 tests/python/<script>` with the packages on its path.
///
/// # Panics
/// When scripts/setup.sh has not installed them.
pub fn command(script: &str) -> Command {
    let packages = root().join(".tools/pyjwt");
    assert!(
        ["jwt", "cryptography", "grpc"]
            .iter()
            .all(|p| packages.join(p).exists()),
        "{} missing: run scripts/setup.sh",
        packages.display()
    );
    let mut cmd = Command::new("python3");
    cmd.arg(root().join("tests/python").join(script))
        .env("PYTHONPATH", packages);
    cmd
}

/// A serving script, killed when dropped: started with `args` and then its directory, where it
/// writes its files and, once it listens, `port`.
#[derive(Debug)]
pub struct Served {
    child: Child,
    dir: tempfile::TempDir,
}

impl Served {
    /// Starts `script` and waits until it listens.
    ///
    /// # Panics
    /// When it cannot be run or does not listen within 30 s.
    pub fn start(script: &str, args: &[&str]) -> Self {
        Self::start_until(script, args, "port")
    }

    /// Starts `script` and waits until it writes `ready_file` into its directory.
    ///
    /// # Panics
    /// When it cannot be run or does not write it within 30 s.
    pub fn start_until(script: &str, args: &[&str], ready_file: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let child = command(script)
            .args(args)
            .arg(dir.path())
            .spawn()
            .unwrap_or_else(|e| panic!("run {script}: {e}"));
        let ready = dir.path().join(ready_file);
        crate::eventually(
            &format!("{script} listens"),
            Duration::from_secs(30),
            || ready.exists(),
        );
        Self { child, dir }
    }

    /// The port it listens on (127.0.0.1).
    ///
    /// # Panics
    /// When its port file does not hold one.
    pub fn port(&self) -> u16 {
        std::fs::read_to_string(self.file("port"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Its directory.
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The path of one of its files.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
