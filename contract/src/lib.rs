//! The contract between Strategy Host's registry and whatever supplies a resource's behaviour:
//! the [`strategy::Strategy`] trait with its context, field errors and default strategy, and
//! [`user::UserInfo`], who makes a request. Both sides — the registry, and the wasm runtime and
//! modules — depend on this crate and on nothing of each other.

pub mod strategy;
pub mod user;
