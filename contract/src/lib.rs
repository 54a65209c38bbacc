//! The contract between Strategy Host's registry and whatever supplies a resource's behaviour:
//! the [`strategy::Strategy`] trait with its context, field errors and default strategy, and
//! [`user::UserInfo`], who makes a request; and the [`admission_policy::AdmissionPolicy`]
//! trait admission policy modules answer, and the [`authorizer::AuthorizerModule`] trait
//! authorizer modules answer. Both sides — the registry, and the wasm runtime and
//! modules — depend on this crate and on nothing of each other.

pub mod admission_policy;
pub mod authorizer;
pub mod strategy;
pub mod user;
