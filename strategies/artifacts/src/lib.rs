//! The example strategies of `strategies/`, compiled to `wasm32-unknown-unknown` by this crate's
//! build script: one constant per strategy naming its `.wasm` file, for tests and benchmarks.
//!
//! ```
//! let bytes = std::fs::read(strategy_artifacts::DEPLOYMENT).unwrap();
//! assert_eq!(&bytes[..4], b"\0asm");
//! ```

include!(concat!(env!("OUT_DIR"), "/artifacts.rs"));
