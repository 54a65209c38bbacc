//! Strategy Host's wasm layer: resources' behaviour as WebAssembly modules.
//!
//! `strategy-host-wasm-runtime` is the wasmtime level (engine, modules, instances, limits, host functions);
//! [`sources`] feeds modules in (a watched directory, `StrategyModule` objects, declared
//! resources); the [`ModuleTable`] keeps the active module per resource with atomic swap;
//! [`WasmStrategy`] is the `crate::strategy::Strategy` that calls a module; and
//! [`RegistryHostApi`] answers the modules' `get`/`list`/`apply` host functions through the
//! registry.
//!
//! It sits above the registry and beside the api: it depends on the registry, the contract and
//! the runtime, never on the storage below the registry, the api or the controllers.

pub use strategy_host_contract::{admission_policy, authorizer, strategy, user};

mod host_api;
mod module_table;
mod object_answer;
pub mod rollout;
mod slot;
pub mod sources;
mod wasm_strategy;

pub use host_api::RegistryHostApi;
pub use module_table::{
    Compiling, ConversionFailure, ConversionSample, ConversionSamples, ModuleState, ModuleStatus,
    ModuleTable, PolicyInForce, PolicyReplay, Refusal, ReplayError, ResourceCheck,
};
pub use object_answer::{apply_object_answer, AnswerError, OperationError};
pub use strategy_host_wasm_runtime::{Runtime, RuntimeConfig};
pub use wasm_strategy::WasmStrategy;
