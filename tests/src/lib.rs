//! Helpers for the end-to-end tests: start the `strategy-host` binary on a free port with a
//! temporary data directory and wait until it answers its health endpoint.
