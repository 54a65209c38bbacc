//! A CustomResourceDefinition's deletion, as apiextensions-apiserver does it: the first delete
//! marks the definition deleting with the `customresourcecleanup.apiextensions.k8s.io`
//! finalizer and a `Terminating` condition; its resource refuses new objects meanwhile; the
//! cleanup controller deletes every object through the registry (their finalizers and the
//! garbage collector apply) and then removes the finalizer, and the definition goes.

use serde_json::{json, Value};

use super::system_fields::{condition, set_condition};

/// The finalizer that keeps a deleted definition until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The condition type a definition being deleted carries.
pub const TERMINATING: &str = "Terminating";

/// What the first delete of a definition does to it: the cleanup finalizer and the
/// `Terminating` condition.
pub fn mark_terminating(crd: &mut Value, finalizers: &mut Vec<String>) {
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        finalizers.push(CLEANUP_FINALIZER.into());
    }
    set_condition(
        crd,
        json!({"type": TERMINATING, "status": "True", "reason": "InstanceDeletionPending",
            "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"}),
    );
}

/// The `Terminating` condition of `crd`, as a write of its status should keep it.
pub fn terminating_condition(crd: &Value) -> Option<Value> {
    condition(crd, TERMINATING).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marking_adds_the_finalizer_once_and_the_condition() {
        let mut crd = json!({"metadata": {"name": "widgets.example.com"}});
        let mut finalizers = vec!["other".to_owned()];
        mark_terminating(&mut crd, &mut finalizers);
        mark_terminating(&mut crd, &mut finalizers);
        assert_eq!(finalizers, ["other", CLEANUP_FINALIZER]);
        let condition = terminating_condition(&crd).unwrap();
        assert_eq!(condition["status"], "True");
        assert_eq!(condition["reason"], "InstanceDeletionPending");
        assert_eq!(crd["status"]["conditions"].as_array().unwrap().len(), 1);
    }
}
