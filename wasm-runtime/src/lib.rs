//! The wasmtime-level runtime: one engine with the pooling allocator and an epoch ticker,
//! modules compiled once (cached on disk by digest) and checked against the ABI, instances
//! (kept across calls for reactor modules, Go's and the Rust SDK's; fresh per call for others)
//! with a deadline, a memory cap and an output cap, the host functions guests import (and a
//! WASI shim that grants nothing), and per-module metrics. It speaks the strategy contract's types
//! (`strategy-host-contract`) but knows nothing of the registry, the API or where modules come from.

pub mod abi;
mod data_segments;
mod engine;
mod epoch;
mod error;
mod host_functions;
mod instance;
mod instance_pool;
mod limits;
mod manifest;
mod metrics;
mod module;
mod module_cache;
pub mod placement;
mod policy_declaration;
mod wasi;

pub use engine::{Runtime, RuntimeConfig};
pub use error::{one_line, CallFailure, Error, FailureKind, Result};
pub use host_functions::{CallerInfo, Collection, HostApi, HostCallError, NoHostApi};
pub use instance::SessionOptions;
pub use instance_pool::InstanceReuse;
pub use limits::EPOCH_TICK;
pub use manifest::{AuthorizerDeclaration, GroupKind, ModuleManifest};
pub use metrics::{ApplyRefusal, Metrics, ModuleCounters};
pub use module::{digest, CompilerTier, StrategyModule};
pub use policy_declaration::{PolicyDeclaration, ValidationAction};
