//! Kubernetes' `OwnerReferencesPermissionEnforcement` admission: changing an object's
//! `ownerReferences` takes permission to delete the object (an update; a create may always set
//! them), and setting `blockOwnerDeletion` takes permission to update the owner's `finalizers`
//! — blocking an owner's foreground deletion is power over the owner.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use serde_json::Value;

use super::{Attributes, Authorizer, Decision};
use crate::strategy::Refusal;
use strategy_host_registry::admission::{
    AdmissionRequest, Operation, Rejection, ValidatingAdmission, Verdict,
};
use strategy_host_registry::Registry;

/// The admission plugin.
pub struct OwnerReferencesPermissionEnforcement {
    authorizer: Arc<dyn Authorizer>,
    registry: Weak<Registry>,
}

impl OwnerReferencesPermissionEnforcement {
    /// The plugin asking `authorizer`, resolving owners' kinds in `registry`.
    pub fn new(authorizer: Arc<dyn Authorizer>, registry: &Arc<Registry>) -> Self {
        Self {
            authorizer,
            registry: Arc::downgrade(registry),
        }
    }

    /// Refuses the write with `refused` (and the authorizer's reason) unless `attributes` are
    /// allowed.
    async fn require(&self, attributes: &Attributes, refused: &str) -> Result<(), Rejection> {
        let decision = self.authorizer.authorize(attributes).await;
        match decision.allowed() {
            true => Ok(()),
            false => Err(Rejection::Refused(Refusal::Forbidden(format!(
                "{refused}: {}",
                reason(&decision)
            )))),
        }
    }
}

fn owner_references(obj: Option<&Value>) -> Vec<Value> {
    obj.and_then(|o| o.pointer("/metadata/ownerReferences"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The references of `new` that block their owner's deletion and did not already in `old`.
fn newly_blocking(new: &[Value], old: &[Value]) -> Vec<Value> {
    let blocking = |r: &Value| r["blockOwnerDeletion"] == true;
    new.iter()
        .filter(|r| blocking(r))
        .filter(|r| !old.iter().any(|o| o["uid"] == r["uid"] && blocking(o)))
        .cloned()
        .collect()
}

/// Kubernetes prints the authorizer's reason and error (`<nil>` when there is none).
fn reason(decision: &Decision) -> String {
    match decision.error() {
        Some(error) => format!(", {error}"),
        None => format!("{}, <nil>", decision.reason()),
    }
}

#[async_trait]
impl ValidatingAdmission for OwnerReferencesPermissionEnforcement {
    fn name(&self) -> &str {
        "OwnerReferencesPermissionEnforcement"
    }

    async fn validate(&self, request: &AdmissionRequest<'_>) -> Verdict {
        if request.operation == Operation::Delete {
            return Ok(Vec::new());
        }
        let new = owner_references(Some(request.object));
        let old = owner_references(request.old_object);
        if new == old {
            return Ok(Vec::new());
        }
        let base = Attributes {
            user: request.user.clone(),
            resource_request: true,
            namespace: request.namespace.unwrap_or_default().to_string(),
            ..Attributes::default()
        };
        if request.operation == Operation::Update {
            let delete = Attributes {
                verb: "delete".into(),
                api_group: request.resource.group.clone(),
                api_version: request.version.to_string(),
                resource: request.resource.plural.clone(),
                name: request.name.to_string(),
                ..base.clone()
            };
            self.require(
                &delete,
                "cannot set an ownerRef on a resource you can't delete",
            )
            .await?;
        }
        for owner in newly_blocking(&new, &old) {
            let text = |f: &str| owner[f].as_str().unwrap_or_default().to_string();
            let (api_version, kind) = (text("apiVersion"), text("kind"));
            let (group, version) = strategy_host_apimachinery::group_version(&api_version);
            let served = self
                .registry
                .upgrade()
                .and_then(|r| r.resolve_kind(group, version, &kind));
            let Some(served) = served else {
                return Err(Rejection::Refused(Refusal::Forbidden(format!(
                    "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion {api_version} Kind {kind}: no matches for kind \"{kind}\" in version \"{api_version}\""
                ))));
            };
            let finalizers = Attributes {
                verb: "update".into(),
                api_group: served.def.group.clone(),
                api_version: version.to_string(),
                resource: served.def.plural.clone(),
                subresource: "finalizers".into(),
                name: text("name"),
                ..base.clone()
            };
            self.require(
                &finalizers,
                "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on",
            )
            .await?;
        }
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_references_that_start_blocking_need_the_owners_finalizers() {
        let a = json!({"uid": "a", "blockOwnerDeletion": true});
        let b = json!({"uid": "b", "blockOwnerDeletion": false});
        let b_blocking = json!({"uid": "b", "blockOwnerDeletion": true});
        assert_eq!(
            newly_blocking(&[a.clone(), b.clone()], &[]),
            vec![a.clone()]
        );
        let same = std::slice::from_ref(&a);
        assert!(newly_blocking(same, same).is_empty());
        assert_eq!(
            newly_blocking(std::slice::from_ref(&b_blocking), &[b]),
            vec![b_blocking]
        );
    }
}
