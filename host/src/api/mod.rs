//! The HTTP layer: the hyper server, one route per path (`route.rs`), the resource verbs with
//! typed parameters (`verbs/`, `params.rs`), request bodies (`body.rs`), watch streams,
//! discovery and OpenAPI documents, server-side tables, health endpoints, and the one place
//! where errors become Kubernetes `Status` objects.

pub mod aggregated_discovery;
pub mod body;
pub mod discovery;
pub mod health;
pub mod jsonpath;
pub mod media;
pub mod metrics;
pub mod modules;
pub mod openapi;
pub mod params;
pub mod patch;
pub mod query;
pub mod response;
pub mod route;
pub mod server;
pub mod state;
pub mod status;
pub mod table;
pub mod verbs;
pub mod watch;
