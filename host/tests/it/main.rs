//! The host's integration tests, one binary: strategies built from `strategies/` run through
//! the wasm runtime (every phase, hot reload, hostile modules, older ABI versions), and the
//! etcd3 store failing over between the members of a real three-member cluster.

mod storage_etcd3_ambiguous;
mod storage_etcd3_failover;
mod wasm_abi_versions;
mod wasm_admission_policies;
mod wasm_common;
mod wasm_conversion;
mod wasm_go;
mod wasm_hostile;
mod wasm_instances;
mod wasm_reload;
mod wasm_strategies;
mod wasm_tiers;
