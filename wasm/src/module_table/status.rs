//! What the table reports of each source: whether its latest version serves, and why not.

use std::sync::Arc;
use std::time::SystemTime;

use crate::rollout::StagedVersion;
use crate::strategy::ResourceInfo;

/// Whether a source's latest version serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleState {
    /// The version in `digest` serves its resources.
    Active,
    /// The version in `digest` failed a check; `digest_in_force` (if any) keeps serving.
    Rejected,
    /// The source was removed; its resources fell back to the default strategy.
    Unloaded,
    /// No version of the source serves; one is staged (shadow or canary, see `staged`).
    Staged,
}

impl ModuleState {
    /// The name shown in status, `/debug/strategies` and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "Active",
            Self::Rejected => "Rejected",
            Self::Unloaded => "Unloaded",
            Self::Staged => "Staged",
        }
    }
}

/// What happened to a source's latest version (shown over the API and in logs).
#[derive(Debug, Clone)]
pub struct ModuleStatus {
    /// The source, e.g. `dir:deployments.wasm`.
    pub source: String,
    /// The module's name, once a version of it loaded.
    pub module: Option<String>,
    /// SHA-256 of the latest version offered.
    pub digest: String,
    /// SHA-256 of the version serving now, if any.
    pub digest_in_force: Option<String>,
    /// Active, Rejected or Unloaded.
    pub state: ModuleState,
    /// Why the latest version was rejected.
    pub reason: Option<String>,
    /// The resources the version in force serves.
    pub resources: Vec<ResourceInfo>,
    /// When this status was recorded.
    pub updated: SystemTime,
    /// A version staged beside the one in force (shadow or canary), with its live report.
    pub staged: Option<Arc<StagedVersion>>,
}
