//! Strategy Host: a Kubernetes-style API server whose per-resource behaviour comes from
//! WebAssembly strategy modules. This crate is the binary's: it assembles the layers, each a
//! crate that depends only on the crates below it, so the compiler keeps the layering.
//!
//! The crate graph (each server crate → the server crates it depends on), from the crates'
//! Cargo.toml files (a test keeps this drawing and docs/operations.md's equal to them):
//!
//! ```text
//! host           → admission api apimachinery authentication authorization contract controllers https registry storage wasm wasm-runtime
//! api            → apimachinery authentication authorization contract https registry storage wasm
//! admission      → apimachinery cel contract https registry wasm wasm-runtime
//! controllers    → apimachinery cel registry
//! authentication → apimachinery cel contract https
//! authorization  → apimachinery cel contract https registry
//! wasm           → apimachinery contract registry wasm-runtime
//! wasm-runtime   → contract
//! registry       → apimachinery cel contract https quantity storage
//! cel            → apimachinery contract
//! https          →
//! storage        → apimachinery
//! contract       →
//! quantity       →
//! apimachinery   →
//! ```
//!
//! - `api` (`strategy-host-api`; the server runs it through [`app::run`]): HTTP (routing,
//!   verbs, watch framing, discovery, OpenAPI, `/metrics`, audit, priority and fairness), and
//!   the one place errors become Kubernetes `Status` objects;
//! - [`authentication`], [`authorization`]: who makes a request and whether it may;
//! - [`controllers`]: the garbage collector, namespaces, tokens, policy status, event expiry,
//!   CRD cleanup, leader election: clients of the registry beside the api;
//! - [`admission`]: webhooks, validating and mutating admission policies, policy modules;
//! - [`wasm`]: strategies as wasm modules: [`wasm_runtime`] (wasmtime level), [`wasm::sources`]
//!   (directory, `StrategyModule` objects, declared resources), the module table and the
//!   `Strategy` that calls a module;
//! - [`registry`]: one generic store per served resource, driving its strategy around storage,
//!   the built-in kinds' providers, the loopback client every in-process caller uses, and the
//!   registry-level watch every follower (controllers, admission configuration, RBAC, module
//!   sources) follows resources with;
//! - `https` (`strategy-host-https`): [`pki`], the certificates the server makes and trusts, and
//!   [`webhook`], the one client it calls out with; `cel` (`strategy-host-cel`): Kubernetes'
//!   CEL for CRD rules, policies and configurations; `apimachinery`
//!   (`strategy-host-apimachinery`): selectors, apiVersions, uids and timestamps, durations,
//!   configuration files; `quantity` (`strategy-host-quantity`): resource quantities;
//! - [`strategy`] and [`user`] (`strategy-host-contract`): the contract between the registry
//!   and whatever supplies behaviour, and who makes a request;
//! - [`storage`]: the `Storage` trait, the informer, the cacher, etcd3 and the embedded store;
//! - [`cli`]: `strategy-host module test|diff`, running a module's phases on objects from files.

pub use strategy_host_admission as admission;
use strategy_host_api as api;
pub mod app;
pub use strategy_host_authentication as authentication;
pub use strategy_host_authorization as authorization;
pub mod cli;
pub mod config;
pub use strategy_host_contract::{admission_policy, strategy, user};
pub use strategy_host_controllers as controllers;
pub use strategy_host_https::{pki, webhook};
pub use strategy_host_registry as registry;
pub use strategy_host_storage as storage;
pub use strategy_host_wasm as wasm;
pub use strategy_host_wasm_runtime as wasm_runtime;

pub mod allocator;
#[cfg(test)]
mod layering;

/// What benchmarks measure of the private `api` layer (the `testing` feature).
#[cfg(feature = "testing")]
pub mod bench_support {
    use serde_json::Value;

    /// An object as the server encodes it for a client preferring Kubernetes protobuf.
    pub fn protobuf_encode(obj: &Value) -> Option<Vec<u8>> {
        crate::api::protobuf::encode(obj).ok().flatten()
    }

    /// A Kubernetes protobuf request body as the server decodes it.
    pub fn protobuf_decode(body: &[u8]) -> Option<Value> {
        crate::api::protobuf::decode(body).ok()
    }

    /// A JSON create or update body as the server decodes it (no `fieldValidation`: repeated
    /// fields are warned about).
    pub fn json_body_decode(body: &[u8]) -> Option<Value> {
        crate::api::body::decode_object(body, crate::registry::FieldValidation::default())
            .ok()
            .map(|(obj, _)| obj)
    }
}
