//! Compiles the Go guests of `strategies/go/` to WASI reactor modules with the standard Go
//! toolchain (`GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared`), offline: the Go SDK and
//! the examples use the standard library only.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Go module holding the Go examples, under the workspace root.
pub const GO_EXAMPLES: &str = "strategies/go";

/// The Go toolchain: `$GO`, else the one `scripts/setup.sh` installs into `.tools/go`, else `go`
/// on the `PATH`.
pub fn go_command(root: &Path) -> PathBuf {
    if let Some(go) = env::var_os("GO") {
        return go.into();
    }
    let installed = root.join(".tools/go/go/bin/go");
    match installed.exists() {
        true => installed,
        false => "go".into(),
    }
}

/// Tells cargo to rerun the build script when the Go SDK or a Go guest changes.
pub fn rerun_if_changed_go(root: &Path) {
    for path in ["guest-sdk/go", GO_EXAMPLES] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    println!("cargo:rerun-if-env-changed=GO");
}

/// Builds each of `packages` (directories under [`GO_EXAMPLES`], e.g. `deployment` or
/// `hostile/spin`) into `<OUT_DIR>/go-wasm/<package with / as ->.wasm` and returns the paths, in
/// order.
///
/// # Panics
/// When the Go toolchain is missing or a build fails: a build script has no better way to say so.
pub fn build_go(root: &Path, packages: &[&str]) -> Vec<PathBuf> {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR")).join("go-wasm");
    std::fs::create_dir_all(&out_dir).expect("create the Go output directory");
    let go = go_command(root);
    packages
        .iter()
        .map(|package| {
            let file = out_dir.join(format!("{}.wasm", package.replace('/', "-")));
            let status = Command::new(&go)
                .current_dir(root.join(GO_EXAMPLES))
                .args(["build", "-buildmode=c-shared", "-trimpath", "-o"])
                .arg(&file)
                .arg(format!("./{package}"))
                .envs([
                    ("GOOS", "wasip1"),
                    ("GOARCH", "wasm"),
                    ("GOPROXY", "off"),
                    ("GOTOOLCHAIN", "local"),
                    ("GOFLAGS", "-mod=mod"),
                ])
                .status()
                .unwrap_or_else(|e| {
                    panic!(
                        "run the Go toolchain ({}): {e}; `scripts/setup.sh` installs it into .tools/go (or set $GO)",
                        go.display()
                    )
                });
            assert!(status.success(), "building the Go guest {package} failed: {status}");
            file
        })
        .collect()
}
