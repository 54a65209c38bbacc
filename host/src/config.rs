//! Server configuration.
