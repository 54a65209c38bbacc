//! An admission policy module's declaration, checked (ABI 1.2): which writes it is asked about
//! (a `MatchResources` as JSON, match conditions), what its refusals do and what a failed call
//! does. The runtime only checks its shape; the admission layer reads its meaning.

use serde_json::Value;

use super::abi::{self, Operation};
use super::error::{Error, Result};

/// What a refusal does (Kubernetes' `validationActions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ValidationAction {
    /// The write fails.
    Deny,
    /// The client is warned.
    Warn,
    /// The refusal is logged and counted.
    Audit,
}

/// A policy module's declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyDeclaration {
    /// Kubernetes' `MatchResources`, as the module declared it.
    pub match_resources: Value,
    /// (name, CEL expression) of each match condition.
    pub match_conditions: Vec<(String, String)>,
    /// What a refusal does, sorted, without repeats.
    pub actions: Vec<ValidationAction>,
    /// Whether a failed call fails the write (`failurePolicy: Fail`, the default).
    pub fail_closed: bool,
    /// Whether the module is asked in the mutating phase too.
    pub mutates: bool,
}

impl PolicyDeclaration {
    /// Checks a manifest's declaration against the operations it implements.
    pub(crate) fn from_abi(p: &abi::AdmissionPolicy, operations: &[i32]) -> Result<Self> {
        let bad = |why: String| Err(Error::Manifest(format!("admission policy: {why}")));
        let match_resources: Value = match serde_json::from_slice(&p.match_resources) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return bad("matchResources must be a JSON object".into()),
            Err(e) => return bad(format!("matchResources is not JSON: {e}")),
        };
        let rules = match_resources
            .get("resourceRules")
            .and_then(Value::as_array);
        if rules.is_none_or(Vec::is_empty) {
            return bad("matchResources names no resourceRules, so it would never be asked".into());
        }
        let mut actions = Vec::new();
        for a in &p.validation_actions {
            let action = match a.as_str() {
                "Deny" => ValidationAction::Deny,
                "Warn" => ValidationAction::Warn,
                "Audit" => ValidationAction::Audit,
                other => {
                    return bad(format!(
                        "unknown validation action {other:?} (Deny, Warn or Audit)"
                    ))
                }
            };
            actions.push(action);
        }
        actions.sort();
        actions.dedup();
        if actions.is_empty() {
            actions.push(ValidationAction::Deny);
        }
        // Kubernetes refuses a binding that both denies and warns: a denial already tells the
        // client.
        if actions.contains(&ValidationAction::Deny) && actions.contains(&ValidationAction::Warn) {
            return bad("Deny and Warn may not be used together".into());
        }
        let fail_closed = match p.failure_policy.as_str() {
            "" | "Fail" => true,
            "Ignore" => false,
            other => return bad(format!("unknown failure policy {other:?} (Fail or Ignore)")),
        };
        for op in operations {
            let admits = [
                Operation::AdmitMutate as i32,
                Operation::AdmitValidate as i32,
            ];
            if !admits.contains(op) {
                return bad(format!(
                    "a policy implements only the admit operations, not {op}"
                ));
            }
        }
        let mut match_conditions = Vec::new();
        for c in &p.match_conditions {
            if c.name.is_empty() || c.expression.is_empty() {
                return bad("every match condition needs a name and an expression".into());
            }
            match_conditions.push((c.name.clone(), c.expression.clone()));
        }
        Ok(Self {
            match_resources,
            match_conditions,
            actions,
            fail_closed,
            mutates: operations.contains(&(Operation::AdmitMutate as i32)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(actions: &[&str], failure: &str) -> abi::AdmissionPolicy {
        abi::AdmissionPolicy {
            match_resources: br#"{"resourceRules":[{"operations":["*"],"apiGroups":["*"],"apiVersions":["*"],"resources":["*"]}]}"#.to_vec(),
            match_conditions: vec![],
            validation_actions: actions.iter().map(|a| a.to_string()).collect(),
            failure_policy: failure.into(),
        }
    }

    const VALIDATES: &[i32] = &[Operation::AdmitValidate as i32];

    #[test]
    fn a_declaration_reads_its_actions_and_failure_policy() {
        let d =
            PolicyDeclaration::from_abi(&declared(&["Warn", "Audit", "Warn"], "Ignore"), VALIDATES)
                .unwrap();
        assert_eq!(d.actions, [ValidationAction::Warn, ValidationAction::Audit]);
        assert!(!d.fail_closed && !d.mutates);
        let d = PolicyDeclaration::from_abi(&declared(&[], ""), VALIDATES).unwrap();
        assert_eq!(d.actions, [ValidationAction::Deny]);
        assert!(d.fail_closed);
    }

    #[test]
    fn bad_declarations_are_refused_with_the_reason() {
        let refused = |p: abi::AdmissionPolicy, ops: &[i32]| {
            PolicyDeclaration::from_abi(&p, ops)
                .unwrap_err()
                .to_string()
        };
        assert!(refused(declared(&["Deny", "Warn"], ""), VALIDATES).contains("together"));
        assert!(refused(declared(&["Block"], ""), VALIDATES).contains("\"Block\""));
        assert!(refused(declared(&[], "Sometimes"), VALIDATES).contains("failure policy"));
        let strategy_op = &[Operation::Validate as i32];
        assert!(refused(declared(&[], ""), strategy_op).contains("only the admit operations"));
        let mut empty = declared(&[], "");
        empty.match_resources = br#"{"resourceRules":[]}"#.to_vec();
        assert!(refused(empty, VALIDATES).contains("never be asked"));
        let mut garbage = declared(&[], "");
        garbage.match_resources = b"{".to_vec();
        assert!(refused(garbage, VALIDATES).contains("not JSON"));
    }
}
