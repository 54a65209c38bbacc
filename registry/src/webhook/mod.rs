//! Calling out to webhooks over HTTPS: a review (`AdmissionReview`, `ConversionReview`) POSTed
//! to a `clientConfig.url`, trusting only its `caBundle`, over pooled connections. Admission
//! and conversion both call through here; it knows nothing of either.

mod call;
pub mod client_config;
mod error;
mod pool;

pub use call::{get, post};
pub use client_config::{ClientConfig, Endpoint};
pub use error::{CallError, Failure};
