//! The test programs of Strategy Host: the example strategies of `strategies/`, compiled to
//! `wasm32-unknown-unknown` by this crate's build script (one constant per strategy naming its
//! `.wasm` file; `ALL` lists the examples), the Rust test programs beside them
//! (`strategies/replicator`: a hook that applies its own kind, or whatever the object names;
//! `strategies/configmap-strict`: a stricter second version of the ConfigMap example), the
//! hostile modules of `hostile/` (WAT), and the well-behaved WAT fixtures of `fixtures/` (a module
//! echoing the requests it is sent, to see what the host tells a module of a given ABI version),
//! and the Go examples of `strategies/go/` with its hostile Go fixtures (`GO_DEPLOYMENT`,
//! `GO_TENANT`, `HOSTILE_GO`), built with the Go toolchain into WASI reactors, for tests and
//! benchmarks.
//!
//! ```
//! let bytes = std::fs::read(strategy_artifacts::DEPLOYMENT).unwrap();
//! assert_eq!(&bytes[..4], b"\0asm");
//! let looping = strategy_artifacts::hostile_widget_strategy("infinite_loop");
//! assert_eq!(&looping[..4], b"\0asm");
//! ```

use prost::Message as _;
use strategy_guest_sdk::abi;

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));

/// The hostile fixtures, by name (`hostile/<name>.wat`): each misbehaves in one way.
pub const HOSTILE: &[&str] = &[
    "infinite_loop",
    "memory_bomb",
    "trap",
    "garbage_output",
    "bad_patch",
    "oversized_output",
    "missing_exports",
    "wrong_abi_version",
    "ungranted_import",
    "unknown_import",
];

/// A hostile fixture compiled to wasm: `hostile/<name>.wat` with its `@MANIFEST@` data string
/// and `@MANIFEST_PACKED@` constant replaced by `manifest` (an encoded `Manifest`), placed at
/// offset 1024.
///
/// # Panics
/// When the fixture is missing or does not assemble.
pub fn hostile(name: &str, manifest: &[u8]) -> Vec<u8> {
    assemble(&format!("hostile/{name}.wat"), manifest)
}

/// `fixtures/echo_request.wat` with `manifest` filled in (as [`hostile`] does): a module that
/// answers every call with a `Response` whose one warning is the encoded `Request` it was sent,
/// in lowercase hex, so a test can decode what the host told it (requests under 8 KiB).
///
/// # Panics
/// When the fixture does not assemble.
pub fn echo_request(manifest: &[u8]) -> Vec<u8> {
    assemble("fixtures/echo_request.wat", manifest)
}

/// Assembles the WAT file at `path` (under this crate) with its manifest placeholders replaced.
fn assemble(path: &str, manifest: &[u8]) -> Vec<u8> {
    let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let data: String = manifest.iter().map(|b| format!("\\{b:02x}")).collect();
    let packed = (1024u64 << 32) | manifest.len() as u64;
    let text = text
        .replace("@MANIFEST@", &data)
        .replace("@MANIFEST_PACKED@", &packed.to_string());
    wat::parse_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The manifest hostile fixtures claim by default: a module named `hostile`, the strategy of
/// `example.com/v1` `Widget` (namespaced, `widgets`) implementing the create phase, speaking
/// ABI version `abi_version`.0 (no minor version, as modules built before minor versions
/// existed) and importing `host_functions` (`HostFunction` values of the ABI).
pub fn widget_manifest(abi_version: u32, host_functions: &[i32]) -> Vec<u8> {
    abi::Manifest {
        abi_version,
        abi_minor_version: 0,
        name: "hostile".into(),
        resources: vec![abi::Resource {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            scope: abi::Scope::Namespaced as i32,
        }],
        operations: vec![
            abi::Operation::PrepareForCreate as i32,
            abi::Operation::Validate as i32,
        ],
        host_functions: host_functions.to_vec(),
        applies: Vec::new(),
        admission_policy: None,
        authorizer: None,
    }
    .encode_to_vec()
}

/// A hostile fixture as a Widget strategy, as a user would drop it in: ABI version 1, except
/// `wrong_abi_version` (version 99), and `ungranted_import`, which imports `apply` without the
/// grant.
pub fn hostile_widget_strategy(name: &str) -> Vec<u8> {
    let abi_version = if name == "wrong_abi_version" { 99 } else { 1 };
    hostile(name, &widget_manifest(abi_version, &[]))
}

/// A hostile fixture claiming to convert `resource` between its versions (ABI 1.3, the
/// `Convert` operation only), as a user would bind a conversion module.
pub fn hostile_converter(name: &str, resource: abi::Resource) -> Vec<u8> {
    let manifest = abi::Manifest {
        abi_version: 1,
        abi_minor_version: 3,
        name: "hostile-converter".into(),
        resources: vec![resource],
        operations: vec![abi::Operation::Convert as i32],
        host_functions: Vec::new(),
        applies: Vec::new(),
        admission_policy: None,
        authorizer: None,
    };
    hostile(name, &manifest.encode_to_vec())
}
