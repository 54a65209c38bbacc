//! The HTTP server.
