//! Compiles the host/guest ABI (`guest-sdk/proto/strategy.proto`) into Rust with prost.

fn main() -> std::io::Result<()> {
    println!("cargo:rerun-if-changed=../guest-sdk/proto/strategy.proto");
    // Maps (a user's `extra`) as `BTreeMap`, as the guest SDK compiles them.
    prost_build::Config::new().btree_map(["."]).compile_protos(
        &["../guest-sdk/proto/strategy.proto"],
        &["../guest-sdk/proto"],
    )
}
