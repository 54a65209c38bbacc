//! Compiles the ABI (`proto/strategy.proto`) into Rust with prost.

fn main() -> std::io::Result<()> {
    println!("cargo:rerun-if-changed=proto/strategy.proto");
    // Maps (a user's `extra`) as `BTreeMap`: ordered, so an encoding is deterministic.
    prost_build::Config::new()
        .btree_map(["."])
        .compile_protos(&["proto/strategy.proto"], &["proto"])
}
