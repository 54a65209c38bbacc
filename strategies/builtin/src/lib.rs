//! The strategy module of the host's built-in kinds that have no host-side behaviour of their
//! own: core `configmaps`, `secrets`, `resourcequotas`, `serviceaccounts` and `events`, `events.k8s.io` `events`
//! and `coordination.k8s.io` `leases`. The host embeds this module and loads it at start like any other source, so an
//! operator can replace it; each kind's rules are Kubernetes' own (see each file).

use serde_json::Value;
use strategy_guest_sdk::{Context, FieldError, LazyObject, Resource, Scope, Strategy};

mod event;
mod lease;
mod resource_quota;
mod secret;

/// The strategy of every built-in kind, dispatching on the request's kind.
#[derive(Debug, Default)]
pub struct BuiltinKinds;

/// What one kind does, on the object as a tree of the members it reads; [`BuiltinKinds`] calls
/// the one the request names.
trait KindStrategy {
    /// The top-level members the kind's rules read (`None`: the whole object). Only these are
    /// parsed: a Lease renewal's or a ConfigMap's metadata, managed fields and all, is not.
    fn reads(&self) -> Option<&'static [&'static str]> {
        None
    }
    /// Whether [`KindStrategy::prepare`] may change the object (else it is not called).
    fn prepares(&self) -> bool {
        false
    }
    fn prepare(&self, _obj: &mut Value) {}
    fn validate(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate(new)
    }
}

/// The members of `obj` that `kind` reads, as a tree (a `null` member as absent).
fn tree(kind: &dyn KindStrategy, obj: &LazyObject) -> Value {
    match kind.reads() {
        None => obj.get(&[]).ok().flatten().unwrap_or(Value::Null),
        Some(names) => Value::Object(
            names
                .iter()
                .filter_map(|name| Some(((*name).to_owned(), obj.get(&[name]).ok().flatten()?)))
                .collect(),
        ),
    }
}

/// Runs `kind`'s prepare on the tree of `obj` and sets the top-level members it changed.
fn prepare(kind: &dyn KindStrategy, obj: &mut LazyObject) {
    if !kind.prepares() {
        return;
    }
    let before = tree(kind, obj);
    let mut after = before.clone();
    kind.prepare(&mut after);
    let (Value::Object(before), Value::Object(after)) = (before, after) else {
        return;
    };
    for name in before.keys().filter(|name| !after.contains_key(*name)) {
        obj.remove(name);
    }
    for (name, value) in after {
        if before.get(&name) != Some(&value) {
            obj.insert(&name, value);
        }
    }
}

struct ConfigMaps;

impl ConfigMaps {
    fn typed(obj: &Value) -> Result<strategy_configmap::ConfigMap, Vec<FieldError>> {
        serde_json::from_value(obj.clone()).map_err(|e| {
            vec![FieldError::invalid(
                &strategy_guest_sdk::FieldPath::new("data"),
                &obj["data"],
                format!("not a ConfigMap: {e}"),
            )]
        })
    }
}

impl KindStrategy for ConfigMaps {
    fn reads(&self) -> Option<&'static [&'static str]> {
        Some(&["data", "binaryData", "immutable"])
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        match Self::typed(obj) {
            Ok(cm) => strategy_configmap::ConfigMaps.validate(&Context::default(), &cm),
            Err(e) => e,
        }
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        match (Self::typed(new), Self::typed(old)) {
            (Ok(new), Ok(old)) => {
                strategy_configmap::ConfigMaps.validate_update(&Context::default(), &new, &old)
            }
            (Err(e), _) | (_, Err(e)) => e,
        }
    }
}

/// Service accounts have no rules beyond the metadata every object gets.
struct ServiceAccounts;

impl KindStrategy for ServiceAccounts {}

fn kind_strategy(ctx: &Context) -> &'static dyn KindStrategy {
    match (ctx.resource.group.as_str(), ctx.resource.kind.as_str()) {
        ("", "ConfigMap") => &ConfigMaps,
        ("", "Secret") => &secret::Secrets,
        ("", "ResourceQuota") => &resource_quota::ResourceQuotas,
        ("", "Event") => &event::Events,
        ("events.k8s.io", "Event") => &event::EventsV1,
        ("coordination.k8s.io", "Lease") => &lease::Leases,
        _ => &ServiceAccounts,
    }
}

impl Strategy for BuiltinKinds {
    type Object = LazyObject;
    const NAME: &'static str = "builtin";
    const RESOURCES: &'static [Resource] = &[
        Resource::new("", "v1", "ConfigMap", "configmaps", Scope::Namespaced),
        Resource::new("", "v1", "Secret", "secrets", Scope::Namespaced),
        Resource::new(
            "",
            "v1",
            "ResourceQuota",
            "resourcequotas",
            Scope::Namespaced,
        ),
        Resource::new(
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            Scope::Namespaced,
        ),
        Resource::new("", "v1", "Event", "events", Scope::Namespaced),
        Resource::new("events.k8s.io", "v1", "Event", "events", Scope::Namespaced),
        Resource::new(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            Scope::Namespaced,
        ),
    ];

    fn prepare_for_create(&self, ctx: &Context, obj: &mut LazyObject) {
        prepare(kind_strategy(ctx), obj);
    }

    fn validate(&self, ctx: &Context, obj: &LazyObject) -> Vec<FieldError> {
        let kind = kind_strategy(ctx);
        kind.validate(&tree(kind, obj))
    }

    fn prepare_for_update(&self, ctx: &Context, new: &mut LazyObject, _old: &LazyObject) {
        prepare(kind_strategy(ctx), new);
    }

    fn validate_update(
        &self,
        ctx: &Context,
        new: &LazyObject,
        old: &LazyObject,
    ) -> Vec<FieldError> {
        let kind = kind_strategy(ctx);
        kind.validate_update(&tree(kind, new), &tree(kind, old))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn context(group: &str, kind: &str) -> Context {
        let mut ctx = Context::default();
        ctx.resource.group = group.into();
        ctx.resource.kind = kind.into();
        ctx
    }

    fn lazy(value: Value) -> LazyObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_secrets_defaults_come_back_as_changed_members() {
        let mut secret = lazy(json!({"metadata": {"name": "s"}, "stringData": {"a": "b"}}));
        BuiltinKinds.prepare_for_create(&context("", "Secret"), &mut secret);
        assert_eq!(
            serde_json::to_value(&secret).unwrap(),
            json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "Yg=="}})
        );
        let ops: Value = serde_json::from_slice(&secret.json_patch().unwrap()).unwrap();
        assert_eq!(
            ops.as_array().unwrap().len(),
            3,
            "{ops}: stringData out, type and data in"
        );
    }

    #[test]
    fn config_maps_and_leases_are_checked_on_the_members_their_rules_read() {
        let ctx = context("", "ConfigMap");
        let errs = |v: Value| BuiltinKinds.validate(&ctx, &lazy(v)).len();
        assert_eq!(
            errs(json!({"metadata": {"name": "c"}, "data": {"ok": "1"}, "binaryData": null})),
            0
        );
        assert_eq!(errs(json!({"data": {"bad key": "1"}})), 1);
        assert_eq!(errs(json!({"data": ["not", "a", "map"]})), 1);
        let leases = context("coordination.k8s.io", "Lease");
        let lease = lazy(json!({"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 0}}));
        assert_eq!(BuiltinKinds.validate(&leases, &lease).len(), 1);
    }
}
