//! `coordination.k8s.io/v1` Leases, validated as Kubernetes validates their spec (a positive
//! duration, non-negative transitions, a known strategy, a preferred holder only with a strategy).

use serde_json::Value;
use strategy_guest_sdk::{FieldError, FieldPath};

use super::KindStrategy;

/// The coordinated leader election strategies Kubernetes knows.
const STRATEGIES: &[&str] = &["OldestEmulationVersion"];

pub(crate) struct Leases;

impl KindStrategy for Leases {
    fn reads(&self) -> Option<&'static [&'static str]> {
        Some(&["spec"])
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let spec_path = FieldPath::new("spec");
        let Some(spec) = obj.get("spec") else {
            return errs;
        };
        let int = |field: &str| spec.get(field).and_then(Value::as_i64);
        if let Some(d) = int("leaseDurationSeconds").filter(|d| *d <= 0) {
            errs.push(FieldError::invalid(
                &spec_path.child("leaseDurationSeconds"),
                d,
                "must be greater than 0",
            ));
        }
        if let Some(t) = int("leaseTransitions").filter(|t| *t < 0) {
            errs.push(FieldError::invalid(
                &spec_path.child("leaseTransitions"),
                t,
                "must be greater than or equal to 0",
            ));
        }
        let strategy = spec.get("strategy").and_then(Value::as_str);
        if let Some(s) = strategy.filter(|s| !STRATEGIES.contains(s)) {
            errs.push(FieldError::not_supported(
                &spec_path.child("strategy"),
                s,
                STRATEGIES,
            ));
        }
        let preferred = spec.get("preferredHolder").and_then(Value::as_str);
        if preferred.is_some_and(|p| !p.is_empty()) && strategy.is_none_or(str::is_empty) {
            errs.push(FieldError::forbidden(
                &spec_path.child("preferredHolder"),
                "may only be specified if `strategy` is defined",
            ));
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_leader_election_lease_is_valid() {
        let lease = json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0, "renewTime": "2026-01-01T00:00:00.000000Z"}});
        assert!(Leases.validate(&lease).is_empty());
    }

    #[test]
    fn bad_durations_transitions_and_holders_are_refused() {
        let lease = json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1, "strategy": "Newest", "preferredHolder": "b"}});
        let fields: Vec<String> = Leases
            .validate(&lease)
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.leaseDurationSeconds",
                "spec.leaseTransitions",
                "spec.strategy"
            ]
        );
        let orphan = json!({"spec": {"preferredHolder": "b"}});
        assert_eq!(Leases.validate(&orphan)[0].field, "spec.preferredHolder");
    }
}
