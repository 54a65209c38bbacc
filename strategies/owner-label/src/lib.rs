//! An example admission policy: every namespaced object created or updated outside
//! `kube-system` names its owner in the `owner` label. One policy across every resource — built-in
//! kinds and custom resources alike — rather than one strategy per resource.
//!
//! The match is declared as a Kubernetes `ValidatingAdmissionPolicyBinding` would declare it:
//! creates and updates of every namespaced resource (subresources such as `status` are not
//! named), in namespaces whose `kubernetes.io/metadata.name` label is not `kube-system`.

use serde_json::Value;
use strategy_guest_sdk::{
    AdmissionPolicy, AdmissionRequest, Context, FieldError, FieldPath, LabelRequirement,
    LabelSelector, MatchResources, Rule, RuleScope,
};

/// The label every object must carry.
pub const OWNER_LABEL: &str = "owner";

/// Every namespaced write, outside `kube-system`.
pub const MATCH: MatchResources =
    MatchResources::rules(&[
        Rule::new(&["CREATE", "UPDATE"], &["*"], &["*"], &["*"]).scoped(RuleScope::Namespaced)
    ])
    .in_namespaces(
        LabelSelector::EVERYTHING.with_expressions(&[LabelRequirement {
            key: "kubernetes.io/metadata.name",
            operator: "NotIn",
            values: &["kube-system"],
        }]),
    );

/// The `owner` label of the written object, if it has one.
pub fn owner(request: &AdmissionRequest<Value>) -> Option<&str> {
    request.object.as_ref()?["metadata"]["labels"][OWNER_LABEL].as_str()
}

/// The path of the owner label, as Kubernetes writes a map key.
pub fn owner_path() -> FieldPath {
    FieldPath::new("metadata").child("labels").key(OWNER_LABEL)
}

/// The policy.
#[derive(Debug, Default)]
pub struct OwnerLabel;

impl AdmissionPolicy for OwnerLabel {
    type Object = Value;
    const NAME: &'static str = "owner-label";
    const MATCH: MatchResources = MATCH;

    fn validate(&self, _ctx: &Context, request: &AdmissionRequest<Value>) -> Vec<FieldError> {
        match owner(request) {
            Some(o) if !o.is_empty() => Vec::new(),
            _ => vec![FieldError::required(
                &owner_path(),
                "every namespaced object outside kube-system names its owner",
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use strategy_guest_sdk::AdmissionOperation;

    fn create(labels: Value) -> AdmissionRequest<Value> {
        AdmissionRequest {
            operation: AdmissionOperation::Create,
            namespace: "default".into(),
            name: "x".into(),
            subresource: String::new(),
            object: Some(json!({"metadata": {"name": "x", "labels": labels}})),
            old_object: None,
        }
    }

    #[test]
    fn an_object_without_an_owner_is_refused() {
        let errors = OwnerLabel.validate(&Context::default(), &create(json!({})));
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "metadata.labels[owner]");
        let empty = OwnerLabel.validate(&Context::default(), &create(json!({"owner": ""})));
        assert_eq!(empty.len(), 1);
    }

    #[test]
    fn an_object_with_an_owner_is_admitted() {
        let labels = json!({"owner": "team-a"});
        assert!(OwnerLabel
            .validate(&Context::default(), &create(labels))
            .is_empty());
    }

    #[test]
    fn the_match_names_namespaced_writes_outside_kube_system() {
        let m = MATCH.to_json();
        assert_eq!(m["resourceRules"][0]["scope"], "Namespaced");
        assert_eq!(
            m["resourceRules"][0]["operations"],
            json!(["CREATE", "UPDATE"])
        );
        let requirement = &m["namespaceSelector"]["matchExpressions"][0];
        assert_eq!(requirement["values"], json!(["kube-system"]));
    }
}
