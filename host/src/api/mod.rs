//! The HTTP layer: the hyper server, health and version endpoints, and the one place where
//! errors become Kubernetes `Status` objects.
//!
//! Resource routes (CRUD, watch, discovery) arrive with the REST API issue; this revision serves
//! what an operator needs to see the store is up.

pub mod health;
pub mod server;
pub mod status;
