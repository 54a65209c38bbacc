//! Compiles the example strategies to `wasm32-unknown-unknown` and emits constants naming the
//! `.wasm` files (the way wasmtime's `crates/test-programs/artifacts/build.rs` builds its guests).
//!
//! The inner `cargo build` uses its own target directory under `OUT_DIR`, so it never waits on
//! the lock the outer build holds; the script reruns only when a strategy or the SDK changes, and
//! the inner build is incremental.

use std::env;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

/// (crate name, constant name) of every example strategy built (`ALL` lists these).
const STRATEGIES: &[(&str, &str)] = &[
    ("strategy-deployment", "DEPLOYMENT"),
    ("strategy-configmap", "CONFIGMAP"),
    ("strategy-project", "PROJECT"),
];

/// (crate name, constant name) of the test programs built beside them: strategies that exist to
/// misbehave in a way a WAT fixture could not easily (e.g. a hook applying its own kind).
const TEST_PROGRAMS: &[(&str, &str)] = &[("strategy-replicator", "REPLICATOR")];

/// The profile the guests are built with: release, plus what makes small, fast modules.
const PROFILE: &str = "strategy-wasm";

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.join("../..").canonicalize().unwrap();
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").unwrap());
    let target_dir = out_dir.join("wasm-target");

    for path in [
        "guest-sdk/src",
        "guest-sdk/proto",
        "guest-sdk/build.rs",
        "guest-sdk/Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    for (krate, _) in STRATEGIES.iter().chain(TEST_PROGRAMS) {
        let dir = root
            .join("strategies")
            .join(krate.trim_start_matches("strategy-"));
        println!("cargo:rerun-if-changed={}", dir.join("src").display());
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("Cargo.toml").display()
        );
    }

    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&root)
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
    for (krate, _) in STRATEGIES.iter().chain(TEST_PROGRAMS) {
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
    let status = cmd
        .status()
        .expect("run cargo to build the wasm strategies");
    assert!(
        status.success(),
        "building the wasm strategies failed: {status}"
    );

    let wasm_dir = target_dir.join("wasm32-unknown-unknown").join(PROFILE);
    let mut consts = String::new();
    let mut all = String::from(
        "/// Every example strategy: (crate name, path of its `.wasm`).\npub const ALL: &[(&str, &str)] = &[\n",
    );
    for (krate, name) in STRATEGIES.iter().chain(TEST_PROGRAMS) {
        let file = wasm_dir.join(format!("{}.wasm", krate.replace('-', "_")));
        assert!(file.exists(), "{} was not built", file.display());
        let path = file.display().to_string();
        writeln!(
            consts,
            "/// The `.wasm` of `{krate}`.\npub const {name}: &str = {path:?};"
        )
        .unwrap();
        if STRATEGIES.iter().any(|(k, _)| k == krate) {
            writeln!(all, "    ({krate:?}, {name}),").unwrap();
        }
    }
    all.push_str("];\n");
    std::fs::write(out_dir.join("artifacts.rs"), consts + &all).unwrap();
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
