//! Compiles the messages of `/openapi/v2`'s protobuf form (`proto/openapi_v2.proto`) into Rust
//! with prost, and the built-in kinds' strategy (`strategies/builtin`) to wasm, which the
//! binary embeds. (The host/guest ABI is compiled by the wasm runtime's crate.)

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    println!("cargo:rerun-if-changed=proto/openapi_v2.proto");
    // The part of gnostic's OpenAPI v2 document `/openapi/v2` sends as protobuf.
    prost_build::compile_protos(&["proto/openapi_v2.proto"], &["proto"])?;

    let root = strategy_wasm_build::workspace_root(1);
    // The built-in module links the ConfigMap example's rules.
    strategy_wasm_build::rerun_if_changed(&root, &["strategy-builtin", "strategy-configmap"]);
    let built = strategy_wasm_build::build(&root, &["strategy-builtin"]);
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::copy(&built[0], out_dir.join("builtin.wasm"))?;
    Ok(())
}
