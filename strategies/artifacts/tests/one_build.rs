//! Every strategy crate of `strategies/` builds in one `cargo build` for `wasm32-unknown-unknown`,
//! those that depend on another strategy crate as a library included: a module's exports are its
//! binary's (`src/main.rs`), never its library's, so no two sets of entry points meet at link time.

use std::collections::BTreeSet;
use std::path::Path;

/// The package name in a crate's `Cargo.toml`.
fn package_name(manifest: &str) -> String {
    manifest
        .lines()
        .find_map(|l| l.strip_prefix("name = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("a package name")
        .to_owned()
}

/// The crates under `strategies/` that are modules: a library and a `src/main.rs` exporting it.
fn strategy_crates() -> BTreeSet<String> {
    let strategies = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_dir(&strategies)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|dir| dir.join("src/main.rs").is_file())
        .map(|dir| package_name(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()))
        .collect()
}

#[test]
fn every_strategy_crate_builds_in_the_one_cargo_command() {
    let built: BTreeSet<String> = strategy_artifacts::BUILT_TOGETHER
        .iter()
        .map(|k| k.to_string())
        .collect();
    assert_eq!(built, strategy_crates());
}

#[test]
fn strategies_that_reuse_another_as_a_library_build_beside_it() {
    let strategies = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for dependent in ["builtin", "configmap-strict"] {
        let manifest =
            std::fs::read_to_string(strategies.join(dependent).join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains("strategy-configmap.workspace = true"),
            "{dependent} links the ConfigMap example's library"
        );
    }
    for krate in [
        "strategy-configmap",
        "strategy-builtin",
        "strategy-configmap-strict",
    ] {
        assert!(
            strategy_artifacts::BUILT_TOGETHER.contains(&krate),
            "{krate}"
        );
    }
    for module in [
        strategy_artifacts::CONFIGMAP,
        strategy_artifacts::BUILTIN,
        strategy_artifacts::CONFIGMAP_STRICT,
    ] {
        assert_eq!(&std::fs::read(module).unwrap()[..4], b"\0asm", "{module}");
    }
}
