//! Compiles guest crates of this workspace to wasm from a build script (the
//! way wasmtime's `crates/test-programs/artifacts/build.rs` builds its guests).
//!
//! A strategy crate's module is its binary target (`src/main.rs`, where `export_strategy!`
//! exports the library's strategy), so the crates build together in one `cargo build` even when
//! one links another as a library.
//!
//! The inner `cargo build` uses its own target directory under `OUT_DIR`, so it never waits on
//! the lock the outer build holds; the calling script reruns only when a guest or the SDK
//! changes (see [`rerun_if_changed`]), and the inner build is incremental.
//!
//! Go guests (`strategies/go/`) are built with the Go toolchain instead ([`build_go`]).

mod go;

pub use go::{build_go, go_command, rerun_if_changed_go, GO_EXAMPLES};

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The profile guests are built with: release, plus what makes small, fast modules.
pub const PROFILE: &str = "strategy-wasm";

/// The workspace root, from the calling crate's `CARGO_MANIFEST_DIR` and its depth below the root.
///
/// # Panics
/// When not called from a build script or the path does not exist.
pub fn workspace_root(depth: usize) -> PathBuf {
    let mut dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    for _ in 0..depth {
        dir.push("..");
    }
    dir.canonicalize().expect("the workspace root")
}

/// Tells cargo to rerun the build script when the SDK, the lock file or one of `crates`
/// (directories under `strategies/`, named like the crate without `strategy-`) changes.
pub fn rerun_if_changed(root: &Path, crates: &[&str]) {
    for path in [
        "guest-sdk/src",
        "guest-sdk/proto",
        "guest-sdk/build.rs",
        "guest-sdk/Cargo.toml",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    for krate in crates {
        let dir = crate_dir(root, krate);
        println!("cargo:rerun-if-changed={}", dir.join("src").display());
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("Cargo.toml").display()
        );
    }
}

fn crate_dir(root: &Path, krate: &str) -> PathBuf {
    root.join("strategies")
        .join(krate.trim_start_matches("strategy-"))
}

/// Builds `crates` for wasm, in one cargo invocation, into a target directory under `OUT_DIR`
/// and returns the path of each crate's module (its binary, `<crate>.wasm`), in order.
///
/// # Panics
/// When cargo fails or a module is missing: a build script has no better way to report it.
pub fn build(root: &Path, crates: &[&str]) -> Vec<PathBuf> {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let target_dir = out_dir.join("wasm-target");
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "build",
            "--target",
            "wasm32-unknown-unknown",
            "--profile",
            PROFILE,
        ])
        .arg("--target-dir")
        .arg(&target_dir)
        .args(profile_config());
    for krate in crates {
        cmd.args(["-p", krate]);
    }
    // Flags meant for the outer (native) build must not leak into the guest build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_PROFILE_RELEASE_DEBUG",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("run cargo to build the wasm guests");
    assert!(
        status.success(),
        "building the wasm guests failed: {status} (is the wasm32-unknown-unknown target installed? `rustup target add wasm32-unknown-unknown`)"
    );
    let wasm_dir = target_dir.join("wasm32-unknown-unknown").join(PROFILE);
    crates
        .iter()
        .map(|krate| {
            let file = wasm_dir.join(format!("{krate}.wasm"));
            assert!(file.exists(), "{} was not built", file.display());
            file
        })
        .collect()
}

/// `--config` flags defining the guest profile (kept out of the workspace's `Cargo.toml`).
fn profile_config() -> Vec<String> {
    [
        ("inherits", "\"release\""),
        ("opt-level", "3"),
        ("lto", "true"),
        ("codegen-units", "1"),
        ("panic", "\"abort\""),
        ("debug", "false"),
        ("strip", "true"),
    ]
    .iter()
    .flat_map(|(k, v)| ["--config".to_owned(), format!("profile.{PROFILE}.{k}={v}")])
    .collect()
}
