//! Safe rollout of module versions: a new version can be staged beside the version in force —
//! in shadow (run on every request, results only recorded) or as a canary (serving a share of
//! requests, rolled back by itself when it fails or is slow) — and replayed over the stored
//! objects, before it is promoted with the atomic swap.
//!
//! [`spec`] decodes `spec.rollout`; [`outcome`] runs one phase and compares two versions'
//! outcomes (also used by `strategy-host module test|diff`); [`report`] counts the differences;
//! [`staged`] is the staged version itself, which the module table's slots hold.

pub mod outcome;
pub mod report;
pub mod spec;
pub mod staged;

pub use outcome::{
    differences, evaluate, Difference, DifferenceKind, Outcome, Role, Verb, Version,
};
pub use report::{Origin, RolloutMetrics, RolloutReport};
pub use spec::{RollbackThresholds, RolloutMode, RolloutSpec};
pub use staged::{object_ref, RollbackNotice, StagedVersion};
