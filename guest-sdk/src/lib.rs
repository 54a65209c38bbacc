//! The guest SDK for Strategy Host plugins.
//!
//! Strategy authors implement a trait on their resource type and export it with one macro; the
//! crate hides the host/guest ABI. The ABI and the trait arrive with the wasm-strategies issue;
//! this crate holds the workspace slot until then.
#![deny(missing_docs)]
