//! `spec.rollout` of a staged module version: its mode (Active, Shadow, Canary), the canary's
//! weight and the thresholds that roll a canary back, decoded from JSON (a `StrategyModule`'s
//! spec, or a directory module's `<name>.rollout.json` sidecar).

use std::time::Duration;

use serde_json::Value;

use crate::strategy::{FieldError, FieldErrorKind};

/// How a new version of a module is brought in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RolloutMode {
    /// Serves every request at once (the atomic swap).
    Active,
    /// Runs beside the version in force on every request; its results are only recorded.
    Shadow,
    /// Serves a share of the requests; rolled back by itself when it fails or is slow.
    Canary,
}

impl RolloutMode {
    /// The name in `spec.rollout.mode` and in status.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "Active",
            Self::Shadow => "Shadow",
            Self::Canary => "Canary",
        }
    }
}

/// When a canary is rolled back: over its last `window` calls (once it has made
/// `min_requests`), more than `max_failure_ratio` of them failed (deadline, memory, trap, bad
/// output — not a validation refusal, which is the module's answer), or their p99 latency
/// passed `max_latency`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RollbackThresholds {
    /// Failed calls / calls above which the canary is rolled back (default 0.05).
    pub max_failure_ratio: f64,
    /// Calls the canary makes before it is judged (default 20).
    pub min_requests: u64,
    /// The p99 call latency above which it is rolled back (default 50 ms, half the default call
    /// deadline: a module that slow is one overrun from failing requests).
    pub max_latency: Duration,
    /// How many of its latest calls it is judged on (default 200).
    pub window: usize,
}

impl Default for RollbackThresholds {
    fn default() -> Self {
        Self {
            max_failure_ratio: 0.05,
            min_requests: 20,
            max_latency: Duration::from_millis(50),
            window: 200,
        }
    }
}

/// A decoded `spec.rollout`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RolloutSpec {
    /// Active (the default), Shadow or Canary.
    pub mode: RolloutMode,
    /// The percentage of requests a canary serves (1–100, default 10).
    pub weight_percent: u32,
    /// When a canary is rolled back.
    pub rollback: RollbackThresholds,
}

impl Default for RolloutSpec {
    fn default() -> Self {
        Self {
            mode: RolloutMode::Active,
            weight_percent: 10,
            rollback: RollbackThresholds::default(),
        }
    }
}

impl RolloutSpec {
    /// Decodes a rollout object (`spec.rollout`; absent or null means Active); `path` prefixes
    /// field names in errors (e.g. `spec.rollout`).
    ///
    /// # Errors
    /// One field error per bad field: an unknown mode, a weight outside 1–100, a negative or
    /// non-numeric threshold.
    pub fn from_json(value: Option<&Value>, path: &str) -> Result<Self, Vec<FieldError>> {
        let mut spec = Self::default();
        let Some(value) = value.filter(|v| !v.is_null()) else {
            return Ok(spec);
        };
        let mut errors = Vec::new();
        let mut invalid = |field: &str, detail: String| {
            errors.push(FieldError {
                kind: FieldErrorKind::Invalid,
                field: format!("{path}.{field}"),
                detail,
            })
        };
        let Some(obj) = value.as_object() else {
            invalid("", "must be an object".into());
            return Err(fix_root(errors, path));
        };
        match obj.get("mode").map(|m| (m, m.as_str())) {
            None | Some((Value::Null, _)) => {}
            Some((_, Some("Active"))) => spec.mode = RolloutMode::Active,
            Some((_, Some("Shadow"))) => spec.mode = RolloutMode::Shadow,
            Some((_, Some("Canary"))) => spec.mode = RolloutMode::Canary,
            Some((m, _)) => invalid(
                "mode",
                format!("{m}: supported values: \"Active\", \"Shadow\", \"Canary\""),
            ),
        }
        if let Some(w) = obj.get("weight").filter(|w| !w.is_null()) {
            match w.as_u64().filter(|w| (1..=100).contains(w)) {
                Some(w) => spec.weight_percent = w as u32,
                None => invalid(
                    "weight",
                    format!("{w}: must be a whole percentage from 1 to 100"),
                ),
            }
        }
        if let Some(rb) = obj.get("rollback").filter(|r| !r.is_null()) {
            let t = &mut spec.rollback;
            let number = |name: &str| rb.get(name).filter(|v| !v.is_null());
            if let Some(v) = number("maxFailureRatio") {
                match v.as_f64().filter(|r| (0.0..=1.0).contains(r)) {
                    Some(r) => t.max_failure_ratio = r,
                    None => invalid(
                        "rollback.maxFailureRatio",
                        format!("{v}: must be a number from 0 to 1"),
                    ),
                }
            }
            if let Some(v) = number("minRequests") {
                match v.as_u64().filter(|n| *n >= 1) {
                    Some(n) => t.min_requests = n,
                    None => invalid(
                        "rollback.minRequests",
                        format!("{v}: must be a whole number of at least 1"),
                    ),
                }
            }
            if let Some(v) = number("maxLatencyMilliseconds") {
                match v.as_f64().filter(|ms| *ms > 0.0 && ms.is_finite()) {
                    Some(ms) => t.max_latency = Duration::from_secs_f64(ms / 1000.0),
                    None => invalid(
                        "rollback.maxLatencyMilliseconds",
                        format!("{v}: must be a positive number"),
                    ),
                }
            }
            if let Some(v) = number("window") {
                match v.as_u64().filter(|n| (1..=100_000).contains(n)) {
                    Some(n) => t.window = n as usize,
                    None => invalid(
                        "rollback.window",
                        format!("{v}: must be a whole number from 1 to 100000"),
                    ),
                }
            }
        }
        match errors.is_empty() {
            true => Ok(spec),
            false => Err(fix_root(errors, path)),
        }
    }
}

/// An error about the rollout object itself names it without a trailing dot.
fn fix_root(mut errors: Vec<FieldError>, path: &str) -> Vec<FieldError> {
    for e in &mut errors {
        if e.field.ends_with('.') {
            e.field = path.to_owned();
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn absent_is_active_and_fields_decode() {
        assert_eq!(
            RolloutSpec::from_json(None, "spec.rollout").unwrap(),
            RolloutSpec::default()
        );
        let spec = RolloutSpec::from_json(
            Some(&json!({"mode": "Canary", "weight": 25, "rollback": {"maxFailureRatio": 0.5, "minRequests": 4, "maxLatencyMilliseconds": 7.5, "window": 10}})),
            "spec.rollout",
        )
        .unwrap();
        assert_eq!(spec.mode, RolloutMode::Canary);
        assert_eq!(spec.weight_percent, 25);
        assert_eq!(spec.rollback.max_failure_ratio, 0.5);
        assert_eq!(spec.rollback.min_requests, 4);
        assert_eq!(spec.rollback.max_latency, Duration::from_micros(7500));
        assert_eq!(spec.rollback.window, 10);
    }

    #[test]
    fn bad_fields_are_field_errors() {
        let errors = RolloutSpec::from_json(
            Some(&json!({"mode": "Blue", "weight": 0, "rollback": {"maxFailureRatio": 2}})),
            "spec.rollout",
        )
        .unwrap_err();
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.rollout.mode",
                "spec.rollout.weight",
                "spec.rollout.rollback.maxFailureRatio"
            ]
        );
        let errors = RolloutSpec::from_json(Some(&json!("Shadow")), "spec.rollout").unwrap_err();
        assert_eq!(errors[0].field, "spec.rollout");
    }
}
