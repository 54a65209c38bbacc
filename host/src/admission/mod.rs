//! Admission beyond a resource's own strategy, plugged into the registry's admission chain
//! (`registry/admission.rs`): the webhooks and the validating admission policies of
//! `admissionregistration.k8s.io/v1`, mutating admission policies (`v1beta1`), and admission
//! policies as wasm modules. Beside
//! `api` and `controllers`: it follows configurations through the informer and reads through
//! the registry, never storage directly.

pub mod cel;
pub mod followed;
pub mod generic;
pub mod mutating_policy;
pub mod policy;
pub mod rules;
pub mod type_check;
pub mod wasm_policy;
pub mod webhook;
