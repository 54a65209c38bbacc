//! Admission beyond a resource's own strategy, plugged into the registry's admission chain
//! (`registry/admission.rs`): the webhooks of `admissionregistration.k8s.io/v1` today. Beside
//! `api` and `controllers`: it follows configurations through the informer and reads through
//! the registry, never storage directly.

pub mod webhook;
