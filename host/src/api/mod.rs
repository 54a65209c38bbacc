//! The HTTP layer: the hyper server, Kubernetes request paths and verbs over the registry,
//! watch streams, discovery and OpenAPI documents, server-side tables, health endpoints, and
//! the one place where errors become Kubernetes `Status` objects.

pub mod body;
pub mod discovery;
pub mod health;
pub mod metrics;
pub mod modules;
pub mod openapi;
pub mod patch;
pub mod request;
pub mod resource;
pub mod response;
pub mod server;
pub mod state;
pub mod status;
pub mod table;
pub mod watch;
