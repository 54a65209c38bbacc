//! The HTTP layer: the hyper server, one route per path (`route.rs`), the resource verbs with
//! typed parameters (`verbs/`, `params.rs`), request bodies (`body.rs`), watch streams,
//! discovery and OpenAPI documents, server-side tables, health endpoints, and the one place
//! where errors become Kubernetes `Status` objects; the audit log (`audit/`).

pub(crate) mod aggregated_discovery;
pub(crate) mod audit;
pub(crate) mod body;
pub(crate) mod discovery;
pub(crate) mod filters;
pub(crate) mod first_read;
pub(crate) mod flowcontrol;
pub(crate) mod health;
pub(crate) mod idle;
pub(crate) mod json_tree;
pub(crate) mod jsonpath;
pub(crate) mod media;
pub(crate) mod metrics;
pub(crate) mod modules;
pub(crate) mod openapi;
pub(crate) mod openapi_v2_protobuf;
pub(crate) mod params;
pub(crate) mod patch;
pub(crate) mod protobuf;
pub(crate) mod query;
pub(crate) mod response;
pub(crate) mod route;
pub(crate) mod server;
pub(crate) mod snapshot;
pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod strategic_merge;
pub(crate) mod table;
pub(crate) mod tls;
pub(crate) mod verbs;
pub(crate) mod watch;
