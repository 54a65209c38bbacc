//! The strategy runtime: resources' behaviour as WebAssembly modules.
//!
//! One wasmtime engine ([`Runtime`]) with the pooling allocator (data segments copied into
//! kept-resident pooled memories: measured faster than copy-on-write images for small strategy
//! modules) and a 1 ms epoch ticker; modules compiled once (cached on disk by digest), checked against the ABI
//! and pre-linked ([`StrategyModule`]); a fresh instance per registry phase with a deadline, a
//! memory cap and an output cap; the registry's `Strategy` trait on top ([`WasmStrategy`]); the
//! table of active modules per resource with atomic swap ([`ModuleTable`]); and hot reload from
//! two sources: a watched directory ([`DirectoryWatcher`]) and `StrategyModule` API objects
//! ([`module_object`], followed by [`object_source`]). [`declared_resources`] checks manifests
//! against the served definitions and defines resources that modules declare.
//!
//! The registry takes a resource's strategy with [`ModuleTable::strategy`] and supplies the
//! objects the `get`/`list`/`apply` host functions reach with [`Runtime::set_host_api`].

pub mod abi;
pub mod declared_resources;
mod engine;
mod error;
mod host_functions;
mod instance;
mod limits;
mod manifest;
mod metrics;
mod module;
mod module_cache;
pub mod module_object;
pub mod object_source;
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
