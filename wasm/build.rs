//! Compiles the built-in kinds' strategy (`strategies/builtin`) to wasm, which the crate embeds
//! (`sources/builtin_modules.rs`).

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let root = strategy_wasm_build::workspace_root(1);
    // The built-in module links the ConfigMap example's rules.
    strategy_wasm_build::rerun_if_changed(&root, &["strategy-builtin", "strategy-configmap"]);
    let built = strategy_wasm_build::build(&root, &["strategy-builtin"]);
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::copy(&built[0], out_dir.join("builtin.wasm"))?;
    Ok(())
}
