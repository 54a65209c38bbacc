//! Compiles the messages of `/openapi/v2`'s protobuf form (`proto/openapi_v2.proto`) into Rust
//! with prost. (The built-in kinds' module is built by the wasm crate, the host/guest ABI by
//! the wasm runtime's crate.)

fn main() -> std::io::Result<()> {
    println!("cargo:rerun-if-changed=proto/openapi_v2.proto");
    // The part of gnostic's OpenAPI v2 document `/openapi/v2` sends as protobuf.
    prost_build::compile_protos(&["proto/openapi_v2.proto"], &["proto"])
}
