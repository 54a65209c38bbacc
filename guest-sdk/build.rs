//! Compiles the ABI (`proto/strategy.proto`) into Rust with prost.

fn main() -> std::io::Result<()> {
    println!("cargo:rerun-if-changed=proto/strategy.proto");
    prost_build::Config::new().compile_protos(&["proto/strategy.proto"], &["proto"])
}
