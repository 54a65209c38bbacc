//! The strategy runtime: resources' behaviour as WebAssembly modules.
//!
//! One wasmtime engine ([`Runtime`]) with the pooling allocator, copy-on-write memory images and a
//! 1 ms epoch ticker; modules compiled once (cached on disk by digest), checked against the ABI
//! and pre-linked ([`StrategyModule`]); a fresh instance per registry phase with a deadline, a
//! memory cap and an output cap; the registry's `Strategy` trait on top ([`WasmStrategy`]); the
//! table of active modules per resource with atomic swap ([`ModuleTable`]); and hot reload from a
//! watched directory ([`DirectoryWatcher`]).
//!
//! The registry takes a resource's strategy with [`ModuleTable::strategy`] and supplies the
//! objects the `get`/`list`/`apply` host functions reach with [`Runtime::set_host_api`].

pub mod abi;
mod engine;
mod error;
mod host_functions;
mod instance;
mod limits;
mod manifest;
mod metrics;
mod module;
mod module_cache;
mod registry_adapter;
mod reload;
mod table;

pub use engine::{Runtime, RuntimeConfig, EPOCH_TICK};
pub use error::{CallFailure, Error, FailureKind, Result};
pub use host_functions::{with_apply_depth, CallerInfo, HostApi, NoHostApi};
pub use manifest::ModuleManifest;
pub use metrics::{Metrics, ModuleCounters};
pub use module::{digest, StrategyModule};
pub use registry_adapter::WasmStrategy;
pub use reload::{source_name, DirectoryWatcher};
pub use table::{ModuleState, ModuleStatus, ModuleTable, ResourceCheck};
