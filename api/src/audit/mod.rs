//! The audit log (Kubernetes' `audit.k8s.io/v1`): a policy decides how much of each request is
//! recorded (`policy.rs`), events are built around the request (`filter.rs`, with the
//! per-request context handlers add to in `context.rs`), shaped as Kubernetes' `Event`
//! (`event.rs`), and written as JSON lines by a backend that never holds a request up
//! (`sink.rs`).
//!
//! The server's use, in order: [`Auditor::begin`] once the request's attributes are known
//! (after authentication); [`set_decision`] after authorization; the verbs record the request
//! and response objects through the request's [`AuditContext`]; `RequestAudit::complete`
//! with the response (`filter::RequestAudit`).

mod context;
mod event;
mod filter;
mod policy;
mod rotate;
mod sink;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

pub use context::{set_decision, AuditContext};
pub use filter::{mark_panicked, Auditor};
pub use rotate::LogRotation;
pub use sink::AuditMetrics;

/// Why the audit log could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `--audit-level` names no level.
    #[error("--audit-level {0:?}: supported values: None, Metadata, Request, RequestResponse")]
    UnknownLevel(String),
    /// The policy file could not be read.
    #[error("audit policy file {}: {source}", path.display())]
    ReadPolicy {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// The policy file is not a valid `audit.k8s.io/v1` `Policy`.
    #[error("audit policy file {}: invalid policy: {problem}", path.display())]
    InvalidPolicy {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        problem: policy::PolicyError,
    },
    /// The audit log could not be opened for appending.
    #[error("audit log {}: {source}", path.display())]
    OpenLog {
        /// The log file.
        path: PathBuf,
        /// Why it could not be opened.
        #[source]
        source: std::io::Error,
    },
}

/// `Result` with this module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
