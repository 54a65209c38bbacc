//! `MutatingAdmissionPolicy` and `MutatingAdmissionPolicyBinding` (v1, Kubernetes 1.36's; still
//! served as v1beta1): each binding applies its policy's CEL `mutations` to the writes both
//! match (the policy's
//! `matchConstraints`, the binding's `matchResources`, then `matchConditions`), with the
//! binding's params. A mutation is an `ApplyConfiguration` (an `Object{...}` merged into the
//! object as server-side apply merges, by the resource's schema: maps field by field, lists
//! keyed by `x-kubernetes-list-map-keys` item by item, sets by value, anything else replaced)
//! or a `JSONPatch` (a list of `JSONPatch{op, path, value}` applied in order); each sees the
//! object as the mutations before it left it. Failures follow the policy's `failurePolicy`.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use serde_json::Value;

use crate::generic::{
    compile, items, params, request_variable, Followed, GenericPolicy, PolicySpec,
};
use strategy_host_cel::expression::{self as cel, Activation, Expression};
use strategy_host_registry::admission::{AdmissionRequest, MutatingAdmission, Rejection, Verdict};
use strategy_host_registry::fieldmanager::structure;
use strategy_host_registry::Registry;

/// One mutation of a policy.
#[derive(Debug)]
enum Mutation {
    /// `patchType: ApplyConfiguration`.
    Apply(cel::Result<Expression>),
    /// `patchType: JSONPatch`.
    JsonPatch(cel::Result<Expression>),
}

/// One policy, its expressions compiled.
#[derive(Debug)]
struct Policy {
    /// What every policy's spec holds.
    spec: PolicySpec,
    mutations: Vec<Mutation>,
    /// `reinvocationPolicy: IfNeeded`.
    reinvoke_if_needed: bool,
}

/// Why a mutation failed (its text is what the write's failure reports).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum MutationError {
    /// An expression did not compile or evaluate.
    #[error(transparent)]
    Cel(#[from] cel::Error),
    /// An `applyConfiguration` gave something other than an object.
    #[error("an applyConfiguration must return an Object")]
    NotAnObject,
    /// A `jsonPatch` expression gave something that is not a JSON Patch.
    #[error("the JSONPatch is not valid: {0}")]
    InvalidPatch(String),
    /// The JSON Patch did not apply to the object.
    #[error("the JSONPatch could not be applied: {0}")]
    PatchFailed(String),
}

impl Policy {
    /// Reads a policy's `spec`.
    fn parse(spec: &Value) -> Self {
        let mutations = items(spec.get("mutations"))
            .iter()
            .map(|m| match m.get("patchType").and_then(Value::as_str) {
                Some("JSONPatch") => Mutation::JsonPatch(
                    m.get("jsonPatch")
                        .map_or(Err(cel::Error::Missing("jsonPatch")), |p| {
                            compile(p, "expression")
                        }),
                ),
                _ => Mutation::Apply(
                    m.get("applyConfiguration")
                        .map_or(Err(cel::Error::Missing("applyConfiguration")), |p| {
                            compile(p, "expression")
                        }),
                ),
            })
            .collect();
        Self {
            spec: PolicySpec::parse(spec),
            mutations,
            reinvoke_if_needed: spec.get("reinvocationPolicy").and_then(Value::as_str)
                == Some("IfNeeded"),
        }
    }

    /// Applies every mutation to `object` (of the resource whose schema is `schema`) under the
    /// bindings `base` variables; `Ok(false)` when a match condition does not hold.
    fn mutate(
        &self,
        base: &[(&str, &Value)],
        object: &mut Value,
        schema: Option<&Value>,
    ) -> Result<bool, MutationError> {
        let activation = |object: &Value| {
            let mut variables = base.to_vec();
            variables.push(("object", object));
            let mut a = Activation::new(&variables);
            a.bind_variables(&self.spec.variables);
            a
        };
        let first = activation(object);
        for condition in &self.spec.match_conditions {
            if !first.truth(condition.as_ref().map_err(Clone::clone)?)? {
                return Ok(false);
            }
        }
        for mutation in &self.mutations {
            let a = activation(object);
            match mutation {
                Mutation::Apply(e) => {
                    let applied = a.json(e.as_ref().map_err(Clone::clone)?)?;
                    if !applied.is_object() {
                        return Err(MutationError::NotAnObject);
                    }
                    *object = structure::merge(Some(object), &applied, schema);
                }
                Mutation::JsonPatch(e) => {
                    let ops = a.json(e.as_ref().map_err(Clone::clone)?)?;
                    let patch: json_patch::Patch = serde_json::from_value(ops)
                        .map_err(|e| MutationError::InvalidPatch(e.to_string()))?;
                    json_patch::patch(object, &patch)
                        .map_err(|e| MutationError::PatchFailed(e.to_string()))?;
                }
            }
        }
        Ok(true)
    }
}

impl GenericPolicy for Policy {
    fn spec(&self) -> &PolicySpec {
        &self.spec
    }
}

/// The mutating admission plugin for policies.
pub struct MutatingPolicies {
    registry: Weak<Registry>,
    followed: Followed<Policy>,
}

/// Starts following mutating policies and bindings; answers the plugin.
pub fn start(registry: &Arc<Registry>) -> Arc<MutatingPolicies> {
    Arc::new(MutatingPolicies {
        registry: Arc::downgrade(registry),
        followed: Followed::start(
            registry,
            "v1",
            (
                "mutatingadmissionpolicies",
                "mutatingadmissionpolicybindings",
            ),
            Policy::parse,
        ),
    })
}

impl MutatingPolicies {
    /// Applies the bindings `chosen` picks (by index into the bindings in force) to `object`,
    /// in order; answers, per binding applied, its index, whether its policy asks to be
    /// reinvoked and whether it changed the object.
    async fn apply(
        &self,
        request: &AdmissionRequest<'_>,
        object: &mut Value,
        chosen: impl Fn(usize, &Policy) -> bool,
    ) -> Result<Vec<(usize, bool, bool)>, Rejection> {
        let in_force = self.followed.in_force();
        if in_force.bindings.is_empty()
            || request.operation == strategy_host_registry::admission::Operation::Delete
        {
            return Ok(Vec::new());
        }
        let namespace = crate::followed::namespace_object(&self.registry, request.namespace).await;
        let request_var = request_variable(request);
        let old = request.old_object.cloned().unwrap_or(Value::Null);
        let schema = request
            .resource
            .version(request.version)
            .and_then(|v| v.schema.as_ref());
        let mut applied = Vec::new();
        for (index, binding, policy) in in_force.matching(request, namespace.as_ref()) {
            if !chosen(index, policy) {
                continue;
            }
            let fail = |why: String| -> Result<(), Rejection> {
                match policy.spec.fail_closed {
                    true => Err(Rejection::Denied {
                        code: 500,
                        reason: "InternalError".into(),
                        message: format!(
                            "MutatingAdmissionPolicy '{}' with binding '{}' denied request: {why}",
                            binding.policy, binding.name
                        ),
                    }),
                    false => Ok(()),
                }
            };
            let found = params(
                &self.registry,
                policy.spec.param_kind.as_ref(),
                binding.param_ref.as_ref(),
                request,
            )
            .await;
            let found = match found {
                Ok(p) => p,
                Err(why) => {
                    fail(why.to_string())?;
                    continue;
                }
            };
            let mut changed = false;
            for params in found.map_or(vec![None], |list| list.into_iter().map(Some).collect()) {
                let mut base: Vec<(&str, &Value)> =
                    vec![("oldObject", &old), ("request", &request_var)];
                if let Some(p) = &params {
                    base.push(("params", p));
                }
                if let Some(ns) = &namespace {
                    base.push(("namespaceObject", ns));
                }
                // A failed policy leaves the object as it was before it.
                let mut mutated = object.clone();
                match policy.mutate(&base, &mut mutated, schema) {
                    Ok(_) => {
                        changed |= mutated != *object;
                        *object = mutated;
                    }
                    Err(why) => fail(why.to_string())?,
                }
            }
            applied.push((index, policy.reinvoke_if_needed, changed));
        }
        Ok(applied)
    }
}

#[async_trait]
impl MutatingAdmission for MutatingPolicies {
    fn name(&self) -> &str {
        "MutatingAdmissionPolicy"
    }

    async fn admit(&self, request: &AdmissionRequest<'_>, object: &mut Value) -> Verdict {
        let applied = self.apply(request, object, |_, _| true).await?;
        // A policy asking for it is applied again when a later one changed the object.
        let last_change = applied.iter().rposition(|(_, _, changed)| *changed);
        let again: Vec<usize> = applied[..last_change.unwrap_or(0)]
            .iter()
            .filter(|(_, if_needed, _)| *if_needed)
            .map(|(index, _, _)| *index)
            .collect();
        if !again.is_empty() {
            self.apply(request, object, |index, _| again.contains(&index))
                .await?;
        }
        Ok(Vec::new())
    }

    async fn reinvoke(&self, request: &AdmissionRequest<'_>, object: &mut Value) -> Verdict {
        self.apply(request, object, |_, policy| policy.reinvoke_if_needed)
            .await?;
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(mutations: Value) -> Policy {
        Policy::parse(&json!({"mutations": mutations}))
    }

    #[test]
    fn an_apply_configuration_merges_maps_and_replaces_the_rest() {
        let p = policy(
            json!([{"patchType": "ApplyConfiguration", "applyConfiguration": {
                "expression": "Object{metadata: Object.metadata{labels: {'env': 'prod'}}, spec: Object.spec{ports: [80]}}"
            }}]),
        );
        let mut object = json!({"metadata": {"name": "x", "labels": {"app": "web"}}, "spec": {"ports": [1, 2], "replicas": 2}});
        assert_eq!(p.mutate(&[], &mut object, None), Ok(true));
        assert_eq!(
            object,
            json!({"metadata": {"name": "x", "labels": {"app": "web", "env": "prod"}}, "spec": {"ports": [80], "replicas": 2}})
        );
    }

    #[test]
    fn an_apply_configuration_merges_keyed_lists_by_their_keys() {
        let p = policy(
            json!([{"patchType": "ApplyConfiguration", "applyConfiguration": {
                "expression": "Object{spec: Object.spec{containers: [Object.spec.containers{name: 'sidecar', image: 'proxy:1'}]}}"
            }}]),
        );
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "containers": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object"}}}}}});
        let mut object = json!({"spec": {"containers": [{"name": "app", "image": "web:2"}]}});
        assert_eq!(p.mutate(&[], &mut object, Some(&schema)), Ok(true));
        assert_eq!(
            object["spec"]["containers"],
            json!([{"name": "app", "image": "web:2"}, {"name": "sidecar", "image": "proxy:1"}])
        );
        // The same container again changes nothing; without a schema the list is replaced.
        let before = object.clone();
        assert_eq!(p.mutate(&[], &mut object, Some(&schema)), Ok(true));
        assert_eq!(object, before);
        assert_eq!(p.mutate(&[], &mut object, None), Ok(true));
        assert_eq!(object["spec"]["containers"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn json_patches_apply_in_order_each_seeing_the_last() {
        let p = policy(json!([
            {"patchType": "JSONPatch", "jsonPatch": {"expression":
                "[JSONPatch{op: 'add', path: '/spec/replicas', value: object.spec.replicas * 2}]"}},
            {"patchType": "JSONPatch", "jsonPatch": {"expression":
                "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'replicas': string(object.spec.replicas)}}]"}}
        ]));
        let mut object = json!({"metadata": {}, "spec": {"replicas": 3}});
        assert_eq!(p.mutate(&[], &mut object, None), Ok(true));
        assert_eq!(object["spec"]["replicas"], 6);
        assert_eq!(object["metadata"]["annotations"]["replicas"], "6");
    }

    #[test]
    fn a_false_match_condition_mutates_nothing_and_errors_are_reported() {
        let p = Policy::parse(&json!({
            "matchConditions": [{"name": "big", "expression": "object.spec.replicas > 5"}],
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'remove', path: '/spec'}]"}}]
        }));
        let mut object = json!({"spec": {"replicas": 3}});
        assert_eq!(p.mutate(&[], &mut object, None), Ok(false));
        assert_eq!(object, json!({"spec": {"replicas": 3}}));
        let broken = policy(
            json!([{"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'replace', path: '/nope/x', value: 1}]"}}]),
        );
        let err = broken.mutate(&[], &mut object, None).unwrap_err();
        assert!(err.to_string().contains("could not be applied"), "{err}");
    }
}
