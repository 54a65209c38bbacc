//! The HTTP layer: the hyper server, one route per path (`route.rs`), the resource verbs with
//! typed parameters (`verbs/`, `params.rs`), request bodies (`body.rs`), watch streams,
//! discovery and OpenAPI documents, server-side tables, health endpoints, and the one place
//! where errors become Kubernetes `Status` objects; the audit log (`audit/`).
//!
//! The top of the stack, below only the binary that assembles it: it depends on the registry,
//! the wasm layer, authentication and authorization; nothing depends on it but the binary.

pub use strategy_host_contract::{strategy, user};

mod aggregated_discovery;
mod aggregator;
pub mod audit;
pub mod body;
mod discovery;
mod dispatch;
pub mod filters;
mod first_read;
pub mod flowcontrol;
mod health;
mod idle;
pub mod impersonation;
mod json_tree;
mod jsonpath;
mod media;
pub mod metrics;
mod modules;
mod openapi;
mod openapi_v2_protobuf;
mod params;
mod patch;
pub mod protobuf;
mod query;
mod response;
mod route;
pub mod server;
mod snapshot;
pub mod state;
mod status;
mod strategic_merge;
mod table;
pub mod tls;
mod verbs;
mod watch;
