//! Admission beyond a resource's own strategy, plugged into the registry's admission chain
//! (`registry/src/admission.rs`): the webhooks and the validating admission policies of
//! `admissionregistration.k8s.io/v1`, mutating admission policies (`v1`, and `v1beta1`), and admission
//! policies as wasm modules. Beside
//! `api` and `controllers`: it follows configurations through the informer and reads through
//! the registry, never storage directly.
//!
//! A crate above the registry and the wasm layer (policy modules run there), beside the api
//! and the controllers, which it does not know.

pub use strategy_host_contract::{admission_policy, strategy, user};

pub mod followed;
pub mod generic;
pub mod mutating_policy;
pub mod policy;
pub mod resource_quota;
pub mod rules;
pub mod wasm_policy;
pub mod webhook;
