//! Namespaces as Kubernetes keeps them: the strategy of core `namespaces` (phase `Active`, the
//! `kubernetes` finalizer in `spec.finalizers`, the `kubernetes.io/metadata.name` label), and the
//! lifecycle rules the other verbs apply (the system namespaces cannot be deleted; nothing is
//! created in a namespace being terminated; `spec.finalizers` hold a deletion back as
//! `metadata.finalizers` do, and only the `finalize` subresource changes them).
//!
//! Emptying a terminating namespace is the namespace controller's work (`controllers/`), done
//! through the registry's verbs so every object's finalizers, strategy and hooks apply.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::system_fields::metadata_mut;
use crate::strategy::{Admission, Answer, Strategy, StrategyContext};
use crate::system_fields::meta_str;

/// The finalizer in `spec.finalizers` the namespace controller removes once a namespace is
/// empty.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";

/// The label every namespace carries with its own name (selectors rely on it).
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Namespaces the server keeps: deleting them is refused.
pub const SYSTEM_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Kubernetes' refusal of a delete of a system namespace (403).
pub const UNDELETABLE: &str = "this namespace may not be deleted";

/// Kubernetes' answer (409) to deleting a namespace that is already being emptied.
pub const STILL_TERMINATING: &str = "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.";

/// Kubernetes' refusal (403) of a create in namespace `ns` while it is being terminated.
pub fn terminating_refusal(ns: &str) -> String {
    format!("unable to create new content in namespace {ns} because it is being terminated")
}

/// A namespace's `spec.finalizers`.
pub fn spec_finalizers(namespace: &Value) -> Vec<String> {
    super::system_fields::strings_at(namespace, "/spec/finalizers")
}

/// What a write to `namespaces/{name}/finalize` stores: `old` with `new`'s `spec.finalizers`.
pub fn finalize_written_over(old: &Value, new: &Value) -> Value {
    let mut merged = old.clone();
    let finalizers = new
        .pointer("/spec/finalizers")
        .cloned()
        .unwrap_or_else(|| json!([]));
    if !merged.get("spec").is_some_and(Value::is_object) {
        merged["spec"] = json!({});
    }
    merged["spec"]["finalizers"] = finalizers;
    merged
}

/// Sets the name label, as Kubernetes does on every create and update.
fn label_with_name(obj: &mut Value) {
    let Some(name) = meta_str(obj, "name").map(String::from) else {
        return;
    };
    let meta = metadata_mut(obj);
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels[NAME_LABEL] = Value::String(name);
}

/// The strategy of core `namespaces`.
#[derive(Debug, Default)]
pub struct NamespaceStrategy;

#[async_trait]
impl Strategy for NamespaceStrategy {
    fn name(&self) -> &str {
        "builtin-namespaces"
    }

    async fn before_create(&self, _ctx: &StrategyContext, obj: &mut Value) -> Answer {
        obj["status"] = json!({"phase": "Active"});
        if !obj.get("spec").is_some_and(Value::is_object) {
            obj["spec"] = json!({});
        }
        let mut finalizers = spec_finalizers(obj);
        if !finalizers.iter().any(|f| f == NAMESPACE_FINALIZER) {
            finalizers.push(NAMESPACE_FINALIZER.into());
        }
        obj["spec"]["finalizers"] = json!(finalizers);
        label_with_name(obj);
        Ok(Admission::default())
    }

    async fn before_update(&self, _ctx: &StrategyContext, new: &mut Value, _old: &Value) -> Answer {
        label_with_name(new);
        Ok(Admission::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finalize_changes_only_the_spec_finalizers() {
        let old = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}});
        let new = json!({"metadata": {"name": "a", "labels": {}}, "spec": {"finalizers": []}, "status": {"phase": "Active"}});
        let merged = finalize_written_over(&old, &new);
        assert_eq!(merged["spec"]["finalizers"], json!([]));
        assert_eq!(merged["metadata"]["labels"]["x"], "1");
        assert_eq!(merged["status"]["phase"], "Terminating");
    }

    #[tokio::test]
    async fn a_new_namespace_is_active_labelled_and_finalized() {
        let mut ns = json!({"metadata": {"name": "team-a", "labels": {"k": "v"}}});
        let ctx = StrategyContext {
            resource: crate::ResourceDefinition::namespaces().info("v1"),
            dry_run: false,
            request_id: String::new(),
            hook_depth: 0,
            user: std::sync::Arc::new(crate::user::UserInfo::server()),
        };
        NamespaceStrategy
            .before_create(&ctx, &mut ns)
            .await
            .unwrap();
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(ns["metadata"]["labels"][NAME_LABEL], "team-a");
        assert_eq!(ns["metadata"]["labels"]["k"], "v");
    }
}
