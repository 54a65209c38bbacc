//! Compiles the host/guest ABI (`guest-sdk/proto/strategy.proto`) into Rust with prost.

fn main() -> std::io::Result<()> {
    println!("cargo:rerun-if-changed=../guest-sdk/proto/strategy.proto");
    prost_build::Config::new().compile_protos(
        &["../guest-sdk/proto/strategy.proto"],
        &["../guest-sdk/proto"],
    )
}
