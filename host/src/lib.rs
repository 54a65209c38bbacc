//! Strategy Host: a Kubernetes-style API server whose per-resource behaviour comes from
//! WebAssembly strategy modules.
//!
//! The crate follows the data path: `api` (HTTP) → `registry` → `storage` (the cacher over
//! etcd3 or the embedded store) and `wasm` (the strategy runtime that supplies each resource's
//! `registry::strategy::Strategy`).

pub mod api;
pub mod app;
pub mod config;
pub mod registry;
pub mod storage;
pub mod strategy;
pub mod wasm;
